//! One chunk of a wave ([`Job`]: keys `>= from` and `< until` of one plan range, or one
//! point) scanned ([`scan_chunk`]): its matches, how many entities it examined and where
//! it stopped ([`ChunkEnd`]).
//!
//! **Room.** A chunk keeps at most as many matches as the page still has room for after
//! the matches that lie before it ([`Room`]). In a sequential wave that number is known
//! ([`Room::Fixed`]). In a parallel wave the chunks before it may still be running: each
//! chunk publishes how many matches it holds every [`CUT_INTERVAL`] examined entities,
//! and reads what the chunks before it published ([`Room::Shared`]); those counts only
//! grow and every one of them is a match before the chunk, so the room only shrinks and
//! is never smaller than the truth. A chunk whose room is used up stops before its next
//! entity (not examined: [`ChunkEnd::Stopped`]); one claimed after the page is already
//! full before it is not scanned at all ([`ChunkEnd::Skipped`]). So work past the page's
//! end stops within about [`CUT_INTERVAL`] entities of being known useless.
//!
//! ```text
//! wave:   [ chunk 0 ][ chunk 1 ][ chunk 2 ][ chunk 3 ]
//! page:   ....m..m...m.m|m.......  (room used up: stops)
//!                                   skipped   skipped
//! ```

use super::continuation::key_of;
use super::options::Budget;
use crate::compile::CompiledPredicate;
use crate::key::{Key, Scan};
use crate::source::EntitySource;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};
use tableq_planner::plan::KeyRange;

/// Entities a chunk of a parallel wave examines between two looks at the room (and two
/// publications of its own count).
pub(super) const CUT_INTERVAL: u64 = 256;

/// A chunk of work: keys `>= from` and `< until` of the plan's range number `range`.
#[derive(Debug, Clone)]
pub(super) struct Job {
    pub(super) range: usize,
    pub(super) from: Option<Key>,
    pub(super) until: Option<Key>,
    /// A point range, answered by `get`.
    pub(super) point: bool,
}

/// Where a chunk stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum ChunkEnd {
    /// Every entity of the chunk was examined.
    Exhausted,
    /// Stopped before this entity (not examined): the room was used up, or the budget ran
    /// out. Every entity before it was examined.
    Stopped(Key),
    /// Not scanned: the page was full before the chunk when it was claimed.
    Skipped,
}

/// What scanning a chunk gave: its matches (in key order), the entities examined, where it
/// stopped.
pub(super) struct ChunkOut<R> {
    pub(super) rows: Vec<R>,
    pub(super) examined: u64,
    pub(super) end: ChunkEnd,
}

impl<R> ChunkOut<R> {
    /// A chunk that was not scanned.
    pub(super) fn skipped() -> ChunkOut<R> {
        ChunkOut {
            rows: Vec::new(),
            examined: 0,
            end: ChunkEnd::Skipped,
        }
    }
}

/// What scanning a chunk of source `S` gave.
pub(super) type ChunkResult<'a, S> =
    Result<ChunkOut<<S as EntitySource>::Row<'a>>, <S as EntitySource>::Error>;

/// How many matches a chunk may keep (see the module docs).
pub(super) enum Room<'w> {
    /// The page needs exactly this many more (a sequential wave).
    Fixed(usize),
    /// Chunk number `index` of a parallel wave with room for `limit` matches in all;
    /// `counts[i]` is how many matches chunk `i` holds so far.
    Shared {
        counts: &'w [AtomicUsize],
        index: usize,
        limit: usize,
    },
}

impl Room<'_> {
    /// The matches the chunk may keep now.
    fn get(&self) -> usize {
        match self {
            Room::Fixed(n) => *n,
            Room::Shared {
                counts,
                index,
                limit,
            } => {
                let before: usize = counts[..*index]
                    .iter()
                    .map(|c| c.load(AtomicOrdering::Relaxed))
                    .sum();
                limit.saturating_sub(before)
            }
        }
    }

    /// Publishes that the chunk holds `matches` matches.
    fn publish(&self, matches: usize) {
        if let Room::Shared { counts, index, .. } = self {
            counts[*index].store(matches, AtomicOrdering::Relaxed);
        }
    }

    fn shared(&self) -> bool {
        matches!(self, Room::Shared { .. })
    }
}

/// Scans one chunk of `ranges`, keeping at most `room` matches; stops at the first source
/// error.
pub(super) fn scan_chunk<'a, S: EntitySource + ?Sized>(
    source: &'a S,
    ranges: &'a [KeyRange],
    job: &'a Job,
    predicate: &CompiledPredicate,
    room: &Room<'_>,
    budget: &Budget,
) -> ChunkResult<'a, S> {
    let mut limit = room.get();
    if limit == 0 {
        return Ok(ChunkOut::skipped());
    }
    let range = &ranges[job.range];
    let mut out = ChunkOut {
        rows: Vec::new(),
        examined: 0,
        end: ChunkEnd::Exhausted,
    };
    if job.point {
        if let Some((pk, rk)) = range.as_point()
            && job.from.as_ref().is_none_or(|f| f.cmp_pair(pk, rk).is_le())
            && let Some(row) = source.get(pk, rk)?
        {
            out.examined = 1;
            if predicate.eval(&row) {
                out.rows.push(row);
            }
        }
        room.publish(out.rows.len());
        return Ok(out);
    }
    let scan = Scan {
        range,
        from: job.from.as_ref(),
        until: job.until.as_ref(),
    };
    let ChunkOut {
        rows,
        examined,
        end,
    } = &mut out;
    // A chunk stops before the entity after its room's last match (or after the budget
    // ran out): that entity is not examined, its key is where the page may resume. A
    // source error ends the chunk (returned by `scan_each`).
    if !budget.enabled() && !room.shared() {
        // The hot loop: nothing to account, nobody to hear from.
        source.scan_each(scan, |row| {
            if rows.len() >= limit {
                *end = ChunkEnd::Stopped(key_of(&row));
                return ControlFlow::Break(());
            }
            *examined += 1;
            if predicate.eval(&row) {
                rows.push(row);
            }
            ControlFlow::Continue(())
        })?;
        return Ok(out);
    }
    let tick_every = if budget.enabled() {
        budget.interval
    } else {
        u64::MAX
    };
    let cut_every = if room.shared() {
        CUT_INTERVAL
    } else {
        u64::MAX
    };
    let (mut since_tick, mut since_cut) = (0u64, 0u64);
    let scanned = source.scan_each(scan, |row| {
        if since_cut >= cut_every {
            since_cut = 0;
            room.publish(rows.len());
            limit = room.get();
        }
        if rows.len() >= limit {
            *end = ChunkEnd::Stopped(key_of(&row));
            return ControlFlow::Break(());
        }
        if since_tick >= tick_every {
            let stop = budget.tick(since_tick);
            since_tick = 0;
            if stop {
                *end = ChunkEnd::Stopped(key_of(&row));
                return ControlFlow::Break(());
            }
        }
        *examined += 1;
        since_tick += 1;
        since_cut += 1;
        if predicate.eval(&row) {
            rows.push(row);
        }
        ControlFlow::Continue(())
    });
    if budget.enabled() && since_tick > 0 {
        budget.tick(since_tick);
    }
    room.publish(out.rows.len());
    scanned?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::VecSource;
    use crate::executor::options::PageOptions;
    use tableq_model::Entity;
    use tableq_planner::predicate::Predicate;

    /// A chunk of a parallel wave stops once the chunks before it hold the page: at once
    /// when claimed after that, else within [`CUT_INTERVAL`] entities.
    #[test]
    fn a_chunk_stops_when_the_page_is_full_before_it() {
        let source = VecSource::new((0..2000).map(|i| Entity::new("p", format!("r{i:04}"))));
        let ranges = [KeyRange::full()];
        let predicate = CompiledPredicate::compile(&Predicate::TRUE, &source);
        let budget = Budget::new(&PageOptions::default(), 2);
        let job = Job {
            range: 0,
            from: None,
            until: None,
            point: false,
        };
        let counts: Vec<AtomicUsize> = (0..2).map(|_| AtomicUsize::new(0)).collect();
        let room = Room::Shared {
            counts: &counts,
            index: 1,
            limit: 1000,
        };
        // The chunk before holds 400 matches: this one keeps 600, then stops.
        counts[0].store(400, AtomicOrdering::Relaxed);
        let out = scan_chunk(&source, &ranges, &job, &predicate, &room, &budget).unwrap();
        assert_eq!((out.rows.len(), out.examined), (600, 600));
        assert_eq!(out.end, ChunkEnd::Stopped(Key::new("p", "r0600")));
        assert_eq!(counts[1].load(AtomicOrdering::Relaxed), 600);
        // The chunk before holds the page: nothing is scanned.
        counts[0].store(1000, AtomicOrdering::Relaxed);
        let out = scan_chunk(&source, &ranges, &job, &predicate, &room, &budget).unwrap();
        assert_eq!(
            (out.rows.len(), out.examined, out.end),
            (0, 0, ChunkEnd::Skipped)
        );
    }
}

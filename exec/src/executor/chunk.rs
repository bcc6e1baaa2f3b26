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
//! **Quota.** A chunk's matches are useless when the chunks before it fill the page, which
//! it cannot know while they run; the more it holds, the more the next page reads again.
//! So a chunk after the wave's first keeps no more than its *quota* (what the wave's
//! selectivity estimate expects of it, twice over, at least [`MIN_QUOTA`]) while a chunk
//! before it is still running: at its quota it waits for them ([`Finished`]) and goes on
//! with the exact room they leave. It waits only when the selectivity rose above the
//! estimate, i.e. when the page is likely to end soon anyway, and never in a wave that
//! cannot fill the page (fewer rows than its room). No deadlock: a chunk waits
//! only for chunks claimed before it, which are running (chunks are claimed in key order
//! and scanned at once), and the first never waits.
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
use crate::source::{EntitySource, Filtered};
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use tableq_planner::plan::KeyRange;

/// Entities a chunk of a parallel wave examines between two looks at the room (and two
/// publications of its own count).
pub(super) const CUT_INTERVAL: u64 = 256;

/// The smallest quota of a chunk after a wave's first: a chunk the estimate expects no
/// match of waits at its first (the entities it rejected before it are never read again).
pub(super) const MIN_QUOTA: usize = 1;

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

/// Which chunks of a parallel wave are finished (scanned, skipped, failed or panicked), for
/// the chunks that wait at their quota.
pub(super) struct Finished {
    flags: Mutex<Vec<bool>>,
    changed: Condvar,
}

impl Finished {
    /// A wave of `chunks` chunks, none finished.
    pub(super) fn new(chunks: usize) -> Finished {
        Finished {
            flags: Mutex::new(vec![false; chunks]),
            changed: Condvar::new(),
        }
    }

    /// Marks chunk `index` finished when the guard drops (even by a panic).
    pub(super) fn guard(&self, index: usize) -> FinishGuard<'_> {
        FinishGuard {
            finished: self,
            index,
        }
    }

    /// Whether every chunk before `index` is finished.
    fn all_before(&self, index: usize) -> bool {
        lock(&self.flags)[..index].iter().all(|&f| f)
    }

    /// Waits until every chunk before `index` is finished.
    fn wait_before(&self, index: usize) {
        let mut flags = lock(&self.flags);
        while !flags[..index].iter().all(|&f| f) {
            flags = self
                .changed
                .wait(flags)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// Marks a chunk finished when dropped ([`Finished::guard`]).
pub(super) struct FinishGuard<'f> {
    finished: &'f Finished,
    index: usize,
}

impl Drop for FinishGuard<'_> {
    fn drop(&mut self) {
        lock(&self.finished.flags)[self.index] = true;
        self.finished.changed.notify_all();
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// How many matches a chunk may keep (see the module docs).
pub(super) enum Room<'w> {
    /// The page needs exactly this many more (a sequential wave).
    Fixed(usize),
    /// Chunk number `index` of a parallel wave with room for `limit` matches in all;
    /// `counts[i]` is how many matches chunk `i` holds so far. While a chunk before it
    /// runs, it keeps at most `quota` matches.
    Shared {
        counts: &'w [AtomicUsize],
        finished: &'w Finished,
        index: usize,
        limit: usize,
        quota: usize,
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
                ..
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

    /// The quota the chunk starts with (`usize::MAX`: none).
    fn quota(&self) -> usize {
        match self {
            Room::Shared {
                finished,
                index,
                quota,
                ..
            } if !finished.all_before(*index) => *quota,
            _ => usize::MAX,
        }
    }

    /// At the quota: waits for the chunks before this one to finish.
    fn wait(&self) {
        if let Room::Shared {
            finished, index, ..
        } = self
        {
            finished.wait_before(*index);
        }
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
    // ran out): that entity is not examined, its key is where the page may resume
    // (`Filtered::Next`). A source error ends the chunk (returned by `scan_filtered`).
    if !budget.enabled() && !room.shared() {
        // The hot loop: nothing to account, nobody to hear from.
        source.scan_filtered(scan, predicate, usize::MAX, |f| match f {
            Filtered::Match { row, skipped } => {
                *examined += skipped + 1;
                rows.push(row);
                if rows.len() >= limit {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            }
            Filtered::Skipped(n) => {
                *examined += n;
                ControlFlow::Continue(())
            }
            Filtered::Next(row) => {
                *end = ChunkEnd::Stopped(key_of(&row));
                ControlFlow::Break(())
            }
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
    let mut quota = room.quota();
    let report_every = usize::try_from(tick_every.min(cut_every)).unwrap_or(usize::MAX);
    let scanned = source.scan_filtered(scan, predicate, report_every, |f| {
        let n = match f {
            Filtered::Next(row) => {
                *end = ChunkEnd::Stopped(key_of(&row));
                return ControlFlow::Break(());
            }
            Filtered::Skipped(n) => n,
            Filtered::Match { row, skipped } => {
                rows.push(row);
                skipped + 1
            }
        };
        *examined += n;
        since_tick += n;
        since_cut += n;
        if since_cut >= cut_every {
            since_cut = 0;
            room.publish(rows.len());
            limit = room.get();
        }
        if rows.len() >= quota && rows.len() < limit {
            // More matches than expected: the chunks before may fill the page. Wait for
            // them; then the room is exact.
            room.publish(rows.len());
            room.wait();
            quota = usize::MAX;
            limit = room.get();
        }
        if rows.len() >= limit {
            // The room is used up: stop before the next entity.
            return ControlFlow::Break(());
        }
        if since_tick >= tick_every {
            let stop = budget.tick(since_tick);
            since_tick = 0;
            if stop {
                return ControlFlow::Break(());
            }
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

    /// A chunk of a parallel wave keeps only the room the chunks before it leave, waits at
    /// its quota while they run, and is not scanned once they hold the page.
    #[test]
    fn a_chunk_stops_when_the_page_is_full_before_it_and_waits_at_its_quota() {
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
        let finished = Finished::new(2);
        drop(finished.guard(0));
        let room = Room::Shared {
            counts: &counts,
            finished: &finished,
            index: 1,
            limit: 1000,
            quota: 10,
        };
        // The chunk before holds 400 matches: this one keeps 600, then stops.
        counts[0].store(400, AtomicOrdering::Relaxed);
        let out = scan_chunk(&source, &ranges, &job, &predicate, &room, &budget).unwrap();
        assert_eq!((out.rows.len(), out.examined), (600, 600));
        assert_eq!(out.end, ChunkEnd::Stopped(Key::new("p", "r0600")));
        assert_eq!(counts[1].load(AtomicOrdering::Relaxed), 600);
        // While the chunk before runs, this one waits at its quota (10), then goes on with
        // the exact room the chunk before leaves: 5, which it already exceeds.
        let finished = Finished::new(2);
        let running = finished.guard(0);
        counts[0].store(0, AtomicOrdering::Relaxed);
        let room = Room::Shared {
            counts: &counts,
            finished: &finished,
            index: 1,
            limit: 1000,
            quota: 10,
        };
        std::thread::scope(|s| {
            let waiting =
                s.spawn(|| scan_chunk(&source, &ranges, &job, &predicate, &room, &budget));
            while counts[1].load(AtomicOrdering::Relaxed) < 10 && !waiting.is_finished() {
                std::thread::yield_now();
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
            assert!(!waiting.is_finished(), "the chunk waits at its quota");
            assert_eq!(counts[1].load(AtomicOrdering::Relaxed), 10);
            counts[0].store(995, AtomicOrdering::Relaxed);
            drop(running);
            let out = waiting.join().unwrap().unwrap();
            assert_eq!((out.rows.len(), out.examined), (10, 10));
            assert_eq!(out.end, ChunkEnd::Stopped(Key::new("p", "r0010")));
        });
        // The chunk before holds the page: nothing is scanned.
        counts[0].store(1000, AtomicOrdering::Relaxed);
        let room = Room::Shared {
            counts: &counts,
            finished: &finished,
            index: 1,
            limit: 1000,
            quota: 10,
        };
        let out = scan_chunk(&source, &ranges, &job, &predicate, &room, &budget).unwrap();
        assert_eq!(
            (out.rows.len(), out.examined, out.end),
            (0, 0, ChunkEnd::Skipped)
        );
    }
}

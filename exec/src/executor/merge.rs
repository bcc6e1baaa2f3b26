//! The chunks of a wave put back in key order ([`Assembly`]): the rows the page keeps
//! from each, and where the page ends ([`WaveEnd`]); for a parallel wave, the merge of
//! chunks as they finish ([`Merge`]).
//!
//! **Where the page ends.** The continuation is the first key the page has not decided:
//! the first match it could not keep, or the first entity it did not examine. Entities
//! examined and found not to match are decided, even past the page's last row: once the
//! page is full, the chunks after it (in key order) are looked at until one holds a match
//! or stopped early, so the next page does not read again what this one already rejected.
//!
//! ```text
//! chunks:  [..m..m..m][.....][...|    ]        page full after the 3rd match
//!                      no match  stopped here: the continuation
//! ```

use super::chunk::{ChunkEnd, ChunkOut, ChunkResult, Job};
use super::continuation::{Resume, key_of};
use super::sink::Sink;
use crate::source::{EntitySource, SourceRow};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// How a wave ended for its page.
pub(super) enum WaveEnd {
    /// The page is not full: the next wave continues it.
    Continue,
    /// The page ends: it resumes here.
    At(Resume),
    /// The page is full and every entity of the wave after its last row was examined and
    /// found not to match: it resumes where the next wave would start.
    AfterWave,
}

/// The state of a page's end, chunk by chunk.
enum State {
    /// The page is not full.
    Filling,
    /// The page is full; every entity examined since did not match.
    Full,
    /// The page ends here.
    At(Resume),
}

/// A wave's chunks taken in key order ([`Assembly::take`]): how many rows the page keeps,
/// and where it ends.
pub(super) struct Assembly {
    /// Rows the page may still take when the wave starts.
    limit: usize,
    /// Rows kept so far in this wave.
    kept: usize,
    state: State,
}

impl Assembly {
    /// A wave of a page with room for `limit` more rows.
    pub(super) fn new(limit: usize) -> Assembly {
        Assembly {
            limit,
            kept: 0,
            state: State::Filling,
        }
    }

    /// Rows kept so far.
    pub(super) fn kept(&self) -> usize {
        self.kept
    }

    /// Whether the page is full: later chunks only move its end, and a chunk not scanned
    /// yet need not be.
    pub(super) fn full(&self) -> bool {
        !matches!(self.state, State::Filling)
    }

    /// Whether the page's end is known: later chunks change nothing.
    #[cfg(test)]
    fn ended(&self) -> bool {
        matches!(self.state, State::At(_))
    }

    /// Takes the next chunk's outcome (in key order); returns the rows the page keeps of it.
    pub(super) fn take<R: SourceRow>(&mut self, out: ChunkOut<R>, job: &Job) -> Vec<R> {
        let ChunkOut { mut rows, end, .. } = out;
        match self.state {
            State::At(_) => Vec::new(),
            State::Full => {
                // Past the page's last row: the first match or unexamined entity ends it.
                self.state = match rows.first() {
                    Some(row) => State::At(Resume::At(key_of(row))),
                    None => after_rejected(end, job),
                };
                Vec::new()
            }
            State::Filling => {
                let need = self.limit - self.kept;
                if rows.len() > need {
                    self.state = State::At(Resume::At(key_of(&rows[need])));
                    rows.truncate(need);
                } else if rows.len() == need {
                    self.state = after_rejected(end, job);
                } else {
                    self.state = match end {
                        ChunkEnd::Exhausted => State::Filling,
                        // Out of budget before the page was full.
                        ChunkEnd::Stopped(key) => State::At(Resume::At(key)),
                        // Not scanned (the chunks before it were thought to fill the page).
                        ChunkEnd::Skipped => State::At(start(job)),
                    };
                }
                self.kept += rows.len();
                rows
            }
        }
    }

    /// A chunk failed: the error fails the wave unless the page is full before the chunk
    /// (a sequential scan would not have read it); then the page resumes at the chunk.
    pub(super) fn fail<E>(&mut self, error: E, job: &Job) -> Result<(), E> {
        match self.state {
            State::Filling => Err(error),
            State::Full => {
                self.state = State::At(start(job));
                Ok(())
            }
            State::At(_) => Ok(()),
        }
    }

    /// The wave is over (every chunk taken, or the rest not scanned: `next` is the first
    /// of those).
    pub(super) fn finish(self, next: Option<&Job>) -> WaveEnd {
        match self.state {
            State::Filling => WaveEnd::Continue,
            State::At(resume) => WaveEnd::At(resume),
            State::Full => match next {
                Some(job) => WaveEnd::At(start(job)),
                None => WaveEnd::AfterWave,
            },
        }
    }
}

/// The page's end after a chunk whose rows (if any) were all kept: the chunk's rest is
/// rejected (nothing to resume in it) unless it stopped early.
fn after_rejected(end: ChunkEnd, job: &Job) -> State {
    match end {
        ChunkEnd::Exhausted => State::Full,
        ChunkEnd::Stopped(key) => State::At(Resume::At(key)),
        ChunkEnd::Skipped => State::At(start(job)),
    }
}

/// Where a chunk starts.
fn start(job: &Job) -> Resume {
    Resume::Position {
        range: job.range,
        from: job.from.clone(),
    }
}

/// A chunk result slot, whether or not a thread panicked while holding it.
pub(super) fn lock<T>(slot: &Mutex<T>) -> MutexGuard<'_, T> {
    slot.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The in-order merge of a parallel wave's chunks: the page's rows go to the sink chunk by
/// chunk, up to where the page ends or the first source error; the rows of later chunks
/// are dropped, their examined entities still counted.
pub(super) struct Merge<'w, S: EntitySource + ?Sized> {
    jobs: &'w [Job],
    /// Chunks merged so far.
    next: usize,
    pub(super) assembly: Assembly,
    pub(super) examined: u64,
    /// The error that fails the wave.
    pub(super) error: Option<S::Error>,
}

impl<'w, S: EntitySource + ?Sized> Merge<'w, S> {
    pub(super) fn new(jobs: &'w [Job], limit: usize) -> Merge<'w, S> {
        Merge {
            jobs,
            next: 0,
            assembly: Assembly::new(limit),
            examined: 0,
            error: None,
        }
    }

    /// Merges the chunks scanned so far, in key order, up to the first one not scanned yet
    /// (with `all`, every chunk: the wave is over, and a chunk without a result, which
    /// only a panic leaves, counts as not scanned).
    pub(super) fn scanned<'a>(
        &mut self,
        slots: &[Mutex<Option<ChunkResult<'a, S>>>],
        sink: &mut dyn Sink<S>,
        all: bool,
    ) where
        S: 'a,
    {
        while let Some(slot) = slots.get(self.next) {
            let out = match lock(slot).take() {
                Some(out) => out,
                None if all => Ok(ChunkOut::skipped()),
                None => return,
            };
            let job = &self.jobs[self.next];
            self.next += 1;
            match out {
                Ok(out) => {
                    self.examined += out.examined;
                    if self.error.is_none() {
                        sink.wave(self.assembly.take(out, job));
                    }
                }
                Err(e) => {
                    if self.error.is_none() {
                        self.error = self.assembly.fail(e, job).err();
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::VecSource;
    use crate::executor::sink::Visit;
    use crate::key::Key;
    use crate::source::EntityRef;
    use tableq_model::Entity;

    fn job(from: &str, until: &str) -> Job {
        Job {
            range: 0,
            from: Some(Key::new("p", from)),
            until: Some(Key::new("p", until)),
            point: false,
        }
    }

    fn out(rows: &[Entity], end: ChunkEnd) -> ChunkResult<'_, VecSource> {
        Ok(ChunkOut {
            rows: rows.iter().map(EntityRef).collect(),
            examined: 10,
            end,
        })
    }

    fn resumes_at(end: &WaveEnd, key: &str) -> bool {
        matches!(end, WaveEnd::At(Resume::At(k)) if k.row_key == key)
    }

    /// Chunks merge in key order as they become available, stop at the page's end and
    /// still count what later chunks examined.
    #[test]
    fn chunks_merge_in_order_as_they_are_scanned() {
        let rows: Vec<Entity> = (0..6).map(|i| Entity::new("p", format!("r{i}"))).collect();
        let jobs = [job("r0", "r2"), job("r2", "r4"), job("r4", "r6")];
        let slots: Vec<Mutex<Option<ChunkResult<'_, VecSource>>>> =
            (0..3).map(|_| Mutex::new(None)).collect();
        let mut seen = Vec::new();
        let mut sink = Visit {
            visit: |row: crate::RowView<'_>| seen.push(row.row().row_key().to_owned()),
            select: None,
        };
        let mut merge = Merge::<VecSource>::new(&jobs, 3);
        // Only the second chunk is scanned: nothing can be merged yet.
        *lock(&slots[1]) = Some(out(&rows[2..4], ChunkEnd::Exhausted));
        merge.scanned(&slots, &mut sink, false);
        assert_eq!((merge.next, merge.assembly.kept()), (0, 0));
        // The first one too: both merge; the page ends in the second (3 of its 4 rows).
        *lock(&slots[0]) = Some(out(&rows[0..2], ChunkEnd::Exhausted));
        merge.scanned(&slots, &mut sink, false);
        assert_eq!((merge.next, merge.assembly.kept()), (2, 3));
        assert!(merge.assembly.ended());
        // The third chunk's rows are dropped, its examined entities counted.
        *lock(&slots[2]) = Some(out(&rows[4..6], ChunkEnd::Exhausted));
        merge.scanned(&slots, &mut sink, true);
        assert_eq!(
            (merge.next, merge.assembly.kept(), merge.examined),
            (3, 3, 30)
        );
        assert_eq!(seen, ["r0", "r1", "r2"]);
        assert!(resumes_at(&merge.assembly.finish(None), "r3"));
    }

    /// A page full at a chunk's end resumes past the rejected entities of the chunks after
    /// it: at the first match, the first entity not examined, or the first chunk not
    /// scanned — or where the next wave starts.
    #[test]
    fn a_full_page_resumes_after_what_it_rejected() {
        let rows: Vec<Entity> = (0..9).map(|i| Entity::new("p", format!("r{i}"))).collect();
        let jobs = [job("r0", "r3"), job("r3", "r6"), job("r6", "r9")];
        let full = |a: &mut Assembly| {
            assert_eq!(
                a.take(out(&rows[0..2], ChunkEnd::Exhausted).unwrap(), &jobs[0])
                    .len(),
                2
            );
            assert!(a.full() && !a.ended());
        };
        // A later chunk's first match.
        let mut a = Assembly::new(2);
        full(&mut a);
        assert!(
            a.take(out(&[], ChunkEnd::Exhausted).unwrap(), &jobs[1])
                .is_empty()
        );
        assert!(
            a.take(out(&rows[7..8], ChunkEnd::Exhausted).unwrap(), &jobs[2])
                .is_empty()
        );
        assert!(resumes_at(&a.finish(None), "r7"));
        // A chunk stopped before its end (not examined from there).
        let mut a = Assembly::new(2);
        full(&mut a);
        a.take(
            out(&[], ChunkEnd::Stopped(Key::new("p", "r4"))).unwrap(),
            &jobs[1],
        );
        assert!(resumes_at(&a.finish(None), "r4"));
        // A chunk not scanned: its start.
        let mut a = Assembly::new(2);
        full(&mut a);
        a.take(out(&[], ChunkEnd::Skipped).unwrap(), &jobs[1]);
        assert!(matches!(
            a.finish(None),
            WaveEnd::At(Resume::Position { range: 0, from: Some(k) }) if k.row_key == "r3"
        ));
        // Nothing matched after the page's rows: where the next chunk not run starts, or
        // after the wave.
        let mut a = Assembly::new(2);
        full(&mut a);
        assert!(matches!(
            a.finish(Some(&jobs[1])),
            WaveEnd::At(Resume::Position { from: Some(k), .. }) if k.row_key == "r3"
        ));
        let mut a = Assembly::new(2);
        full(&mut a);
        a.take(out(&[], ChunkEnd::Exhausted).unwrap(), &jobs[1]);
        a.take(out(&[], ChunkEnd::Exhausted).unwrap(), &jobs[2]);
        assert!(matches!(a.finish(None), WaveEnd::AfterWave));
        // A failed chunk after the page is full: the page resumes at it; before: an error.
        let mut a = Assembly::new(2);
        full(&mut a);
        assert_eq!(a.fail("boom", &jobs[1]), Ok(()));
        assert!(matches!(
            a.finish(None),
            WaveEnd::At(Resume::Position { .. })
        ));
        let mut a = Assembly::new(5);
        assert_eq!(a.fail("boom", &jobs[0]), Err("boom"));
    }
}

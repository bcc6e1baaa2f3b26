//! Waves: a page's key ranges cut into chunks of work ([`EntitySource::split`]) and scanned
//! — by the calling thread with helpers from the executor's pool (`threads.rs`), or by the
//! calling thread alone when the wave is tiny — with each chunk's matches merged back in
//! key order.
//!
//! **Sizing.** A wave holds about [`CHUNKS_PER_THREAD`] chunks per thread of `chunk_rows`
//! rows. The first wave is sized as if every row matched (at least
//! [`Tuning::initial_chunk_rows`] per chunk); later waves grow ×4 while nothing matched,
//! else to what the observed selectivity says the page still needs (at most ×4 until the
//! estimate rests on 32 matches, at most [`Tuning::max_chunk_rows`]). A `$top` page
//! therefore stops after a bounded look-ahead, while long scans quickly reach large, cheap
//! chunks.
//!
//! **Chunks.** Each chunk stops once it alone could fill the page (or when the budget runs
//! out, or at the first source error) and reports where it stopped; [`absorb`] appends
//! chunks in key order and finds where the page ends. A point range is answered by
//! [`EntitySource::get`].
//!
//! ```
//! use tableq_exec::{Executor, VecSource, PageOptions, Tuning};
//! use tableq_model::Entity;
//! use tableq_planner::{plan::{KeySet, Plan}, predicate::Predicate};
//! let snapshot = VecSource::new((0..100).map(|i| Entity::new("p", format!("r{i:03}"))));
//! // Tiny chunks, every wave on the pool: 100 rows in several chunks, merged in key order.
//! let tuning = Tuning { initial_chunk_rows: 4, max_chunk_rows: 16, small_wave_rows: 0 };
//! let executor = Executor::new(&snapshot).with_threads(2).unwrap().with_tuning(tuning);
//! let plan = Plan { ranges: KeySet::all(), residual: Predicate::TRUE, select: None, top: None };
//! let page = executor.execute_page(&plan, None, &PageOptions::unbounded()).unwrap();
//! assert_eq!((page.rows.len(), page.continuation), (100, None));
//! assert!(page.stats.chunks > 1);
//! assert!(page.rows.windows(2).all(|w| w[0].key() < w[1].key()));
//! ```

use super::continuation::{Resume, key_of};
use super::options::{Budget, Tuning};
use super::sink::Sink;
use super::threads::Threads;
use crate::compile::CompiledPredicate;
use crate::key::{Key, Scan};
use crate::result::ExecStats;
use crate::source::{EntitySource, SourceRow};
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use tableq_planner::plan::KeyRange;

/// Most chunks in one wave (many small ranges).
const MAX_WAVE_CHUNKS: usize = 256;
/// Smallest chunk the selectivity estimate may ask for.
const MIN_ADAPTIVE_CHUNK_ROWS: usize = 64;
/// Chunks per thread in a wave: more than one lets work stealing even out slow chunks.
const CHUNKS_PER_THREAD: usize = 4;
/// Matches from which the observed selectivity sizes the next wave without a growth cap.
const TRUSTED_SAMPLE: usize = 32;

/// A chunk of work: keys `>= from` and `< until` of the plan's range number `range`.
pub(super) struct Job {
    range: usize,
    from: Option<Key>,
    until: Option<Key>,
    /// A point range, answered by `get`.
    point: bool,
}

/// The chunks of one wave and the rows they are estimated to hold.
pub(super) struct Wave {
    pub(super) jobs: Vec<Job>,
    estimate: usize,
}

/// What a wave produced: how many matches it handed to the sink, and where the page ends if
/// it ends in this wave.
pub(super) struct WaveOut {
    pub(super) kept: usize,
    pub(super) resume: Option<Resume>,
}

enum ChunkEnd {
    /// Every row of the chunk was examined.
    Exhausted,
    /// Stopped before this row (not yet examined).
    Stopped(Key),
}

struct ChunkOut<R> {
    rows: Vec<R>,
    examined: u64,
    end: ChunkEnd,
}

impl<R> Default for ChunkOut<R> {
    fn default() -> ChunkOut<R> {
        ChunkOut {
            rows: Vec::new(),
            examined: 0,
            end: ChunkEnd::Exhausted,
        }
    }
}

/// What scanning a chunk of source `S` gave.
type ChunkResult<'a, S> =
    Result<ChunkOut<<S as EntitySource>::Row<'a>>, <S as EntitySource>::Error>;

/// A page's position in its ranges and the size of its next wave's chunks.
pub(super) struct Waves<'p> {
    ranges: &'p [KeyRange],
    /// The range the next wave starts in.
    range: usize,
    /// Where in that range (`None`: at its start).
    from: Option<Key>,
    /// The last range counted in [`ExecStats::ranges`].
    counted_range: Option<usize>,
    chunk_rows: usize,
    /// The threads the waves run on.
    threads: &'p Threads,
    tuning: Tuning,
    started: bool,
}

impl<'p> Waves<'p> {
    /// The waves of a page of at most `limit` rows over `ranges` (sorted, disjoint,
    /// non-empty), starting at `from`, run on `threads`.
    pub(super) fn new(
        ranges: &'p [KeyRange],
        from: Option<Key>,
        limit: usize,
        threads: &'p Threads,
        tuning: Tuning,
    ) -> Waves<'p> {
        // The first wave could fill the page only if every row matched: size it for that
        // (at least `initial_chunk_rows` per chunk), so big pages start with big chunks.
        let chunk_rows = (limit / (threads.count * CHUNKS_PER_THREAD))
            .clamp(tuning.initial_chunk_rows, tuning.max_chunk_rows);
        Waves {
            ranges,
            range: 0,
            from,
            counted_range: None,
            chunk_rows,
            threads,
            tuning,
            started: false,
        }
    }

    /// Whether every range was handed out.
    pub(super) fn done(&self) -> bool {
        self.range >= self.ranges.len()
    }

    /// Whether a wave was built already.
    pub(super) fn started(&self) -> bool {
        self.started
    }

    /// Where the next wave would start.
    pub(super) fn position(self) -> Resume {
        Resume::Position {
            range: self.range,
            from: self.from,
        }
    }

    /// The next wave's chunks: points, and splits of the ranges from the current position
    /// (counting every range entered in `stats.ranges`). Fails when a split fails.
    pub(super) fn next_wave<S: EntitySource + ?Sized>(
        &mut self,
        source: &S,
        stats: &mut ExecStats,
    ) -> Result<Wave, S::Error> {
        self.started = true;
        let mut jobs: Vec<Job> = Vec::new();
        let mut estimate = 0usize;
        let wave_rows = self
            .chunk_rows
            .saturating_mul(self.threads.count * CHUNKS_PER_THREAD);
        while self.range < self.ranges.len() && jobs.len() < MAX_WAVE_CHUNKS && estimate < wave_rows
        {
            let r = &self.ranges[self.range];
            if self.counted_range != Some(self.range) {
                self.counted_range = Some(self.range);
                stats.ranges += 1;
            }
            if r.as_point().is_some() {
                jobs.push(Job {
                    range: self.range,
                    from: self.from.clone(),
                    until: None,
                    point: true,
                });
                estimate += 1;
                self.range += 1;
                continue;
            }
            let scan = Scan {
                range: r,
                from: self.from.as_ref(),
                until: None,
            };
            let want = (wave_rows - estimate)
                .div_ceil(self.chunk_rows)
                .clamp(1, MAX_WAVE_CHUNKS - jobs.len());
            let chunks = source.split(scan, self.chunk_rows, want)?;
            let complete = chunks.last().is_none_or(|c| c.until.is_none());
            let next_from = if complete {
                None
            } else {
                chunks.last().and_then(|c| c.until.clone())
            };
            for c in chunks {
                estimate = estimate.saturating_add(c.rows.unwrap_or(self.chunk_rows));
                jobs.push(Job {
                    range: self.range,
                    from: c.from.or_else(|| self.from.clone()),
                    until: c.until,
                    point: false,
                });
            }
            // A finished range keeps `from`: it lies before every later range's keys, or is
            // a continuation beyond them that the next ranges must still respect.
            if complete {
                self.range += 1;
            } else {
                self.from = next_from;
            }
        }
        Ok(Wave { jobs, estimate })
    }

    /// Sizes the next wave's chunks: ×4 while nothing matched (long scans reach large,
    /// cheap chunks fast), else no more than the rows the page still needs at the
    /// selectivity observed so far, plus a margin — at most ×4 while that selectivity rests
    /// on fewer than [`TRUSTED_SAMPLE`] matches: a `$top` page stops early, a selective
    /// scan takes few waves.
    pub(super) fn adapt(&mut self, limit: usize, produced: usize, examined: u64) {
        let grown = self
            .chunk_rows
            .saturating_mul(4)
            .min(self.tuning.max_chunk_rows);
        self.chunk_rows = if produced == 0 || examined == 0 {
            grown
        } else {
            let most = if produced >= TRUSTED_SAMPLE {
                self.tuning.max_chunk_rows
            } else {
                grown
            };
            let missing = (limit - produced) as f64;
            let needed = missing * examined as f64 / produced as f64 * 1.25;
            let per_chunk = needed / (self.threads.count * CHUNKS_PER_THREAD) as f64;
            (per_chunk.ceil() as usize).clamp(MIN_ADAPTIVE_CHUNK_ROWS.min(grown), most)
        };
    }
}

impl Waves<'_> {
    /// Scans the chunks of a wave and hands at most `limit` matches to `sink`, in key order;
    /// `Some` resume position when the page ends in this wave.
    ///
    /// A source error in a chunk fails the wave unless the page ends in an earlier chunk
    /// (then the failed chunk's rows would have been discarded anyway): the outcome is the
    /// one a sequential scan would meet. Chunks running in parallel are not cancelled. The
    /// sink may have been handed the rows of earlier chunks when the error comes back.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn run<'a, S: EntitySource + ?Sized>(
        &'a self,
        source: &'a S,
        wave: &'a Wave,
        predicate: &CompiledPredicate,
        limit: usize,
        budget: &Budget,
        stats: &mut ExecStats,
        sink: &mut dyn Sink<S>,
    ) -> Result<WaveOut, S::Error> {
        let jobs = &wave.jobs;
        let threads = self.threads.count;
        if threads <= 1 || jobs.len() == 1 || wave.estimate <= self.tuning.small_wave_rows {
            // A small wave: its chunks one after the other, up to the page's end.
            let mut kept = Vec::new();
            let mut resume = None;
            for job in jobs {
                let out = self.run_chunk(source, job, predicate, limit - kept.len(), budget)?;
                stats.examined += out.examined;
                resume = absorb(&mut kept, out, job, limit);
                if resume.is_some() {
                    break;
                }
            }
            let out = WaveOut {
                kept: kept.len(),
                resume,
            };
            sink.wave(kept);
            return Ok(out);
        }
        // Every chunk of the wave is scanned (each up to the page's whole limit), then
        // merged in key order. The calling thread scans chunks too, claiming them in key
        // order with the pool's helpers, if it lends any: when the pool is busy with other
        // pages, the calling thread scans the wave alone instead of waiting for a helper
        // that would find nothing left. Once it has no chunk left to claim, it merges the
        // chunks already scanned (handing their rows to the sink) while the helpers finish
        // theirs. Who scans a chunk never changes the page.
        let next = AtomicUsize::new(0);
        let slots: Vec<Mutex<Option<ChunkResult<'a, S>>>> =
            jobs.iter().map(|_| Mutex::new(None)).collect();
        let work = || {
            loop {
                let i = next.fetch_add(1, AtomicOrdering::Relaxed);
                let Some(job) = jobs.get(i) else { break };
                let out = self.run_chunk(source, job, predicate, limit, budget);
                *lock(&slots[i]) = Some(out);
            }
        };
        let mut merge = Merge::<S>::new(jobs, limit);
        let lent = self
            .threads
            .helpers
            .reserve((threads - 1).min(jobs.len() - 1), threads - 1);
        match (&lent, &self.threads.pool) {
            (None, _) => work(),
            (Some(lent), Some(pool)) => pool.in_place_scope(|s| {
                share(s, lent.count(), &work);
                merge.scanned(&slots, sink, false);
            }),
            (Some(lent), None) => rayon::in_place_scope(|s| {
                share(s, lent.count(), &work);
                merge.scanned(&slots, sink, false);
            }),
        }
        drop(lent);
        merge.scanned(&slots, sink, true);
        // Every chunk was read, including work past the page's end.
        stats.examined += merge.examined;
        match merge.end {
            Some(Err(e)) => Err(e),
            Some(Ok(resume)) => Ok(WaveOut {
                kept: merge.kept,
                resume: Some(resume),
            }),
            None => Ok(WaveOut {
                kept: merge.kept,
                resume: None,
            }),
        }
    }

    /// Scans one chunk, keeping at most `limit` matches; stops at the first source error.
    fn run_chunk<'a, S: EntitySource + ?Sized>(
        &'a self,
        source: &'a S,
        job: &'a Job,
        predicate: &CompiledPredicate,
        limit: usize,
        budget: &Budget,
    ) -> Result<ChunkOut<S::Row<'a>>, S::Error> {
        let range = &self.ranges[job.range];
        if job.point {
            let mut out = ChunkOut {
                rows: Vec::new(),
                examined: 0,
                end: ChunkEnd::Exhausted,
            };
            if let Some((pk, rk)) = range.as_point()
                && job.from.as_ref().is_none_or(|f| f.cmp_pair(pk, rk).is_le())
                && let Some(row) = source.get(pk, rk)?
            {
                out.examined = 1;
                if predicate.eval(&row) {
                    out.rows.push(row);
                }
            }
            return Ok(out);
        }
        let scan = Scan {
            range,
            from: job.from.as_ref(),
            until: job.until.as_ref(),
        };
        let mut rows = Vec::new();
        let mut examined = 0u64;
        let mut end = ChunkEnd::Exhausted;
        // A chunk stops before the row after its `limit`-th match (or after the budget ran
        // out): that row is not examined, its key is where the page resumes. A source error
        // ends the chunk (returned by `scan_each`).
        if !budget.enabled() {
            // The hot loop: no budget to account.
            source.scan_each(scan, |row| {
                if rows.len() >= limit {
                    end = ChunkEnd::Stopped(key_of(&row));
                    return ControlFlow::Break(());
                }
                examined += 1;
                if predicate.eval(&row) {
                    rows.push(row);
                }
                ControlFlow::Continue(())
            })?;
        } else {
            let mut since_tick = 0u64;
            let scanned = source.scan_each(scan, |row| {
                if rows.len() >= limit {
                    end = ChunkEnd::Stopped(key_of(&row));
                    return ControlFlow::Break(());
                }
                if since_tick >= budget.interval {
                    let stop = budget.tick(since_tick);
                    since_tick = 0;
                    if stop {
                        end = ChunkEnd::Stopped(key_of(&row));
                        return ControlFlow::Break(());
                    }
                }
                examined += 1;
                since_tick += 1;
                if predicate.eval(&row) {
                    rows.push(row);
                }
                ControlFlow::Continue(())
            });
            if since_tick > 0 {
                budget.tick(since_tick);
            }
            scanned?;
        }
        Ok(ChunkOut {
            rows,
            examined,
            end,
        })
    }
}

/// Runs `work` on the calling thread and on `helpers` tasks of the scope's pool.
fn share<'scope, F: Fn() + Sync>(scope: &rayon::Scope<'scope>, helpers: usize, work: &'scope F) {
    for _ in 0..helpers {
        scope.spawn(move |_| work());
    }
    work();
}

/// A chunk result slot, whether or not a thread panicked while holding it.
fn lock<T>(slot: &Mutex<T>) -> MutexGuard<'_, T> {
    slot.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The in-order merge of a parallel wave's chunks: the page's rows go to the sink chunk by
/// chunk, up to where the page ends or the first source error; the rows of later chunks
/// are dropped, their examined entities still counted.
struct Merge<'w, S: EntitySource + ?Sized> {
    jobs: &'w [Job],
    limit: usize,
    /// Chunks merged so far.
    next: usize,
    /// Rows handed to the sink.
    kept: usize,
    examined: u64,
    /// Where the page ends, or the error that ends the wave.
    end: Option<Result<Resume, S::Error>>,
}

impl<'w, S: EntitySource + ?Sized> Merge<'w, S> {
    fn new(jobs: &'w [Job], limit: usize) -> Merge<'w, S> {
        Merge {
            jobs,
            limit,
            next: 0,
            kept: 0,
            examined: 0,
            end: None,
        }
    }

    /// Merges the chunks scanned so far, in key order, up to the first one not scanned yet
    /// (with `all`, every chunk: the wave is over, and a chunk without a result, which
    /// only a panic leaves, counts as empty).
    fn scanned<'a>(
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
                None if all => Ok(ChunkOut::default()),
                None => return,
            };
            let job = &self.jobs[self.next];
            self.next += 1;
            let out = match out {
                Ok(out) => out,
                Err(e) => {
                    if self.end.is_none() {
                        self.end = Some(Err(e));
                    }
                    continue;
                }
            };
            self.examined += out.examined;
            if self.end.is_some() {
                continue;
            }
            let mut rows = Vec::new();
            let resume = absorb(&mut rows, out, job, self.limit - self.kept);
            self.kept += rows.len();
            sink.wave(rows);
            self.end = resume.map(Ok);
        }
    }
}

/// Appends a chunk's matches to the wave's rows; `Some` when the page ends in this chunk.
fn absorb<R: SourceRow>(
    kept: &mut Vec<R>,
    out: ChunkOut<R>,
    job: &Job,
    limit: usize,
) -> Option<Resume> {
    let need = limit - kept.len();
    let ChunkOut { mut rows, end, .. } = out;
    if rows.len() > need {
        let next = key_of(&rows[need]);
        rows.truncate(need);
        kept.extend(rows);
        return Some(Resume::At(next));
    }
    let full = rows.len() == need;
    kept.extend(rows);
    match end {
        ChunkEnd::Stopped(key) => Some(Resume::At(key)),
        ChunkEnd::Exhausted if full => Some(match &job.until {
            Some(until) if !job.point => Resume::Position {
                range: job.range,
                from: Some(until.clone()),
            },
            _ => Resume::Position {
                range: job.range + 1,
                from: job.from.clone(),
            },
        }),
        ChunkEnd::Exhausted => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::VecSource;
    use crate::executor::sink::Visit;
    use crate::source::EntityRef;
    use tableq_model::Entity;

    fn job(until: &str) -> Job {
        Job {
            range: 0,
            from: None,
            until: Some(Key::new("p", until)),
            point: false,
        }
    }

    fn out(rows: &[Entity]) -> ChunkResult<'_, VecSource> {
        Ok(ChunkOut {
            rows: rows.iter().map(EntityRef).collect(),
            examined: 10,
            end: ChunkEnd::Exhausted,
        })
    }

    /// Chunks merge in key order as they become available, stop at the page's end and
    /// still count what later chunks examined.
    #[test]
    fn chunks_merge_in_order_as_they_are_scanned() {
        let rows: Vec<Entity> = (0..6).map(|i| Entity::new("p", format!("r{i}"))).collect();
        let jobs = [job("r2"), job("r4"), job("r6")];
        let slots: Vec<Mutex<Option<ChunkResult<'_, VecSource>>>> =
            (0..3).map(|_| Mutex::new(None)).collect();
        let mut seen = Vec::new();
        let mut sink = Visit {
            visit: |row: crate::RowView<'_>| seen.push(row.row().row_key().to_owned()),
            select: None,
        };
        let mut merge = Merge::<VecSource>::new(&jobs, 3);
        // Only the second chunk is scanned: nothing can be merged yet.
        *lock(&slots[1]) = Some(out(&rows[2..4]));
        merge.scanned(&slots, &mut sink, false);
        assert_eq!((merge.next, merge.kept), (0, 0));
        // The first one too: both merge; the page ends in the second (3 of its 4 rows).
        *lock(&slots[0]) = Some(out(&rows[0..2]));
        merge.scanned(&slots, &mut sink, false);
        assert_eq!((merge.next, merge.kept), (2, 3));
        assert!(matches!(&merge.end, Some(Ok(Resume::At(k))) if k.row_key == "r3"));
        // The third chunk's rows are dropped, its examined entities counted.
        *lock(&slots[2]) = Some(out(&rows[4..6]));
        merge.scanned(&slots, &mut sink, true);
        assert_eq!((merge.next, merge.kept, merge.examined), (3, 3, 30));
        assert_eq!(seen, ["r0", "r1", "r2"]);
    }
}

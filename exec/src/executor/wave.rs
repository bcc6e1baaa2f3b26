//! Waves: a page's key ranges cut into chunks of work ([`EntitySource::split`]) and scanned
//! — by the calling thread with helpers from the executor's pool (`threads.rs`), or by the
//! calling thread alone when the wave is small — with each chunk's matches merged back in
//! key order (module `merge`).
//!
//! **Sizing: read what the page needs, not more.** A sequential wave stops exactly at the
//! page's end; a parallel one reads ahead, and what it reads past the page's last match
//! is read again by the next page (unless it was rejected: see module `merge`). So a wave
//! covers about the rows expected to hold *fewer* matches than the page still needs:
//!
//! * the first wave, as if every row matched: as many rows as the page has room for (a
//!   wave that small cannot overshoot);
//! * then, while nothing matched, ×4 per wave (long selective scans quickly reach large,
//!   cheap chunks);
//! * else the rows the observed selectivity says [`SAFETY`] × (m − 2√m) matches need, m
//!   being the matches the page still misses (two standard deviations of a count below
//!   m: the wave rarely holds more than m, and the last few matches are found on the
//!   calling thread) — at most ×4 per wave until the estimate rests on
//!   [`TRUSTED_SAMPLE`] matches.
//!
//! A wave of at most [`Tuning::small_wave_rows`] rows runs on the calling thread alone (and
//! then reads up to that many rows: it stops at the page's end anyway); a larger one is cut
//! into about [`CHUNKS_PER_THREAD`] chunks per thread, of at most
//! [`Tuning::max_chunk_rows`] rows, never more rows in all than the wave should cover
//! (chunks of the source's own size, e.g. a storage block, are not cut). When a parallel
//! wave still overshoots (the selectivity rose), a later chunk waits at twice the matches
//! the estimate expects of it for the chunks before it, and stops within about
//! [`CUT_INTERVAL`](super::chunk::CUT_INTERVAL) rows of being known useless (module
//! `chunk`).
//!
//! A point range is answered by [`EntitySource::get`].
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
//! // Pages of 10 over the same waves: every row examined once.
//! let (rows, stats) = executor.execute_all(&plan, &PageOptions::default().with_page_size(10)).unwrap();
//! assert_eq!((rows.len(), stats.examined), (100, 100));
//! ```

use super::chunk::{ChunkResult, Finished, Job, MIN_QUOTA, Room, scan_chunk};
use super::continuation::Resume;
use super::merge::{Assembly, Merge, WaveEnd, lock};
use super::options::{Budget, Tuning};
use super::sink::Sink;
use super::threads::Threads;
use crate::compile::CompiledPredicate;
use crate::key::{Key, Scan};
use crate::result::ExecStats;
use crate::source::EntitySource;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};
use tableq_planner::plan::KeyRange;

/// Most chunks in one wave (many small ranges).
const MAX_WAVE_CHUNKS: usize = 256;
/// Smallest chunk of a parallel wave (unless the tuning's first chunk is smaller).
const MIN_CHUNK_ROWS: usize = 64;
/// Chunks per thread in a parallel wave: more than one lets work stealing even out slow
/// chunks.
const CHUNKS_PER_THREAD: usize = 4;
/// Matches from which the observed selectivity sizes the next wave without a growth cap.
const TRUSTED_SAMPLE: usize = 32;
/// The share of the remaining matches (less two standard deviations) a wave sized by the
/// observed selectivity is expected to hold: below 1, so that a somewhat higher
/// selectivity than observed still does not carry the wave past the page's end.
const SAFETY: f64 = 0.75;

/// The chunks of one wave, the rows they are estimated to hold, and the quota of matches
/// of each chunk after the first (module `chunk`).
pub(super) struct Wave {
    pub(super) jobs: Vec<Job>,
    estimate: usize,
    quota: usize,
}

/// A page's position in its ranges and the size of its next wave.
pub(super) struct Waves<'p> {
    ranges: &'p [KeyRange],
    /// The range the next wave starts in.
    range: usize,
    /// Where in that range (`None`: at its start).
    from: Option<Key>,
    /// The last range counted in [`ExecStats::ranges`].
    counted_range: Option<usize>,
    /// The rows the next wave should cover.
    wave_rows: usize,
    /// The share of rows the next wave is sized to expect matching (1 for the first wave,
    /// 0 while nothing matched).
    density: f64,
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
        let mut waves = Waves {
            ranges,
            range: 0,
            from,
            counted_range: None,
            wave_rows: 0,
            density: 1.0,
            threads,
            tuning,
            started: false,
        };
        // As if every row matched: a wave no larger than the page cannot overshoot it.
        waves.wave_rows = limit.clamp(1, waves.most_wave_rows());
        waves
    }

    /// The most rows a wave covers.
    fn most_wave_rows(&self) -> usize {
        self.tuning
            .max_chunk_rows
            .saturating_mul(self.threads.count * CHUNKS_PER_THREAD)
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
        let threads = self.threads.count;
        let small = threads <= 1 || self.wave_rows <= self.tuning.small_wave_rows;
        if small {
            // On the calling thread, stopping at the page's end: reading a little more
            // than the estimate costs nothing and saves a wave.
            self.wave_rows = self
                .wave_rows
                .max(self.tuning.small_wave_rows)
                .max(self.tuning.initial_chunk_rows);
        }
        let wave_rows = self.wave_rows;
        let chunk_rows = if small {
            wave_rows.min(self.tuning.max_chunk_rows)
        } else {
            wave_rows.div_ceil(threads * CHUNKS_PER_THREAD).clamp(
                MIN_CHUNK_ROWS.min(self.tuning.initial_chunk_rows),
                self.tuning.max_chunk_rows,
            )
        };
        let mut jobs: Vec<Job> = Vec::new();
        let mut estimate = 0usize;
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
                .div_ceil(chunk_rows)
                .clamp(1, MAX_WAVE_CHUNKS - jobs.len());
            let chunks = source.split(scan, chunk_rows, want)?;
            let offered = chunks.len();
            // The end of the last chunk taken (`None`: the end of the range).
            let mut taken: Option<Option<Key>> = None;
            for c in chunks {
                let rows = c.rows.unwrap_or(chunk_rows);
                // Never more rows than the wave should cover (but at least one chunk).
                if !jobs.is_empty() && estimate.saturating_add(rows) > wave_rows {
                    break;
                }
                estimate = estimate.saturating_add(rows);
                taken = Some(c.until.clone());
                jobs.push(Job {
                    range: self.range,
                    from: c.from.or_else(|| self.from.clone()),
                    until: c.until,
                    point: false,
                });
            }
            match taken {
                // Nothing of this range fits: the wave is full.
                None if offered > 0 => break,
                // A finished range keeps `from`: it lies before every later range's keys,
                // or is a continuation beyond them that the next ranges must still respect.
                None | Some(None) => self.range += 1,
                Some(Some(until)) => self.from = Some(until),
            }
        }
        // A chunk expecting `e` matches waits for the chunks before it at 2e (module `chunk`).
        let expected = chunk_rows as f64 * self.density;
        let quota = ((2.0 * expected).ceil() as usize).max(MIN_QUOTA);
        Ok(Wave {
            jobs,
            estimate,
            quota,
        })
    }

    /// Sizes the next wave (see the module docs) after `examined` entities gave `produced`
    /// of the page's `limit` rows.
    pub(super) fn adapt(&mut self, limit: usize, produced: usize, examined: u64) {
        let most = self.most_wave_rows();
        let grown = self.wave_rows.saturating_mul(4).min(most);
        self.density = if examined == 0 {
            1.0
        } else {
            produced as f64 / examined as f64
        };
        self.wave_rows = if produced == 0 || examined == 0 {
            grown
        } else {
            let cap = if produced >= TRUSTED_SAMPLE {
                most
            } else {
                grown
            };
            // Matches the wave should expect: two standard deviations (of a count with
            // that mean) below what is missing, so that it rarely holds more; a few
            // missing matches are found on the calling thread, exactly.
            let missing = (limit - produced) as f64;
            let expect = (missing - 2.0 * missing.sqrt()).max(0.0) * SAFETY;
            let needed = expect * examined as f64 / produced as f64;
            (needed.ceil() as usize).clamp(1, cap)
        };
    }
}

impl Waves<'_> {
    /// Scans the chunks of a wave and hands at most `limit` matches to `sink`, in key order;
    /// returns how many it handed over and whether (and where) the page ends.
    ///
    /// A source error in a chunk fails the wave unless the page is full before that chunk
    /// (then the page resumes at the chunk): the outcome is the one a sequential scan would
    /// meet. The sink may have been handed the rows of earlier chunks when the error comes
    /// back.
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
    ) -> Result<(usize, WaveEnd), S::Error> {
        let jobs = &wave.jobs;
        let threads = self.threads.count;
        if threads <= 1 || jobs.len() == 1 || wave.estimate <= self.tuning.small_wave_rows {
            // A small wave: its chunks one after the other, each stopping at the page's
            // end; nothing is read past it.
            let mut assembly = Assembly::new(limit);
            let mut kept = Vec::new();
            let mut next = None;
            for (i, job) in jobs.iter().enumerate() {
                if assembly.full() {
                    next = Some(i);
                    break;
                }
                let room = Room::Fixed(limit - assembly.kept());
                let out = scan_chunk(source, self.ranges, job, predicate, &room, budget)?;
                stats.examined += out.examined;
                kept.extend(assembly.take(out, job));
            }
            let kept_rows = kept.len();
            sink.wave(kept);
            return Ok((kept_rows, assembly.finish(next.map(|i| &jobs[i]))));
        }
        // The chunks are claimed in key order by the calling thread and the pool's helpers,
        // if it lends any (when the pool is busy with other pages, the calling thread scans
        // the wave alone instead of waiting for a helper that would find nothing left),
        // each keeping no more than the room the chunks before it leave (module `chunk`).
        // Before each chunk it claims, and once it has none left to claim, the calling
        // thread merges the chunks already scanned in key order (handing their rows to the
        // sink, which may render them: work the helpers cannot share), so the helpers go on
        // scanning while it does. Who scans a chunk never changes the page.
        let next = AtomicUsize::new(0);
        let counts: Vec<AtomicUsize> = jobs.iter().map(|_| AtomicUsize::new(0)).collect();
        let finished = Finished::new(jobs.len());
        // A wave of fewer rows than the page's room cannot fill it: no chunk need wait.
        let quota = if wave.estimate <= limit {
            usize::MAX
        } else {
            wave.quota
        };
        let slots: Vec<Mutex<Option<ChunkResult<'a, S>>>> =
            jobs.iter().map(|_| Mutex::new(None)).collect();
        // Claims the next chunk and scans it; false when none is left.
        let claim = || {
            let i = next.fetch_add(1, AtomicOrdering::Relaxed);
            let Some(job) = jobs.get(i) else {
                return false;
            };
            let _finished = finished.guard(i);
            let room = Room::Shared {
                counts: &counts,
                finished: &finished,
                index: i,
                limit,
                quota,
            };
            let out = scan_chunk(source, self.ranges, job, predicate, &room, budget);
            *lock(&slots[i]) = Some(out);
            true
        };
        let helper = || while claim() {};
        let mut merge = Merge::<S>::new(jobs, limit);
        let mut caller = |merge: &mut Merge<'_, S>| {
            loop {
                merge.scanned(&slots, sink, false);
                if !claim() {
                    break;
                }
            }
            merge.scanned(&slots, sink, false);
        };
        let lent = self
            .threads
            .helpers
            .reserve((threads - 1).min(jobs.len() - 1), threads - 1);
        match (&lent, &self.threads.pool) {
            (None, _) => caller(&mut merge),
            (Some(lent), Some(pool)) => pool.in_place_scope(|s| {
                spawn_helpers(s, lent.count(), &helper);
                caller(&mut merge);
            }),
            (Some(lent), None) => rayon::in_place_scope(|s| {
                spawn_helpers(s, lent.count(), &helper);
                caller(&mut merge);
            }),
        }
        drop(lent);
        merge.scanned(&slots, sink, true);
        // Every entity a chunk examined counts, including work past the page's end.
        stats.examined += merge.examined;
        match merge.error {
            Some(e) => Err(e),
            None => Ok((merge.assembly.kept(), merge.assembly.finish(None))),
        }
    }
}

/// Runs `work` on `helpers` tasks of the scope's pool.
fn spawn_helpers<'scope, F: Fn() + Sync>(
    scope: &rayon::Scope<'scope>,
    helpers: usize,
    work: &'scope F,
) {
    for _ in 0..helpers {
        scope.spawn(move |_| work());
    }
}

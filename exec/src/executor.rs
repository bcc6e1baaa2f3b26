//! The executor: runs a [`Plan`] over an [`EntitySource`] page by page.
//!
//! # How a page is computed
//!
//! 1. The residual is compiled for the source ([`CompiledPredicate`]).
//! 2. The plan's ranges (sorted, disjoint and non-empty by construction, see
//!    [`tableq_planner::plan::KeySet`]) are walked in key order from the continuation. Work is cut into **waves** of chunks
//!    ([`EntitySource::split`]): a wave holds about 4 chunks per thread of `chunk_rows` rows.
//!    The first wave is sized as if every row matched (at least 1 Ki rows per chunk); later
//!    waves grow ×4 while nothing matched, else to what the observed selectivity says the page
//!    still needs (at most ×2, at most 128 Ki rows per chunk). A `$top` page
//!    therefore stops after a bounded look-ahead (the first page of a huge scan reads a few
//!    thousand rows, not the table), while long scans quickly reach large, cheap chunks.
//! 3. The chunks of a wave are scanned in parallel on the executor's rayon pool, each
//!    stopping once it alone could fill the page; results are merged back in key order.
//!    Tiny waves (point lookups, a few small ranges) run on the calling thread — no rayon
//!    overhead — and a point range is answered by [`EntitySource::get`].
//! 4. The page ends after `limit` rows, or when the work budget (entities examined, deadline)
//!    runs out, with a **continuation**: the key of the next entity to examine, inclusive.
//!    Resuming there with the same plan yields exactly the remaining results; entities
//!    before it are never revisited, so inserts and deletes between pages cannot cause a
//!    result to be skipped or repeated.
//!
//! ```
//! use tableq_exec::{Executor, MemorySource, PageOptions};
//! use tableq_model::{CmpOp, Entity, Value};
//! use tableq_planner::{plan::{KeySet, Plan}, predicate::Predicate};
//!
//! let table = MemorySource::from_entities((0..100).map(|i| {
//!     let mut e = Entity::new(format!("p{}", i % 3), format!("r{i:03}"));
//!     e.set("Age", Value::Int32(i));
//!     e
//! })).unwrap();
//! let plan = Plan {
//!     ranges: KeySet::all(),
//!     residual: Predicate::compare("Age", CmpOp::Ge, Value::Int32(50)),
//!     select: Some(vec!["Age".into()]),
//!     top: Some(20),
//! };
//! let snapshot = table.snapshot();
//! let executor = Executor::new(&snapshot);
//! let pages: Vec<_> = executor.pages(&plan, PageOptions::default()).collect::<Result<_, _>>().unwrap();
//! assert_eq!(pages.iter().map(|p| p.rows.len()).sum::<usize>(), 50);
//! assert!(pages.last().unwrap().continuation.is_none());
//! ```

use crate::compile::CompiledPredicate;
use crate::key::{Key, Scan};
use crate::result::{ExecStats, Page, ResultRow, RowView};
use crate::source::{EntitySource, SourceRow};
use rayon::prelude::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering as AtomicOrdering};
use std::time::Instant;
use tableq_planner::plan::{KeyRange, Plan};

/// The page size without `$top` (the service's).
pub const DEFAULT_PAGE_SIZE: usize = 1000;
/// Most chunks in one wave (many small ranges).
const MAX_WAVE_CHUNKS: usize = 256;
/// Smallest chunk the selectivity estimate may ask for.
const MIN_ADAPTIVE_CHUNK_ROWS: usize = 64;
/// Chunks per thread in a wave: more than one lets work stealing even out slow chunks.
const CHUNKS_PER_THREAD: usize = 4;
/// Results are converted to owned entities in parallel from this many rows per wave on
/// (below it, on the calling thread: cheaper for the allocator).
const PARALLEL_MATERIALIZE_ROWS: usize = 256;

/// Why execution failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExecError {
    /// Invalid [`PageOptions`] or thread count.
    #[error("invalid execution option: {0}")]
    InvalidOption(String),
    /// The thread pool could not be created.
    #[error("cannot create the executor's thread pool: {0}")]
    ThreadPool(#[from] rayon::ThreadPoolBuildError),
}

/// Per-page options: page size and work budget.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageOptions {
    /// Most rows per page. `None`: the plan's `$top`, else [`DEFAULT_PAGE_SIZE`]; when both
    /// this and `$top` are set, the smaller wins. Use [`PageOptions::unbounded`] for "all
    /// results in one page" (without `$top`).
    pub page_size: Option<usize>,
    /// Stop the page after about this many entities were examined (read from the source).
    /// Checked periodically by every worker, so a page may examine somewhat more; at least
    /// one entity is always examined, so paging always progresses.
    pub max_examined: Option<u64>,
    /// Stop the page once this instant has passed (checked like `max_examined`).
    pub deadline: Option<Instant>,
}

impl PageOptions {
    /// No page-size limit besides `$top`, no budget.
    pub fn unbounded() -> PageOptions {
        PageOptions {
            page_size: Some(usize::MAX),
            ..PageOptions::default()
        }
    }

    /// Sets the page size.
    pub fn with_page_size(mut self, rows: usize) -> PageOptions {
        self.page_size = Some(rows);
        self
    }

    /// Sets the examined-entities budget.
    pub fn with_max_examined(mut self, entities: u64) -> PageOptions {
        self.max_examined = Some(entities);
        self
    }

    /// Sets the deadline.
    pub fn with_deadline(mut self, deadline: Instant) -> PageOptions {
        self.deadline = Some(deadline);
        self
    }
}

/// Work-splitting knobs of an [`Executor`]. The defaults suit in-memory tables; tests set
/// tiny values to exercise parallel merging on small data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tuning {
    /// Rows per chunk in a page's first wave (default 1024); doubles each wave. A wave
    /// holds about 4 chunks per thread.
    pub initial_chunk_rows: usize,
    /// Largest chunk (default 2¹⁷ rows).
    pub max_chunk_rows: usize,
    /// A wave estimated at no more rows than this runs on the calling thread (default 2048).
    pub small_wave_rows: usize,
}

impl Default for Tuning {
    fn default() -> Tuning {
        Tuning {
            initial_chunk_rows: 1024,
            max_chunk_rows: 1 << 17,
            small_wave_rows: 2048,
        }
    }
}

/// Runs plans over one source (see the module docs).
#[derive(Debug, Clone)]
pub struct Executor<'s, S: ?Sized> {
    source: &'s S,
    pool: Option<Arc<rayon::ThreadPool>>,
    threads: usize,
    tuning: Tuning,
}

/// A chunk of work: keys `>= from` and `< until` of the plan's range number `range`.
struct Job {
    range: usize,
    from: Option<Key>,
    until: Option<Key>,
    point: bool,
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

/// Where the next page starts.
enum Resume {
    /// A key that exists (or a position no result lies before).
    At(Key),
    /// Resume scanning the ranges from number `range` at `from`: resolved to the next
    /// existing key.
    Position { range: usize, from: Option<Key> },
}

struct Budget {
    max: Option<u64>,
    deadline: Option<Instant>,
    examined: AtomicU64,
    stop: AtomicBool,
    interval: u64,
}

impl Budget {
    fn new(options: &PageOptions, threads: usize) -> Budget {
        let interval = match options.max_examined {
            Some(max) => (max / (4 * threads as u64).max(1)).clamp(1, 1024),
            None => 1024,
        };
        Budget {
            max: options.max_examined,
            deadline: options.deadline,
            examined: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            interval,
        }
    }

    fn enabled(&self) -> bool {
        self.max.is_some() || self.deadline.is_some()
    }

    /// Records `n` examined entities; whether the page must stop.
    fn tick(&self, n: u64) -> bool {
        if let Some(max) = self.max
            && self.examined.fetch_add(n, AtomicOrdering::Relaxed) + n >= max
        {
            self.stop.store(true, AtomicOrdering::Relaxed);
        }
        if let Some(deadline) = self.deadline
            && Instant::now() >= deadline
        {
            self.stop.store(true, AtomicOrdering::Relaxed);
        }
        self.stop.load(AtomicOrdering::Relaxed)
    }

    fn exhausted(&self) -> bool {
        self.stop.load(AtomicOrdering::Relaxed)
    }
}

/// How a chunk ends when it stops before its end: at the next row's key, if any.
fn next_key<R: SourceRow>(rows: &mut impl Iterator<Item = R>) -> ChunkEnd {
    rows.next()
        .map_or(ChunkEnd::Exhausted, |r| ChunkEnd::Stopped(key_of(&r)))
}

fn key_of<R: SourceRow>(row: &R) -> Key {
    Key::new(row.partition_key(), row.row_key())
}

impl<'s, S: EntitySource + ?Sized> Executor<'s, S> {
    /// An executor over `source` on rayon's global thread pool.
    pub fn new(source: &'s S) -> Executor<'s, S> {
        Executor {
            source,
            pool: None,
            threads: rayon::current_num_threads().max(1),
            tuning: Tuning::default(),
        }
    }

    /// Sets the work-splitting knobs.
    pub fn with_tuning(mut self, tuning: Tuning) -> Executor<'s, S> {
        self.tuning = Tuning {
            initial_chunk_rows: tuning.initial_chunk_rows.max(1),
            max_chunk_rows: tuning.max_chunk_rows.max(tuning.initial_chunk_rows).max(1),
            small_wave_rows: tuning.small_wave_rows,
        };
        self
    }

    /// Uses a dedicated pool of `threads` threads (1 = everything on the calling thread).
    /// Creating a pool spawns threads: build the executor once and reuse it, or share one
    /// pool between executors (e.g. one per snapshot) with [`with_pool`](Executor::with_pool).
    pub fn with_threads(mut self, threads: usize) -> Result<Executor<'s, S>, ExecError> {
        if threads == 0 {
            return Err(ExecError::InvalidOption(
                "the thread count must be at least 1".into(),
            ));
        }
        self.pool = if threads == 1 {
            None
        } else {
            Some(Arc::new(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()?,
            ))
        };
        self.threads = threads;
        Ok(self)
    }

    /// Uses an existing rayon pool (e.g. one shared by a server's queries).
    pub fn with_pool(mut self, pool: Arc<rayon::ThreadPool>) -> Executor<'s, S> {
        self.threads = pool.current_num_threads().max(1);
        self.pool = Some(pool);
        self
    }

    /// The number of threads a page may use.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// The source.
    pub fn source(&self) -> &'s S {
        self.source
    }

    /// Computes one page of `plan`'s results, starting at `continuation` (inclusive; `None`
    /// for the first page).
    pub fn execute_page(
        &self,
        plan: &Plan,
        continuation: Option<&Key>,
        options: &PageOptions,
    ) -> Result<Page, ExecError> {
        let select: Option<Arc<[String]>> = plan.select.as_ref().map(|s| Arc::from(s.as_slice()));
        let mut sink = Materialize {
            executor: self,
            rows: Vec::new(),
            select,
        };
        let (continuation, stats) = self.run_page(plan, continuation, options, &mut sink)?;
        Ok(Page {
            rows: sink.rows,
            continuation,
            stats,
        })
    }

    /// Like [`execute_page`](Executor::execute_page), but hands each result to `visit` as a
    /// borrowed [`RowView`] (in key order, on the calling thread) instead of building owned
    /// [`ResultRow`]s: the zero-copy path for services that encode straight from storage.
    /// Returns the continuation and statistics of the page.
    ///
    /// ```
    /// use tableq_exec::{Executor, MemorySource, PageOptions};
    /// use tableq_model::Entity;
    /// use tableq_planner::{plan::{KeySet, Plan}, predicate::Predicate};
    /// let table = MemorySource::from_entities((0..3).map(|i| Entity::new("p", format!("r{i}")))).unwrap();
    /// let snapshot = table.snapshot();
    /// let plan = Plan { ranges: KeySet::all(), residual: Predicate::TRUE, select: None, top: None };
    /// let mut keys = Vec::new();
    /// let (next, stats) = Executor::new(&snapshot)
    ///     .execute_page_with(&plan, None, &PageOptions::default(), |row| keys.push(row.row().row_key().to_owned()))
    ///     .unwrap();
    /// assert_eq!((keys.len(), next, stats.matched), (3, None, 3));
    /// ```
    pub fn execute_page_with(
        &self,
        plan: &Plan,
        continuation: Option<&Key>,
        options: &PageOptions,
        visit: impl FnMut(RowView<'_>),
    ) -> Result<(Option<Key>, ExecStats), ExecError> {
        let mut sink = Visit {
            visit,
            select: plan.select.as_deref(),
        };
        self.run_page(plan, continuation, options, &mut sink)
    }

    fn run_page(
        &self,
        plan: &Plan,
        continuation: Option<&Key>,
        options: &PageOptions,
        sink: &mut dyn Sink<S>,
    ) -> Result<(Option<Key>, ExecStats), ExecError> {
        let limit = match (plan.top.map(|t| t as usize), options.page_size) {
            (Some(t), Some(p)) => t.min(p),
            (Some(t), None) => t,
            (None, Some(p)) => p,
            (None, None) => DEFAULT_PAGE_SIZE,
        };
        if limit == 0 {
            return Err(ExecError::InvalidOption(
                "the page size must be at least 1".into(),
            ));
        }
        if options.max_examined == Some(0) {
            return Err(ExecError::InvalidOption(
                "the examined-entities budget must be at least 1".into(),
            ));
        }
        let predicate = CompiledPredicate::compile(&plan.residual, self.source);
        let mut stats = ExecStats::default();
        // Results produced so far on this page.
        let mut produced = 0usize;
        if predicate.is_false() || plan.ranges.is_empty() {
            return Ok((None, stats));
        }
        // Sorted, disjoint and non-empty (a `KeySet` is valid by construction): scanning
        // them one after the other yields entities in key order.
        let ranges = plan.ranges.ranges();
        let budget = Budget::new(options, self.threads);
        let mut range = 0;
        let mut from: Option<Key> = continuation.cloned();
        let mut counted_range = usize::MAX;
        // The first wave could fill the page only if every row matched: size it for that
        // (at least `initial_chunk_rows` per chunk), so big pages start with big chunks.
        let mut chunk_rows = (limit / (self.threads * CHUNKS_PER_THREAD))
            .clamp(self.tuning.initial_chunk_rows, self.tuning.max_chunk_rows);
        let mut first_wave = true;
        let resume = loop {
            if range >= ranges.len() {
                break None;
            }
            if !first_wave && budget.exhausted() {
                break Some(Resume::Position { range, from });
            }
            first_wave = false;
            // Build a wave.
            let mut jobs: Vec<Job> = Vec::new();
            let mut estimate = 0usize;
            let wave_rows = chunk_rows.saturating_mul(self.threads * CHUNKS_PER_THREAD);
            while range < ranges.len() && jobs.len() < MAX_WAVE_CHUNKS && estimate < wave_rows {
                let r = &ranges[range];
                if counted_range != range {
                    counted_range = range;
                    stats.ranges += 1;
                }
                if r.as_point().is_some() {
                    jobs.push(Job {
                        range,
                        from: from.clone(),
                        until: None,
                        point: true,
                    });
                    estimate += 1;
                    range += 1;
                    continue;
                }
                let scan = Scan {
                    range: r,
                    from: from.as_ref(),
                    until: None,
                };
                let want = (wave_rows - estimate)
                    .div_ceil(chunk_rows)
                    .clamp(1, MAX_WAVE_CHUNKS - jobs.len());
                let chunks = self.source.split(scan, chunk_rows, want);
                let complete = chunks.last().is_none_or(|c| c.until.is_none());
                let next_from = if complete {
                    None
                } else {
                    chunks.last().and_then(|c| c.until.clone())
                };
                for c in chunks {
                    let rows = c.rows.unwrap_or(chunk_rows);
                    estimate = estimate.saturating_add(rows);
                    jobs.push(Job {
                        range,
                        from: c.from.or_else(|| from.clone()),
                        until: c.until,
                        point: false,
                    });
                }
                if complete {
                    range += 1;
                } else {
                    from = next_from;
                }
            }
            if jobs.is_empty() {
                continue;
            }
            stats.chunks += jobs.len() as u64;
            let remaining = limit - produced;
            let sequential =
                self.threads <= 1 || jobs.len() == 1 || estimate <= self.tuning.small_wave_rows;
            let (kept, resume) = if sequential {
                let mut kept = Vec::new();
                let mut resume = None;
                for job in &jobs {
                    let out =
                        self.run_chunk(ranges, job, &predicate, remaining - kept.len(), &budget);
                    stats.examined += out.examined;
                    if let Some(r) = absorb(&mut kept, out, job, remaining) {
                        resume = Some(r);
                        break;
                    }
                }
                (kept, resume)
            } else {
                let run = || {
                    jobs.par_iter()
                        .map(|job| self.run_chunk(ranges, job, &predicate, remaining, &budget))
                        .collect::<Vec<_>>()
                };
                let outs = match &self.pool {
                    Some(pool) => pool.install(run),
                    None => run(),
                };
                let mut kept = Vec::new();
                let mut resume = None;
                stats.examined += outs.iter().map(|o| o.examined).sum::<u64>();
                for (out, job) in outs.into_iter().zip(&jobs) {
                    if let Some(r) = absorb(&mut kept, out, job, remaining) {
                        resume = Some(r);
                        break;
                    }
                }
                (kept, resume)
            };
            produced += kept.len();
            sink.wave(kept);
            if let Some(r) = resume {
                break Some(r);
            }
            // Next wave: double the chunks (long scans reach large, cheap chunks fast), but
            // once matches were seen, no more than the rows the page still needs at the
            // selectivity observed so far (plus a margin): a `$top` page stops early.
            let growth = if produced == 0 { 4 } else { 2 };
            let doubled = chunk_rows
                .saturating_mul(growth)
                .min(self.tuning.max_chunk_rows);
            chunk_rows = if produced == 0 || stats.examined == 0 {
                doubled
            } else {
                let missing = (limit - produced) as f64;
                let needed = missing * stats.examined as f64 / produced as f64 * 1.25;
                let per_chunk = needed / (self.threads * CHUNKS_PER_THREAD) as f64;
                (per_chunk.ceil() as usize).clamp(MIN_ADAPTIVE_CHUNK_ROWS.min(doubled), doubled)
            };
        };
        stats.matched = produced as u64;
        let continuation = match resume {
            None => None,
            Some(Resume::At(key)) => Some(key),
            Some(Resume::Position { range, from }) => self.resolve(ranges, range, from),
        };
        Ok((continuation, stats))
    }

    fn materialize<'a>(
        &self,
        out: &mut Vec<ResultRow>,
        kept: Vec<S::Row<'a>>,
        select: Option<&Arc<[String]>>,
    ) where
        S: 'a,
    {
        if kept.len() >= PARALLEL_MATERIALIZE_ROWS && self.threads > 1 {
            let run = || {
                kept.par_iter()
                    .map(|r| ResultRow::project(r, select))
                    .collect::<Vec<_>>()
            };
            let projected = match &self.pool {
                Some(pool) => pool.install(run),
                None => run(),
            };
            out.extend(projected);
        } else {
            out.extend(kept.iter().map(|r| ResultRow::project(r, select)));
        }
    }

    /// Scans one chunk, keeping at most `limit` matches.
    fn run_chunk<'a>(
        &'a self,
        ranges: &'a [KeyRange],
        job: &'a Job,
        predicate: &CompiledPredicate,
        limit: usize,
        budget: &Budget,
    ) -> ChunkOut<S::Row<'a>> {
        let range = &ranges[job.range];
        if job.point {
            let mut out = ChunkOut {
                rows: Vec::new(),
                examined: 0,
                end: ChunkEnd::Exhausted,
            };
            if let Some((pk, rk)) = range.as_point()
                && job.from.as_ref().is_none_or(|f| f.cmp_pair(pk, rk).is_le())
                && let Some(row) = self.source.get(pk, rk)
            {
                out.examined = 1;
                if predicate.eval(&row) {
                    out.rows.push(row);
                }
            }
            return out;
        }
        let scan = Scan {
            range,
            from: job.from.as_ref(),
            until: job.until.as_ref(),
        };
        let mut it = self.source.scan(scan);
        let mut rows = Vec::new();
        let mut examined = 0u64;
        let end = if !budget.enabled() {
            // The hot loop: no budget to account.
            loop {
                let Some(row) = it.next() else {
                    break ChunkEnd::Exhausted;
                };
                examined += 1;
                if predicate.eval(&row) {
                    rows.push(row);
                    if rows.len() >= limit {
                        break next_key(&mut it);
                    }
                }
            }
        } else {
            let mut since_tick = 0u64;
            let end = loop {
                if since_tick >= budget.interval {
                    let stop = budget.tick(since_tick);
                    since_tick = 0;
                    if stop {
                        break next_key(&mut it);
                    }
                }
                let Some(row) = it.next() else {
                    break ChunkEnd::Exhausted;
                };
                examined += 1;
                since_tick += 1;
                if predicate.eval(&row) {
                    rows.push(row);
                    if rows.len() >= limit {
                        break next_key(&mut it);
                    }
                }
            };
            if since_tick > 0 {
                budget.tick(since_tick);
            }
            end
        };
        ChunkOut {
            rows,
            examined,
            end,
        }
    }

    /// The key of the first entity at or after a position (in range number `range` or a
    /// later one), if any.
    fn resolve(&self, ranges: &[KeyRange], range: usize, from: Option<Key>) -> Option<Key> {
        for r in &ranges[range.min(ranges.len())..] {
            if let Some((pk, rk)) = r.as_point() {
                if from.as_ref().is_none_or(|f| f.cmp_pair(pk, rk).is_le())
                    && self.source.get(pk, rk).is_some()
                {
                    return Some(Key::new(pk, rk));
                }
                continue;
            }
            let scan = Scan {
                range: r,
                from: from.as_ref(),
                until: None,
            };
            if let Some(row) = self.source.scan(scan).next() {
                return Some(key_of(&row));
            }
        }
        None
    }

    /// Iterates over the pages of `plan`, following continuations, on this executor's
    /// source (one consistent view for all pages when the source is a snapshot).
    pub fn pages<'p>(&'p self, plan: &'p Plan, options: PageOptions) -> Pages<'p, 's, S> {
        Pages {
            executor: self,
            plan,
            options,
            next: None,
            done: false,
        }
    }

    /// Every result of `plan` (all pages concatenated) and the summed statistics.
    pub fn execute_all(
        &self,
        plan: &Plan,
        options: &PageOptions,
    ) -> Result<(Vec<ResultRow>, ExecStats), ExecError> {
        let mut rows = Vec::new();
        let mut stats = ExecStats::default();
        for page in self.pages(plan, options.clone()) {
            let page = page?;
            rows.extend(page.rows);
            stats += page.stats;
        }
        Ok((rows, stats))
    }
}

/// Receives each wave's results, in key order.
trait Sink<S: EntitySource + ?Sized> {
    fn wave<'a>(&mut self, rows: Vec<S::Row<'a>>)
    where
        S: 'a;
}

/// Builds owned result rows.
struct Materialize<'e, 's, S: ?Sized> {
    executor: &'e Executor<'s, S>,
    rows: Vec<ResultRow>,
    select: Option<Arc<[String]>>,
}

impl<S: EntitySource + ?Sized> Sink<S> for Materialize<'_, '_, S> {
    fn wave<'a>(&mut self, rows: Vec<S::Row<'a>>)
    where
        S: 'a,
    {
        self.executor
            .materialize(&mut self.rows, rows, self.select.as_ref());
    }
}

/// Hands borrowed rows to a visitor.
struct Visit<'p, F> {
    visit: F,
    select: Option<&'p [String]>,
}

impl<S: EntitySource + ?Sized, F: FnMut(RowView<'_>)> Sink<S> for Visit<'_, F> {
    fn wave<'a>(&mut self, rows: Vec<S::Row<'a>>)
    where
        S: 'a,
    {
        for row in &rows {
            (self.visit)(RowView::new(row, self.select));
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

/// The pages of a plan ([`Executor::pages`]).
pub struct Pages<'p, 's, S: ?Sized> {
    executor: &'p Executor<'s, S>,
    plan: &'p Plan,
    options: PageOptions,
    next: Option<Key>,
    done: bool,
}

impl<S: EntitySource + ?Sized> Iterator for Pages<'_, '_, S> {
    type Item = Result<Page, ExecError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let page = self
            .executor
            .execute_page(self.plan, self.next.as_ref(), &self.options);
        match &page {
            Ok(p) => {
                self.next = p.continuation.clone();
                self.done = self.next.is_none();
            }
            Err(_) => self.done = true,
        }
        Some(page)
    }
}

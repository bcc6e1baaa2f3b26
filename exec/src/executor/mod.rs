//! The executor: runs a [`Plan`] over an [`EntitySource`] page by page.
//!
//! # How a page is computed
//!
//! 1. The residual is compiled for the source ([`CompiledPredicate`]).
//! 2. The plan's ranges (sorted, disjoint and non-empty by construction, see
//!    [`tableq_planner::plan::KeySet`]) are walked in key order from the continuation. Work
//!    is cut into **waves** of chunks ([`EntitySource::split`]): a wave holds about 4 chunks
//!    per thread of `chunk_rows` rows.
//!    The first wave is sized as if every row matched (at least 1 Ki rows per chunk); later
//!    waves grow ×4 while nothing matched, else to what the observed selectivity says the page
//!    still needs (at most ×4 until 32 matches back the estimate, at most 128 Ki rows per
//!    chunk). A `$top` page therefore stops after a bounded look-ahead (the first page of a
//!    huge scan reads a few thousand rows, not the table), while long scans quickly reach
//!    large, cheap chunks.
//! 3. The chunks of a wave are scanned by the calling thread together with helpers on the
//!    executor's rayon pool (as many as the pool has idle: none when other pages keep it
//!    busy), each chunk stopping once it alone could fill the page; results are merged back
//!    in key order. Tiny waves (point lookups, a few small ranges) run on the calling thread
//!    alone and stop at the page's end; a point range is answered by [`EntitySource::get`].
//! 4. The page ends after `limit` rows, or when the work budget (entities examined, deadline)
//!    runs out, with a **continuation**: the key of the next entity to examine, inclusive.
//!    Resuming there with the same plan yields exactly the remaining results; entities
//!    before it are never revisited, so inserts and deletes between pages cannot cause a
//!    result to be skipped or repeated.
//!
//! Files: `options` (page options, tuning, the work budget), `wave` (building, sizing and
//! running waves of chunks), `helpers` (the pool threads lent to waves), `sink` (owned
//! results or a visitor), `pages` (continuations and the [`Pages`] iterator); this file
//! holds the [`Executor`] and its public API.
//!
//! ```
//! use tableq_exec::{Executor, VecSource, PageOptions};
//! use tableq_model::{CmpOp, Entity, Value};
//! use tableq_planner::{plan::{KeySet, Plan}, predicate::Predicate};
//!
//! let snapshot = VecSource::new((0..100).map(|i| {
//!     let mut e = Entity::new(format!("p{}", i % 3), format!("r{i:03}"));
//!     e.set("Age", Value::Int32(i));
//!     e
//! }));
//! let plan = Plan {
//!     ranges: KeySet::all(),
//!     residual: Predicate::compare("Age", CmpOp::Ge, Value::Int32(50)),
//!     select: Some(vec!["Age".into()]),
//!     top: Some(20),
//! };
//! let executor = Executor::new(&snapshot);
//! let pages: Vec<_> = executor.pages(&plan, PageOptions::default()).collect::<Result<_, _>>().unwrap();
//! assert_eq!(pages.iter().map(|p| p.rows.len()).sum::<usize>(), 50);
//! assert!(pages.last().unwrap().continuation.is_none());
//! ```

mod helpers;
mod options;
mod pages;
mod sink;
mod wave;

pub use options::{DEFAULT_PAGE_SIZE, PageOptions, Tuning};
pub use pages::Pages;

use crate::compile::CompiledPredicate;
use crate::key::Key;
use crate::result::{ExecStats, Page, ResultRow, RowView};
use crate::source::EntitySource;
use helpers::HelperCount;
use options::Budget;
use sink::{Materialize, Sink, Visit};
use std::convert::Infallible;
use std::sync::Arc;
use tableq_planner::plan::Plan;
use wave::Waves;

/// Why execution failed. `E` is the source's error type ([`EntitySource::Error`]; the
/// default [`Infallible`] is that of sources that cannot fail, such as
/// [`VecSource`](crate::VecSource)): a source error comes back as itself, typed,
/// so a storage layer matches on it without downcasting.
///
/// ```
/// use std::convert::Infallible;
/// use tableq_exec::ExecError;
/// #[derive(Debug, thiserror::Error)]
/// #[error("disk full")]
/// struct DiskFull;
/// let e: ExecError<DiskFull> = ExecError::Source(DiskFull);
/// assert_eq!(e.to_string(), "disk full");
/// let f: ExecError = ExecError::InvalidOption("page size 0".into());
/// let _: ExecError<Infallible> = f;
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExecError<E = Infallible> {
    /// Invalid [`PageOptions`] or thread count.
    #[error("invalid execution option: {0}")]
    InvalidOption(String),
    /// The thread pool could not be created.
    #[error("cannot create the executor's thread pool: {0}")]
    ThreadPool(#[from] rayon::ThreadPoolBuildError),
    /// The source failed to read (scan, get or split): its own error, unchanged (`Display`
    /// and `source()` are the source error's).
    #[error(transparent)]
    Source(E),
}

impl<E> ExecError<E> {
    /// Converts the source error (e.g. into a service's own error type, or a boxed one);
    /// the other variants are kept.
    ///
    /// ```
    /// use tableq_exec::ExecError;
    /// let e: ExecError<std::io::Error> = ExecError::Source(std::io::Error::other("disk"));
    /// let boxed: ExecError<Box<dyn std::error::Error + Send + Sync>> = e.map_source(Box::from);
    /// assert_eq!(boxed.to_string(), "disk");
    /// ```
    pub fn map_source<F>(self, f: impl FnOnce(E) -> F) -> ExecError<F> {
        match self {
            ExecError::InvalidOption(m) => ExecError::InvalidOption(m),
            ExecError::ThreadPool(e) => ExecError::ThreadPool(e),
            ExecError::Source(e) => ExecError::Source(f(e)),
        }
    }
}

/// Runs plans over one source (see the module docs).
#[derive(Debug, Clone)]
pub struct Executor<'s, S: ?Sized> {
    source: &'s S,
    pool: Option<Arc<rayon::ThreadPool>>,
    /// The pool's helpers lent to waves.
    helpers: HelperCount,
    threads: usize,
    tuning: Tuning,
}

impl<'s, S: EntitySource + ?Sized> Executor<'s, S> {
    /// An executor over `source` on rayon's global thread pool.
    pub fn new(source: &'s S) -> Executor<'s, S> {
        Executor {
            source,
            pool: None,
            helpers: HelperCount::Global,
            threads: rayon::current_num_threads().max(1),
            tuning: Tuning::default(),
        }
    }

    /// Sets the work-splitting knobs.
    pub fn with_tuning(mut self, tuning: Tuning) -> Executor<'s, S> {
        self.tuning = tuning.normalized();
        self
    }

    /// Uses a dedicated pool of `threads` threads (1 = everything on the calling thread).
    /// Creating a pool spawns threads: build the executor once and reuse it, or share one
    /// pool between executors (e.g. one per snapshot) with [`with_pool`](Executor::with_pool).
    pub fn with_threads(mut self, threads: usize) -> Result<Executor<'s, S>, ExecError<S::Error>> {
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
        self.helpers = HelperCount::Own(Arc::default());
        self.threads = threads;
        Ok(self)
    }

    /// Uses an existing rayon pool (e.g. one shared by a server's queries).
    pub fn with_pool(mut self, pool: Arc<rayon::ThreadPool>) -> Executor<'s, S> {
        self.threads = pool.current_num_threads().max(1);
        self.pool = Some(pool);
        self.helpers = HelperCount::Own(Arc::default());
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
    /// for the first page). Fails with [`ExecError::InvalidOption`] for a page size or
    /// budget of 0, and with [`ExecError::Source`] when the source fails on a read the page
    /// needs.
    pub fn execute_page(
        &self,
        plan: &Plan,
        continuation: Option<&Key>,
        options: &PageOptions,
    ) -> Result<Page, ExecError<S::Error>> {
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
    /// Rows are handed over wave by wave, so when the source fails
    /// ([`ExecError::Source`]) the visitor may already have seen the page's first rows: a
    /// caller streaming a response must discard (or abort) what it wrote for this page.
    ///
    /// ```
    /// use tableq_exec::{Executor, VecSource, PageOptions};
    /// use tableq_model::Entity;
    /// use tableq_planner::{plan::{KeySet, Plan}, predicate::Predicate};
    /// let snapshot = VecSource::new((0..3).map(|i| Entity::new("p", format!("r{i}"))));
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
    ) -> Result<(Option<Key>, ExecStats), ExecError<S::Error>> {
        let mut sink = Visit {
            visit,
            select: plan.select.as_deref(),
        };
        self.run_page(plan, continuation, options, &mut sink)
    }

    /// Computes one page into `sink`: waves of chunks until the page is full, the ranges
    /// are done or the budget ran out; returns the continuation and the statistics.
    fn run_page(
        &self,
        plan: &Plan,
        continuation: Option<&Key>,
        options: &PageOptions,
        sink: &mut dyn Sink<S>,
    ) -> Result<(Option<Key>, ExecStats), ExecError<S::Error>> {
        let limit = options.limit(plan.top)?;
        let predicate = CompiledPredicate::compile(&plan.residual, self.source);
        let mut stats = ExecStats::default();
        if predicate.is_false() || plan.ranges.is_empty() {
            return Ok((None, stats));
        }
        // Sorted, disjoint and non-empty (a `KeySet` is valid by construction): scanning
        // them one after the other yields entities in key order.
        let ranges = plan.ranges.ranges();
        let budget = Budget::new(options, self.threads);
        let mut waves = Waves::new(
            ranges,
            continuation.cloned(),
            limit,
            self.threads,
            self.tuning,
        );
        // Results produced so far on this page.
        let mut produced = 0usize;
        let resume = loop {
            if waves.done() {
                break None;
            }
            if waves.started() && budget.exhausted() {
                break Some(waves.position());
            }
            let wave = waves
                .next_wave(self.source, &mut stats)
                .map_err(ExecError::Source)?;
            if wave.jobs.is_empty() {
                continue;
            }
            stats.chunks += wave.jobs.len() as u64;
            let out = self
                .run_wave(
                    ranges,
                    &wave,
                    &predicate,
                    limit - produced,
                    &budget,
                    &mut stats,
                    sink,
                )
                .map_err(ExecError::Source)?;
            produced += out.kept;
            if out.resume.is_some() {
                break out.resume;
            }
            waves.adapt(limit, produced, stats.examined);
        };
        stats.matched = produced as u64;
        let continuation = self
            .continuation(ranges, resume)
            .map_err(ExecError::Source)?;
        Ok((continuation, stats))
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
    ) -> Result<(Vec<ResultRow>, ExecStats), ExecError<S::Error>> {
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

//! [`Executor`]: one source, the threads it is read on and the work-splitting knobs — how
//! one is built, and how it computes one page ([`Executor::execute_page`],
//! [`Executor::execute_page_with`]): waves of chunks (module `wave`) until the page
//! is full, the ranges are done or the budget ran out, then the continuation
//! (module `continuation`). Following pages is module `pages`'s.

use super::continuation;
use super::error::ExecError;
use super::merge::WaveEnd;
use super::options::{Budget, PageOptions, Tuning};
use super::sink::{Materialize, Sink, Visit};
use super::threads::Threads;
use super::wave::Waves;
use crate::compile::CompiledPredicate;
use crate::key::Key;
use crate::result::{ExecStats, Page, RowView};
use crate::source::EntitySource;
use std::sync::Arc;
use tableq_planner::plan::Plan;

/// Runs plans over one source (see the module docs).
#[derive(Debug, Clone)]
pub struct Executor<'s, S: ?Sized> {
    source: &'s S,
    threads: Threads,
    tuning: Tuning,
}

impl<'s, S: EntitySource + ?Sized> Executor<'s, S> {
    /// An executor over `source` on rayon's global thread pool.
    pub fn new(source: &'s S) -> Executor<'s, S> {
        Executor {
            source,
            threads: Threads::global(),
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
        let pool = if threads == 1 {
            None
        } else {
            Some(Arc::new(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()?,
            ))
        };
        self.threads = Threads::of(pool, threads);
        Ok(self)
    }

    /// Uses an existing rayon pool (e.g. one shared by a server's queries).
    pub fn with_pool(mut self, pool: Arc<rayon::ThreadPool>) -> Executor<'s, S> {
        let count = pool.current_num_threads().max(1);
        self.threads = Threads::of(Some(pool), count);
        self
    }

    /// The number of threads a page may use.
    pub fn threads(&self) -> usize {
        self.threads.count
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
            threads: &self.threads,
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
    /// [`ResultRow`](crate::ResultRow)s: the zero-copy path for services that encode straight from storage.
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
        let budget = Budget::new(options, self.threads.count);
        let mut waves = Waves::new(
            ranges,
            continuation.cloned(),
            limit,
            &self.threads,
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
            let (kept, end) = waves
                .run(
                    self.source,
                    &wave,
                    &predicate,
                    limit - produced,
                    &budget,
                    &mut stats,
                    sink,
                )
                .map_err(ExecError::Source)?;
            produced += kept;
            match end {
                WaveEnd::Continue => waves.adapt(limit, produced, stats.examined),
                WaveEnd::At(resume) => break Some(resume),
                WaveEnd::AfterWave => break Some(waves.position()),
            }
        };
        stats.matched = produced as u64;
        let continuation =
            continuation::continuation(self.source, ranges, resume).map_err(ExecError::Source)?;
        Ok((continuation, stats))
    }
}

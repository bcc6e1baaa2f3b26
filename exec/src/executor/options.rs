//! Per-page options ([`PageOptions`]: page size and work budget), an executor's
//! work-splitting knobs ([`Tuning`]), and the shared work [`Budget`] of one page.
//!
//! The page size is the smaller of `$top` and [`PageOptions::page_size`]
//! ([`DEFAULT_PAGE_SIZE`] when neither is set); both it and the examined-entities budget
//! must be at least 1. The budget is checked by every worker every
//! [`Budget::interval`] examined entities, so a page may examine somewhat more than asked.
//!
//! ```
//! use tableq_exec::{PageOptions, Tuning};
//! let options = PageOptions::default().with_page_size(50).with_max_examined(10_000);
//! assert_eq!((options.page_size, options.max_examined), (Some(50), Some(10_000)));
//! assert_eq!(Tuning::default().initial_chunk_rows, 1024);
//! ```

use super::error::ExecError;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering as AtomicOrdering};
use std::time::Instant;

/// The page size without `$top` (the service's).
pub const DEFAULT_PAGE_SIZE: usize = 1000;

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

    /// The most rows of a page of a plan with this `$top`; checks the options.
    pub(super) fn limit<E>(&self, top: Option<u32>) -> Result<usize, ExecError<E>> {
        let limit = match (top.map(|t| t as usize), self.page_size) {
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
        if self.max_examined == Some(0) {
            return Err(ExecError::InvalidOption(
                "the examined-entities budget must be at least 1".into(),
            ));
        }
        Ok(limit)
    }
}

/// Work-splitting knobs of an [`Executor`](super::Executor). The defaults suit in-memory
/// tables; tests set tiny values to exercise parallel merging on small data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tuning {
    /// The fewest rows a wave on the calling thread covers (it stops at the page's end
    /// anyway), and, when below 64, the smallest chunk of a parallel wave (default 1024).
    /// A parallel wave holds about 4 chunks per thread.
    pub initial_chunk_rows: usize,
    /// Largest chunk (default 2¹⁷ rows).
    pub max_chunk_rows: usize,
    /// A wave of no more rows than this runs on the calling thread and reads nothing past
    /// the page's end; it then covers this many rows (default 2048).
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

impl Tuning {
    /// The knobs made consistent: chunks of at least one row, the largest chunk at least
    /// the initial one.
    pub(super) fn normalized(self) -> Tuning {
        Tuning {
            initial_chunk_rows: self.initial_chunk_rows.max(1),
            max_chunk_rows: self.max_chunk_rows.max(self.initial_chunk_rows).max(1),
            small_wave_rows: self.small_wave_rows,
        }
    }
}

/// The work budget of one page, shared by its workers.
pub(super) struct Budget {
    max: Option<u64>,
    deadline: Option<Instant>,
    examined: AtomicU64,
    stop: AtomicBool,
    /// Entities a worker examines between two checks.
    pub(super) interval: u64,
}

impl Budget {
    pub(super) fn new(options: &PageOptions, threads: usize) -> Budget {
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

    /// Whether there is anything to account (else workers skip the checks).
    pub(super) fn enabled(&self) -> bool {
        self.max.is_some() || self.deadline.is_some()
    }

    /// Records `n` examined entities; whether the page must stop.
    pub(super) fn tick(&self, n: u64) -> bool {
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

    /// Whether the budget ran out.
    pub(super) fn exhausted(&self) -> bool {
        self.stop.load(AtomicOrdering::Relaxed)
    }
}

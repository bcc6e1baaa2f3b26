//! What the command and its engines share: the run's [`Context`] (threads, pool,
//! `--strict`), how a run fails ([`Failure`]), and the counters each query reports back
//! ([`Outcome`]).

use std::sync::Arc;
use std::time::Duration;
use tableq::exec::Key;

/// Why a run failed (exit 2).
pub(super) enum Failure {
    /// Already reported on stderr.
    Reported,
    /// To report as `error: …`.
    Message(String),
}

/// What every engine needs besides the query and the input.
pub(super) struct Context {
    /// Threads for reading and execution.
    pub threads: usize,
    /// The pool they run on.
    pub pool: Arc<rayon::ThreadPool>,
    /// `--strict`.
    pub strict: bool,
}

/// The counters of one query (see `--stats`).
#[derive(Debug, Default)]
pub(super) struct Outcome {
    /// Entities in the input (distinct keys).
    pub loaded: u64,
    /// Key ranges of the plan.
    pub ranges: u64,
    /// Entities tested against the filter.
    pub examined: u64,
    /// Entities printed.
    pub matched: u64,
    /// The key of the next match after a `--top` page.
    pub next: Option<Key>,
    /// Reading (and for the stream engine, testing) the input.
    pub load: Duration,
    /// Executing (for the stream engine: resolving repeats and ordering the matches),
    /// output excluded.
    pub exec: Duration,
}

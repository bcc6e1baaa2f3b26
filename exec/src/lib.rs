//! # tableq-exec — parallel execution of plans over ordered entity sources
//!
//! The last stage of the pipeline (text → AST → plan → **rows**):
//!
//! * [`EntitySource`] — the storage abstraction: ordered (PartitionKey, RowKey) range scans
//!   from an inclusive key, point gets, splitting into chunks for parallel work, and an
//!   optional property-slot hook. Reads may fail with the source's own error type
//!   ([`EntitySource::Error`]; [`OkRows`] and `Infallible` for sources that cannot). No I/O
//!   and no async here: stores live with their users.
//! * [`VecSource`] — the simplest source: entities in a sorted vector, for tests, examples
//!   and small embedded tables. Storage engines (a compact in-memory layout, a durable
//!   file, PostgreSQL) live in `tableq-store`.
//! * [`CompiledPredicate`] — the plan's residual compiled per source (names resolved once,
//!   each comparison a [`ValueTest`] (module [`comparison`]): a typed literal, the operator
//!   an outcome mask),
//!   agreeing with [`tableq_model::compare`].
//! * [`batch`] — column batches: a source that stores properties as typed columns with a
//!   presence map hands runs of rows to the compiled residual
//!   ([`EntitySource::scan_filtered`], [`filter_run`]), which tests each comparison over a
//!   whole column, 64 rows per bitmap word, and reads rows only for the matches.
//! * [`Executor`] — runs a [`Plan`](tableq_planner::plan::Plan) in parallel (rayon), in key
//!   order, page by page with continuations and an optional work budget; results as owned
//!   [`ResultRow`]s ([`Executor::execute_page`]) or as borrowed [`RowView`]s handed to a
//!   visitor ([`Executor::execute_page_with`], no allocation per row). Failures are an
//!   [`ExecError`]: invalid options, or the source's error unchanged in
//!   [`ExecError::Source`].
//! * [`stream`] — the same answers over JSON lines that arrive in input order (a file or a
//!   pipe read once), testing each line against [`KeySet::contains`](tableq_planner::plan::KeySet::contains)
//!   and the compiled residual: the engine of `tableq eval`'s default `stream` mode.
//! * [`lines`] — the rules of JSON-lines input (line ends, byte-order mark, blank lines,
//!   the line limit, UTF-8), shared by the stream engine and the command-line readers.
//!
//! Plans reach the executor valid by construction (sorted, disjoint, non-empty key ranges;
//! a normalised residual — see [`tableq_planner::plan`](mod@tableq_planner::plan)), so it needs no fallback for
//! malformed plans.
//!
//! Every key order is the UTF-16 ordinal order of the spec
//! ([`tableq_model::order::compare_str`]).
//!
//! ```
//! use tableq_exec::{Executor, Key, PageOptions, VecSource};
//! use tableq_model::{Entity, Value};
//! use tableq_planner::{plan::{KeyRange, KeySet, Plan}, predicate::Predicate};
//!
//! let snapshot = VecSource::new((0..5).map(|i| {
//!     let mut e = Entity::new("p", format!("r{i}"));
//!     e.set("N", Value::Int32(i));
//!     e
//! }));
//! // PartitionKey eq 'p', two per page.
//! let plan = Plan {
//!     ranges: KeySet::from(KeyRange::partition("p")),
//!     residual: Predicate::TRUE,
//!     select: None,
//!     top: Some(2),
//! };
//! let executor = Executor::new(&snapshot);
//! let first = executor.execute_page(&plan, None, &PageOptions::default()).unwrap();
//! assert_eq!(first.rows.len(), 2);
//! assert_eq!(first.continuation, Some(Key::new("p", "r2")));
//! let second = executor.execute_page(&plan, first.continuation.as_ref(), &PageOptions::default()).unwrap();
//! assert_eq!(second.rows[0].entity.row_key(), "r2");
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod batch;
pub mod comparison;
pub mod compile;
pub mod executor;
pub mod key;
pub mod lines;
pub mod result;
pub mod slot;
pub mod source;
pub mod stream;
pub mod vec_source;

pub use comparison::ValueTest;
pub use compile::CompiledPredicate;
pub use executor::{DEFAULT_PAGE_SIZE, ExecError, Executor, PageOptions, Pages, Tuning};
pub use key::{Chunk, Key, Scan, compare_keys};
pub use result::{ExecStats, Page, ResultRow, RowView};
pub use slot::{PropertySlot, SlotLookup};
pub use source::{
    EntityRef, EntitySource, FILTER_BATCH, Filtered, OkRows, RowFilter, RunEnd, SourceRow,
    filter_each, filter_run,
};
pub use vec_source::{VecRows, VecSource};

//! The executor: runs a [`Plan`](tableq_planner::plan::Plan) over an [`EntitySource`](crate::EntitySource) page by page.
//!
//! # How a page is computed
//!
//! 1. The residual is compiled for the source ([`CompiledPredicate`](crate::CompiledPredicate)).
//! 2. The plan's ranges (sorted, disjoint and non-empty by construction, see
//!    [`tableq_planner::plan::KeySet`]) are walked in key order from the continuation. Work
//!    is cut into **waves** of chunks ([`EntitySource::split`](crate::EntitySource::split)),
//!    each wave sized to hold *fewer* matches than the page still needs: the first as if
//!    every row matched (as many rows as the page has room for), then ×4 while nothing
//!    matched, else what the observed selectivity says ¾ × (m − 2√m) matches need, m
//!    being the matches still missing (at most ×4 until 32 matches back the estimate). A `$top` page therefore stops after
//!    a bounded look-ahead (the first page of a huge scan reads a few thousand rows, not
//!    the table), while long selective scans quickly reach large, cheap chunks.
//! 3. A small wave (at most [`Tuning::small_wave_rows`] rows) runs on the calling thread
//!    and stops exactly at the page's end. A larger one is cut into about 4 chunks per
//!    thread, scanned by the calling thread together with helpers on the executor's rayon
//!    pool (as many as the pool has idle: none when other pages keep it busy); each chunk
//!    keeps no more matches than the chunks before it leave room for, and stops (or is
//!    not started) once they fill the page. Results are merged back in key order. A point
//!    range is answered by [`EntitySource::get`](crate::EntitySource::get).
//! 4. The page ends after `limit` rows, or when the work budget (entities examined, deadline)
//!    runs out, with a **continuation**: the first key the page has not decided — the
//!    first match it had no room for, or the first entity it did not examine. Entities a
//!    parallel wave examined past the page's last row and rejected lie before it: the
//!    next page does not read them again, so a scan followed through all its pages
//!    examines each entity about once (exactly once on one thread or when no wave
//!    overshoots). Resuming there with the same plan yields exactly the remaining
//!    results; entities before it are never revisited, so inserts and deletes between
//!    pages cannot cause a result to be skipped or repeated.
//!
//! Files, each importing only those listed before it: `error` ([`ExecError`]), `options`
//! (page options, tuning, the work budget), `threads` (the pool and the helper threads
//! lent to waves), `continuation` (the position a page ends at and the key it hands out),
//! `chunk` (one chunk scanned, and the room it may fill), `sink` (owned results or a
//! visitor), `merge` (chunks back in key order, and where the page ends), `wave`
//! (building, sizing and running waves of chunks), `page` (the [`Executor`]: building
//! one, computing one page), `pages` (the [`Pages`] iterator and
//! [`Executor::execute_all`]). This file only declares them.
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

mod chunk;
mod continuation;
mod error;
mod merge;
mod options;
mod page;
mod pages;
mod sink;
mod threads;
mod wave;

pub use error::ExecError;
pub use options::{DEFAULT_PAGE_SIZE, PageOptions, Tuning};
pub use page::Executor;
pub use pages::Pages;

//! # tableq-planner — typed predicates, key ranges, residuals, explain
//!
//! This crate turns a parsed query (the parser's [`ast`](tableq_parser::ast)) into a
//! [`Plan`]: the PartitionKey/RowKey ranges to read, the residual predicate entities in those
//! ranges must still satisfy, the projection (`$select`) and the page limit (`$top`). The
//! pipeline, one module per stage:
//!
//! 1. [`lower`] — AST → normalised [`Predicate`] (property on the left, flattened, folded,
//!    deduplicated, De Morgan; `not` over a comparison kept explicit);
//! 2. [`rules`] — named rewrite rules run to a fixpoint by a [`rules::Driver`] that can record
//!    every step (`explain --verbose`);
//! 3. [`extract`] — key-range extraction, a pure function with a one-way guarantee: **no
//!    entity outside the ranges can match**, and entities inside match iff they satisfy the
//!    residual (`true`, and never evaluated, when the ranges are exact);
//! 4. [`plan`](mod@plan) — the [`Plan`] with a [`Strategy`] per range; [`explain`] renders it as text
//!    or as one stable JSON object.
//!
//! [`Query`] ([`query`]) is the front door over these stages: it takes the `$filter`,
//! `$select` and `$top` texts, reports an invalid one as a [`QueryError`] naming the option,
//! takes typed restrictions that are not the user's text (a SAS key range), and makes the
//! plan. The server and every command-line tool build their plans through it.
//!
//! The types a plan is made of are **valid by construction**: a [`Predicate`] is an opaque
//! node built only by normalising constructors and inspected through
//! [`Predicate::kind`] ([`PredicateKind`]), and a [`KeySet`] keeps its ranges private —
//! sorted, disjoint, non-empty, canonical — behind normalising constructors
//! ([`KeySet::new`], [`KeySet::all`], [`KeySet::none`], `From<KeyRange>`). Downstream
//! crates (the executor, a storage layer's pushdown, explain) match on them and need not
//! re-check invariants. [`KeyInterval`]'s methods are the one implementation of key-bound
//! comparisons under the UTF-16 ordinal order.
//!
//! [`Planner`] ([`plan()`] for the defaults) runs the stages; it lives in the `pipeline`
//! module, and this file is only the crate's face.
//!
//! [`ast_eval`] evaluates a filter's original AST directly on one entity, with no planning:
//! the server's Query Tables filters table names with it, and every planned execution is
//! tested against it.
//!
//! ```
//! use tableq_parser::ast::{Comparison, Expr, Filter, Literal, Property};
//! use tableq_parser::Span;
//! use tableq_model::{CmpOp, Value};
//! use tableq_planner::Strategy;
//!
//! let pk_eq = |v: &str| Expr::Comparison(Comparison {
//!     property: Property { name: "PartitionKey".into(), span: Span::default() },
//!     op: CmpOp::Eq,
//!     op_span: Span::default(),
//!     literal: Literal { value: Value::from(v), span: Span::default() },
//!     literal_first: false,
//!     span: Span::default(),
//! });
//! let filter = Filter { expr: Some(Expr::Or(vec![pk_eq("b"), pk_eq("a")], Span::default())) };
//! let plan = tableq_planner::plan(&filter, None, None);
//! assert_eq!(plan.ranges.len(), 2); // two partition scans, 'a' first
//! assert_eq!(plan.ranges.ranges()[0].strategy(), Strategy::Partition);
//! assert!(plan.is_exact());
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod ast_eval;
pub mod explain;
pub mod extract;
mod keyspace;
pub mod lower;
mod pipeline;
pub mod plan;
pub mod predicate;
pub mod query;
pub mod rules;

pub use explain::Explanation;
pub use extract::{DEFAULT_MAX_RANGES, Extraction, extract_key_ranges};
pub use pipeline::{Planner, plan, projection};
pub use plan::{KeyInterval, KeyRange, KeySet, KeySetError, Plan, Strategy};
pub use predicate::{Comparison, Predicate, PredicateKind};
pub use query::{Query, QueryError, QueryText};

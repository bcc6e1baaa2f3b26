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
//! [`naive`] is the reference evaluator (the whole original AST per entity, no planning):
//! the oracle every planned execution is tested against.
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

pub mod explain;
pub mod extract;
mod keyspace;
pub mod lower;
pub mod naive;
pub mod plan;
pub mod predicate;
pub mod query;
pub mod rules;

pub use explain::Explanation;
pub use extract::{DEFAULT_MAX_RANGES, Extraction, extract_key_ranges};
pub use plan::{KeyInterval, KeyRange, KeySet, KeySetError, Plan, Strategy};
pub use predicate::{Comparison, Predicate, PredicateKind};
pub use query::{Query, QueryError, QueryText};

use tableq_parser::ast::{Filter, Select, Top};

/// Plans a query with the default [`Planner`].
pub fn plan(filter: &Filter, select: Option<&Select>, top: Option<&Top>) -> Plan {
    Planner::new().plan(filter, select, top)
}

/// The planner's settings.
///
/// ```
/// use tableq_parser::ast::Filter;
/// let x = tableq_planner::Planner::new().verbose(true).explain(&Filter::default(), None, None);
/// assert!(x.plan.ranges.is_full() && x.plan.is_exact());
/// ```
#[derive(Debug, Clone)]
pub struct Planner {
    verbose: bool,
    max_ranges: usize,
}

impl Default for Planner {
    fn default() -> Planner {
        Planner {
            verbose: false,
            max_ranges: DEFAULT_MAX_RANGES,
        }
    }
}

impl Planner {
    /// Default settings: no step recording, at most [`DEFAULT_MAX_RANGES`] ranges.
    pub fn new() -> Planner {
        Planner::default()
    }

    /// Whether [`Planner::explain`] records every rewrite step.
    pub fn verbose(mut self, verbose: bool) -> Planner {
        self.verbose = verbose;
        self
    }

    /// The most ranges a plan may have (at least 1); beyond it the planner reads a coarser
    /// superset and keeps the precision in the residual.
    pub fn max_ranges(mut self, max_ranges: usize) -> Planner {
        self.max_ranges = max_ranges.max(1);
        self
    }

    /// Plans a query.
    pub fn plan(&self, filter: &Filter, select: Option<&Select>, top: Option<&Top>) -> Plan {
        self.plan_predicate(lower::lower(filter), select, top)
    }

    /// Plans an already lowered predicate.
    pub fn plan_predicate(
        &self,
        predicate: Predicate,
        select: Option<&Select>,
        top: Option<&Top>,
    ) -> Plan {
        let (rewritten, _) = rules::Driver::new().run(predicate);
        let x = extract_key_ranges(&rewritten, self.max_ranges);
        Plan {
            ranges: x.keys,
            residual: x.residual,
            select: projection(select),
            top: top.map(|t| t.value),
        }
    }

    /// Plans a query and keeps every intermediate stage (and, when [`verbose`](Self::verbose),
    /// every rewrite step) for `explain`.
    pub fn explain(
        &self,
        filter: &Filter,
        select: Option<&Select>,
        top: Option<&Top>,
    ) -> Explanation {
        self.explain_predicate(lower::lower(filter), select, top)
    }

    /// [`Planner::explain`] of an already lowered predicate.
    pub fn explain_predicate(
        &self,
        lowered: Predicate,
        select: Option<&Select>,
        top: Option<&Top>,
    ) -> Explanation {
        let (rewritten, mut steps) = rules::Driver::new()
            .record(self.verbose)
            .run(lowered.clone());
        let trace = if self.verbose { Some(&mut steps) } else { None };
        let x = extract::extract_key_ranges_traced(&rewritten, self.max_ranges, trace);
        let plan = Plan {
            ranges: x.keys,
            residual: x.residual,
            select: projection(select),
            top: top.map(|t| t.value),
        };
        Explanation {
            plan,
            lowered,
            rewritten,
            steps,
            coarsened: x.coarsened,
            max_ranges: self.max_ranges,
            verbose: self.verbose,
        }
    }
}

/// `$select`: `*` (or none) is `None`; otherwise the names deduplicated in first-mention
/// order.
pub fn projection(select: Option<&Select>) -> Option<Vec<String>> {
    match select? {
        Select::All(_) => None,
        Select::Properties(props) => {
            let mut names: Vec<String> = Vec::with_capacity(props.len());
            for p in props {
                if !names.contains(&p.name) {
                    names.push(p.name.clone());
                }
            }
            Some(names)
        }
    }
}

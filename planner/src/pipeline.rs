//! The planning pipeline: [`Planner`] runs the stages — [`lower`](crate::lower) →
//! [`rules`](crate::rules) → [`extract`](crate::extract) — and assembles the [`Plan`]; with
//! [`Planner::explain`] it also keeps every intermediate stage (and, when verbose, every
//! rewrite step) as an [`Explanation`]. [`plan()`] is the default planner in one call and
//! [`projection`] the `$select` part of a plan.
//!
//! ```
//! use tableq_parser::ast::Filter;
//! let plan = tableq_planner::Planner::new().max_ranges(8).plan(&Filter::default(), None, None);
//! assert!(plan.ranges.is_full() && plan.is_exact());
//! ```

use crate::explain::Explanation;
use crate::extract::{self, DEFAULT_MAX_RANGES, extract_key_ranges};
use crate::lower;
use crate::plan::Plan;
use crate::predicate::Predicate;
use crate::rules;
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

//! Rendering plans for people (`Display`) and scripts (one stable JSON object).
//!
//! **Text** (`Display` of [`Plan`]): one line per range with its strategy, then the residual
//! in canonical OData, the projection and the page limit:
//!
//! ```text
//! ranges: 2, exact (the residual is not evaluated)
//!   1. point lookup     PartitionKey = 'a'  RowKey = '1'
//!   2. partition scan   PartitionKey = 'b'  RowKey *
//! residual: true
//! select: *
//! top: none
//! ```
//!
//! Intervals print as `= 'k'` (one key), `*` (every key) or `['a' .. 'c')` with `(`/`)` for
//! an excluded end and `-inf`/`+inf` for an unbounded one. An [`Explanation`] prints the
//! lowered and rewritten predicates and, when verbose, every rule step before the plan.
//!
//! **JSON** ([`Plan::to_json`]):
//!
//! ```json
//! {"ranges": [{"strategy": "point" | "partition" | "range" | "full",
//!              "partition_key": BOUNDS, "row_key": BOUNDS}, ...],
//!  "residual": "true" | "<canonical OData>",
//!  "select": ["Name", ...] | null,
//!  "top": 10 | null}
//! ```
//!
//! where `BOUNDS` is `{"lower": END | null, "upper": END | null}` (`null` = unbounded) and
//! `END` is `{"value": "<key>", "inclusive": true | false}`. Ranges are in key order; a plan
//! that reads nothing has `"ranges": []`. A verbose [`Explanation::to_json`] adds
//! `"steps": [{"rule": …, "before": …, "after": …}, ...]`.
//!
//! ```
//! use tableq_parser::ast::Filter;
//! let plan = tableq_planner::plan(&Filter::default(), None, None);
//! assert_eq!(
//!     plan.to_json().to_string(),
//!     r#"{"ranges":[{"partition_key":{"lower":null,"upper":null},"row_key":{"lower":null,"upper":null},"strategy":"full"}],"residual":"true","select":null,"top":null}"#
//! );
//! ```

use crate::plan::{KeyInterval, KeyRange, Plan};
use crate::predicate::Predicate;
use crate::rules::Step;
use serde_json::{Value as Json, json};
use std::fmt;
use std::ops::Bound;

// The text form of one key interval, defined with the key interval itself.
pub use crate::keyspace::DisplayInterval;

/// A plan with the stages that led to it, for `explain`.
#[derive(Debug, Clone)]
pub struct Explanation {
    /// The plan.
    pub plan: Plan,
    /// The filter lowered to a normalised predicate.
    pub lowered: Predicate,
    /// The predicate after the rewrite rules.
    pub rewritten: Predicate,
    /// Every rewrite step (recorded only when verbose).
    pub steps: Vec<Step>,
    /// Whether key sets were coarsened (range cap or scan order).
    pub coarsened: bool,
    /// The range cap used.
    pub max_ranges: usize,
    /// Whether steps were recorded and are shown.
    pub verbose: bool,
}

impl Plan {
    /// The stable JSON form (see the module docs).
    pub fn to_json(&self) -> Json {
        json!({
            "ranges": self.ranges.ranges().iter().map(range_json).collect::<Vec<_>>(),
            "residual": self.residual.to_string(),
            "select": self.select,
            "top": self.top,
        })
    }
}

impl Explanation {
    /// The plan's JSON, plus `"steps"` when verbose.
    pub fn to_json(&self) -> Json {
        let mut j = self.plan.to_json();
        if self.verbose
            && let Some(obj) = j.as_object_mut()
        {
            let steps = self
                .steps
                .iter()
                .map(|s| json!({"rule": s.rule, "before": s.before, "after": s.after}))
                .collect::<Vec<_>>();
            obj.insert("steps".to_owned(), Json::Array(steps));
        }
        j
    }
}

fn range_json(r: &KeyRange) -> Json {
    json!({
        "strategy": r.strategy().as_str(),
        "partition_key": interval_json(&r.partition_key),
        "row_key": interval_json(&r.row_key),
    })
}

fn interval_json(iv: &KeyInterval) -> Json {
    json!({ "lower": bound_json(&iv.lower), "upper": bound_json(&iv.upper) })
}

fn bound_json(b: &Bound<String>) -> Json {
    match b {
        Bound::Unbounded => Json::Null,
        Bound::Included(v) => json!({"value": v, "inclusive": true}),
        Bound::Excluded(v) => json!({"value": v, "inclusive": false}),
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.ranges.len();
        if n == 0 {
            writeln!(f, "ranges: none (the filter cannot match; nothing is read)")?;
        } else {
            let exactness = if self.is_exact() {
                "exact (the residual is not evaluated)"
            } else {
                "filtered by the residual"
            };
            writeln!(f, "ranges: {n}, {exactness}")?;
            let width = n.to_string().len();
            for (i, r) in self.ranges.ranges().iter().enumerate() {
                writeln!(
                    f,
                    "  {:>width$}. {:<15}  PartitionKey {}  RowKey {}",
                    i + 1,
                    r.strategy().description(),
                    DisplayInterval(&r.partition_key),
                    DisplayInterval(&r.row_key),
                )?;
            }
        }
        writeln!(f, "residual: {}", self.residual)?;
        match &self.select {
            None => writeln!(f, "select: *")?,
            Some(names) => writeln!(f, "select: {}", names.join(", "))?,
        }
        match self.top {
            None => write!(f, "top: none"),
            Some(t) => write!(f, "top: {t}"),
        }
    }
}

impl fmt::Display for Explanation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.verbose {
            writeln!(f, "lowered:   {}", self.lowered)?;
            if self.steps.is_empty() {
                writeln!(f, "steps:     (no rule applied)")?;
            } else {
                writeln!(f, "steps:")?;
                for s in &self.steps {
                    writeln!(f, "  {}: {}  =>  {}", s.rule, s.before, s.after)?;
                }
            }
            writeln!(f, "rewritten: {}", self.rewritten)?;
            if self.coarsened {
                writeln!(
                    f,
                    "note: key ranges were coarsened (cap {} ranges, or a multi-partition range with gaps in RowKey); the residual keeps the precision",
                    self.max_ranges
                )?;
            }
        }
        write!(f, "{}", self.plan)
    }
}

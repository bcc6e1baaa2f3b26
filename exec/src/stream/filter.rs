//! [`StreamFilter`]: a plan compiled for testing rows one at a time, as they arrive in
//! input order — in the plan's key ranges ([`KeySet::contains`], a binary search) and
//! satisfying its residual (a [`CompiledPredicate`] that reads properties by name).
//!
//! ```
//! use tableq_exec::stream::StreamFilter;
//! use tableq_model::{Entity, Value};
//! use tableq_parser::FilterOptions;
//! use tableq_planner::{Query, QueryText};
//! let text = QueryText { filter: Some("PartitionKey eq 'a' and N gt 1"), ..QueryText::default() };
//! let plan = Query::parse(text, &FilterOptions::default()).unwrap().plan();
//! let filter = StreamFilter::new(&plan);
//! let mut e = Entity::new("a", "1");
//! e.set("N", Value::Int32(2));
//! assert!(filter.matches(&e));
//! assert!(!filter.matches(&Entity::new("b", "1")));
//! ```

use crate::compile::CompiledPredicate;
use crate::source::SourceRow;
use tableq_planner::plan::{KeySet, Plan};

/// A plan compiled for testing rows one by one: in the key ranges and satisfying the
/// residual (compiled once, properties read by name).
#[derive(Debug)]
pub struct StreamFilter<'p> {
    ranges: &'p KeySet,
    residual: CompiledPredicate,
    /// Nothing can match: no range, or a false residual.
    nothing: bool,
}

impl<'p> StreamFilter<'p> {
    /// Compiles `plan`'s ranges and residual.
    pub fn new(plan: &'p Plan) -> StreamFilter<'p> {
        let residual = CompiledPredicate::by_name(&plan.residual);
        StreamFilter {
            ranges: &plan.ranges,
            nothing: plan.ranges.is_empty() || residual.is_false(),
            residual,
        }
    }

    /// Whether `row` matches the plan.
    #[inline]
    pub fn matches<R: SourceRow + ?Sized>(&self, row: &R) -> bool {
        !self.nothing
            && self.ranges.contains(row.partition_key(), row.row_key())
            && (self.residual.is_true() || self.residual.eval(row))
    }
}

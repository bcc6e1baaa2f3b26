//! Plans: key ranges + residual + projection + page limit.

use crate::predicate::Predicate;
use std::ops::Bound;

/// An interval of key strings under the UTF-16 ordinal order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyInterval {
    /// Lower bound.
    pub lower: Bound<String>,
    /// Upper bound.
    pub upper: Bound<String>,
}

/// A rectangle of keys: every (PartitionKey, RowKey) with the PartitionKey in
/// `partition_key` and the RowKey in `row_key`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRange {
    /// The PartitionKey interval.
    pub partition_key: KeyInterval,
    /// The RowKey interval.
    pub row_key: KeyInterval,
}

/// How a range is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// One (PartitionKey, RowKey).
    Point,
    /// One whole partition.
    Partition,
    /// Any other bounded key range.
    Range,
    /// The whole table.
    Full,
}

/// A sorted, disjoint union of key ranges. Empty = read nothing.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KeySet {
    /// The ranges in key order.
    pub ranges: Vec<KeyRange>,
}

/// An executable plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Where to read.
    pub ranges: KeySet,
    /// What read entities must still satisfy; `Predicate::True` when the ranges are exact.
    pub residual: Predicate,
    /// Projected property names (deduplicated, in first-mention order), `None` for all.
    pub select: Option<Vec<String>>,
    /// Page size limit (`$top`).
    pub top: Option<u32>,
}

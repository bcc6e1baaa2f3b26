//! Plans: key ranges + residual + projection + page limit.
//!
//! A [`KeySet`] is a sorted, disjoint union of [`KeyRange`]s — rectangles
//! *PartitionKey interval × RowKey interval* under UTF-16 ordinal order
//! ([`tableq_model::order::compare_str`]). **Order invariant:** every key of `ranges[i]`
//! sorts before every key of `ranges[i + 1]` in (PartitionKey, RowKey) order, so scanning the
//! ranges one after the other, each in key order, yields entities in key order. A range whose
//! PartitionKey interval holds more than one key therefore always has a single RowKey
//! interval (the executor scans the composite range and checks the RowKey per row).
//!
//! Strings have no maximum, so "to the end of the partition" is an `Unbounded` upper bound
//! of the RowKey interval inside a point PartitionKey interval.
//!
//! ```
//! use tableq_planner::plan::{KeyInterval, KeyRange, Strategy};
//! let r = KeyRange { partition_key: KeyInterval::point("p"), row_key: KeyInterval::full() };
//! assert_eq!(r.strategy(), Strategy::Partition);
//! assert!(r.contains("p", "anything") && !r.contains("q", ""));
//! ```

use crate::keyspace::{self, Cut, Interval, Space};
use crate::predicate::Predicate;
use std::cmp::Ordering;
use std::fmt;
use std::ops::Bound;
use tableq_model::order::compare_str;

/// An interval of key strings under the UTF-16 ordinal order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyInterval {
    /// Lower bound.
    pub lower: Bound<String>,
    /// Upper bound.
    pub upper: Bound<String>,
}

impl KeyInterval {
    /// Every key.
    pub fn full() -> KeyInterval {
        KeyInterval {
            lower: Bound::Unbounded,
            upper: Bound::Unbounded,
        }
    }

    /// Exactly `key`.
    pub fn point(key: impl Into<String>) -> KeyInterval {
        let key = key.into();
        KeyInterval {
            lower: Bound::Included(key.clone()),
            upper: Bound::Included(key),
        }
    }

    /// Whether both ends are unbounded.
    pub fn is_full(&self) -> bool {
        matches!(
            (&self.lower, &self.upper),
            (Bound::Unbounded, Bound::Unbounded)
        )
    }

    /// The single key of a point interval (`[k, k]`).
    pub fn as_point(&self) -> Option<&str> {
        match (&self.lower, &self.upper) {
            (Bound::Included(a), Bound::Included(b)) if a == b => Some(a),
            _ => None,
        }
    }

    /// Whether `key` lies in the interval (UTF-16 ordinal order).
    pub fn contains(&self, key: &str) -> bool {
        let above = match &self.lower {
            Bound::Unbounded => true,
            Bound::Included(l) => compare_str(key, l) != Ordering::Less,
            Bound::Excluded(l) => compare_str(key, l) == Ordering::Greater,
        };
        above
            && match &self.upper {
                Bound::Unbounded => true,
                Bound::Included(u) => compare_str(key, u) != Ordering::Greater,
                Bound::Excluded(u) => compare_str(key, u) == Ordering::Less,
            }
    }

    /// From an internal cut interval `[lo, hi)`.
    pub(crate) fn from_cuts(iv: &Interval<'_>) -> KeyInterval {
        if let Some(k) = keyspace::as_point(iv) {
            return KeyInterval::point(k);
        }
        let lower = match (iv.0, iv.0.as_after()) {
            (Cut::NegInf | Cut::PosInf, _) => Bound::Unbounded,
            (_, Some(prev)) => Bound::Excluded(prev.to_owned()),
            (Cut::Before(s) | Cut::After(s), None) => Bound::Included(s.to_owned()),
        };
        let upper = match (iv.1, iv.1.as_after()) {
            (Cut::NegInf | Cut::PosInf, _) => Bound::Unbounded,
            (_, Some(prev)) => Bound::Included(prev.to_owned()),
            (Cut::Before(s) | Cut::After(s), None) => Bound::Excluded(s.to_owned()),
        };
        KeyInterval { lower, upper }
    }
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

impl KeyRange {
    /// The whole table.
    pub fn full() -> KeyRange {
        KeyRange {
            partition_key: KeyInterval::full(),
            row_key: KeyInterval::full(),
        }
    }

    /// How the range is read.
    pub fn strategy(&self) -> Strategy {
        match (self.partition_key.as_point(), self.row_key.as_point()) {
            (Some(_), Some(_)) => Strategy::Point,
            (Some(_), None) if self.row_key.is_full() => Strategy::Partition,
            (None, None) if self.partition_key.is_full() && self.row_key.is_full() => {
                Strategy::Full
            }
            _ => Strategy::Range,
        }
    }

    /// Whether the key pair lies in the range.
    pub fn contains(&self, partition_key: &str, row_key: &str) -> bool {
        self.partition_key.contains(partition_key) && self.row_key.contains(row_key)
    }
}

/// How a range is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// One (PartitionKey, RowKey): a point lookup.
    Point,
    /// One whole partition: a partition scan.
    Partition,
    /// Any other bounded key range: a range scan (checking the RowKey per row when the
    /// PartitionKey interval holds several keys).
    Range,
    /// The whole table: a full scan.
    Full,
}

impl Strategy {
    /// The stable machine name: `point`, `partition`, `range`, `full`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Strategy::Point => "point",
            Strategy::Partition => "partition",
            Strategy::Range => "range",
            Strategy::Full => "full",
        }
    }

    /// The human name: `point lookup`, `partition scan`, `range scan`, `full scan`.
    pub const fn description(self) -> &'static str {
        match self {
            Strategy::Point => "point lookup",
            Strategy::Partition => "partition scan",
            Strategy::Range => "range scan",
            Strategy::Full => "full scan",
        }
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A sorted, disjoint union of key ranges (see the module docs). Empty = read nothing.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KeySet {
    /// The ranges in key order.
    pub ranges: Vec<KeyRange>,
}

impl KeySet {
    /// The whole table: one full range.
    pub fn all() -> KeySet {
        KeySet {
            ranges: vec![KeyRange::full()],
        }
    }

    /// Nothing.
    pub fn none() -> KeySet {
        KeySet { ranges: Vec::new() }
    }

    /// Whether nothing is read.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Whether the whole table is read.
    pub fn is_full(&self) -> bool {
        self.ranges.len() == 1 && self.ranges[0].strategy() == Strategy::Full
    }

    /// Whether the key pair lies in some range.
    pub fn contains(&self, partition_key: &str, row_key: &str) -> bool {
        self.ranges
            .iter()
            .any(|r| r.contains(partition_key, row_key))
    }

    /// Checks the order invariant of the module docs: each range non-empty, a multi-key
    /// PartitionKey interval only before/after other PartitionKeys, and consecutive ranges
    /// strictly ascending in (PartitionKey, RowKey) order. Returns a description of the first
    /// violation.
    pub fn check_invariants(&self) -> Result<(), String> {
        for (i, r) in self.ranges.iter().enumerate() {
            if interval_is_empty(&r.partition_key) || interval_is_empty(&r.row_key) {
                return Err(format!("range {i} is empty: {r:?}"));
            }
        }
        for (i, w) in self.ranges.windows(2).enumerate() {
            let (a, b) = (&w[0], &w[1]);
            let ok = match (a.partition_key.as_point(), b.partition_key.as_point()) {
                (Some(p), Some(q)) if p == q => {
                    upper_below_lower(&a.row_key.upper, &b.row_key.lower)
                }
                _ => upper_below_lower(&a.partition_key.upper, &b.partition_key.lower),
            };
            if !ok {
                return Err(format!(
                    "ranges {i} and {} overlap or are out of order",
                    i + 1
                ));
            }
        }
        Ok(())
    }

    /// From the internal set representation (which must be scan-order safe).
    pub(crate) fn from_space(space: &Space<'_>) -> KeySet {
        let mut ranges = Vec::with_capacity(space.range_count());
        for seg in &space.0 {
            let pk = KeyInterval::from_cuts(&seg.pk);
            if keyspace::as_point(&seg.pk).is_some() {
                for rk in &seg.rk.0 {
                    ranges.push(KeyRange {
                        partition_key: pk.clone(),
                        row_key: KeyInterval::from_cuts(rk),
                    });
                }
            } else if let Some(hull) = seg.rk.hull() {
                ranges.push(KeyRange {
                    partition_key: pk,
                    row_key: KeyInterval::from_cuts(&hull),
                });
            }
        }
        KeySet { ranges }
    }
}

fn interval_is_empty(iv: &KeyInterval) -> bool {
    match (&iv.lower, &iv.upper) {
        (Bound::Included(l), Bound::Included(u)) => compare_str(l, u) == Ordering::Greater,
        (Bound::Included(l) | Bound::Excluded(l), Bound::Excluded(u))
        | (Bound::Excluded(l), Bound::Included(u)) => compare_str(l, u) != Ordering::Less,
        (_, Bound::Excluded(u)) => u.is_empty(),
        _ => false,
    }
}

/// Whether every key below `upper` is below every key above `lower` (strictly disjoint).
fn upper_below_lower(upper: &Bound<String>, lower: &Bound<String>) -> bool {
    match (upper, lower) {
        (Bound::Unbounded, _) | (_, Bound::Unbounded) => false,
        (Bound::Included(u), Bound::Included(l)) => compare_str(u, l) == Ordering::Less,
        (Bound::Included(u) | Bound::Excluded(u), Bound::Excluded(l))
        | (Bound::Excluded(u), Bound::Included(l)) => compare_str(u, l) != Ordering::Greater,
    }
}

/// An executable plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Where to read.
    pub ranges: KeySet,
    /// What read entities must still satisfy; `Predicate::True` when the ranges are exact
    /// (then it need not be evaluated).
    pub residual: Predicate,
    /// Projected property names (deduplicated, in first-mention order), `None` for all.
    pub select: Option<Vec<String>>,
    /// Page size limit (`$top`).
    pub top: Option<u32>,
}

impl Plan {
    /// Whether the ranges capture the filter exactly (the residual is `true`).
    pub fn is_exact(&self) -> bool {
        self.residual.is_true()
    }

    /// Whether the entity with these keys and properties matches the plan's filter: in the
    /// ranges and satisfying the residual.
    pub fn matches<E: tableq_model::EntityView + ?Sized>(&self, entity: &E) -> bool {
        self.ranges
            .contains(entity.partition_key(), entity.row_key())
            && (self.is_exact() || self.residual.eval(entity))
    }
}

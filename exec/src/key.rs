//! Keys and scan bounds: the (PartitionKey, RowKey) positions the executor and the
//! [`EntitySource`](crate::EntitySource) exchange.
//!
//! Every comparison here is the UTF-16 ordinal order of the spec
//! ([`tableq_model::order::compare_str`]), never `str::cmp`.
//!
//! ```
//! use tableq_exec::{Key, Scan};
//! use tableq_planner::plan::KeyRange;
//! let range = KeyRange::full();
//! let from = Key::new("p1", "r5");
//! let scan = Scan { range: &range, from: Some(&from), until: None };
//! assert!(scan.contains("p1", "r5") && scan.contains("p2", "") && !scan.contains("p1", "r4"));
//! ```

use std::cmp::Ordering;
use std::fmt;
use tableq_model::order::compare_str;
use tableq_planner::plan::KeyRange;

/// A (PartitionKey, RowKey) pair: a position in a table's key order.
///
/// Used for continuations (the next entity to examine, inclusive) and chunk bounds. `Ord`
/// is the UTF-16 ordinal order of the spec, PartitionKey first.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Key {
    /// The PartitionKey.
    pub partition_key: String,
    /// The RowKey.
    pub row_key: String,
}

impl Key {
    /// A key from its two parts.
    pub fn new(partition_key: impl Into<String>, row_key: impl Into<String>) -> Key {
        Key {
            partition_key: partition_key.into(),
            row_key: row_key.into(),
        }
    }

    /// How this key orders against the pair `(partition_key, row_key)`.
    pub fn cmp_pair(&self, partition_key: &str, row_key: &str) -> Ordering {
        compare_keys(&self.partition_key, &self.row_key, partition_key, row_key)
    }
}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Key {
    fn cmp(&self, other: &Self) -> Ordering {
        self.cmp_pair(&other.partition_key, &other.row_key)
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({:?}, {:?})", self.partition_key, self.row_key)
    }
}

/// Compares two (PartitionKey, RowKey) pairs in table order.
#[inline]
pub fn compare_keys(pk_a: &str, rk_a: &str, pk_b: &str, rk_b: &str) -> Ordering {
    compare_str(pk_a, pk_b).then_with(|| compare_str(rk_a, rk_b))
}

/// What one call of [`EntitySource::scan`](crate::EntitySource::scan) reads: the entities
/// of the rectangle `range` whose key is `>= from` (when given) and `< until` (when given).
#[derive(Debug, Clone, Copy)]
pub struct Scan<'a> {
    /// The key rectangle (PartitionKey interval × RowKey interval).
    pub range: &'a KeyRange,
    /// Inclusive lower key bound, in addition to the range.
    pub from: Option<&'a Key>,
    /// Exclusive upper key bound, in addition to the range.
    pub until: Option<&'a Key>,
}

impl Scan<'_> {
    /// Whether the key pair is part of this scan.
    pub fn contains(&self, partition_key: &str, row_key: &str) -> bool {
        self.range.contains(partition_key, row_key)
            && self
                .from
                .is_none_or(|f| f.cmp_pair(partition_key, row_key) != Ordering::Greater)
            && self
                .until
                .is_none_or(|u| u.cmp_pair(partition_key, row_key) == Ordering::Greater)
    }
}

/// One independent piece of a [`Scan`], produced by
/// [`EntitySource::split`](crate::EntitySource::split): the keys `>= from` and `< until` of
/// the scan's range (`None` = the scan's own bound).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Chunk {
    /// Inclusive lower bound (`None`: the scan's `from`).
    pub from: Option<Key>,
    /// Exclusive upper bound (`None`: the scan's `until`).
    pub until: Option<Key>,
    /// How many entities the chunk holds, if the source knows (an estimate is fine). The
    /// executor uses it to keep tiny work on the calling thread and to size look-ahead.
    pub rows: Option<usize>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use tableq_planner::plan::KeyInterval;

    #[test]
    fn key_order_is_utf16_ordinal() {
        let a = Key::new("p", "\u{10000}");
        let b = Key::new("p", "\u{FFFF}");
        assert!(a < b);
        assert!(Key::new("a", "z") < Key::new("b", ""));
    }

    #[test]
    fn scan_bounds() {
        let range = KeyRange {
            partition_key: KeyInterval::point("p"),
            row_key: KeyInterval::full(),
        };
        let (from, until) = (Key::new("p", "b"), Key::new("p", "d"));
        let scan = Scan {
            range: &range,
            from: Some(&from),
            until: Some(&until),
        };
        assert!(!scan.contains("p", "a"));
        assert!(scan.contains("p", "b") && scan.contains("p", "c"));
        assert!(!scan.contains("p", "d") && !scan.contains("q", "c"));
    }
}

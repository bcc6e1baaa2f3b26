//! "Is this key in the plan's ranges?" for the streaming engine, which tests every entity of
//! the input: a binary search on the PartitionKey intervals instead of a walk over up to
//! `--max-ranges` ranges (the ranges are in key order, and only ranges of one point
//! PartitionKey share PartitionKeys — [`KeySet`](tableq::planner::KeySet)'s invariant).

use tableq::model::order::compare_str;
use tableq::planner::{KeyInterval, KeyRange};

/// The plan's key ranges, for "is this key in a range": a binary search on the
/// PartitionKey intervals (the ranges are in key order and only ranges of one
/// PartitionKey share PartitionKeys), then the few candidates in full.
#[derive(Clone, Copy)]
pub(super) struct RangeIndex<'p>(pub(super) &'p [KeyRange]);

impl RangeIndex<'_> {
    /// Whether the key lies in one of the ranges (as `KeySet::contains`).
    pub(super) fn contains(&self, partition_key: &str, row_key: &str) -> bool {
        let ranges = self.0;
        if ranges.len() <= 4 {
            return ranges.iter().any(|r| r.contains(partition_key, row_key));
        }
        let start = ranges.partition_point(|r| below(&r.partition_key, partition_key));
        for r in &ranges[start..] {
            if above(&r.partition_key, partition_key) {
                break;
            }
            if r.contains(partition_key, row_key) {
                return true;
            }
        }
        false
    }
}

/// Whether every key of `iv` is below `key`.
fn below(iv: &KeyInterval, key: &str) -> bool {
    use std::ops::Bound;
    match &iv.upper {
        Bound::Unbounded => false,
        Bound::Included(u) => compare_str(u, key).is_lt(),
        Bound::Excluded(u) => compare_str(u, key).is_le(),
    }
}

/// Whether every key of `iv` is above `key`.
fn above(iv: &KeyInterval, key: &str) -> bool {
    use std::ops::Bound;
    match &iv.lower {
        Bound::Unbounded => false,
        Bound::Included(l) => compare_str(l, key).is_gt(),
        Bound::Excluded(l) => compare_str(l, key).is_ge(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tableq::parser::{FilterOptions, parse_filter};

    #[test]
    fn range_index_agrees_with_the_key_set() {
        let keys = [
            "",
            "a",
            "b",
            "b\u{0}",
            "c",
            "d",
            "p1",
            "p2",
            "p3",
            "r1",
            "r2",
            "z",
            "\u{1F600}",
            "\u{FF21}",
        ];
        for filter in [
            "PartitionKey eq 'a' or PartitionKey eq 'c' or PartitionKey eq 'p2' or PartitionKey eq 'z' or PartitionKey eq 'd'",
            "(PartitionKey eq 'p1' and (RowKey eq 'r1' or RowKey eq 'a' or RowKey ge 'z')) or (PartitionKey eq 'p3' and RowKey lt 'c') or PartitionKey gt 'p3' or PartitionKey lt 'b' or PartitionKey eq 'c'",
            "(PartitionKey ge 'b' and PartitionKey lt 'd' and RowKey eq 'r1') or PartitionKey eq 'p2' or PartitionKey eq 'z' or PartitionKey eq '\u{FF21}' or PartitionKey eq 'a'",
        ] {
            let parsed = parse_filter(filter, &FilterOptions::unlimited()).unwrap();
            let plan = tableq::planner::plan(&parsed, None, None);
            assert!(
                plan.ranges.ranges().len() > 4,
                "{filter}: {:?}",
                plan.ranges
            );
            let index = RangeIndex(plan.ranges.ranges());
            for pk in keys {
                for rk in keys {
                    assert_eq!(
                        index.contains(pk, rk),
                        plan.ranges.contains(pk, rk),
                        "{filter}: {pk:?}/{rk:?}"
                    );
                }
            }
        }
    }
}

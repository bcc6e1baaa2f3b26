//! Plans: key ranges + residual + projection + page limit.
//!
//! Key order is the UTF-16 ordinal order of the spec ([`tableq_model::order::compare_str`]).
//! Three types describe where a plan reads:
//!
//! * [`KeyInterval`] — an interval of key strings, a plain value with public bounds (it may
//!   be empty or spelled in several equivalent ways: `gt 'a'` is `ge 'a\0'`, since nothing
//!   lies between a string and its successor `s + "\0"`). Its methods compare and merge
//!   bounds ([`contains`](KeyInterval::contains), [`position`](KeyInterval::position),
//!   [`cmp_lower`](KeyInterval::cmp_lower), [`intersect`](KeyInterval::intersect),
//!   [`hull`](KeyInterval::hull), [`precedes`](KeyInterval::precedes), …): they are the
//!   one implementation of bound logic that the planner, the executor and sources share.
//!   It is defined with the key-space algebra it shares that logic with and re-exported
//!   here.
//! * [`KeyRange`] — a rectangle *PartitionKey interval × RowKey interval*.
//! * [`KeySet`] — a union of ranges that is **valid by construction**: its ranges are
//!   private and every constructor ([`KeySet::new`], [`KeySet::all`], [`KeySet::none`],
//!   `From<KeyRange>`, the planner) normalises, so every `KeySet` holds non-empty ranges in
//!   canonical form (a one-key interval is always [`KeyInterval::point`], an unbounded end
//!   is `Unbounded`), sorted and disjoint: every key of `ranges()[i]` sorts before every key
//!   of `ranges()[i + 1]` in (PartitionKey, RowKey) order, so scanning the ranges one after
//!   the other, each in key order, yields entities in key order. A range whose PartitionKey
//!   interval holds more than one key therefore has a single RowKey interval (a scan of the
//!   composite range checks the RowKey per row). Consumers (the executor, a storage
//!   layer's pushdown, explain) read the ranges with [`KeySet::ranges`] and rely on this.
//!
//! Strings have no maximum, so "to the end of the partition" is an `Unbounded` upper bound
//! of the RowKey interval inside a point PartitionKey interval.
//!
//! ```
//! use std::ops::Bound;
//! use tableq_planner::plan::{KeyInterval, KeyRange, KeySet, Strategy};
//!
//! let r = KeyRange::partition("p");
//! assert_eq!(r.strategy(), Strategy::Partition);
//! assert!(r.contains("p", "anything") && !r.contains("q", ""));
//!
//! // Overlapping, unordered ranges are merged and sorted; empty ones disappear.
//! let a_to_c = KeyInterval::new(Bound::Included("a".into()), Bound::Excluded("c".into()));
//! let b_to_d = KeyInterval::new(Bound::Included("b".into()), Bound::Included("d".into()));
//! let set = KeySet::new([
//!     KeyRange::new(b_to_d, KeyInterval::full()),
//!     KeyRange::point("x", "1"),
//!     KeyRange::new(a_to_c, KeyInterval::full()),
//!     KeyRange::new(KeyInterval::point("z"), KeyInterval::new(Bound::Excluded("b".into()), Bound::Excluded("b\0".into()))),
//! ]).unwrap();
//! assert_eq!(set.len(), 2);
//! assert_eq!(set.ranges()[0].partition_key, KeyInterval::new(Bound::Included("a".into()), Bound::Included("d".into())));
//! assert_eq!(set.ranges()[1].as_point(), Some(("x", "1")));
//! ```

pub use crate::keyspace::KeyInterval;

use crate::keyspace::{self, DisplayInterval, Intervals, Space};
use crate::predicate::Predicate;
use std::fmt;

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
    /// The rectangle `partition_key × row_key`.
    pub fn new(partition_key: KeyInterval, row_key: KeyInterval) -> KeyRange {
        KeyRange {
            partition_key,
            row_key,
        }
    }

    /// The whole table.
    pub const fn full() -> KeyRange {
        KeyRange {
            partition_key: KeyInterval::full(),
            row_key: KeyInterval::full(),
        }
    }

    /// One whole partition.
    pub fn partition(partition_key: impl Into<String>) -> KeyRange {
        KeyRange::new(KeyInterval::point(partition_key), KeyInterval::full())
    }

    /// One entity's key.
    pub fn point(partition_key: impl Into<String>, row_key: impl Into<String>) -> KeyRange {
        KeyRange::new(
            KeyInterval::point(partition_key),
            KeyInterval::point(row_key),
        )
    }

    /// The (PartitionKey, RowKey) of a range that holds exactly one key.
    pub fn as_point(&self) -> Option<(&str, &str)> {
        Some((self.partition_key.as_point()?, self.row_key.as_point()?))
    }

    /// Whether the range holds no key.
    pub fn is_empty(&self) -> bool {
        self.partition_key.is_empty() || self.row_key.is_empty()
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
    #[inline]
    pub fn contains(&self, partition_key: &str, row_key: &str) -> bool {
        self.partition_key.contains(partition_key) && self.row_key.contains(row_key)
    }

    /// Whether every key of `self` sorts before every key of `other` in (PartitionKey,
    /// RowKey) order. Meant for non-empty ranges: true when the PartitionKey intervals are
    /// in order, or when they share exactly one key — the last of `self`'s and the first of
    /// `other`'s — and the RowKey intervals are in order.
    pub fn precedes(&self, other: &KeyRange) -> bool {
        if self.partition_key.precedes(&other.partition_key) {
            return true;
        }
        let shared = (
            other.partition_key.lower_cut(),
            self.partition_key.upper_cut(),
        );
        keyspace::as_point(&shared).is_some() && self.row_key.precedes(&other.row_key)
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

/// A sorted, disjoint union of non-empty key ranges, valid by construction (see the
/// module docs). Empty = read nothing.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KeySet {
    /// The ranges in key order (invariants: module docs).
    ranges: Vec<KeyRange>,
}

/// Why [`KeySet::new`] cannot represent a union of ranges: over several PartitionKeys it
/// allows RowKeys in more than one interval, and such a set cannot be listed as ranges
/// that are scanned one after the other in key order (their rows interleave). Use one range
/// per partition, or plan a predicate and let the planner read a superset with a residual.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the ranges cannot be scanned in key order: PartitionKey {} allows RowKeys in {} separate intervals",
    DisplayInterval(.partition_key),
    .row_keys.len()
)]
#[non_exhaustive]
pub struct KeySetError {
    /// The PartitionKey interval (more than one key).
    pub partition_key: KeyInterval,
    /// The RowKey intervals it allows.
    pub row_keys: Vec<KeyInterval>,
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

    /// The union of `ranges` in normal form: empty ranges dropped, overlapping and adjacent
    /// ones merged, sorted in key order, bounds canonical. Fails only when the union spans
    /// several PartitionKeys with gaps in its RowKeys ([`KeySetError`]); any union of points,
    /// partitions, RowKey ranges inside partitions and PartitionKey ranges with one common
    /// RowKey interval succeeds. `O(n log n)` for `n` ranges with equal or disjoint
    /// PartitionKey intervals.
    pub fn new(ranges: impl IntoIterator<Item = KeyRange>) -> Result<KeySet, KeySetError> {
        let ranges: Vec<KeyRange> = ranges.into_iter().collect();
        let spaces: Vec<Space<'_>> = ranges
            .iter()
            .map(|r| {
                let (pk, rk) = (r.partition_key.cuts(), r.row_key.cuts());
                Space::product(
                    &Intervals::interval(pk.0, pk.1),
                    &Intervals::interval(rk.0, rk.1),
                )
            })
            .collect();
        let space = Space::union_all(spaces);
        if let Some(gappy) = space
            .0
            .iter()
            .find(|s| keyspace::as_point(&s.pk).is_none() && s.rk.0.len() > 1)
        {
            return Err(KeySetError {
                partition_key: KeyInterval::from_cuts(&gappy.pk),
                row_keys: gappy.rk.0.iter().map(KeyInterval::from_cuts).collect(),
            });
        }
        Ok(KeySet::from_space(&space))
    }

    /// The ranges, in key order.
    pub fn ranges(&self) -> &[KeyRange] {
        &self.ranges
    }

    /// The ranges, in key order.
    pub fn into_ranges(self) -> Vec<KeyRange> {
        self.ranges
    }

    /// The number of ranges.
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// Whether nothing is read.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Whether the whole table is read.
    pub fn is_full(&self) -> bool {
        self.ranges.len() == 1 && self.ranges[0].strategy() == Strategy::Full
    }

    /// Whether the key pair lies in some range. `O(log n)` in the number of ranges: a binary
    /// search on the PartitionKey intervals (sorted, and shared only by ranges of one point
    /// PartitionKey), then the few ranges of that PartitionKey — what an engine that tests
    /// every row of its input against a plan needs.
    ///
    /// ```
    /// use tableq_planner::plan::{KeyRange, KeySet};
    /// let set = KeySet::new((0..100).map(|i| KeyRange::partition(format!("p{i:02}")))).unwrap();
    /// assert!(set.contains("p42", "any") && !set.contains("p4", "any") && !set.contains("q", ""));
    /// ```
    #[inline]
    pub fn contains(&self, partition_key: &str, row_key: &str) -> bool {
        let ranges = self.ranges.as_slice();
        if ranges.len() <= 4 {
            return ranges.iter().any(|r| r.contains(partition_key, row_key));
        }
        // Ranges whose PartitionKeys all lie below the key come first; from there on, the
        // ranges that do not start above it hold it.
        let first = ranges.partition_point(|r| r.partition_key.ends_below(partition_key));
        ranges[first..]
            .iter()
            .take_while(|r| !r.partition_key.starts_above(partition_key))
            .any(|r| r.row_key.contains(row_key))
    }

    /// From the internal set representation. Always a valid key set (segments are sorted
    /// and disjoint); a segment over several PartitionKeys with a gappy RowKey set becomes
    /// its RowKey hull, a superset — callers that need the exact set check
    /// [`Space::scan_order_safe`] first.
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

impl From<KeyRange> for KeySet {
    /// The key set of one range (none when the range is empty), in canonical form.
    fn from(range: KeyRange) -> KeySet {
        let (pk, rk) = (range.partition_key.cuts(), range.row_key.cuts());
        KeySet::from_space(&Space::product(
            &Intervals::interval(pk.0, pk.1),
            &Intervals::interval(rk.0, rk.1),
        ))
    }
}

impl<'a> IntoIterator for &'a KeySet {
    type Item = &'a KeyRange;
    type IntoIter = std::slice::Iter<'a, KeyRange>;

    fn into_iter(self) -> Self::IntoIter {
        self.ranges.iter()
    }
}

/// An executable plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Where to read.
    pub ranges: KeySet,
    /// What read entities must still satisfy; `Predicate::TRUE` when the ranges are exact
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keyspace::strategies::{KEYS, arb_interval, universe};
    use proptest::prelude::{
        ProptestConfig, prop, prop_assert, prop_assert_eq, prop_oneof, proptest,
    };
    use proptest::strategy::Strategy as _;
    use std::ops::Bound;

    fn arb_range() -> impl proptest::strategy::Strategy<Value = KeyRange> {
        (arb_interval(), arb_interval()).prop_map(|(p, r)| KeyRange::new(p, r))
    }

    /// The form `KeySet` keeps: points as `[k, k]`, otherwise `Unbounded` for `ge ''`,
    /// `gt s` rather than `ge s + "\0"`, `le s` rather than `lt s + "\0"`.
    fn canonical(iv: &KeyInterval) -> bool {
        if let Some(k) = iv.as_point() {
            return iv == &KeyInterval::point(k);
        }
        let lower_ok = match &iv.lower {
            Bound::Included(s) => !s.is_empty() && !s.ends_with('\0'),
            _ => true,
        };
        let upper_ok = match &iv.upper {
            Bound::Excluded(s) => !s.ends_with('\0'),
            _ => true,
        };
        lower_ok && upper_ok
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn key_sets_are_normalised_unions(ranges in prop::collection::vec(arb_range(), 0..5)) {
            let keys = universe();
            match KeySet::new(ranges.clone()) {
                Ok(set) => {
                    for r in set.ranges() {
                        prop_assert!(!r.is_empty(), "{:?}", set);
                        prop_assert!(canonical(&r.partition_key) && canonical(&r.row_key), "{:?}", r);
                        if r.partition_key.as_point().is_none() {
                            // Several PartitionKeys: the range is scanned as one rectangle.
                            prop_assert!(!r.partition_key.is_empty());
                        }
                    }
                    prop_assert!(set.ranges().windows(2).all(|w| w[0].precedes(&w[1])), "{:?}", set);
                    for pk in &keys {
                        for rk in &keys {
                            let want = ranges.iter().any(|r| r.contains(pk, rk));
                            prop_assert_eq!(set.contains(pk, rk), want, "{:?} {:?} in {:?}", pk, rk, set);
                        }
                    }
                    // Normal form: building again from the result changes nothing.
                    prop_assert_eq!(KeySet::new(set.ranges().to_vec()), Ok(set.clone()));
                    if let [one] = ranges.as_slice() {
                        prop_assert_eq!(KeySet::from(one.clone()), set);
                    }
                }
                Err(e) => {
                    // Only a union over several PartitionKeys with RowKey gaps is refused.
                    prop_assert!(e.partition_key.as_point().is_none() && e.row_keys.len() > 1);
                    let multi = ranges.iter().filter(|r| !r.is_empty() && r.partition_key.as_point().is_none()).count();
                    prop_assert!(multi >= 1 && ranges.len() >= 2, "{:?}", ranges);
                    prop_assert!(!e.to_string().is_empty());
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        /// The binary search of `contains` (sets of more than four ranges) agrees with a
        /// walk over every range.
        #[test]
        fn contains_agrees_with_a_linear_walk(ranges in prop::collection::vec(prop_oneof![
            1 => arb_range(),
            3 => (prop::sample::select(KEYS), arb_interval())
                .prop_map(|(pk, rk)| KeyRange::new(KeyInterval::point(pk), rk)),
        ], 5..24)) {
            let Ok(set) = KeySet::new(ranges) else { return Ok(()) };
            let keys = universe();
            for pk in &keys {
                for rk in &keys {
                    let linear = set.ranges().iter().any(|r| r.contains(pk, rk));
                    prop_assert_eq!(set.contains(pk, rk), linear, "{:?} {:?} in {:?}", pk, rk, set);
                }
            }
        }
    }

    #[test]
    fn range_order_and_points() {
        let p = KeyRange::point("p", "r");
        assert_eq!(p.as_point(), Some(("p", "r")));
        assert!(KeyRange::point("p", "a").precedes(&KeyRange::point("p", "b")));
        assert!(!KeyRange::point("p", "b").precedes(&KeyRange::point("p", "a")));
        // A range ending with partition `p` precedes one starting with `p` when the RowKeys
        // are in order…
        let up_to_p = KeyRange::new(
            KeyInterval::new(Bound::Unbounded, Bound::Included("p".into())),
            KeyInterval::new(Bound::Unbounded, Bound::Excluded("m".into())),
        );
        let from_p = KeyRange::new(
            KeyInterval::new(Bound::Included("p".into()), Bound::Unbounded),
            KeyInterval::new(Bound::Included("m".into()), Bound::Unbounded),
        );
        assert!(up_to_p.precedes(&from_p) && !from_p.precedes(&up_to_p));
        // …but not when they share more than one PartitionKey.
        let from_o = KeyRange::new(
            KeyInterval::new(Bound::Included("o".into()), Bound::Unbounded),
            from_p.row_key.clone(),
        );
        assert!(!up_to_p.precedes(&from_o));
        // Gappy RowKeys over several partitions cannot be listed in scan order.
        let many = KeyInterval::new(Bound::Included("a".into()), Bound::Included("c".into()));
        let err = KeySet::new([
            KeyRange::new(many.clone(), KeyInterval::point("1")),
            KeyRange::new(many, KeyInterval::point("3")),
        ])
        .unwrap_err();
        assert_eq!(err.row_keys.len(), 2);
        assert_eq!(
            err.to_string(),
            "the ranges cannot be scanned in key order: PartitionKey ['a' .. 'c'] allows RowKeys in 2 separate intervals"
        );
        assert_eq!(KeySet::from(KeyRange::full()), KeySet::all());
        let empty = KeyInterval::new(Bound::Excluded("a".into()), Bound::Excluded("a\0".into()));
        assert!(empty.is_empty());
        assert_eq!(
            KeySet::from(KeyRange::new(empty, KeyInterval::full())),
            KeySet::none()
        );
    }
}

//! Scan groups: the plan's key ranges in the order the executor scans them.
//!
//! The planner guarantees that its ranges are non-empty, disjoint and in strictly ascending
//! key order; then every range is its own group. Hand-built plans may break that (overlapping
//! or unordered ranges): all ranges then form one group that scans the hull of their
//! PartitionKey intervals and keeps a row only if some range contains it, which still yields
//! their union, each entity once, in key order.

use crate::source::SourceRow;
use std::borrow::Cow;
use std::ops::Bound;
use tableq_model::order::compare_str;
use tableq_planner::plan::{KeyInterval, KeyRange};

/// A group of plan ranges scanned as one: normally a single range; ranges that are not in
/// strictly ascending key order (possible only in hand-built plans) are merged into their
/// hull with a per-row membership check.
pub(crate) struct Group<'p> {
    pub(crate) hull: Cow<'p, KeyRange>,
    pub(crate) members: Option<&'p [KeyRange]>,
    pub(crate) ranges: usize,
}

impl Group<'_> {
    pub(crate) fn admits<R: SourceRow>(&self, row: &R) -> bool {
        match self.members {
            None => true,
            Some(ms) => ms
                .iter()
                .any(|r| r.contains(row.partition_key(), row.row_key())),
        }
    }
    pub(crate) fn point(&self) -> Option<(&str, &str)> {
        if self.members.is_some() {
            return None;
        }
        Some((
            self.hull.partition_key.as_point()?,
            self.hull.row_key.as_point()?,
        ))
    }
}

/// Whether every key of `upper`'s interval is below every key of `lower`'s.
fn strictly_below(upper: &Bound<String>, lower: &Bound<String>) -> bool {
    use std::cmp::Ordering::*;
    match (upper, lower) {
        (Bound::Unbounded, _) | (_, Bound::Unbounded) => false,
        (Bound::Included(u), Bound::Included(l)) => compare_str(u, l) == Less,
        (Bound::Included(u) | Bound::Excluded(u), Bound::Excluded(l))
        | (Bound::Excluded(u), Bound::Included(l)) => compare_str(u, l) != Greater,
    }
}

fn ordered(a: &KeyRange, b: &KeyRange) -> bool {
    match (a.partition_key.as_point(), b.partition_key.as_point()) {
        (Some(p), Some(q)) if p == q => strictly_below(&a.row_key.upper, &b.row_key.lower),
        _ => strictly_below(&a.partition_key.upper, &b.partition_key.lower),
    }
}

fn min_lower(a: &Bound<String>, b: &Bound<String>) -> Bound<String> {
    use std::cmp::Ordering::*;
    match (a, b) {
        (Bound::Unbounded, _) | (_, Bound::Unbounded) => Bound::Unbounded,
        (Bound::Included(x) | Bound::Excluded(x), Bound::Included(y) | Bound::Excluded(y)) => {
            match compare_str(x, y) {
                Less => a.clone(),
                Greater => b.clone(),
                Equal if matches!(a, Bound::Included(_)) => a.clone(),
                Equal => b.clone(),
            }
        }
    }
}

fn max_upper(a: &Bound<String>, b: &Bound<String>) -> Bound<String> {
    use std::cmp::Ordering::*;
    match (a, b) {
        (Bound::Unbounded, _) | (_, Bound::Unbounded) => Bound::Unbounded,
        (Bound::Included(x) | Bound::Excluded(x), Bound::Included(y) | Bound::Excluded(y)) => {
            match compare_str(x, y) {
                Greater => a.clone(),
                Less => b.clone(),
                Equal if matches!(a, Bound::Included(_)) => a.clone(),
                Equal => b.clone(),
            }
        }
    }
}

/// Whether an interval holds no key.
fn interval_is_empty(iv: &KeyInterval) -> bool {
    use std::cmp::Ordering::*;
    match (&iv.lower, &iv.upper) {
        (Bound::Included(l), Bound::Included(u)) => compare_str(l, u) == Greater,
        (Bound::Included(l) | Bound::Excluded(l), Bound::Excluded(u))
        | (Bound::Excluded(l), Bound::Included(u)) => compare_str(l, u) != Less,
        (_, Bound::Excluded(u)) => u.is_empty(),
        _ => false,
    }
}

/// Groups the plan's ranges into independently scannable, ascending groups: one per range
/// when the (non-empty) ranges are in strictly ascending key order, as the planner
/// guarantees; otherwise (hand-built plans) one group scanning the hull of all ranges with a
/// per-row membership check, which returns their union in key order.
pub(crate) fn groups(ranges: &[KeyRange]) -> Vec<Group<'_>> {
    let live = ranges
        .iter()
        .filter(|r| !interval_is_empty(&r.partition_key) && !interval_is_empty(&r.row_key));
    let live: Vec<&KeyRange> = live.collect();
    if live.windows(2).all(|w| ordered(w[0], w[1])) {
        return live
            .into_iter()
            .map(|r| Group {
                hull: Cow::Borrowed(r),
                members: None,
                ranges: 1,
            })
            .collect();
    }
    let mut lower = live[0].partition_key.lower.clone();
    let mut upper = live[0].partition_key.upper.clone();
    for m in &live[1..] {
        lower = min_lower(&lower, &m.partition_key.lower);
        upper = max_upper(&upper, &m.partition_key.upper);
    }
    let hull = KeyRange {
        partition_key: KeyInterval { lower, upper },
        row_key: KeyInterval::full(),
    };
    vec![Group {
        hull: Cow::Owned(hull),
        members: Some(ranges),
        ranges: ranges.len(),
    }]
}

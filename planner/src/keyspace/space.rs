//! 2-D sets of (PartitionKey, RowKey) pairs (see the [parent module](super)).

use super::interval::{Cut, Interval, as_point, is_full};
use super::intervals::Intervals;

/// One PartitionKey interval and the RowKeys allowed in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Segment<'a> {
    /// The PartitionKey interval.
    pub(crate) pk: Interval<'a>,
    /// The RowKeys (non-empty).
    pub(crate) rk: Intervals<'a>,
}

/// A 2-D set of (PartitionKey, RowKey) pairs (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Space<'a>(pub(crate) Vec<Segment<'a>>);

impl<'a> Space<'a> {
    pub(crate) fn empty() -> Space<'a> {
        Space(Vec::new())
    }

    pub(crate) fn full() -> Space<'a> {
        Space(vec![Segment {
            pk: (Cut::NegInf, Cut::PosInf),
            rk: Intervals::full(),
        }])
    }

    /// `pk × rk` (empty when either is).
    pub(crate) fn product(pk: &Intervals<'a>, rk: &Intervals<'a>) -> Space<'a> {
        if rk.is_empty() {
            return Space::empty();
        }
        Space(
            pk.0.iter()
                .map(|iv| Segment {
                    pk: *iv,
                    rk: rk.clone(),
                })
                .collect(),
        )
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(crate) fn is_full(&self) -> bool {
        self.0.len() == 1 && is_full(&self.0[0].pk) && self.0[0].rk.is_full()
    }

    pub(crate) fn union(&self, other: &Space<'a>) -> Space<'a> {
        if self.is_empty() || other.is_full() {
            return other.clone();
        }
        if other.is_empty() || self.is_full() {
            return self.clone();
        }
        // Fast path: one set entirely before the other (e.g. sorted point lookups).
        for (first, second) in [(self, other), (other, self)] {
            if let (Some(last), Some(next)) = (first.0.last(), second.0.first())
                && last.pk.1 <= next.pk.0
            {
                let mut out = first.0.clone();
                for seg in &second.0 {
                    push_merged(&mut out, seg.pk, seg.rk.clone());
                }
                return Space(out);
            }
        }
        combine(self, other, |a, b| match (a, b) {
            (Some(a), Some(b)) => a.union(b),
            (Some(x), None) | (None, Some(x)) => x.clone(),
            (None, None) => Intervals::empty(),
        })
    }

    pub(crate) fn intersect(&self, other: &Space<'a>) -> Space<'a> {
        if self.is_empty() || other.is_full() {
            return self.clone();
        }
        if other.is_empty() || self.is_full() {
            return other.clone();
        }
        // Fast paths: rectangle ∩ rectangle, and anything ∩ a RowKey-only constraint.
        if let ([a], [b]) = (self.0.as_slice(), other.0.as_slice()) {
            let lo = a.pk.0.max(b.pk.0);
            let hi = a.pk.1.min(b.pk.1);
            let rk = a.rk.intersect(&b.rk);
            if lo >= hi || rk.is_empty() {
                return Space::empty();
            }
            return Space(vec![Segment { pk: (lo, hi), rk }]);
        }
        for (many, one) in [(self, other), (other, self)] {
            if let [only] = one.0.as_slice()
                && is_full(&only.pk)
            {
                let mut out = Vec::with_capacity(many.0.len());
                for seg in &many.0 {
                    push_merged(&mut out, seg.pk, seg.rk.intersect(&only.rk));
                }
                return Space(out);
            }
        }
        combine(self, other, |a, b| match (a, b) {
            (Some(a), Some(b)) => a.intersect(b),
            _ => Intervals::empty(),
        })
    }

    /// The union of many sets. When their PartitionKey intervals are equal or disjoint (an
    /// `or` of point lookups, of partitions, of RowKey ranges in one partition) this is one
    /// sort and a linear sweep; otherwise pairwise unions in a balanced tree.
    pub(crate) fn union_all(spaces: Vec<Space<'a>>) -> Space<'a> {
        if spaces.len() <= 2 || spaces.iter().any(Space::is_full) {
            return reduce(spaces, Space::empty(), |a, b| a.union(&b));
        }
        let mut segments: Vec<Segment<'a>> =
            spaces.iter().flat_map(|s| s.0.iter().cloned()).collect();
        segments.sort_by(|a, b| a.pk.cmp(&b.pk));
        let mut out: Vec<Segment<'a>> = Vec::with_capacity(segments.len());
        let mut i = 0;
        while i < segments.len() {
            let pk = segments[i].pk;
            let mut j = i + 1;
            while j < segments.len() && segments[j].pk == pk {
                j += 1;
            }
            if out.last().is_some_and(|last| last.pk.1 > pk.0) {
                // Overlapping, unequal PartitionKey intervals: the general algorithm.
                return reduce(spaces, Space::empty(), |a, b| a.union(&b));
            }
            let rk = if j == i + 1 {
                std::mem::take(&mut segments[i].rk)
            } else {
                Intervals::union_many(segments[i..j].iter().flat_map(|s| s.rk.0.iter().copied()))
            };
            push_merged(&mut out, pk, rk);
            i = j;
        }
        Space(out)
    }

    pub(crate) fn complement(&self) -> Space<'a> {
        combine(self, &Space::empty(), |a, _| match a {
            Some(a) => a.complement(),
            None => Intervals::full(),
        })
    }

    /// Whether the pair is in the set.
    #[cfg(test)]
    pub(crate) fn contains(&self, pk: &str, rk: &str) -> bool {
        let c = Cut::before(pk);
        self.0
            .iter()
            .any(|s| s.pk.0 <= c && c < s.pk.1 && s.rk.contains(rk))
    }

    /// The number of key ranges the set turns into (see [`Space::scan_order_safe`]).
    pub(crate) fn range_count(&self) -> usize {
        self.0
            .iter()
            .map(|s| {
                if as_point(&s.pk).is_some() {
                    s.rk.0.len()
                } else {
                    1
                }
            })
            .sum()
    }

    /// Whether every segment can be scanned in key order as listed: a segment spanning more
    /// than one PartitionKey must allow a single RowKey interval (else its rectangles would
    /// interleave in key order).
    pub(crate) fn scan_order_safe(&self) -> bool {
        self.0
            .iter()
            .all(|s| as_point(&s.pk).is_some() || s.rk.0.len() == 1)
    }

    /// A superset that is [`scan_order_safe`](Space::scan_order_safe): multi-PartitionKey
    /// segments get the hull of their RowKey set.
    pub(crate) fn order_safe_hull(&self) -> Space<'a> {
        let mut out: Vec<Segment<'a>> = Vec::with_capacity(self.0.len());
        for s in &self.0 {
            let rk = if as_point(&s.pk).is_some() || s.rk.0.len() == 1 {
                s.rk.clone()
            } else {
                s.rk.hull()
                    .map_or_else(Intervals::empty, |(lo, hi)| Intervals::interval(lo, hi))
            };
            push_merged(&mut out, s.pk, rk);
        }
        Space(out)
    }

    /// A superset with at most `max` ranges (max ≥ 1): first every RowKey set becomes its
    /// hull, then, if still too many, a single rectangle (PartitionKey hull × RowKey hull).
    pub(crate) fn coarsen(&self, max: usize) -> Space<'a> {
        if self.range_count() <= max {
            return self.clone();
        }
        let mut out: Vec<Segment<'a>> = Vec::new();
        for s in &self.0 {
            let rk =
                s.rk.hull()
                    .map_or_else(Intervals::empty, |(lo, hi)| Intervals::interval(lo, hi));
            push_merged(&mut out, s.pk, rk);
        }
        let hulled = Space(out);
        if hulled.range_count() <= max {
            return hulled;
        }
        let (Some(first), Some(last)) = (hulled.0.first(), hulled.0.last()) else {
            return hulled;
        };
        let pk = (first.pk.0, last.pk.1);
        let rk = hulled
            .0
            .iter()
            .fold(Intervals::empty(), |acc, s| acc.union(&s.rk));
        let rk = rk
            .hull()
            .map_or_else(Intervals::empty, |(lo, hi)| Intervals::interval(lo, hi));
        Space(vec![Segment { pk, rk }])
    }
}

/// Combines `items` pairwise in a balanced tree (`O(n log n)` total for sweeps).
pub(crate) fn reduce<T>(mut items: Vec<T>, unit: T, f: impl Fn(T, T) -> T) -> T {
    if items.is_empty() {
        return unit;
    }
    while items.len() > 1 {
        let mut next = Vec::with_capacity(items.len().div_ceil(2));
        let mut it = items.into_iter();
        while let Some(a) = it.next() {
            match it.next() {
                Some(b) => next.push(f(a, b)),
                None => next.push(a),
            }
        }
        items = next;
    }
    items.pop().unwrap_or(unit)
}

/// Appends `pk × rk` after the last segment, merging with it when adjacent with equal RowKeys.
fn push_merged<'a>(out: &mut Vec<Segment<'a>>, pk: Interval<'a>, rk: Intervals<'a>) {
    if rk.is_empty() || pk.0 >= pk.1 {
        return;
    }
    if let Some(last) = out.last_mut()
        && last.pk.1 == pk.0
        && last.rk == rk
    {
        last.pk.1 = pk.1;
        return;
    }
    out.push(Segment { pk, rk });
}

/// The pointwise combination of two spaces: the PartitionKey axis is cut at every boundary
/// of either operand, and each elementary piece gets `f(rows of a, rows of b)`.
fn combine<'a>(
    a: &Space<'a>,
    b: &Space<'a>,
    f: impl Fn(Option<&Intervals<'a>>, Option<&Intervals<'a>>) -> Intervals<'a>,
) -> Space<'a> {
    let mut cuts: Vec<Cut<'a>> = Vec::with_capacity(2 * (a.0.len() + b.0.len()) + 2);
    cuts.push(Cut::NegInf);
    cuts.push(Cut::PosInf);
    for s in a.0.iter().chain(&b.0) {
        cuts.push(s.pk.0);
        cuts.push(s.pk.1);
    }
    cuts.sort();
    cuts.dedup();
    let mut out: Vec<Segment<'a>> = Vec::new();
    let (mut i, mut j) = (0, 0);
    for w in cuts.windows(2) {
        let (lo, hi) = (w[0], w[1]);
        while i < a.0.len() && a.0[i].pk.1 <= lo {
            i += 1;
        }
        while j < b.0.len() && b.0[j].pk.1 <= lo {
            j += 1;
        }
        let ra = a.0.get(i).filter(|s| s.pk.0 <= lo).map(|s| &s.rk);
        let rb = b.0.get(j).filter(|s| s.pk.0 <= lo).map(|s| &s.rk);
        push_merged(&mut out, (lo, hi), f(ra, rb));
    }
    Space(out)
}

//! 1-D sets of keys: sorted, disjoint, non-adjacent intervals of cuts (see the
//! [parent module](super)).

use super::interval::{Cut, Interval, is_full};
use tableq_model::CmpOp;

/// A 1-D set of keys: sorted, disjoint, non-adjacent intervals.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Intervals<'a>(pub(crate) Vec<Interval<'a>>);

impl<'a> Intervals<'a> {
    pub(crate) fn empty() -> Intervals<'a> {
        Intervals(Vec::new())
    }

    pub(crate) fn full() -> Intervals<'a> {
        Intervals(vec![(Cut::NegInf, Cut::PosInf)])
    }

    /// `[lo, hi)`, empty when `lo >= hi`.
    pub(crate) fn interval(lo: Cut<'a>, hi: Cut<'a>) -> Intervals<'a> {
        if lo < hi {
            Intervals(vec![(lo, hi)])
        } else {
            Intervals::empty()
        }
    }

    /// The keys `k` with `k op s`.
    pub(crate) fn from_comparison(op: CmpOp, s: &'a str) -> Intervals<'a> {
        match op {
            CmpOp::Eq => Intervals::interval(Cut::before(s), Cut::after(s)),
            CmpOp::Ne => Intervals::from_comparison(CmpOp::Eq, s).complement(),
            CmpOp::Gt => Intervals::interval(Cut::after(s), Cut::PosInf),
            CmpOp::Ge => Intervals::interval(Cut::before(s), Cut::PosInf),
            CmpOp::Lt => Intervals::interval(Cut::NegInf, Cut::before(s)),
            CmpOp::Le => Intervals::interval(Cut::NegInf, Cut::after(s)),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(crate) fn is_full(&self) -> bool {
        self.0.len() == 1 && is_full(&self.0[0])
    }

    #[cfg(test)]
    pub(crate) fn contains(&self, key: &str) -> bool {
        let c = Cut::before(key);
        self.0.iter().any(|(lo, hi)| *lo <= c && c < *hi)
    }

    /// The smallest single interval containing the set (`None` when empty).
    pub(crate) fn hull(&self) -> Option<Interval<'a>> {
        let first = self.0.first()?;
        let last = self.0.last()?;
        Some((first.0, last.1))
    }

    pub(crate) fn union(&self, other: &Intervals<'a>) -> Intervals<'a> {
        if self.is_empty() {
            return other.clone();
        }
        if other.is_empty() {
            return self.clone();
        }
        let mut out: Vec<Interval<'a>> = Vec::with_capacity(self.0.len() + other.0.len());
        let (mut i, mut j) = (0, 0);
        while i < self.0.len() || j < other.0.len() {
            let next = if j >= other.0.len() || (i < self.0.len() && self.0[i].0 <= other.0[j].0) {
                i += 1;
                &self.0[i - 1]
            } else {
                j += 1;
                &other.0[j - 1]
            };
            match out.last_mut() {
                Some(last) if next.0 <= last.1 => {
                    if next.1 > last.1 {
                        last.1 = next.1;
                    }
                }
                _ => out.push(*next),
            }
        }
        Intervals(out)
    }

    /// The union of any intervals, in one sort and a sweep.
    pub(crate) fn union_many(intervals: impl IntoIterator<Item = Interval<'a>>) -> Intervals<'a> {
        let mut all: Vec<Interval<'a>> = intervals.into_iter().filter(|(lo, hi)| lo < hi).collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        let mut out: Vec<Interval<'a>> = Vec::with_capacity(all.len());
        for next in all {
            match out.last_mut() {
                Some(last) if next.0 <= last.1 => {
                    if next.1 > last.1 {
                        last.1 = next.1;
                    }
                }
                _ => out.push(next),
            }
        }
        Intervals(out)
    }

    pub(crate) fn intersect(&self, other: &Intervals<'a>) -> Intervals<'a> {
        let mut out = Vec::new();
        let (mut i, mut j) = (0, 0);
        while i < self.0.len() && j < other.0.len() {
            let (a, b) = (&self.0[i], &other.0[j]);
            let lo = a.0.max(b.0);
            let hi = a.1.min(b.1);
            if lo < hi {
                out.push((lo, hi));
            }
            if a.1 <= b.1 {
                i += 1;
            } else {
                j += 1;
            }
        }
        Intervals(out)
    }

    pub(crate) fn complement(&self) -> Intervals<'a> {
        let mut out = Vec::with_capacity(self.0.len() + 1);
        let mut prev = Cut::NegInf;
        for (lo, hi) in &self.0 {
            if prev < *lo {
                out.push((prev, *lo));
            }
            prev = *hi;
        }
        if prev < Cut::PosInf {
            out.push((prev, Cut::PosInf));
        }
        Intervals(out)
    }
}

//! Set algebra over the (PartitionKey, RowKey) key space — the engine of key-range
//! extraction (crate-private; the public form is [`crate::plan::KeySet`]).
//!
//! **Cuts.** Keys are strings under UTF-16 ordinal order ([`compare_str`]). The successor of
//! a string `s` is `s + "\0"` (nothing lies strictly between them), so every bound is a
//! *cut just before some string*: `ge s` starts at `Cut::Before(s)`, `gt s` at
//! `Cut::After(s)` — the cut just before `s + "\0"` — `lt s` ends at `Cut::Before(s)` and
//! `le s` at `Cut::After(s)`. Cuts compare by the string they sit before, so
//! `Cut::After("a") == Cut::Before("a\0")`, and the empty string being the least key,
//! `Cut::before("")` is `Cut::NegInf`. Hence equal sets have equal representations, adjacent
//! intervals merge, and `PartitionKey gt 'a' and PartitionKey le 'a\u{0}'` is recognised as
//! a point. Cuts borrow the key strings of the predicate: building sets allocates no strings.
//!
//! **Sets.** [`Intervals`] is a sorted list of disjoint, non-adjacent half-open intervals
//! `[lo, hi)` of cuts (a 1-D set). [`Space`] is a 2-D set: a sorted list of disjoint,
//! non-adjacent PartitionKey intervals, each with the non-empty set of RowKeys allowed in it;
//! two neighbouring PartitionKey intervals never carry equal RowKey sets (they are merged).
//! Union, intersection and complement are sweeps, linear in the sizes of the operands.

use std::cmp::Ordering;
use tableq_model::CmpOp;
use tableq_model::order::compare_str;

/// A position between keys, borrowing the key strings of the predicate it came from.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Cut<'a> {
    /// Before every key.
    NegInf,
    /// Just before this (non-empty) string.
    Before(&'a str),
    /// Just after this string: just before its successor `s + "\0"`.
    After(&'a str),
    /// After every key.
    PosInf,
}

impl<'a> Cut<'a> {
    /// The cut just before `s` (`NegInf` for the empty string, the least key).
    pub(crate) fn before(s: &'a str) -> Cut<'a> {
        if s.is_empty() {
            Cut::NegInf
        } else {
            Cut::Before(s)
        }
    }

    /// The cut just after `s`, i.e. just before its successor `s + "\0"`.
    pub(crate) fn after(s: &'a str) -> Cut<'a> {
        Cut::After(s)
    }

    /// The string `s` with `self == Cut::after(s)`, if any.
    pub(crate) fn as_after(&self) -> Option<&'a str> {
        match *self {
            Cut::After(s) => Some(s),
            Cut::Before(t) => t.strip_suffix('\0'),
            _ => None,
        }
    }

    fn rank(&self) -> u8 {
        match self {
            Cut::NegInf => 0,
            Cut::Before(_) | Cut::After(_) => 1,
            Cut::PosInf => 2,
        }
    }
}

/// Compares `a` with `b + "\0"` without building the latter.
fn cmp_with_successor(a: &str, b: &str) -> Ordering {
    match compare_str(a, b) {
        Ordering::Less | Ordering::Equal => Ordering::Less,
        // a > b: only `b + "\0"` itself is not below `a` among the strings above `b`.
        Ordering::Greater => {
            if a.len() == b.len() + 1 && a.starts_with(b) && a.ends_with('\0') {
                Ordering::Equal
            } else {
                Ordering::Greater
            }
        }
    }
}

impl PartialEq for Cut<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Cut<'_> {}

impl PartialOrd for Cut<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Cut<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        match (*self, *other) {
            (Cut::Before(a), Cut::Before(b)) | (Cut::After(a), Cut::After(b)) => compare_str(a, b),
            (Cut::Before(a), Cut::After(b)) => cmp_with_successor(a, b),
            (Cut::After(a), Cut::Before(b)) => cmp_with_successor(b, a).reverse(),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

/// A half-open interval `[lo, hi)` of cuts, non-empty when `lo < hi`.
pub(crate) type Interval<'a> = (Cut<'a>, Cut<'a>);

/// Whether `[lo, hi)` holds exactly one key, which is returned.
pub(crate) fn as_point<'a>(iv: &Interval<'a>) -> Option<&'a str> {
    let s = iv.1.as_after()?;
    (iv.0 == Cut::before(s)).then_some(s)
}

/// Whether `[lo, hi)` is every key.
pub(crate) fn is_full(iv: &Interval<'_>) -> bool {
    iv.0 == Cut::NegInf && iv.1 == Cut::PosInf
}

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
            if let (Some(last), Some(next)) = (first.0.last(), second.0.first()) {
                if last.pk.1 <= next.pk.0 {
                    let mut out = first.0.clone();
                    for seg in &second.0 {
                        push_merged(&mut out, seg.pk, seg.rk.clone());
                    }
                    return Space(out);
                }
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
            if let [only] = one.0.as_slice() {
                if is_full(&only.pk) {
                    let mut out = Vec::with_capacity(many.0.len());
                    for seg in &many.0 {
                        push_merged(&mut out, seg.pk, seg.rk.intersect(&only.rk));
                    }
                    return Space(out);
                }
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

/// A key set in the cheapest form that holds it: most predicates constrain one key only,
/// and 1-D sets are far cheaper than 2-D ones. Constructors normalise (`Pk(full)` is `All`,
/// `Pk(empty)` is `Nothing`, …).
#[derive(Debug, Clone)]
pub(crate) enum Keys<'a> {
    /// Every key pair.
    All,
    /// No key pair.
    Nothing,
    /// PartitionKey in the set, any RowKey.
    Pk(Intervals<'a>),
    /// RowKey in the set, any PartitionKey.
    Rk(Intervals<'a>),
    /// Any 2-D set.
    Both(Space<'a>),
}

impl<'a> Keys<'a> {
    pub(crate) fn pk(iv: Intervals<'a>) -> Keys<'a> {
        if iv.is_empty() {
            Keys::Nothing
        } else if iv.is_full() {
            Keys::All
        } else {
            Keys::Pk(iv)
        }
    }

    pub(crate) fn rk(iv: Intervals<'a>) -> Keys<'a> {
        if iv.is_empty() {
            Keys::Nothing
        } else if iv.is_full() {
            Keys::All
        } else {
            Keys::Rk(iv)
        }
    }

    pub(crate) fn space(s: Space<'a>) -> Keys<'a> {
        if s.is_empty() {
            Keys::Nothing
        } else if s.is_full() {
            Keys::All
        } else {
            Keys::Both(s)
        }
    }

    pub(crate) fn is_all(&self) -> bool {
        matches!(self, Keys::All)
    }

    pub(crate) fn is_nothing(&self) -> bool {
        matches!(self, Keys::Nothing)
    }

    pub(crate) fn into_space(self) -> Space<'a> {
        match self {
            Keys::All => Space::full(),
            Keys::Nothing => Space::empty(),
            Keys::Pk(iv) => Space::product(&iv, &Intervals::full()),
            Keys::Rk(iv) => Space::product(&Intervals::full(), &iv),
            Keys::Both(s) => s,
        }
    }

    /// The number of ranges the set turns into.
    pub(crate) fn range_count(&self) -> usize {
        match self {
            Keys::All | Keys::Rk(_) => 1,
            Keys::Nothing => 0,
            Keys::Pk(iv) => iv.0.len(),
            Keys::Both(s) => s.range_count(),
        }
    }

    pub(crate) fn intersect(self, other: Keys<'a>) -> Keys<'a> {
        match (self, other) {
            (Keys::Nothing, _) | (_, Keys::Nothing) => Keys::Nothing,
            (Keys::All, x) | (x, Keys::All) => x,
            (Keys::Pk(a), Keys::Pk(b)) => Keys::pk(a.intersect(&b)),
            (Keys::Rk(a), Keys::Rk(b)) => Keys::rk(a.intersect(&b)),
            (Keys::Pk(a), Keys::Rk(b)) | (Keys::Rk(b), Keys::Pk(a)) => {
                Keys::space(Space::product(&a, &b))
            }
            (a, b) => Keys::space(a.into_space().intersect(&b.into_space())),
        }
    }

    pub(crate) fn complement(self) -> Keys<'a> {
        match self {
            Keys::All => Keys::Nothing,
            Keys::Nothing => Keys::All,
            Keys::Pk(iv) => Keys::pk(iv.complement()),
            Keys::Rk(iv) => Keys::rk(iv.complement()),
            Keys::Both(s) => Keys::space(s.complement()),
        }
    }

    /// The intersection of all (`All` for none).
    pub(crate) fn intersect_all(items: Vec<Keys<'a>>) -> Keys<'a> {
        reduce(items, Keys::All, Keys::intersect)
    }

    /// The union of all (`Nothing` for none).
    pub(crate) fn union_all(items: Vec<Keys<'a>>) -> Keys<'a> {
        let items: Vec<Keys<'a>> = items.into_iter().filter(|k| !k.is_nothing()).collect();
        if items.iter().any(Keys::is_all) {
            return Keys::All;
        }
        match items.as_slice() {
            [] => return Keys::Nothing,
            [_] => return items.into_iter().next().unwrap_or(Keys::Nothing),
            _ => {}
        }
        if items.iter().all(|k| matches!(k, Keys::Pk(_))) {
            let ivs = items.iter().flat_map(|k| match k {
                Keys::Pk(iv) => iv.0.as_slice(),
                _ => &[],
            });
            return Keys::pk(Intervals::union_many(ivs.copied()));
        }
        if items.iter().all(|k| matches!(k, Keys::Rk(_))) {
            let ivs = items.iter().flat_map(|k| match k {
                Keys::Rk(iv) => iv.0.as_slice(),
                _ => &[],
            });
            return Keys::rk(Intervals::union_many(ivs.copied()));
        }
        Keys::space(Space::union_all(
            items.into_iter().map(Keys::into_space).collect(),
        ))
    }

    /// Whether both hold the same key pairs.
    pub(crate) fn same_set(&self, other: &Keys<'a>) -> bool {
        match (self, other) {
            (Keys::All, Keys::All) | (Keys::Nothing, Keys::Nothing) => true,
            (Keys::Pk(a), Keys::Pk(b)) | (Keys::Rk(a), Keys::Rk(b)) => a == b,
            (a, b) => a.clone().into_space() == b.clone().into_space(),
        }
    }
}

/// Appends `pk × rk` after the last segment, merging with it when adjacent with equal RowKeys.
fn push_merged<'a>(out: &mut Vec<Segment<'a>>, pk: Interval<'a>, rk: Intervals<'a>) {
    if rk.is_empty() || pk.0 >= pk.1 {
        return;
    }
    if let Some(last) = out.last_mut() {
        if last.pk.1 == pk.0 && last.rk == rk {
            last.pk.1 = pk.1;
            return;
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const KEYS: &[&str] = &["", "\0", "a", "a\0", "ab", "b", "\u{FFFF}", "\u{10000}"];

    fn cmp_space(pk: bool, op: CmpOp, s: &'static str) -> Space<'static> {
        let iv = Intervals::from_comparison(op, s);
        if pk {
            Space::product(&iv, &Intervals::full())
        } else {
            Space::product(&Intervals::full(), &iv)
        }
    }

    fn arb_space() -> impl Strategy<Value = Space<'static>> {
        let leaf = (
            any::<bool>(),
            prop::sample::select(CmpOp::ALL.to_vec()),
            prop::sample::select(KEYS),
        )
            .prop_map(|(pk, op, s)| cmp_space(pk, op, s));
        leaf.prop_recursive(3, 16, 3, |inner| {
            prop_oneof![
                (inner.clone(), inner.clone()).prop_map(|(a, b)| a.union(&b)),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| a.intersect(&b)),
                inner.prop_map(|a| a.complement()),
            ]
        })
    }

    fn well_formed(s: &Space<'_>) -> bool {
        s.0.iter()
            .all(|seg| seg.pk.0 < seg.pk.1 && !seg.rk.is_empty())
            && s.0
                .windows(2)
                .all(|w| w[0].pk.1 <= w[1].pk.0 && !(w[0].pk.1 == w[1].pk.0 && w[0].rk == w[1].rk))
            && s.0
                .iter()
                .all(|seg| seg.rk.0.windows(2).all(|w| w[0].1 < w[1].0))
    }

    #[test]
    fn points_and_successors() {
        assert_eq!(as_point(&(Cut::NegInf, Cut::after(""))), Some(""));
        assert_eq!(as_point(&(Cut::before("a"), Cut::after("a"))), Some("a"));
        let gt_a = Intervals::from_comparison(CmpOp::Gt, "a");
        let le_a0 = Intervals::from_comparison(CmpOp::Le, "a\0");
        assert_eq!(as_point(&gt_a.intersect(&le_a0).0[0]), Some("a\0"));
        assert!(Intervals::from_comparison(CmpOp::Ge, "").is_full());
        assert!(Intervals::from_comparison(CmpOp::Lt, "").is_empty());
    }

    proptest! {
        #[test]
        fn algebra_matches_membership(a in arb_space(), b in arb_space()) {
            let u = a.union(&b);
            let i = a.intersect(&b);
            let c = a.complement();
            prop_assert!(well_formed(&a) && well_formed(&u) && well_formed(&i) && well_formed(&c));
            prop_assert!(c.complement() == a);
            for pk in KEYS {
                for rk in KEYS {
                    let (x, y) = (a.contains(pk, rk), b.contains(pk, rk));
                    prop_assert_eq!(u.contains(pk, rk), x || y);
                    prop_assert_eq!(i.contains(pk, rk), x && y);
                    prop_assert_eq!(c.contains(pk, rk), !x);
                    if x {
                        prop_assert!(a.coarsen(1).contains(pk, rk));
                        prop_assert!(a.order_safe_hull().contains(pk, rk));
                    }
                }
            }
            let many = vec![a.clone(), b.clone(), i.clone(), c.clone()];
            prop_assert_eq!(Space::union_all(many), a.union(&b).union(&i).union(&c));
            prop_assert!(a.coarsen(1).range_count() <= 1);
            prop_assert!(a.order_safe_hull().scan_order_safe());
        }
    }
}

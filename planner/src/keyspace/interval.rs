//! A key interval, the one home of interval bounds under the UTF-16 ordinal order
//! ([`compare_str`]), in its two forms:
//!
//! * [`KeyInterval`] — the public, owned form (re-exported as `plan::KeyInterval`): a
//!   lower and an upper [`Bound`] of key strings, any pair allowed. Its methods are the one
//!   implementation of bound logic that the planner, the executor and the sources share;
//! * [`Interval`] — the borrowed form the set algebra computes with: a half-open pair
//!   `[lo, hi)` of [`Cut`]s (see the [parent module](super)), which gives every set of keys
//!   one representation. [`KeyInterval::cuts`] and [`KeyInterval::from_cuts`] convert.
//!
//! [`DisplayInterval`] prints a key interval as `= 'k'`, `*` or `['a' .. 'c')`.
//!
//! ```
//! use std::ops::Bound;
//! use tableq_planner::explain::DisplayInterval;
//! use tableq_planner::plan::KeyInterval;
//!
//! // `gt 'a'` and `ge 'a\0'` are one interval: nothing lies between `a` and `a\0`.
//! let gt_a = KeyInterval::new(Bound::Excluded("a".into()), Bound::Unbounded);
//! let ge_a0 = KeyInterval::new(Bound::Included("a\0".into()), Bound::Unbounded);
//! assert!(gt_a.cmp_lower(&ge_a0).is_eq() && !gt_a.contains("a") && gt_a.contains("a\0"));
//! assert_eq!(DisplayInterval(&gt_a).to_string(), "('a' .. +inf)");
//! ```

use std::borrow::Cow;
use std::cmp::Ordering;
use std::fmt;
use std::ops::Bound;
use tableq_model::Value;
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

/// An interval of key strings under the UTF-16 ordinal order. Any pair of bounds is
/// allowed (an interval may be empty); the methods interpret it exactly, aware that `s` and
/// `s + "\0"` are neighbours (so `(a, a\0)` is empty and `(a, a\0]` is the point `a\0`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyInterval {
    /// Lower bound.
    pub lower: Bound<String>,
    /// Upper bound.
    pub upper: Bound<String>,
}

impl KeyInterval {
    /// The interval between two bounds.
    pub fn new(lower: Bound<String>, upper: Bound<String>) -> KeyInterval {
        KeyInterval { lower, upper }
    }

    /// Every key.
    pub const fn full() -> KeyInterval {
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

    /// The cut before the interval's first key.
    pub(crate) fn lower_cut(&self) -> Cut<'_> {
        match &self.lower {
            Bound::Unbounded => Cut::NegInf,
            Bound::Included(s) => Cut::before(s),
            Bound::Excluded(s) => Cut::after(s),
        }
    }

    /// The cut after the interval's last key.
    pub(crate) fn upper_cut(&self) -> Cut<'_> {
        match &self.upper {
            Bound::Unbounded => Cut::PosInf,
            Bound::Included(s) => Cut::after(s),
            Bound::Excluded(s) => Cut::before(s),
        }
    }

    /// The interval as internal cuts `[lo, hi)` (`lo >= hi` when empty).
    pub(crate) fn cuts(&self) -> Interval<'_> {
        (self.lower_cut(), self.upper_cut())
    }

    /// Whether the interval holds every key (`ge ''` counts: `''` is the least key).
    pub fn is_full(&self) -> bool {
        is_full(&self.cuts())
    }

    /// Whether the interval holds no key.
    pub fn is_empty(&self) -> bool {
        let (lo, hi) = self.cuts();
        lo >= hi
    }

    /// The single key of an interval that holds exactly one (`[k, k]`, but also
    /// `(j, k]` when `k` is `j + "\0"`).
    pub fn as_point(&self) -> Option<&str> {
        if let (Bound::Included(a), Bound::Included(b)) = (&self.lower, &self.upper)
            && a == b
        {
            return Some(a);
        }
        as_point(&self.cuts())
    }

    /// Where `key` lies relative to the interval: `Less` below its lower bound, `Equal`
    /// inside, `Greater` above its upper bound (for an empty interval, `Less` or `Greater`).
    ///
    /// ```
    /// use std::cmp::Ordering;
    /// use std::ops::Bound;
    /// use tableq_planner::plan::KeyInterval;
    /// let iv = KeyInterval::new(Bound::Excluded("b".into()), Bound::Included("d".into()));
    /// assert_eq!(iv.position("b"), Ordering::Less);
    /// assert_eq!(iv.position("b\0"), Ordering::Equal);
    /// assert_eq!(iv.position("d"), Ordering::Equal);
    /// assert_eq!(iv.position("d\0"), Ordering::Greater);
    /// ```
    #[inline]
    pub fn position(&self, key: &str) -> Ordering {
        // Bound by bound (cheaper than going through cuts: this runs once per row tested).
        if self.starts_above(key) {
            Ordering::Less
        } else if self.ends_below(key) {
            Ordering::Greater
        } else {
            Ordering::Equal
        }
    }

    /// Whether every key of the interval sorts before `key` (one comparison).
    #[inline]
    pub(crate) fn ends_below(&self, key: &str) -> bool {
        match &self.upper {
            Bound::Unbounded => false,
            Bound::Included(u) => compare_str(u, key).is_lt(),
            Bound::Excluded(u) => compare_str(u, key).is_le(),
        }
    }

    /// Whether every key of the interval sorts after `key` (one comparison).
    #[inline]
    pub(crate) fn starts_above(&self, key: &str) -> bool {
        match &self.lower {
            Bound::Unbounded => false,
            Bound::Included(l) => compare_str(l, key).is_gt(),
            Bound::Excluded(l) => compare_str(l, key).is_ge(),
        }
    }

    /// The least key not below the lower bound — where an ordered store starts reading:
    /// the bound's key when included, its successor `k + "\0"` when excluded, `""` (the
    /// least key) when unbounded.
    ///
    /// ```
    /// use std::ops::Bound;
    /// use tableq_planner::plan::KeyInterval;
    /// let iv = KeyInterval::new(Bound::Excluded("a".into()), Bound::Included("c".into()));
    /// assert_eq!((iv.start_key().as_ref(), iv.end_key().as_deref()), ("a\0", Some("c\0")));
    /// assert_eq!((KeyInterval::full().start_key().as_ref(), KeyInterval::full().end_key()), ("", None));
    /// ```
    pub fn start_key(&self) -> Cow<'_, str> {
        match &self.lower {
            Bound::Unbounded => Cow::Borrowed(""),
            Bound::Included(s) => Cow::Borrowed(s),
            Bound::Excluded(s) => Cow::Owned(format!("{s}\0")),
        }
    }

    /// The least key above the upper bound — where an ordered store stops reading
    /// (exclusive): the bound's key when excluded, its successor `k + "\0"` when included,
    /// `None` when unbounded.
    pub fn end_key(&self) -> Option<Cow<'_, str>> {
        match &self.upper {
            Bound::Unbounded => None,
            Bound::Included(s) => Some(Cow::Owned(format!("{s}\0"))),
            Bound::Excluded(s) => Some(Cow::Borrowed(s)),
        }
    }

    /// Whether `key` lies in the interval.
    #[inline]
    pub fn contains(&self, key: &str) -> bool {
        self.position(key) == Ordering::Equal
    }

    /// Orders the lower bounds: `Less` when `self` starts before `other` (admits a key
    /// below all of `other`'s range start). `Unbounded` is the least; `Included(k)` comes
    /// before `Excluded(k)`, which equals `Included(k + "\0")`.
    pub fn cmp_lower(&self, other: &KeyInterval) -> Ordering {
        self.lower_cut().cmp(&other.lower_cut())
    }

    /// Orders the upper bounds: `Greater` when `self` ends after `other`. `Unbounded` is
    /// the greatest; `Excluded(k)` comes before `Included(k)`.
    pub fn cmp_upper(&self, other: &KeyInterval) -> Ordering {
        self.upper_cut().cmp(&other.upper_cut())
    }

    /// The keys in both intervals (possibly empty).
    pub fn intersect(&self, other: &KeyInterval) -> KeyInterval {
        let lower = if self.cmp_lower(other).is_ge() {
            &self.lower
        } else {
            &other.lower
        };
        let upper = if self.cmp_upper(other).is_le() {
            &self.upper
        } else {
            &other.upper
        };
        KeyInterval::new(lower.clone(), upper.clone())
    }

    /// The smallest interval holding both (and any keys between them).
    pub fn hull(&self, other: &KeyInterval) -> KeyInterval {
        let lower = if self.cmp_lower(other).is_le() {
            &self.lower
        } else {
            &other.lower
        };
        let upper = if self.cmp_upper(other).is_ge() {
            &self.upper
        } else {
            &other.upper
        };
        KeyInterval::new(lower.clone(), upper.clone())
    }

    /// Whether every key of `self` sorts before every key of `other` (the intervals are
    /// disjoint and in order). Meant for non-empty intervals.
    pub fn precedes(&self, other: &KeyInterval) -> bool {
        self.upper_cut() <= other.lower_cut()
    }

    /// From an internal cut interval `[lo, hi)`, in canonical form.
    pub(crate) fn from_cuts(iv: &Interval<'_>) -> KeyInterval {
        if let Some(k) = as_point(iv) {
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

/// Displays a key interval: `= 'k'`, `*`, or `['a' .. 'c')`.
pub struct DisplayInterval<'a>(pub &'a KeyInterval);

impl fmt::Display for DisplayInterval<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let iv = self.0;
        if let Some(k) = iv.as_point() {
            return write!(f, "= {}", quoted(k));
        }
        if iv.is_full() {
            return f.write_str("*");
        }
        match &iv.lower {
            Bound::Unbounded => f.write_str("(-inf")?,
            Bound::Included(v) => write!(f, "[{}", quoted(v))?,
            Bound::Excluded(v) => write!(f, "({}", quoted(v))?,
        }
        f.write_str(" .. ")?;
        match &iv.upper {
            Bound::Unbounded => f.write_str("+inf)"),
            Bound::Included(v) => write!(f, "{}]", quoted(v)),
            Bound::Excluded(v) => write!(f, "{})", quoted(v)),
        }
    }
}

/// A key as an OData string literal (`'it''s'`).
fn quoted(s: &str) -> String {
    Value::from(s).to_string()
}

/// Generators of key intervals for property tests (also used by the plan's tests).
#[cfg(test)]
pub(crate) mod strategies {
    use super::KeyInterval;
    use proptest::prelude::{Just, prop, prop_oneof};
    use proptest::strategy::Strategy as _;
    use std::ops::Bound;

    /// Keys that exercise successors (`a`, `a\0`) and the UTF-16 order (`\u{FFFF}` sorts
    /// after `\u{10000}`).
    pub(crate) const KEYS: &[&str] = &[
        "",
        "\0",
        "a",
        "a\0",
        "a\0\0",
        "ab",
        "b",
        "\u{FFFF}",
        "\u{10000}",
    ];

    /// Every key a bound can name, and its successor: enough to witness any non-empty
    /// interval whose bounds come from `KEYS`.
    pub(crate) fn universe() -> Vec<String> {
        let mut keys: Vec<String> = KEYS.iter().map(|k| k.to_string()).collect();
        keys.extend(KEYS.iter().map(|k| format!("{k}\0")));
        keys.sort();
        keys.dedup();
        keys
    }

    pub(crate) fn arb_bound() -> impl proptest::strategy::Strategy<Value = Bound<String>> {
        let key = prop::sample::select(KEYS).prop_map(str::to_owned);
        prop_oneof![
            Just(Bound::Unbounded),
            key.clone().prop_map(Bound::Included),
            key.prop_map(Bound::Excluded),
        ]
    }

    pub(crate) fn arb_interval() -> impl proptest::strategy::Strategy<Value = KeyInterval> {
        prop_oneof![
            1 => Just(KeyInterval::full()),
            2 => prop::sample::select(KEYS).prop_map(KeyInterval::point),
            4 => (arb_bound(), arb_bound()).prop_map(|(l, u)| KeyInterval::new(l, u)),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::strategies::{arb_interval, universe};
    use super::*;
    use proptest::prelude::{ProptestConfig, prop_assert, prop_assert_eq, proptest};

    /// The position of `key` by the definition, bound by bound.
    fn position_by_definition(iv: &KeyInterval, key: &str) -> Ordering {
        let above_lower = match &iv.lower {
            Bound::Unbounded => true,
            Bound::Included(l) => compare_str(key, l).is_ge(),
            Bound::Excluded(l) => compare_str(key, l).is_gt(),
        };
        let below_upper = match &iv.upper {
            Bound::Unbounded => true,
            Bound::Included(u) => compare_str(key, u).is_le(),
            Bound::Excluded(u) => compare_str(key, u).is_lt(),
        };
        match (above_lower, below_upper) {
            (false, _) => Ordering::Less,
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn interval_methods_agree_with_the_definition(a in arb_interval(), b in arb_interval()) {
            let keys = universe();
            let inside = |iv: &KeyInterval| keys.iter().filter(|k| iv.contains(k)).cloned().collect::<Vec<_>>();
            for k in &keys {
                prop_assert_eq!(a.position(k), position_by_definition(&a, k), "{:?} {:?}", a, k);
            }
            prop_assert_eq!(a.is_empty(), inside(&a).is_empty(), "{:?}", a);
            prop_assert_eq!(a.is_full(), inside(&a).len() == keys.len() && a.lower_cut() == Cut::NegInf && a.upper_cut() == Cut::PosInf);
            if let Some(p) = a.as_point() {
                prop_assert_eq!(inside(&a), vec![p.to_owned()]);
            }
            let both = a.intersect(&b);
            let hull = a.hull(&b);
            for k in &keys {
                prop_assert_eq!(both.contains(k), a.contains(k) && b.contains(k));
                if a.contains(k) || b.contains(k) {
                    prop_assert!(hull.contains(k));
                }
            }
            for k in &keys {
                let from_start = compare_str(k, &a.start_key()).is_ge();
                let before_end = a.end_key().is_none_or(|e| compare_str(k, &e).is_lt());
                prop_assert_eq!(a.contains(k), from_start && before_end, "{:?} {:?}", a, k);
            }
            prop_assert!(hull.cmp_lower(&a).is_le() && hull.cmp_lower(&b).is_le());
            prop_assert!(hull.cmp_upper(&a).is_ge() && hull.cmp_upper(&b).is_ge());
            if !a.is_empty() && !b.is_empty() && a.precedes(&b) {
                for x in inside(&a) {
                    for y in inside(&b) {
                        prop_assert!(compare_str(&x, &y).is_lt(), "{:?} !< {:?}", x, y);
                    }
                }
            }
        }
    }
}

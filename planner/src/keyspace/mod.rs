//! Key intervals and set algebra over the (PartitionKey, RowKey) key space — the engine of
//! key-range extraction. The module is crate-private; its public forms are
//! [`KeyInterval`] (re-exported as [`crate::plan::KeyInterval`]) and
//! [`crate::plan::KeySet`].
//!
//! **Cuts.** Keys are strings under UTF-16 ordinal order ([`compare_str`](tableq_model::order::compare_str)). The successor of
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
//!
//! Files: `interval` (cuts, and the one key interval type in its two forms), `intervals`
//! (1-D sets), `space` (2-D sets), `keys` (the cheapest form of a set, used by extraction).

mod interval;
mod intervals;
mod keys;
mod space;

pub(crate) use interval::as_point;
#[cfg(test)]
pub(crate) use interval::strategies;
pub use interval::{DisplayInterval, KeyInterval};
pub(crate) use intervals::Intervals;
pub(crate) use keys::Keys;
pub(crate) use space::Space;

#[cfg(test)]
mod tests {
    use super::interval::Cut;
    use super::*;
    use proptest::prelude::*;
    use tableq_model::CmpOp;

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

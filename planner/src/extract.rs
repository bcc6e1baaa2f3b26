//! Key-range extraction: a pure function from a predicate to (key ranges, residual, exact).
//!
//! **Guarantee.** For the result `(keys, residual)` of [`extract_key_ranges`] and every
//! entity `e`:
//!
//! > `p(e)` ⇔ `keys.contains(e.PartitionKey, e.RowKey)` ∧ `residual(e)`.
//!
//! In particular *no entity outside the ranges can match*, and an entity inside them matches
//! exactly when it satisfies the residual. When the ranges capture the predicate exactly the
//! residual is `true` ([`Extraction::exact`]) and need not be evaluated; an empty key set
//! means the predicate is a contradiction and nothing is read.
//!
//! **How.** Bottom-up over the predicate, each node gets a key set `K` and a residual `R`
//! with `node ⇔ key ∈ K ∧ R` (`K` is kept 1-D — PartitionKey-only or RowKey-only — while it
//! can be, and becomes a 2-D set when both keys are constrained):
//!
//! * a PartitionKey/RowKey comparison with a String is exactly its interval (`ne` is two);
//!   with another type it is a constant (the type-mismatch rule: `lt`/`le`/`ne` everything,
//!   `eq`/`gt`/`ge` nothing);
//! * any other comparison (Timestamp included: it may be missing) is `K = all, R = node`;
//! * `and` intersects the `K`s and conjoins the `R`s (exact operands contribute nothing to
//!   the residual);
//! * `or` unions the `K`s; it is exact when the inexact operands' keys are covered by the
//!   exact operands' keys, otherwise `R` is the whole `or`;
//! * `not` of an exact operand is the complement (keys are always present, so negation is
//!   exact), otherwise `K = all, R = node`.
//!
//! Finally the residual is simplified *in key context*: it is only evaluated on entities
//! inside the ranges, so a key comparison that holds on every range is `true` there and one
//! that holds on none is `false` (`PartitionKey eq 'p' and not (PartitionKey eq 'p' and A)`
//! reads partition `p` with residual `not A eq true`); a residual that becomes `false` reads
//! nothing.
//!
//! **Limits.** Set operations are sweeps linear in their sizes; an `or` whose operands have
//! equal or disjoint PartitionKey intervals (an `or` of point lookups or partitions) is one
//! sort and a sweep, other unions go pairwise in a balanced tree, so extraction is
//! `O(n log n)` in the filter size. To keep
//! plans small, a node whose set would need more than `max_ranges` ranges (default
//! [`DEFAULT_MAX_RANGES`]) is coarsened to a superset — first each RowKey set to its hull,
//! then one rectangle — and keeps itself as residual. Likewise a final set in which one
//! rectangle spans several PartitionKeys with a gappy RowKey set (which could not be scanned
//! in key order) is coarsened to the RowKey hull with the whole predicate as residual.
//!
//! ```
//! use tableq_model::{CmpOp, Value};
//! use tableq_planner::extract::extract_key_ranges;
//! use tableq_planner::plan::Strategy;
//! use tableq_planner::predicate::Predicate;
//!
//! let p = Predicate::and([
//!     Predicate::compare("PartitionKey", CmpOp::Eq, Value::from("p")),
//!     Predicate::compare("Age", CmpOp::Gt, Value::Int32(30)),
//! ]);
//! let x = extract_key_ranges(&p, 64);
//! assert_eq!(x.keys.len(), 1);
//! assert_eq!(x.keys.ranges()[0].strategy(), Strategy::Partition);
//! assert_eq!(x.residual.to_string(), "Age gt 30");
//! assert!(!x.exact);
//! ```

use crate::keyspace::{Intervals, Keys, Space};
use crate::plan::KeySet;
use crate::predicate::{Comparison, Predicate, PredicateKind};
use crate::rules::{Driver, Step, is_key};
use tableq_model::{Value, ValueRef, compare};

/// The default cap on the number of ranges of a plan.
pub const DEFAULT_MAX_RANGES: usize = 256;

/// The result of [`extract_key_ranges`].
#[derive(Debug, Clone, PartialEq)]
pub struct Extraction {
    /// Where matching entities can be: sorted, disjoint, scan-order safe.
    pub keys: KeySet,
    /// What entities inside `keys` must still satisfy.
    pub residual: Predicate,
    /// Whether `residual` is `true`.
    pub exact: bool,
    /// Whether some set was coarsened to respect `max_ranges` or scan order.
    pub coarsened: bool,
}

/// Derives key ranges and a residual from `p` (see the module docs for the guarantee).
/// `max_ranges` (at least 1) caps the number of ranges.
pub fn extract_key_ranges(p: &Predicate, max_ranges: usize) -> Extraction {
    extract_key_ranges_traced(p, max_ranges, None)
}

/// [`extract_key_ranges`], recording what it did as [`Step`]s when `trace` is given:
/// `extract_key_ranges` (the ranges found), `coarsen_ranges`, `scan_order_hull` and
/// `residual_in_key_context`.
pub fn extract_key_ranges_traced(
    p: &Predicate,
    max_ranges: usize,
    mut trace: Option<&mut Vec<Step>>,
) -> Extraction {
    let max = max_ranges.max(1);
    let mut coarsened = false;
    let (keys, mut residual) = analyze(p, max, &mut coarsened);
    let mut space = keys.into_space();
    if let Some(t) = trace.as_deref_mut() {
        t.push(Step {
            rule: "extract_key_ranges",
            before: p.to_string(),
            after: format!("{} range(s), residual {residual}", space.range_count()),
        });
        if coarsened {
            t.push(Step {
                rule: "coarsen_ranges",
                before: format!("more than {max} ranges"),
                after: "a coarser superset; the residual keeps the precision".to_owned(),
            });
        }
    }
    if !space.scan_order_safe() {
        space = space.order_safe_hull();
        residual = p.clone();
        coarsened = true;
        if let Some(t) = trace.as_deref_mut() {
            t.push(Step {
                rule: "scan_order_hull",
                before: "a multi-partition range with gaps in RowKey".to_owned(),
                after: format!("its RowKey hull, residual {residual}"),
            });
        }
    }
    if space.is_empty() {
        residual = Predicate::TRUE;
    } else if !residual.is_true() {
        let simplified = in_key_context(&residual, &space);
        if simplified != residual {
            let (simplified, _) = Driver::new().run(simplified);
            if let Some(t) = trace {
                t.push(Step {
                    rule: "residual_in_key_context",
                    before: residual.to_string(),
                    after: simplified.to_string(),
                });
            }
            residual = simplified;
        }
    }
    if residual.is_false() {
        // Nothing in the ranges can satisfy the residual: read nothing.
        space = Space::empty();
        residual = Predicate::TRUE;
    }
    let exact = residual.is_true();
    Extraction {
        keys: KeySet::from_space(&space),
        residual,
        exact,
        coarsened,
    }
}

/// The residual is only evaluated on entities whose keys lie in `space`: a key comparison
/// that holds on all of `space` is `true` there, one that holds nowhere in it is `false`.
fn in_key_context(p: &Predicate, space: &Space<'_>) -> Predicate {
    match p.kind() {
        PredicateKind::Compare(c) => {
            key_comparison_in(c, space).map_or_else(|| p.clone(), Predicate::constant)
        }
        PredicateKind::Not(c) => {
            key_comparison_in(c, space).map_or_else(|| p.clone(), |b| Predicate::constant(!b))
        }
        PredicateKind::True | PredicateKind::False => p.clone(),
        PredicateKind::And(ps) => Predicate::and(ps.iter().map(|q| in_key_context(q, space))),
        PredicateKind::Or(ps) => Predicate::or(ps.iter().map(|q| in_key_context(q, space))),
    }
}

/// Whether a key comparison holds on every key pair of `space` (`Some(true)`), on none
/// (`Some(false)`), or on some only / is no key comparison (`None`).
fn key_comparison_in(c: &Comparison, space: &Space<'_>) -> Option<bool> {
    let common = space.intersect(&key_set(c)?.into_space());
    if common.is_empty() {
        Some(false)
    } else if common == *space {
        Some(true)
    } else {
        None
    }
}

/// The exact key set of a PartitionKey/RowKey comparison (`None` for other properties).
fn key_set(c: &Comparison) -> Option<Keys<'_>> {
    if !is_key(&c.property) {
        return None;
    }
    Some(match &c.value {
        Value::String(s) => {
            let iv = Intervals::from_comparison(c.op, s);
            if c.property == "PartitionKey" {
                Keys::pk(iv)
            } else {
                Keys::rk(iv)
            }
        }
        other => {
            // Always-present String key vs another type: a constant.
            let holds = compare(Some(ValueRef::String("")), c.op, other.as_ref());
            if holds { Keys::All } else { Keys::Nothing }
        }
    })
}

/// `p ⇔ key ∈ K ∧ R`.
fn analyze<'a>(p: &'a Predicate, max: usize, coarsened: &mut bool) -> (Keys<'a>, Predicate) {
    let (keys, residual) = match p.kind() {
        PredicateKind::True => (Keys::All, Predicate::TRUE),
        PredicateKind::False => (Keys::Nothing, Predicate::TRUE),
        PredicateKind::Compare(c) => match key_set(c) {
            Some(keys) => (keys, Predicate::TRUE),
            None => (Keys::All, p.clone()),
        },
        // Keys are always present, so the negation of a key comparison is its complement.
        PredicateKind::Not(c) => match key_set(c) {
            Some(keys) => (keys.complement(), Predicate::TRUE),
            None => (Keys::All, p.clone()),
        },
        PredicateKind::And(ps) => {
            let mut keys = Vec::with_capacity(ps.len());
            let mut residuals = Vec::new();
            for q in ps {
                let (k, r) = analyze(q, max, coarsened);
                if !k.is_all() {
                    keys.push(k);
                }
                if !r.is_true() {
                    residuals.push(r);
                }
            }
            let keys = Keys::intersect_all(keys);
            if keys.is_nothing() {
                (keys, Predicate::TRUE)
            } else {
                (keys, Predicate::and(residuals))
            }
        }
        PredicateKind::Or(ps) => {
            let mut exact = Vec::with_capacity(ps.len());
            let mut inexact = Vec::new();
            for q in ps {
                let (k, r) = analyze(q, max, coarsened);
                if k.is_nothing() {
                    // Matches nothing: contributes nothing to the union.
                } else if r.is_true() {
                    exact.push(k)
                } else {
                    inexact.push(k)
                }
            }
            let exact = Keys::union_all(exact);
            if inexact.is_empty() {
                (exact, Predicate::TRUE)
            } else {
                let inexact = Keys::union_all(inexact);
                let all = Keys::union_all(vec![exact.clone(), inexact]);
                // Inexact operands inside the exact operands' keys add nothing.
                if all.same_set(&exact) {
                    (exact, Predicate::TRUE)
                } else {
                    (all, p.clone())
                }
            }
        }
    };
    if keys.range_count() > max {
        *coarsened = true;
        return (Keys::space(keys.into_space().coarsen(max)), p.clone());
    }
    (keys, residual)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{KeyInterval, Strategy};
    use tableq_model::CmpOp;

    fn pk(op: CmpOp, s: &str) -> Predicate {
        Predicate::compare("PartitionKey", op, Value::from(s))
    }
    fn rk(op: CmpOp, s: &str) -> Predicate {
        Predicate::compare("RowKey", op, Value::from(s))
    }

    #[test]
    fn or_of_points_and_cap() {
        let p = Predicate::or(
            (0..10).map(|i| Predicate::and([pk(CmpOp::Eq, &format!("p{i}")), rk(CmpOp::Eq, "r")])),
        );
        let x = extract_key_ranges(&p, 64);
        assert!(x.exact);
        assert_eq!(x.keys.len(), 10);
        assert!(
            x.keys
                .ranges()
                .iter()
                .all(|r| r.strategy() == Strategy::Point)
        );
        assert!(x.keys.ranges().windows(2).all(|w| w[0].precedes(&w[1])));
        let capped = extract_key_ranges(&p, 4);
        assert!(capped.coarsened && !capped.exact);
        assert_eq!(capped.keys.len(), 1);
        // In the coarse range every RowKey is 'r': only the PartitionKeys remain to check.
        let pks = Predicate::or((0..10).map(|i| pk(CmpOp::Eq, &format!("p{i}"))));
        assert_eq!(capped.residual, pks);
    }

    #[test]
    fn gappy_rowkeys_over_many_partitions_are_hulled() {
        let p = Predicate::and([
            pk(CmpOp::Gt, "a"),
            Predicate::or([rk(CmpOp::Eq, "1"), rk(CmpOp::Eq, "3")]),
        ]);
        let x = extract_key_ranges(&p, 64);
        assert_eq!(x.keys.len(), 1);
        assert_eq!(
            x.keys.ranges()[0].row_key.lower,
            std::ops::Bound::Included("1".to_owned())
        );
        assert_eq!(
            x.keys.ranges()[0].row_key.upper,
            std::ops::Bound::Included("3".to_owned())
        );
        assert_eq!(
            x.residual,
            Predicate::or([rk(CmpOp::Eq, "1"), rk(CmpOp::Eq, "3")])
        );
    }

    #[test]
    fn exact_or_absorbs_inexact_operands() {
        let p = Predicate::or([
            pk(CmpOp::Ge, "a"),
            Predicate::and([
                pk(CmpOp::Eq, "b"),
                Predicate::compare("X", CmpOp::Eq, Value::Int32(1)),
            ]),
        ]);
        let x = extract_key_ranges(&p, 64);
        assert!(x.exact);
        assert_eq!(
            x.keys.ranges()[0].partition_key.lower,
            std::ops::Bound::Included("a".to_owned())
        );
        assert_eq!(
            x.keys.ranges()[0].partition_key.upper,
            std::ops::Bound::Unbounded
        );
        let contradiction = Predicate::and([pk(CmpOp::Eq, "a"), pk(CmpOp::Eq, "b")]);
        assert!(extract_key_ranges(&contradiction, 64).keys.is_empty());
        let point = Predicate::and([pk(CmpOp::Gt, "a"), pk(CmpOp::Le, "a\0")]);
        assert_eq!(
            extract_key_ranges(&point, 64).keys.ranges()[0].partition_key,
            KeyInterval::point("a\0")
        );
    }
}

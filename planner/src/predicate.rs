//! The typed predicate IR: what a `$filter` means, separate from how it was written.
//!
//! A [`Predicate`] is **valid by construction** (in the style of regex-syntax's `Hir`): its
//! node is private, it is only built by the **normalising constructors**
//! [`Predicate::and`], [`Predicate::or`], [`Predicate::negate`], [`Predicate::compare`]
//! (and the constants [`Predicate::TRUE`] / [`Predicate::FALSE`]), and it is inspected by
//! matching on [`Predicate::kind`]. Every predicate therefore keeps these invariants:
//!
//! * every comparison has the property on the left ([`Comparison`]); `and`/`or` are n-ary;
//! * no `And` directly inside an `And`, no `Or` directly inside an `Or` (flattened);
//! * no `True`/`False` inside `And`/`Or` (folded), and every `And`/`Or` has ≥ 2 operands;
//! * no duplicate operands in one `And`/`Or` (first occurrence kept, order preserved);
//! * negation only ever applies to a comparison ([`PredicateKind::Not`] holds a
//!   [`Comparison`]): double negations cancel and De Morgan pushes `not` through
//!   `and`/`or`.
//!
//! `not` over a comparison stays an explicit `Not`: under the service's missing-property
//! rule `not (A eq 1)` matches entities lacking `A` while `A ne 1` does not. (The rewrite rule
//! `negate_key_comparison` flips the operator where that is sound: on PartitionKey/RowKey.)
//!
//! `Display` prints canonical OData in the parser's style (`true`/`false` for the
//! constants; `not A eq 1` means `not (A eq 1)`):
//!
//! ```
//! use tableq_model::{CmpOp, Value};
//! use tableq_planner::predicate::{Predicate, PredicateKind};
//!
//! let a = Predicate::compare("A", CmpOp::Eq, Value::Int32(1));
//! let b = Predicate::compare("B", CmpOp::Gt, Value::from("x"));
//! let p = Predicate::negate(Predicate::and([a.clone(), b, Predicate::TRUE]));
//! assert_eq!(p.to_string(), "not A eq 1 or not B gt 'x'");
//! assert_eq!(Predicate::or([a.clone(), a.clone()]), a); // duplicates collapse
//! // Consumers match on the kind:
//! let PredicateKind::Or(operands) = p.kind() else { unreachable!() };
//! assert!(matches!(operands[0].kind(), PredicateKind::Not(c) if c.property == "A"));
//! ```

use std::collections::HashSet;
use std::fmt;
use tableq_model::{CmpOp, EntityView, Value, compare};

/// A comparison with the property on the left: `property op value`. Any property, operator
/// and literal make a valid comparison.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Comparison {
    /// The property name (system properties included).
    pub property: String,
    /// The operator.
    pub op: CmpOp,
    /// The literal.
    pub value: Value,
}

/// A normalised boolean predicate over one entity (see the module docs): built by the
/// normalising constructors, inspected through [`kind`](Predicate::kind).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Predicate {
    kind: PredicateKind,
}

/// What a [`Predicate`] node is. Obtained from [`Predicate::kind`] /
/// [`Predicate::into_kind`]; the invariants of the module docs hold for every node reached
/// this way (a `PredicateKind` value built by hand cannot become a `Predicate`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PredicateKind {
    /// Always true.
    True,
    /// Always false.
    False,
    /// One comparison.
    Compare(Comparison),
    /// The negation of one comparison (`not (A eq 1)`; not the same as `A ne 1` under
    /// the missing-property rule).
    Not(Comparison),
    /// Conjunction of two or more predicates, none an `And` or a constant, no duplicates.
    And(Vec<Predicate>),
    /// Disjunction of two or more predicates, none an `Or` or a constant, no duplicates.
    Or(Vec<Predicate>),
}

impl Comparison {
    /// `property op value`.
    pub fn new(property: impl Into<String>, op: CmpOp, value: Value) -> Comparison {
        Comparison {
            property: property.into(),
            op,
            value,
        }
    }

    /// Evaluates the comparison on one entity through [`tableq_model::compare`].
    #[inline]
    pub fn eval<E: EntityView + ?Sized>(&self, entity: &E) -> bool {
        compare(entity.get(&self.property), self.op, self.value.as_ref())
    }
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.property, self.op, self.value)
    }
}

impl From<Comparison> for Predicate {
    fn from(c: Comparison) -> Predicate {
        Predicate {
            kind: PredicateKind::Compare(c),
        }
    }
}

impl Predicate {
    /// Always true (matches every entity).
    pub const TRUE: Predicate = Predicate {
        kind: PredicateKind::True,
    };

    /// Always false (matches nothing).
    pub const FALSE: Predicate = Predicate {
        kind: PredicateKind::False,
    };

    /// [`TRUE`](Predicate::TRUE) or [`FALSE`](Predicate::FALSE).
    pub fn constant(value: bool) -> Predicate {
        if value {
            Predicate::TRUE
        } else {
            Predicate::FALSE
        }
    }

    /// `property op value` as a predicate.
    pub fn compare(property: impl Into<String>, op: CmpOp, value: Value) -> Predicate {
        Predicate::from(Comparison::new(property, op, value))
    }

    /// The conjunction of `operands`, normalised: nested `And`s are flattened, `True` dropped,
    /// any `False` makes the whole `False`, duplicates removed; zero operands give `True`,
    /// one gives itself.
    pub fn and(operands: impl IntoIterator<Item = Predicate>) -> Predicate {
        junction(operands, true)
    }

    /// The disjunction of `operands`, normalised like [`Predicate::and`] (dually: `False`
    /// dropped, any `True` makes the whole `True`, zero operands give `False`).
    pub fn or(operands: impl IntoIterator<Item = Predicate>) -> Predicate {
        junction(operands, false)
    }

    /// The negation of `p`, normalised: constants flip, `not not x` is `x`, De Morgan pushes
    /// the negation through `and`/`or`; a comparison stays under an explicit `Not`.
    pub fn negate(p: Predicate) -> Predicate {
        match p.kind {
            PredicateKind::True => Predicate::FALSE,
            PredicateKind::False => Predicate::TRUE,
            PredicateKind::Not(c) => Predicate::from(c),
            PredicateKind::And(ps) => Predicate::or(ps.into_iter().map(Predicate::negate)),
            PredicateKind::Or(ps) => Predicate::and(ps.into_iter().map(Predicate::negate)),
            PredicateKind::Compare(c) => Predicate {
                kind: PredicateKind::Not(c),
            },
        }
    }

    /// A junction whose operands are known to satisfy the invariants already — the
    /// operands of an existing `And`/`Or`, unchanged (the rule driver keeps such nodes
    /// without re-normalising them).
    pub(crate) fn junction_unchanged(operands: Vec<Predicate>, is_and: bool) -> Predicate {
        let kind = if is_and {
            PredicateKind::And(operands)
        } else {
            PredicateKind::Or(operands)
        };
        let p = Predicate { kind };
        debug_assert!(p.is_normalized(), "not a normalised junction: {p:?}");
        p
    }

    /// What the node is (to inspect it by matching).
    #[inline]
    pub fn kind(&self) -> &PredicateKind {
        &self.kind
    }

    /// The node, by value (to take its operands apart).
    pub fn into_kind(self) -> PredicateKind {
        self.kind
    }

    /// Evaluates the predicate on one entity, each comparison by [`tableq_model::compare`].
    pub fn eval<E: EntityView + ?Sized>(&self, entity: &E) -> bool {
        match &self.kind {
            PredicateKind::True => true,
            PredicateKind::False => false,
            PredicateKind::Compare(c) => c.eval(entity),
            PredicateKind::Not(c) => !c.eval(entity),
            PredicateKind::And(ps) => ps.iter().all(|p| p.eval(entity)),
            PredicateKind::Or(ps) => ps.iter().any(|p| p.eval(entity)),
        }
    }

    /// Whether this is the constant `true`.
    pub fn is_true(&self) -> bool {
        matches!(self.kind, PredicateKind::True)
    }

    /// Whether this is the constant `false`.
    pub fn is_false(&self) -> bool {
        matches!(self.kind, PredicateKind::False)
    }

    /// The number of comparisons in the predicate.
    pub fn comparisons(&self) -> usize {
        match &self.kind {
            PredicateKind::True | PredicateKind::False => 0,
            PredicateKind::Compare(_) | PredicateKind::Not(_) => 1,
            PredicateKind::And(ps) | PredicateKind::Or(ps) => {
                ps.iter().map(Predicate::comparisons).sum()
            }
        }
    }

    /// Whether the invariants of the module docs hold: true for every predicate the
    /// constructors build (checked by property tests and, in debug builds, where the rule
    /// driver keeps a junction without rebuilding it).
    pub(crate) fn is_normalized(&self) -> bool {
        match &self.kind {
            PredicateKind::True
            | PredicateKind::False
            | PredicateKind::Compare(_)
            | PredicateKind::Not(_) => true,
            PredicateKind::And(ps) | PredicateKind::Or(ps) => {
                let is_and = matches!(self.kind, PredicateKind::And(_));
                let mut seen = HashSet::with_capacity(ps.len());
                let nested_same_kind = |p: &Predicate| match p.kind {
                    PredicateKind::And(_) => is_and,
                    PredicateKind::Or(_) => !is_and,
                    _ => false,
                };
                ps.len() >= 2
                    && ps.iter().all(|p| {
                        let constant = p.is_true() || p.is_false();
                        seen.insert(p) && !constant && !nested_same_kind(p) && p.is_normalized()
                    })
            }
        }
    }
}

/// Builds a normalised `And` (`is_and`) or `Or`.
fn junction(operands: impl IntoIterator<Item = Predicate>, is_and: bool) -> Predicate {
    // The absorbing and neutral constants of this junction.
    let (absorbing, neutral) = if is_and {
        (Predicate::FALSE, Predicate::TRUE)
    } else {
        (Predicate::TRUE, Predicate::FALSE)
    };
    let mut flat: Vec<Predicate> = Vec::new();
    for p in operands {
        if p == neutral {
            continue;
        }
        if p == absorbing {
            return absorbing;
        }
        match p.kind {
            PredicateKind::And(ps) if is_and => flat.extend(ps),
            PredicateKind::Or(ps) if !is_and => flat.extend(ps),
            kind => flat.push(Predicate { kind }),
        }
    }
    dedupe(&mut flat);
    match flat.len() {
        0 => neutral,
        1 => flat.pop().unwrap_or(neutral),
        _ => Predicate {
            kind: if is_and {
                PredicateKind::And(flat)
            } else {
                PredicateKind::Or(flat)
            },
        },
    }
}

/// Removes later duplicates, keeping first-occurrence order. Linear expected time.
fn dedupe(ps: &mut Vec<Predicate>) {
    if ps.len() < 2 {
        return;
    }
    if ps.len() <= 8 {
        let mut i = 1;
        while i < ps.len() {
            if ps[..i].contains(&ps[i]) {
                ps.remove(i);
            } else {
                i += 1;
            }
        }
        return;
    }
    let keep: Vec<bool> = {
        let mut seen = HashSet::with_capacity(ps.len());
        ps.iter().map(|p| seen.insert(p)).collect()
    };
    let mut flags = keep.into_iter();
    ps.retain(|_| flags.next().unwrap_or(true));
}

impl std::ops::Not for Predicate {
    type Output = Predicate;

    /// [`Predicate::negate`].
    fn not(self) -> Predicate {
        Predicate::negate(self)
    }
}

impl fmt::Display for Predicate {
    /// Canonical OData, as the parser prints an AST: `and` binds tighter than `or`, so only
    /// an `Or` inside an `And` needs parentheses, and `not` applies to the comparison after
    /// it (`not A eq 1`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            PredicateKind::True => f.write_str("true"),
            PredicateKind::False => f.write_str("false"),
            PredicateKind::Compare(c) => c.fmt(f),
            PredicateKind::Not(c) => write!(f, "not {c}"),
            PredicateKind::And(ps) => write_joined(f, ps, " and ", |p| {
                matches!(p.kind, PredicateKind::Or(_) | PredicateKind::And(_))
            }),
            PredicateKind::Or(ps) => {
                write_joined(f, ps, " or ", |p| matches!(p.kind, PredicateKind::Or(_)))
            }
        }
    }
}

fn write_joined(
    f: &mut fmt::Formatter<'_>,
    ps: &[Predicate],
    sep: &str,
    needs_parens: impl Fn(&Predicate) -> bool,
) -> fmt::Result {
    for (i, p) in ps.iter().enumerate() {
        if i > 0 {
            f.write_str(sep)?;
        }
        if needs_parens(p) {
            write!(f, "({p})")?;
        } else {
            write!(f, "{p}")?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn c(p: &str, op: CmpOp, v: i32) -> Predicate {
        Predicate::compare(p, op, Value::Int32(v))
    }

    fn not(p: &str, op: CmpOp, v: i32) -> Predicate {
        Predicate {
            kind: PredicateKind::Not(Comparison::new(p, op, Value::Int32(v))),
        }
    }

    #[test]
    fn constructors_normalise() {
        let a = c("A", CmpOp::Eq, 1);
        let b = c("B", CmpOp::Eq, 2);
        let d = c("D", CmpOp::Eq, 3);
        assert_eq!(Predicate::and([]), Predicate::TRUE);
        assert_eq!(Predicate::or([]), Predicate::FALSE);
        assert_eq!(Predicate::and([a.clone(), Predicate::TRUE]), a);
        assert_eq!(
            Predicate::and([a.clone(), Predicate::FALSE]),
            Predicate::FALSE
        );
        assert_eq!(Predicate::or([a.clone(), Predicate::TRUE]), Predicate::TRUE);
        let nested = Predicate::and([a.clone(), Predicate::and([b.clone(), d.clone()]), a.clone()]);
        assert_eq!(
            nested.kind(),
            &PredicateKind::And(vec![a.clone(), b.clone(), d.clone()])
        );
        assert_eq!(Predicate::negate(Predicate::negate(a.clone())), a);
        assert_eq!(
            Predicate::negate(Predicate::or([a.clone(), b.clone()])).kind(),
            &PredicateKind::And(vec![not("A", CmpOp::Eq, 1), not("B", CmpOp::Eq, 2)])
        );
        assert!(nested.is_normalized());
        let single = Predicate {
            kind: PredicateKind::And(vec![a.clone()]),
        };
        assert!(!single.is_normalized());
        let with_constant = Predicate {
            kind: PredicateKind::Or(vec![a.clone(), Predicate::TRUE]),
        };
        assert!(!with_constant.is_normalized());
    }

    #[test]
    fn dedupe_large_keeps_order() {
        let ps: Vec<Predicate> = (0..20).chain(0..20).map(|i| c("A", CmpOp::Eq, i)).collect();
        let PredicateKind::Or(out) = Predicate::or(ps).into_kind() else {
            panic!("expected Or")
        };
        assert_eq!(
            out,
            (0..20).map(|i| c("A", CmpOp::Eq, i)).collect::<Vec<_>>()
        );
    }

    #[test]
    fn display_is_canonical() {
        let a = c("A", CmpOp::Eq, 1);
        let b = c("B", CmpOp::Lt, 2);
        let d = Predicate::compare("D", CmpOp::Ne, Value::from("it's"));
        let p = Predicate::and([
            Predicate::or([a.clone(), b.clone()]),
            Predicate::negate(d.clone()),
        ]);
        assert_eq!(p.to_string(), "(A eq 1 or B lt 2) and not D ne 'it''s'");
        let q = Predicate::or([Predicate::and([a, b]), d]);
        assert_eq!(q.to_string(), "A eq 1 and B lt 2 or D ne 'it''s'");
        assert_eq!(Predicate::TRUE.to_string(), "true");
    }

    /// Predicates built by any mix of the public constructors.
    fn arb_predicate() -> impl Strategy<Value = Predicate> {
        let leaf = prop_oneof![
            Just(Predicate::TRUE),
            Just(Predicate::FALSE),
            (
                prop::sample::select(vec!["A", "B", "PartitionKey"]),
                prop::sample::select(CmpOp::ALL.to_vec()),
                0i32..3
            )
                .prop_map(|(p, op, v)| c(p, op, v)),
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                inner.clone().prop_map(Predicate::negate),
                prop::collection::vec(inner.clone(), 0..4).prop_map(Predicate::and),
                prop::collection::vec(inner, 0..4).prop_map(Predicate::or),
            ]
        })
    }

    proptest! {
        #[test]
        fn every_constructed_predicate_is_normalised(p in arb_predicate()) {
            prop_assert!(p.is_normalized(), "{:?}", p);
            let n = Predicate::negate(p.clone());
            prop_assert!(n.is_normalized(), "{:?}", n);
            prop_assert_eq!(Predicate::negate(n), p.clone());
            // The rewrite rules keep the invariants too (they build through the constructors).
            let (rewritten, _) = crate::rules::Driver::new().run(p);
            prop_assert!(rewritten.is_normalized(), "{:?}", rewritten);
        }
    }
}

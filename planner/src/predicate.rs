//! The typed predicate IR: what a `$filter` means, separate from how it was written.
//!
//! Every comparison has the property on the left ([`Comparison`]); `and`/`or` are n-ary. A
//! [`Predicate`] should only be built through the **normalising constructors**
//! [`Predicate::and`], [`Predicate::or`], [`Predicate::negate`] and [`Predicate::compare`],
//! which keep these invariants (checked by [`Predicate::is_normalized`]):
//!
//! * no `And` directly inside an `And`, no `Or` directly inside an `Or` (flattened);
//! * no `True`/`False` inside `And`/`Or` (folded), and every `And`/`Or` has ≥ 2 operands;
//! * no duplicate operands in one `And`/`Or` (first occurrence kept, order preserved);
//! * `Not` only ever wraps a [`Comparison`]: double negations cancel and De Morgan pushes
//!   `not` through `and`/`or`.
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
//! use tableq_planner::predicate::Predicate;
//!
//! let a = Predicate::compare("A", CmpOp::Eq, Value::Int32(1));
//! let b = Predicate::compare("B", CmpOp::Gt, Value::from("x"));
//! let p = Predicate::negate(Predicate::and([a.clone(), b, Predicate::True]));
//! assert_eq!(p.to_string(), "not A eq 1 or not B gt 'x'");
//! assert_eq!(Predicate::or([a.clone(), a.clone()]), a); // duplicates collapse
//! ```

use std::collections::HashSet;
use std::fmt;
use tableq_model::{CmpOp, EntityView, Value, compare};

/// A comparison with the property on the left: `property op value`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Comparison {
    /// The property name (system properties included).
    pub property: String,
    /// The operator.
    pub op: CmpOp,
    /// The literal.
    pub value: Value,
}

/// A boolean predicate over one entity.
///
/// `Not` is kept explicit over comparisons: under the service's missing-property rule
/// `not (A eq 1)` is not `A ne 1`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Predicate {
    /// Always true.
    True,
    /// Always false.
    False,
    /// One comparison.
    Compare(Comparison),
    /// Negation (after normalisation: of a comparison only).
    Not(Box<Predicate>),
    /// Conjunction of two or more predicates.
    And(Vec<Predicate>),
    /// Disjunction of two or more predicates.
    Or(Vec<Predicate>),
}

impl Comparison {
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

impl Predicate {
    /// `property op value` as a predicate.
    pub fn compare(property: impl Into<String>, op: CmpOp, value: Value) -> Predicate {
        Predicate::Compare(Comparison {
            property: property.into(),
            op,
            value,
        })
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
        match p {
            Predicate::True => Predicate::False,
            Predicate::False => Predicate::True,
            Predicate::Not(inner) => *inner,
            Predicate::And(ps) => Predicate::or(ps.into_iter().map(Predicate::negate)),
            Predicate::Or(ps) => Predicate::and(ps.into_iter().map(Predicate::negate)),
            c @ Predicate::Compare(_) => Predicate::Not(Box::new(c)),
        }
    }

    /// Evaluates the predicate on one entity, each comparison by [`tableq_model::compare`].
    pub fn eval<E: EntityView + ?Sized>(&self, entity: &E) -> bool {
        match self {
            Predicate::True => true,
            Predicate::False => false,
            Predicate::Compare(c) => c.eval(entity),
            Predicate::Not(p) => !p.eval(entity),
            Predicate::And(ps) => ps.iter().all(|p| p.eval(entity)),
            Predicate::Or(ps) => ps.iter().any(|p| p.eval(entity)),
        }
    }

    /// Whether this is [`Predicate::True`].
    pub fn is_true(&self) -> bool {
        matches!(self, Predicate::True)
    }

    /// The number of comparisons in the predicate.
    pub fn comparisons(&self) -> usize {
        match self {
            Predicate::True | Predicate::False => 0,
            Predicate::Compare(_) => 1,
            Predicate::Not(p) => p.comparisons(),
            Predicate::And(ps) | Predicate::Or(ps) => ps.iter().map(Predicate::comparisons).sum(),
        }
    }

    /// Whether the predicate satisfies the invariants the normalising constructors keep
    /// (see the module docs). The planner's rule driver checks this after every rule.
    pub fn is_normalized(&self) -> bool {
        match self {
            Predicate::True | Predicate::False | Predicate::Compare(_) => true,
            Predicate::Not(p) => matches!(**p, Predicate::Compare(_)),
            Predicate::And(ps) | Predicate::Or(ps) => {
                let is_and = matches!(self, Predicate::And(_));
                let mut seen = HashSet::with_capacity(ps.len());
                let nested_same_kind = |p: &Predicate| match p {
                    Predicate::And(_) => is_and,
                    Predicate::Or(_) => !is_and,
                    _ => false,
                };
                ps.len() >= 2
                    && ps.iter().all(|p| {
                        let constant = matches!(p, Predicate::True | Predicate::False);
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
        (Predicate::False, Predicate::True)
    } else {
        (Predicate::True, Predicate::False)
    };
    let mut flat: Vec<Predicate> = Vec::new();
    for p in operands {
        match p {
            Predicate::And(ps) if is_and => flat.extend(ps),
            Predicate::Or(ps) if !is_and => flat.extend(ps),
            p if p == neutral => {}
            p if p == absorbing => return absorbing,
            p => flat.push(p),
        }
    }
    dedupe(&mut flat);
    match flat.len() {
        0 => neutral,
        1 => flat.pop().unwrap_or(neutral),
        _ if is_and => Predicate::And(flat),
        _ => Predicate::Or(flat),
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
    /// it (`not A eq 1`) or to a parenthesised group.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Predicate::True => f.write_str("true"),
            Predicate::False => f.write_str("false"),
            Predicate::Compare(c) => c.fmt(f),
            Predicate::Not(p) if matches!(**p, Predicate::And(_) | Predicate::Or(_)) => {
                write!(f, "not ({p})")
            }
            Predicate::Not(p) => write!(f, "not {p}"),
            Predicate::And(ps) => write_joined(f, ps, " and ", |p| {
                matches!(p, Predicate::Or(_) | Predicate::And(_))
            }),
            Predicate::Or(ps) => write_joined(f, ps, " or ", |p| matches!(p, Predicate::Or(_))),
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

    fn c(p: &str, op: CmpOp, v: i32) -> Predicate {
        Predicate::compare(p, op, Value::Int32(v))
    }

    #[test]
    fn constructors_normalise() {
        let a = c("A", CmpOp::Eq, 1);
        let b = c("B", CmpOp::Eq, 2);
        let d = c("D", CmpOp::Eq, 3);
        assert_eq!(Predicate::and([]), Predicate::True);
        assert_eq!(Predicate::or([]), Predicate::False);
        assert_eq!(Predicate::and([a.clone(), Predicate::True]), a);
        assert_eq!(
            Predicate::and([a.clone(), Predicate::False]),
            Predicate::False
        );
        assert_eq!(Predicate::or([a.clone(), Predicate::True]), Predicate::True);
        let nested = Predicate::and([a.clone(), Predicate::and([b.clone(), d.clone()]), a.clone()]);
        assert_eq!(
            nested,
            Predicate::And(vec![a.clone(), b.clone(), d.clone()])
        );
        assert_eq!(Predicate::negate(Predicate::negate(a.clone())), a);
        assert_eq!(
            Predicate::negate(Predicate::or([a.clone(), b.clone()])),
            Predicate::And(vec![
                Predicate::Not(Box::new(a.clone())),
                Predicate::Not(Box::new(b))
            ])
        );
        assert!(nested.is_normalized());
        assert!(!Predicate::And(vec![a.clone()]).is_normalized());
        assert!(!Predicate::Not(Box::new(Predicate::True)).is_normalized());
    }

    #[test]
    fn dedupe_large_keeps_order() {
        let ps: Vec<Predicate> = (0..20).chain(0..20).map(|i| c("A", CmpOp::Eq, i)).collect();
        let Predicate::Or(out) = Predicate::or(ps) else {
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
        assert_eq!(Predicate::True.to_string(), "true");
    }
}

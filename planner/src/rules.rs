//! Named rewrite rules over [`Predicate`]s and the driver that runs them to a fixpoint.
//!
//! Each [`Rule`] looks at one node and either rewrites it or leaves it alone; the
//! [`Driver`] walks the predicate bottom-up and applies the rules at each node until none
//! applies, pass after pass, until a pass changes nothing (at most [`MAX_PASSES`]; every
//! rule strictly shrinks the predicate — fewer nodes or fewer `Not`s — so the fixpoint is
//! reached long before). Rules build their output through the normalising constructors of
//! [`Predicate`], so every rewrite is normalised by construction. When asked, the driver
//! records every change as a [`Step`] for `explain --verbose`.
//!
//! The rules (all sound under the service's semantics, see each one):
//!
//! | rule | rewrites |
//! |---|---|
//! | `key_type_mismatch` | `PartitionKey`/`RowKey` vs a non-String literal → `true`/`false` |
//! | `key_lower_bound` | `PartitionKey ge ''` → `true`, `PartitionKey lt ''` → `false` (same for RowKey) |
//! | `negate_key_comparison` | `not (PartitionKey eq 'x')` → `PartitionKey ne 'x'` (same for RowKey) |
//! | `complementary_operands` | `X and not X` → `false`, `X or not X` → `true` |
//! | `absorption` | `X and (X or Y)` → `X`, `(X or Y) and (Y or X or Z)` → `X or Y`, dually for `or` |
//!
//! ```
//! use tableq_model::{CmpOp, Value};
//! use tableq_planner::predicate::Predicate;
//! use tableq_planner::rules::Driver;
//!
//! let p = Predicate::negate(Predicate::compare("PartitionKey", CmpOp::Lt, Value::Int32(5)));
//! let (out, steps) = Driver::new().record(true).run(p);
//! assert_eq!(out, Predicate::FALSE); // `PartitionKey lt 5` is always true (type mismatch)
//! assert_eq!(steps[0].rule, "key_type_mismatch");
//! ```

use crate::predicate::{Comparison, Predicate, PredicateKind};
use std::collections::HashSet;
use tableq_model::{CmpOp, SystemProperty, Value, ValueRef, compare};

/// Up to this many inner junctions, `absorption` compares them pairwise (subsets); beyond,
/// it only removes order-insensitive duplicates, keeping the rule linear.
pub const PAIRWISE_ABSORPTION_LIMIT: usize = 16;

/// The most passes the driver makes.
pub const MAX_PASSES: usize = 32;

/// A named rewrite of one predicate node: `Ok(new)` when it applies, `Err(unchanged)` when
/// not. Rules see nodes whose operands are already rewritten and normalised.
pub struct Rule {
    /// The rule's name, as shown by `explain --verbose`.
    pub name: &'static str,
    /// What the rule does, in one line.
    pub description: &'static str,
    /// The rewrite.
    pub apply: fn(Predicate) -> Result<Predicate, Predicate>,
}

/// One recorded rewrite.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The rule (or pipeline stage) that made the change.
    pub rule: &'static str,
    /// The node before, in canonical OData.
    pub before: String,
    /// The node after.
    pub after: String,
}

/// The rules, in the order the driver applies them.
pub const RULES: &[Rule] = &[
    Rule {
        name: "key_type_mismatch",
        description: "a key compared with a non-String literal is a constant (mismatch counts as less)",
        apply: key_type_mismatch,
    },
    Rule {
        name: "key_lower_bound",
        description: "'' is the least key: `ge ''` is true, `lt ''` is false",
        apply: key_lower_bound,
    },
    Rule {
        name: "negate_key_comparison",
        description: "keys are always present, so `not (Key op 'x')` flips the operator",
        apply: negate_key_comparison,
    },
    Rule {
        name: "complementary_operands",
        description: "`X and not X` is false, `X or not X` is true",
        apply: complementary_operands,
    },
    Rule {
        name: "absorption",
        description: "`X and (X or Y)` is X, `(X or Y) and (X or Y or Z)` is `X or Y`; dually for or",
        apply: absorption,
    },
];

/// Runs [`RULES`] to a fixpoint.
#[derive(Debug, Clone, Default)]
pub struct Driver {
    record: bool,
}

impl Driver {
    /// A driver that records nothing.
    pub fn new() -> Driver {
        Driver::default()
    }

    /// Whether to record every change as a [`Step`].
    pub fn record(mut self, record: bool) -> Driver {
        self.record = record;
        self
    }

    /// Rewrites `p` to a fixpoint of all rules; returns the result and the recorded steps.
    ///
    /// One bottom-up pass, applying the rules at each node until none applies there, already
    /// reaches the fixpoint: a rule's output only holds operands that were at their fixpoint.
    /// When a pass changed anything the driver still runs another, to confirm.
    pub fn run(&self, p: Predicate) -> (Predicate, Vec<Step>) {
        let mut steps = Vec::new();
        let (mut p, mut changed) = self.rewrite(p, &mut steps);
        let mut passes = 1;
        while changed && passes < MAX_PASSES {
            (p, changed) = self.rewrite(p, &mut steps);
            passes += 1;
        }
        (p, steps)
    }

    /// Rewrites the operands of an `and`/`or`; only when one changed is the junction rebuilt
    /// through its normalising constructor, otherwise it is kept as it was.
    fn rewrite_junction(
        &self,
        operands: Vec<Predicate>,
        steps: &mut Vec<Step>,
        is_and: bool,
    ) -> (Predicate, bool) {
        let (operands, changed) = self.rewrite_all(operands, steps);
        let p = match (changed, is_and) {
            (true, true) => Predicate::and(operands),
            (true, false) => Predicate::or(operands),
            (false, _) => Predicate::junction_unchanged(operands, is_and),
        };
        (p, changed)
    }

    /// One bottom-up pass: operands first, then the rules at this node to a local fixpoint.
    fn rewrite(&self, p: Predicate, steps: &mut Vec<Step>) -> (Predicate, bool) {
        let (mut p, mut changed) = match p.into_kind() {
            PredicateKind::And(ps) => self.rewrite_junction(ps, steps, true),
            PredicateKind::Or(ps) => self.rewrite_junction(ps, steps, false),
            PredicateKind::Not(c) => {
                // The rules first see the comparison alone, then its negation.
                let (inner, c) = self.rewrite(Predicate::from(c), steps);
                (Predicate::negate(inner), c)
            }
            PredicateKind::Compare(c) => (Predicate::from(c), false),
            PredicateKind::True => (Predicate::TRUE, false),
            PredicateKind::False => (Predicate::FALSE, false),
        };
        for _ in 0..MAX_PASSES {
            let mut changed_here = false;
            for rule in RULES {
                let before = self.record.then(|| p.to_string());
                match (rule.apply)(p) {
                    Ok(new) => {
                        if let Some(before) = before {
                            steps.push(Step {
                                rule: rule.name,
                                before,
                                after: new.to_string(),
                            });
                        }
                        p = new;
                        changed_here = true;
                    }
                    Err(same) => p = same,
                }
            }
            if !changed_here {
                break;
            }
            changed = true;
        }
        (p, changed)
    }

    fn rewrite_all(&self, mut ps: Vec<Predicate>, steps: &mut Vec<Step>) -> (Vec<Predicate>, bool) {
        let mut changed = false;
        for q in &mut ps {
            let (new, c) = self.rewrite(std::mem::replace(q, Predicate::TRUE), steps);
            *q = new;
            changed |= c;
        }
        (ps, changed)
    }
}

/// Whether `name` is PartitionKey or RowKey: always-present Strings.
pub fn is_key(name: &str) -> bool {
    matches!(
        SystemProperty::from_name(name),
        Some(SystemProperty::PartitionKey | SystemProperty::RowKey)
    )
}

/// `PartitionKey op <non-String>`: decided by [`tableq_model::compare`] with any String
/// property value (the key is always present and always a String, so the type mismatch makes
/// the outcome independent of the entity).
fn key_type_mismatch(p: Predicate) -> Result<Predicate, Predicate> {
    match p.kind() {
        PredicateKind::Compare(c)
            if is_key(&c.property) && !matches!(c.value, Value::String(_)) =>
        {
            let holds = compare(Some(ValueRef::String("")), c.op, c.value.as_ref());
            Ok(Predicate::constant(holds))
        }
        _ => Err(p),
    }
}

/// `Key ge ''` holds for every key and `Key lt ''` for none: `''` is the least string.
fn key_lower_bound(p: Predicate) -> Result<Predicate, Predicate> {
    match p.kind() {
        PredicateKind::Compare(Comparison {
            property,
            op,
            value: Value::String(s),
        }) if is_key(property) && s.is_empty() && matches!(op, CmpOp::Ge | CmpOp::Lt) => {
            Ok(Predicate::constant(*op == CmpOp::Ge))
        }
        _ => Err(p),
    }
}

/// The operator `op'` with `a op' b == !(a op b)` for totally ordered, present values.
pub fn negate_op(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Eq => CmpOp::Ne,
        CmpOp::Ne => CmpOp::Eq,
        CmpOp::Gt => CmpOp::Le,
        CmpOp::Ge => CmpOp::Lt,
        CmpOp::Lt => CmpOp::Ge,
        CmpOp::Le => CmpOp::Gt,
    }
}

/// `not (Key op 'x')` → `Key op' 'x'`: sound because keys are always present Strings and
/// String order is total (no NaN). Not for Timestamp (entities from files may lack it) nor
/// custom properties (the missing-property rule).
fn negate_key_comparison(p: Predicate) -> Result<Predicate, Predicate> {
    match p.kind() {
        PredicateKind::Not(c) if is_key(&c.property) && matches!(c.value, Value::String(_)) => {
            Ok(Predicate::from(Comparison {
                op: negate_op(c.op),
                ..c.clone()
            }))
        }
        _ => Err(p),
    }
}

/// `X and not X` → `false`; `X or not X` → `true` (each entity makes X true or false).
fn complementary_operands(p: Predicate) -> Result<Predicate, Predicate> {
    let (ps, is_and) = match p.kind() {
        PredicateKind::And(ps) => (ps, true),
        PredicateKind::Or(ps) => (ps, false),
        _ => return Err(p),
    };
    if !ps.iter().any(|q| matches!(q.kind(), PredicateKind::Not(_))) {
        return Err(p);
    }
    // The comparisons that occur un-negated among the operands.
    let positive: HashSet<&Comparison> = ps
        .iter()
        .filter_map(|q| match q.kind() {
            PredicateKind::Compare(c) => Some(c),
            _ => None,
        })
        .collect();
    let clash = ps
        .iter()
        .any(|q| matches!(q.kind(), PredicateKind::Not(c) if positive.contains(c)));
    if clash {
        Ok(Predicate::constant(!is_and))
    } else {
        Err(p)
    }
}

/// `X and (X or Y)` → `X`, and `(X or Y) and (Y or X or Z)` → `X or Y`; dually for `or`.
/// An inner junction of the other kind is redundant when one of its operands is also an
/// operand of the outer junction, or when another inner junction's operands are a subset of
/// its own (for equal sets the first one is kept).
fn absorption(p: Predicate) -> Result<Predicate, Predicate> {
    let (ps, is_and) = match p.kind() {
        PredicateKind::And(ps) => (ps, true),
        PredicateKind::Or(ps) => (ps, false),
        _ => return Err(p),
    };
    if !ps.iter().any(|q| inner_junction(q, is_and).is_some()) {
        return Err(p);
    }
    let mut redundant = vec![false; ps.len()];
    let outer = Members::new(ps);
    let inner_count = ps
        .iter()
        .filter(|q| inner_junction(q, is_and).is_some())
        .count();
    // Pairwise subset checks are quadratic: beyond a few inner junctions, only exact
    // (order-insensitive) duplicates are removed, in linear time.
    let pairwise = inner_count <= PAIRWISE_ABSORPTION_LIMIT;
    let mut seen_sets: HashSet<Vec<&Predicate>> = HashSet::new();
    for i in 0..ps.len() {
        let Some(qs) = inner_junction(&ps[i], is_and) else {
            continue;
        };
        if qs.iter().any(|x| outer.contains(x)) {
            redundant[i] = true;
            continue;
        }
        if !pairwise {
            let mut key: Vec<&Predicate> = qs.iter().collect();
            key.sort();
            redundant[i] = !seen_sets.insert(key);
            continue;
        }
        let own = Members::new(qs);
        redundant[i] = (0..ps.len()).any(|j| {
            j != i
                && !redundant[j]
                && inner_junction(&ps[j], is_and).is_some_and(|rs| {
                    (rs.len() < qs.len() || (rs.len() == qs.len() && j < i))
                        && rs.iter().all(|r| own.contains(r))
                })
        });
    }
    if !redundant.contains(&true) {
        return Err(p);
    }
    let kept = ps
        .iter()
        .zip(redundant)
        .filter(|(_, r)| !r)
        .map(|(q, _)| q.clone());
    Ok(if is_and {
        Predicate::and(kept)
    } else {
        Predicate::or(kept)
    })
}

/// Membership in a list of operands: a linear scan for short lists, a hash set for long ones.
enum Members<'a> {
    Few(&'a [Predicate]),
    Many(HashSet<&'a Predicate>),
}

impl<'a> Members<'a> {
    fn new(ps: &'a [Predicate]) -> Members<'a> {
        if ps.len() <= 16 {
            Members::Few(ps)
        } else {
            Members::Many(ps.iter().collect())
        }
    }

    fn contains(&self, p: &Predicate) -> bool {
        match self {
            Members::Few(ps) => ps.contains(p),
            Members::Many(set) => set.contains(p),
        }
    }
}

/// The operands of `q` when it is a junction of the other kind than the outer one.
fn inner_junction(q: &Predicate, outer_is_and: bool) -> Option<&[Predicate]> {
    match q.kind() {
        PredicateKind::Or(xs) if outer_is_and => Some(xs),
        PredicateKind::And(xs) if !outer_is_and => Some(xs),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmp(p: &str, op: CmpOp, v: Value) -> Predicate {
        Predicate::compare(p, op, v)
    }

    #[test]
    fn mismatch_constants_follow_compare() {
        for op in CmpOp::ALL {
            let (out, _) = Driver::new().run(cmp("PartitionKey", op, Value::Int32(5)));
            let want = matches!(op, CmpOp::Ne | CmpOp::Lt | CmpOp::Le);
            assert_eq!(out, Predicate::constant(want), "{op}");
            let (out, _) = Driver::new().run(cmp("RowKey", op, Value::Boolean(true)));
            assert_eq!(out, Predicate::constant(want), "{op}");
            // Timestamp and custom properties may be missing: never folded.
            let t = cmp("Timestamp", op, Value::Int32(5));
            assert_eq!(Driver::new().run(t.clone()).0, t);
        }
    }

    #[test]
    fn negation_only_for_keys() {
        let pk = Predicate::negate(cmp("PartitionKey", CmpOp::Lt, Value::from("a")));
        assert_eq!(
            Driver::new().run(pk).0,
            cmp("PartitionKey", CmpOp::Ge, Value::from("a"))
        );
        let ts = Predicate::negate(cmp("Timestamp", CmpOp::Lt, Value::from("a")));
        assert_eq!(Driver::new().run(ts.clone()).0, ts);
        let a = Predicate::negate(cmp("A", CmpOp::Eq, Value::Int32(1)));
        assert_eq!(Driver::new().run(a.clone()).0, a);
    }

    #[test]
    fn complement_and_absorption() {
        let x = cmp("A", CmpOp::Eq, Value::Int32(1));
        let y = cmp("B", CmpOp::Eq, Value::Int32(2));
        let p = Predicate::and([x.clone(), Predicate::negate(x.clone())]);
        assert_eq!(Driver::new().run(p).0, Predicate::FALSE);
        let p = Predicate::or([y.clone(), x.clone(), Predicate::negate(x.clone())]);
        assert_eq!(Driver::new().run(p).0, Predicate::TRUE);
        let p = Predicate::and([x.clone(), Predicate::or([x.clone(), y.clone()])]);
        let (out, steps) = Driver::new().record(true).run(p);
        assert_eq!(out, x);
        assert_eq!(steps.len(), 1);
        assert_eq!(steps[0].after, "A eq 1");
    }
}

//! The typed predicate IR.
//!
//! Separate from the AST: every comparison has the property on the left, and/or are n-ary
//! and flattened, and nodes are built through normalising constructors.

use tableq_model::{CmpOp, EntityView, Value, compare};

/// A comparison with the property on the left.
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
    /// Negation.
    Not(Box<Predicate>),
    /// Conjunction of two or more predicates.
    And(Vec<Predicate>),
    /// Disjunction of two or more predicates.
    Or(Vec<Predicate>),
}

impl Predicate {
    /// Evaluates the predicate on one entity, by [`tableq_model::compare`].
    pub fn eval<E: EntityView + ?Sized>(&self, entity: &E) -> bool {
        match self {
            Predicate::True => true,
            Predicate::False => false,
            Predicate::Compare(c) => compare(entity.get(&c.property), c.op, c.value.as_ref()),
            Predicate::Not(p) => !p.eval(entity),
            Predicate::And(ps) => ps.iter().all(|p| p.eval(entity)),
            Predicate::Or(ps) => ps.iter().any(|p| p.eval(entity)),
        }
    }
}

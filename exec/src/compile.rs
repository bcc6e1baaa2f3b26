//! Predicate compilation: a residual [`Predicate`] turned into a form that evaluates quickly
//! per entity.
//!
//! Compiling resolves, once per query and source, what the naive evaluator redoes per
//! entity: property names become [`PropertySlot`]s (or a constant `false` when the source
//! knows no entity has the property), system properties become direct key/Timestamp reads,
//! and each comparison's operator becomes a bit mask over the four outcomes of ordering a
//! value against the literal (less, equal, greater, unordered). Literals are already typed
//! values (DateTime ticks, Guid bytes), so nothing is parsed or allocated per entity.
//!
//! The ordering of a value against a literal follows [`tableq_model::order_against`]
//! exactly — widening, mismatch-as-less, NaN — and is tested against
//! [`tableq_model::compare`] by property.
//!
//! ```
//! use tableq_exec::CompiledPredicate;
//! use tableq_model::{CmpOp, Entity, Value};
//! use tableq_planner::predicate::Predicate;
//!
//! let p = Predicate::compare("Age", CmpOp::Ge, Value::Int32(30));
//! let compiled = CompiledPredicate::by_name(&p);
//! let mut e = Entity::new("p", "r");
//! e.set("Age", Value::Int64(31)); // an Int32 literal widens to Int64
//! assert!(compiled.eval(&e));
//! ```

use crate::source::{EntitySource, PropertySlot, SlotLookup, SourceRow};
use std::cmp::Ordering;
use tableq_model::{CmpOp, SystemProperty, Value, ValueRef, order::compare_str};
use tableq_planner::predicate::{Comparison, Predicate, PredicateKind};

/// A residual predicate compiled for one source. Cheap to share across threads.
#[derive(Debug, Clone)]
pub struct CompiledPredicate {
    root: Node,
}

#[derive(Debug, Clone)]
enum Node {
    Const(bool),
    Compare(Test),
    Not(Box<Node>),
    And(Vec<Node>),
    Or(Vec<Node>),
    /// A conjunction of comparisons only (the common residual shape), without the
    /// per-child dispatch of `And`.
    AllOf(Box<[Test]>),
    /// A disjunction of comparisons only.
    AnyOf(Box<[Test]>),
}

#[derive(Debug, Clone)]
enum Target {
    PartitionKey,
    RowKey,
    Timestamp,
    Slot(PropertySlot),
    Name(Box<str>),
}

/// A comparison: where to read the value, the literal, and which outcomes make it true.
#[derive(Debug, Clone)]
struct Test {
    target: Target,
    literal: Literal,
    /// Bit `outcome as u8` set when that outcome makes the comparison true.
    mask: u8,
}

#[derive(Debug, Clone)]
enum Literal {
    String(Box<str>),
    Int32(i32),
    Int64(i64),
    Double(f64),
    Boolean(bool),
    DateTime(i64),
    Guid([u8; 16]),
    Binary(Box<[u8]>),
}

const LESS: u8 = 1;
const EQUAL: u8 = 2;
const GREATER: u8 = 4;
const UNORDERED: u8 = 8;

fn mask_of(op: CmpOp) -> u8 {
    let mut mask = 0;
    for (bit, ordering) in [
        (LESS, Ordering::Less),
        (EQUAL, Ordering::Equal),
        (GREATER, Ordering::Greater),
    ] {
        if op.holds(ordering) {
            mask |= bit;
        }
    }
    if op == CmpOp::Ne {
        mask |= UNORDERED;
    }
    mask
}

#[inline]
fn outcome(ordering: Option<Ordering>) -> u8 {
    match ordering {
        Some(Ordering::Less) => LESS,
        Some(Ordering::Equal) => EQUAL,
        Some(Ordering::Greater) => GREATER,
        None => UNORDERED,
    }
}

impl Literal {
    fn from_value(v: &Value) -> Literal {
        match v {
            Value::String(s) => Literal::String(s.as_str().into()),
            Value::Int32(i) => Literal::Int32(*i),
            Value::Int64(i) => Literal::Int64(*i),
            Value::Double(d) => Literal::Double(*d),
            Value::Boolean(b) => Literal::Boolean(*b),
            Value::DateTime(t) => Literal::DateTime(t.ticks()),
            Value::Guid(g) => Literal::Guid(*g.as_bytes()),
            Value::Binary(b) => Literal::Binary(b.as_slice().into()),
        }
    }

    /// The outcome bit of ordering `value` (the property) against this literal, by the
    /// rules of [`tableq_model::order_against`].
    #[inline]
    fn order(&self, value: ValueRef<'_>) -> u8 {
        outcome(match (value, self) {
            (ValueRef::String(a), Literal::String(b)) => Some(compare_str(a, b)),
            (ValueRef::Int32(a), Literal::Int32(b)) => Some(a.cmp(b)),
            (ValueRef::Int64(a), Literal::Int32(b)) => Some(a.cmp(&i64::from(*b))),
            (ValueRef::Int64(a), Literal::Int64(b)) => Some(a.cmp(b)),
            (ValueRef::Double(a), Literal::Int32(b)) => a.partial_cmp(&f64::from(*b)),
            (ValueRef::Double(a), Literal::Int64(b)) => a.partial_cmp(&(*b as f64)),
            (ValueRef::Double(a), Literal::Double(b)) => a.partial_cmp(b),
            (ValueRef::Boolean(a), Literal::Boolean(b)) => Some(a.cmp(b)),
            (ValueRef::DateTime(a), Literal::DateTime(b)) => Some(a.ticks().cmp(b)),
            (ValueRef::Guid(a), Literal::Guid(b)) => Some(a.as_bytes().cmp(b)),
            (ValueRef::Binary(a), Literal::Binary(b)) => Some(a.cmp(b)),
            // Type mismatch: the property counts as less than the literal.
            _ => Some(Ordering::Less),
        })
    }
}

impl Test {
    #[inline]
    fn eval<R: SourceRow + ?Sized>(&self, row: &R) -> bool {
        let value = match &self.target {
            Target::Slot(slot) => row.custom_by_slot(*slot),
            Target::PartitionKey => Some(ValueRef::String(row.partition_key())),
            Target::RowKey => Some(ValueRef::String(row.row_key())),
            Target::Timestamp => row.timestamp().map(ValueRef::DateTime),
            Target::Name(name) => row.custom(name),
        };
        match value {
            // Missing property: false for every operator.
            None => false,
            Some(v) => self.literal.order(v) & self.mask != 0,
        }
    }
}

impl Node {
    fn eval<R: SourceRow + ?Sized>(&self, row: &R) -> bool {
        match self {
            Node::Compare(t) => t.eval(row),
            Node::And(nodes) => nodes.iter().all(|n| n.eval(row)),
            Node::Or(nodes) => nodes.iter().any(|n| n.eval(row)),
            Node::AllOf(tests) => tests.iter().all(|t| t.eval(row)),
            Node::AnyOf(tests) => tests.iter().any(|t| t.eval(row)),
            Node::Not(n) => !n.eval(row),
            Node::Const(b) => *b,
        }
    }
}

impl CompiledPredicate {
    /// Compiles `predicate` for `source`, resolving property names through
    /// [`EntitySource::property_slot`].
    pub fn compile<S: EntitySource + ?Sized>(
        predicate: &Predicate,
        source: &S,
    ) -> CompiledPredicate {
        CompiledPredicate {
            root: compile_node(predicate, &|name| source.property_slot(name)),
        }
    }

    /// Compiles `predicate` reading custom properties by name (for rows of any source).
    pub fn by_name(predicate: &Predicate) -> CompiledPredicate {
        CompiledPredicate {
            root: compile_node(predicate, &|_| SlotLookup::ByName),
        }
    }

    /// Whether the predicate is the constant `true` (nothing to evaluate).
    pub fn is_true(&self) -> bool {
        matches!(self.root, Node::Const(true))
    }

    /// Whether the predicate is the constant `false` (nothing can match).
    pub fn is_false(&self) -> bool {
        matches!(self.root, Node::Const(false))
    }

    /// Evaluates the predicate on one row. Agrees with [`Predicate::eval`] on every row of
    /// the source the predicate was compiled for.
    #[inline]
    pub fn eval<R: SourceRow + ?Sized>(&self, row: &R) -> bool {
        self.root.eval(row)
    }
}

fn compile_node(p: &Predicate, resolve: &dyn Fn(&str) -> SlotLookup) -> Node {
    match p.kind() {
        PredicateKind::True => Node::Const(true),
        PredicateKind::False => Node::Const(false),
        PredicateKind::Compare(c) => compile_comparison(c, resolve),
        PredicateKind::Not(c) => match compile_comparison(c, resolve) {
            Node::Const(b) => Node::Const(!b),
            n => Node::Not(Box::new(n)),
        },
        PredicateKind::And(ps) => {
            let mut nodes = Vec::with_capacity(ps.len());
            for p in ps {
                match compile_node(p, resolve) {
                    Node::Const(true) => {}
                    Node::Const(false) => return Node::Const(false),
                    n => nodes.push(n),
                }
            }
            match nodes.len() {
                0 => Node::Const(true),
                1 => nodes.pop().unwrap_or(Node::Const(true)),
                _ => all_tests(&nodes).map_or(Node::And(nodes), Node::AllOf),
            }
        }
        PredicateKind::Or(ps) => {
            let mut nodes = Vec::with_capacity(ps.len());
            for p in ps {
                match compile_node(p, resolve) {
                    Node::Const(false) => {}
                    Node::Const(true) => return Node::Const(true),
                    n => nodes.push(n),
                }
            }
            match nodes.len() {
                0 => Node::Const(false),
                1 => nodes.pop().unwrap_or(Node::Const(false)),
                _ => all_tests(&nodes).map_or(Node::Or(nodes), Node::AnyOf),
            }
        }
    }
}

fn compile_comparison(c: &Comparison, resolve: &dyn Fn(&str) -> SlotLookup) -> Node {
    let target = match SystemProperty::from_name(&c.property) {
        Some(SystemProperty::PartitionKey) => Target::PartitionKey,
        Some(SystemProperty::RowKey) => Target::RowKey,
        Some(SystemProperty::Timestamp) => Target::Timestamp,
        None => match resolve(&c.property) {
            SlotLookup::Slot(slot) => Target::Slot(slot),
            SlotLookup::ByName => Target::Name(c.property.as_str().into()),
            // No entity has the property: the comparison is false everywhere.
            SlotLookup::Absent => return Node::Const(false),
        },
    };
    Node::Compare(Test {
        target,
        literal: Literal::from_value(&c.value),
        mask: mask_of(c.op),
    })
}

/// The comparisons of `nodes` if every node is one.
fn all_tests(nodes: &[Node]) -> Option<Box<[Test]>> {
    nodes
        .iter()
        .map(|n| match n {
            Node::Compare(t) => Some(t.clone()),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use tableq_model::{DateTime, Entity, compare};

    fn value() -> impl Strategy<Value = Value> {
        prop_oneof![
            "[a-c\u{FFFF}\u{10000}]{0,3}".prop_map(Value::String),
            prop_oneof![Just(0i32), Just(-1), Just(1), any::<i32>()].prop_map(Value::Int32),
            prop_oneof![
                Just(0i64),
                Just(1),
                Just(9_007_199_254_740_993),
                any::<i64>()
            ]
            .prop_map(Value::Int64),
            prop_oneof![
                Just(0.0f64),
                Just(1.0),
                Just(f64::NAN),
                Just(f64::INFINITY),
                Just(-0.0),
                Just(9_007_199_254_740_992.0),
                any::<f64>()
            ]
            .prop_map(Value::Double),
            any::<bool>().prop_map(Value::Boolean),
            (0i64..3).prop_map(|i| Value::DateTime(
                DateTime::from_ticks(DateTime::MIN.ticks() + i).unwrap_or(DateTime::MIN)
            )),
            prop_oneof![Just([0u8; 16]), Just([1u8; 16]), any::<[u8; 16]>()]
                .prop_map(|b| Value::Guid(uuid::Uuid::from_bytes(b))),
            proptest::collection::vec(0u8..3, 0..3).prop_map(Value::Binary),
        ]
    }

    fn op() -> impl Strategy<Value = CmpOp> {
        proptest::sample::select(CmpOp::ALL.to_vec())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn comparison_agrees_with_compare(prop in proptest::option::of(value()), lit in value(), op in op()) {
            let mut e = Entity::new("p", "r");
            if let Some(v) = &prop {
                e.set("X", v.clone());
            }
            let pred = Predicate::compare("X", op, lit.clone());
            let want = compare(prop.as_ref().map(Value::as_ref), op, lit.as_ref());
            prop_assert_eq!(CompiledPredicate::by_name(&pred).eval(&e), want);
            prop_assert_eq!(pred.eval(&e), want);
        }
    }

    #[test]
    fn system_properties_and_constants() {
        let mut e = Entity::new("p", "r");
        e.set_timestamp(Some(DateTime::MIN));
        let cmp = |property: &str, op, value: Value| Predicate::compare(property, op, value);
        assert!(CompiledPredicate::by_name(&cmp("PartitionKey", CmpOp::Eq, "p".into())).eval(&e));
        assert!(CompiledPredicate::by_name(&cmp("RowKey", CmpOp::Lt, 5.into())).eval(&e));
        assert!(!CompiledPredicate::by_name(&cmp("RowKey", CmpOp::Gt, 5.into())).eval(&e));
        assert!(
            CompiledPredicate::by_name(&cmp("Timestamp", CmpOp::Eq, DateTime::MIN.into())).eval(&e)
        );
        // A comparison on a property no entity has is the constant `false`, its negation
        // `true`.
        let absent = cmp("Absent", CmpOp::Eq, 1.into());
        let resolve_absent = |_: &str| SlotLookup::Absent;
        assert!(matches!(
            compile_node(&absent, &resolve_absent),
            Node::Const(false)
        ));
        let both = Predicate::and([absent.clone(), cmp("B", CmpOp::Eq, 1.into())]);
        assert!(matches!(
            compile_node(&both, &resolve_absent),
            Node::Const(false)
        ));
        let negated = Predicate::or([Predicate::negate(absent), cmp("B", CmpOp::Eq, 1.into())]);
        assert!(matches!(
            compile_node(&negated, &resolve_absent),
            Node::Const(true)
        ));
    }
}

//! Predicate compilation: a residual [`Predicate`] turned into a form that evaluates quickly
//! per entity.
//!
//! Compiling resolves, once per query and source, what the naive evaluator redoes per
//! entity: property names become [`PropertySlot`]s (or a constant `false` when the source
//! knows no entity has the property), system properties become direct key/Timestamp reads,
//! and each comparison becomes a [`ValueTest`] (a typed literal, the operator a bit mask over
//! the outcomes of ordering a value against it), so nothing is parsed or allocated per
//! entity. A comparison on a slot is handed to the row ([`SourceRow::test_slot`]), which may
//! test a stored number without decoding a whole value.
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

use crate::comparison::ValueTest;
use crate::source::{EntitySource, PropertySlot, SlotLookup, SourceRow};
use tableq_model::{SystemProperty, ValueRef};
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

/// A comparison: where to read the value, and which values satisfy it.
#[derive(Debug, Clone)]
struct Test {
    target: Target,
    test: ValueTest,
}

impl Target {
    /// The value of the target in `row` (slots are tested by the row itself).
    fn read<'r, R: SourceRow + ?Sized>(&self, row: &'r R) -> Option<ValueRef<'r>> {
        match self {
            Target::Slot(slot) => row.custom_by_slot(*slot),
            Target::PartitionKey => Some(ValueRef::String(row.partition_key())),
            Target::RowKey => Some(ValueRef::String(row.row_key())),
            Target::Timestamp => row.timestamp().map(ValueRef::DateTime),
            Target::Name(name) => row.custom(name),
        }
    }
}

impl Test {
    #[inline]
    fn eval<R: SourceRow + ?Sized>(&self, row: &R) -> bool {
        match &self.target {
            Target::Slot(slot) => row.test_slot(*slot, &self.test),
            // Missing property: false for every operator.
            other => other.read(row).is_some_and(|v| self.test.matches(v)),
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
        // The common shapes are evaluated here, inlined into the caller's loop; nested
        // ones through the recursive `Node::eval`.
        match &self.root {
            Node::Compare(t) => t.eval(row),
            Node::AllOf(tests) => {
                for t in tests.iter() {
                    if !t.eval(row) {
                        return false;
                    }
                }
                true
            }
            Node::AnyOf(tests) => {
                for t in tests.iter() {
                    if t.eval(row) {
                        return true;
                    }
                }
                false
            }
            Node::Const(b) => *b,
            node => node.eval(row),
        }
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
        test: ValueTest::new(c.op, &c.value),
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
    use tableq_model::{CmpOp, DateTime, Entity, EntityView, Value, compare};

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

    /// Rows that read properties by slot (the name's index in `NAMES`), with the default
    /// `test_slot`: a compiled predicate over slots agrees with `compare`.
    struct Slotted(Entity);

    const NAMES: [&str; 2] = ["X", "Y"];

    impl EntityView for Slotted {
        fn partition_key(&self) -> &str {
            self.0.partition_key()
        }
        fn row_key(&self) -> &str {
            self.0.row_key()
        }
        fn timestamp(&self) -> Option<DateTime> {
            self.0.timestamp()
        }
        fn custom(&self, name: &str) -> Option<ValueRef<'_>> {
            EntityView::custom(&self.0, name)
        }
    }

    impl tableq_model::json::ListProperties for Slotted {
        fn for_each_custom(&self, f: &mut dyn FnMut(&str, ValueRef<'_>)) {
            self.0.for_each_custom(f);
        }
    }

    impl SourceRow for Slotted {
        fn to_entity(&self) -> Entity {
            self.0.clone()
        }
        fn custom_by_slot(&self, slot: PropertySlot) -> Option<ValueRef<'_>> {
            EntityView::custom(&self.0, NAMES[slot.0 as usize])
        }
    }

    fn slot_of(name: &str) -> SlotLookup {
        match NAMES.iter().position(|n| *n == name) {
            Some(i) => SlotLookup::Slot(PropertySlot(i as u32)),
            None => SlotLookup::Absent,
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]
        #[test]
        fn slot_comparisons_agree_with_compare(
            x in proptest::option::of(value()),
            y in value(),
            lit in value(),
            op in op(),
        ) {
            let mut e = Entity::new("p", "r");
            if let Some(v) = &x {
                e.set("X", v.clone());
            }
            e.set("Y", y.clone());
            let row = Slotted(e);
            let x_test = Predicate::compare("X", op, lit.clone());
            let want_x = compare(x.as_ref().map(Value::as_ref), op, lit.as_ref());
            let want_y = compare(Some(y.as_ref()), op, lit.as_ref());
            let compiled = |p: &Predicate| CompiledPredicate { root: compile_node(p, &slot_of) };
            prop_assert_eq!(compiled(&x_test).eval(&row), want_x);
            let both = Predicate::and([x_test.clone(), Predicate::compare("Y", op, lit.clone())]);
            prop_assert_eq!(compiled(&both).eval(&row), want_x && want_y);
            let either = Predicate::or([x_test, Predicate::compare("Y", op, lit.clone())]);
            prop_assert_eq!(compiled(&either).eval(&row), want_x || want_y);
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

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

use crate::batch::{Columns, keep_only};
use crate::comparison::{ValueTest, WORD_ROWS};
use crate::slot::{PropertySlot, SlotLookup};
use crate::source::{EntitySource, RowFilter, SourceRow};
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

/// Compiled predicates over runs of rows stored as columns: each comparison on a slot
/// whose run has a column form is one kernel call over the column
/// ([`Column::test`](crate::batch::Column::test)); the rest are tested row by row — in a conjunction only on the rows
/// the columns left, in a disjunction only on the rows they did not take.
impl RowFilter for CompiledPredicate {
    #[inline]
    fn test_row<R: SourceRow + ?Sized>(&self, row: &R) -> bool {
        self.eval(row)
    }

    fn test_run<C, R>(&self, columns: &C, row: &dyn Fn(usize) -> R, out: &mut Vec<u64>)
    where
        C: Columns + ?Sized,
        R: SourceRow,
    {
        let (first_word, words) = columns.words();
        out.clear();
        out.resize(words, 0);
        let run = Run {
            columns,
            row,
            first_word,
        };
        run.eval(&self.root, out);
        keep_only(out, first_word, &columns.rows());
    }
}

/// One run being evaluated: its columns, its rows, where its bitmap starts.
struct Run<'r, C: ?Sized, R> {
    columns: &'r C,
    row: &'r dyn Fn(usize) -> R,
    first_word: usize,
}

impl<C: Columns + ?Sized, R: SourceRow> Run<'_, C, R> {
    /// `out` = the rows of the run where `node` holds (bits outside the run: anything).
    fn eval(&self, node: &Node, out: &mut [u64]) {
        match node {
            Node::Const(b) => out.fill(if *b { u64::MAX } else { 0 }),
            Node::Compare(t) => {
                if !self.column_test(t, out) {
                    out.fill(0);
                    self.rows_where(out, false, |r| t.eval(r));
                }
            }
            Node::Not(n) => {
                self.eval(n, out);
                for w in out.iter_mut() {
                    *w = !*w;
                }
            }
            Node::AllOf(tests) => self.all_of(tests, out),
            Node::AnyOf(tests) => self.any_of(tests, out),
            Node::And(nodes) => {
                out.fill(u64::MAX);
                let mut tmp = vec![0u64; out.len()];
                for n in nodes {
                    self.eval(n, &mut tmp);
                    for (o, t) in out.iter_mut().zip(&tmp) {
                        *o &= t;
                    }
                }
            }
            Node::Or(nodes) => {
                out.fill(0);
                let mut tmp = vec![0u64; out.len()];
                for n in nodes {
                    self.eval(n, &mut tmp);
                    for (o, t) in out.iter_mut().zip(&tmp) {
                        *o |= t;
                    }
                }
            }
        }
    }

    /// Tests `t` over its column into `out`; `false` when it has none (a system property,
    /// a name, or a slot without a column form in this run). A test the column's range
    /// excludes fails every row without the column being read.
    #[inline]
    fn column_test(&self, t: &Test, out: &mut [u64]) -> bool {
        match t.target {
            Target::Slot(slot) => {
                if self
                    .columns
                    .range(slot)
                    .is_some_and(|r| r.excludes(&t.test))
                {
                    out.fill(0);
                    return true;
                }
                self.columns
                    .column(slot)
                    .test(&t.test, self.first_word, out)
            }
            _ => false,
        }
    }

    /// A conjunction: the column tests AND-ed; the others row by row, only on the rows
    /// every column test kept.
    fn all_of(&self, tests: &[Test], out: &mut [u64]) {
        out.fill(u64::MAX);
        let by_row = self.combine(tests, out, |o, b| *o &= b, true);
        if !by_row.is_empty() && out.iter().any(|&w| w != 0) {
            keep_only(out, self.first_word, &self.columns.rows());
            self.rows_where(out, true, |r| by_row.iter().all(|t| t.eval(r)));
        }
    }

    /// A disjunction: the column tests OR-ed; the others row by row, only on the rows no
    /// column test took.
    fn any_of(&self, tests: &[Test], out: &mut [u64]) {
        out.fill(0);
        let by_row = self.combine(tests, out, |o, b| *o |= b, false);
        if !by_row.is_empty() {
            self.rows_where(out, false, |r| by_row.iter().any(|t| t.eval(r)));
        }
    }

    /// Folds the column test of each of `tests` that has one into `out`; returns the
    /// others. With `conjunction`, stops once `out` is empty (no row left to keep: the
    /// remaining columns are not read).
    fn combine<'t>(
        &self,
        tests: &'t [Test],
        out: &mut [u64],
        fold: impl Fn(&mut u64, u64),
        conjunction: bool,
    ) -> Vec<&'t Test> {
        let mut stack = [0u64; TMP_WORDS];
        let mut heap = Vec::new();
        let buf = match stack.get_mut(..out.len()) {
            Some(b) => b,
            None => {
                heap.resize(out.len(), 0);
                &mut heap[..]
            }
        };
        let mut by_row = Vec::new();
        for t in tests {
            if self.column_test(t, buf) {
                for (o, b) in out.iter_mut().zip(buf.iter()) {
                    fold(o, *b);
                }
                if conjunction && out.iter().all(|&w| w == 0) {
                    return Vec::new();
                }
            } else {
                by_row.push(t);
            }
        }
        by_row
    }

    /// Row by row over the run: with `set`, clears the set bits whose row fails `test`;
    /// without, sets the clear bits whose row passes it.
    fn rows_where(&self, out: &mut [u64], set: bool, test: impl Fn(&R) -> bool) {
        let rows = self.columns.rows();
        for i in rows {
            let Some(word) = out.get_mut(i / WORD_ROWS - self.first_word) else {
                continue;
            };
            let bit = 1u64 << (i % WORD_ROWS);
            if (*word & bit != 0) == set && test(&(self.row)(i)) != set {
                *word ^= bit;
            }
        }
    }
}

/// Words of the stack buffers of a run's evaluation (runs of up to
/// [`FILTER_BATCH`](crate::FILTER_BATCH) rows, one more word when they start mid-word);
/// longer runs use the heap.
const TMP_WORDS: usize = crate::source::FILTER_BATCH / WORD_ROWS + 1;

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
    use crate::batch::{Column, OwnedColumn};
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
    #[derive(Clone)]
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

    /// Owned columns of `NAMES` over a vector of entities, built as a columnar source
    /// would: a typed column when every present value has one type with a column form,
    /// else `Column::Rows`.
    struct Table {
        rows: Vec<Slotted>,
        columns: Vec<Owned>,
    }

    enum Owned {
        Absent,
        Column(OwnedColumn),
        Rows,
    }

    impl Table {
        fn new(entities: Vec<Entity>) -> Table {
            let n = entities.len();
            let words = n.div_ceil(64);
            let columns = NAMES
                .iter()
                .map(|name| {
                    let values: Vec<Option<Value>> = entities
                        .iter()
                        .map(|e| EntityView::custom(e, name).map(|v| v.to_owned()))
                        .collect();
                    let mut present = vec![0u64; words];
                    let mut kinds = std::collections::HashSet::new();
                    for (i, v) in values.iter().enumerate() {
                        if let Some(v) = v {
                            present[i / 64] |= 1 << (i % 64);
                            kinds.insert(std::mem::discriminant(v));
                        }
                    }
                    let first = values.iter().flatten().next();
                    if kinds.len() > 1 {
                        return Owned::Rows;
                    }
                    macro_rules! typed {
                        ($variant:ident, $ty:ty, $pick:expr) => {
                            Owned::Column(OwnedColumn::$variant(
                                present.clone(),
                                values
                                    .iter()
                                    .map(|v| v.as_ref().map_or(<$ty>::default(), $pick))
                                    .collect(),
                            ))
                        };
                    }
                    match first {
                        None => Owned::Absent,
                        Some(Value::Int32(_)) => typed!(Int32, i32, |v| match v {
                            Value::Int32(i) => *i,
                            _ => 0,
                        }),
                        Some(Value::Int64(_)) => typed!(Int64, i64, |v| match v {
                            Value::Int64(i) => *i,
                            _ => 0,
                        }),
                        Some(Value::Double(_)) => typed!(Double, f64, |v| match v {
                            Value::Double(d) => *d,
                            _ => 0.0,
                        }),
                        Some(Value::DateTime(_)) => typed!(DateTime, i64, |v| match v {
                            Value::DateTime(t) => t.ticks(),
                            _ => 0,
                        }),
                        Some(Value::Boolean(_)) => {
                            let mut trues = vec![0u64; words];
                            for (i, v) in values.iter().enumerate() {
                                if let Some(Value::Boolean(true)) = v {
                                    trues[i / 64] |= 1 << (i % 64);
                                }
                            }
                            Owned::Column(OwnedColumn::Boolean(present.clone(), trues))
                        }
                        Some(_) => Owned::Rows,
                    }
                })
                .collect();
            Table {
                rows: entities.into_iter().map(Slotted).collect(),
                columns,
            }
        }
    }

    struct TableRun<'t>(&'t Table, std::ops::Range<usize>);

    impl Columns for TableRun<'_> {
        fn rows(&self) -> std::ops::Range<usize> {
            self.1.clone()
        }
        fn column(&self, slot: PropertySlot) -> Column<'_> {
            let rows = self.0.rows.len();
            match self.0.columns.get(slot.0 as usize) {
                Some(Owned::Absent) => Column::Absent,
                Some(Owned::Column(c)) => c.as_column(rows),
                Some(Owned::Rows) | None => Column::Rows,
            }
        }
        // Each column's range, so that the property test covers tests skipped by ranges.
        fn range(&self, slot: PropertySlot) -> Option<crate::batch::ColumnRange> {
            match self.0.columns.get(slot.0 as usize) {
                Some(Owned::Column(c)) => crate::batch::ColumnRange::of(c),
                _ => None,
            }
        }
    }

    /// A predicate over X, Y and RowKey: nested and/or/not of comparisons.
    fn predicate() -> impl Strategy<Value = Predicate> {
        let leaf = (
            proptest::sample::select(vec!["X", "Y", "RowKey", "Z"]),
            op(),
            value(),
        )
            .prop_map(|(name, op, v)| Predicate::compare(name, op, v));
        leaf.prop_recursive(3, 12, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 1..4).prop_map(Predicate::and),
                proptest::collection::vec(inner.clone(), 1..4).prop_map(Predicate::or),
                inner.prop_map(Predicate::negate),
            ]
        })
    }

    /// Values of one type for most rows, so that columns form (a mixed set sometimes).
    fn column_values() -> impl Strategy<Value = Vec<Option<Value>>> {
        (value(), any::<bool>(), 1usize..200).prop_flat_map(|(kind, mixed, n)| {
            let same = match kind {
                Value::Int32(_) => any::<i8>().prop_map(|i| Value::Int32(i32::from(i))).boxed(),
                Value::Int64(_) => any::<i8>().prop_map(|i| Value::Int64(i64::from(i))).boxed(),
                Value::Double(_) => prop_oneof![Just(f64::NAN), (-3i8..3).prop_map(f64::from)]
                    .prop_map(Value::Double)
                    .boxed(),
                Value::Boolean(_) => any::<bool>().prop_map(Value::Boolean).boxed(),
                other => Just(other).boxed(),
            };
            let one = if mixed {
                prop_oneof![4 => same, 1 => value()].boxed()
            } else {
                same
            };
            proptest::collection::vec(proptest::option::weighted(0.8, one), n)
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]
        /// Evaluating a run over columns answers, row for row, what `eval` answers.
        #[test]
        fn runs_over_columns_agree_with_rows(
            xs in column_values(),
            ys in column_values(),
            p in predicate(),
            cut in (0usize..200, 0usize..200),
        ) {
            let n = xs.len().min(ys.len());
            let entities: Vec<Entity> = (0..n)
                .map(|i| {
                    let mut e = Entity::new("p", format!("r{i:03}"));
                    if let Some(v) = &xs[i] {
                        e.set("X", v.clone());
                    }
                    if let Some(v) = &ys[i] {
                        e.set("Y", v.clone());
                    }
                    e
                })
                .collect();
            let table = Table::new(entities);
            let compiled = CompiledPredicate { root: compile_node(&p, &slot_of) };
            let (lo, hi) = (cut.0.min(n), cut.1.min(n));
            let (lo, hi) = (lo.min(hi), lo.max(hi));
            let run = TableRun(&table, lo..hi);
            let mut out = Vec::new();
            compiled.test_run(&run, &|i| table.rows[i].clone(), &mut out);
            let (first_word, words) = run.words();
            prop_assert_eq!(out.len(), words);
            for w in first_word..first_word + words {
                for j in 0..64 {
                    let i = w * 64 + j;
                    let got = out[w - first_word] >> j & 1 == 1;
                    let want = (lo..hi).contains(&i) && compiled.eval(&table.rows[i]);
                    prop_assert_eq!(got, want, "row {} of {}..{}: {:?}", i, lo, hi, p);
                    if (lo..hi).contains(&i) {
                        prop_assert_eq!(want, p.eval(&table.rows[i].0));
                    }
                }
            }
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

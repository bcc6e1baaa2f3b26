//! [`ValueTest`]: one comparison of a property against a literal, compiled — the literal a
//! typed value, the operator a bit mask over the four outcomes of ordering a value against
//! it (less, equal, greater, unordered).
//!
//! The ordering follows [`tableq_model::order_against`] exactly — widening, mismatch as
//! less, NaN unordered — and is tested against [`tableq_model::compare`] by property (in
//! `compile.rs`). A value is tested as a [`ValueRef`] ([`ValueTest::matches`]) or, when a
//! source reads a number without decoding a whole value, as the number itself
//! ([`ValueTest::matches_int32`], [`matches_int64`](ValueTest::matches_int64),
//! [`matches_double`](ValueTest::matches_double)); the typed methods *are* the rules for
//! numbers, which `matches` applies too, so the two agree by construction.
//!
//! ```
//! use tableq_exec::ValueTest;
//! use tableq_model::{CmpOp, Value, ValueRef};
//! let age_ge_30 = ValueTest::new(CmpOp::Ge, &Value::Int32(30));
//! assert!(age_ge_30.matches(ValueRef::Int64(31))); // the Int32 literal widens to Int64
//! assert!(age_ge_30.matches_int32(30));
//! assert!(!age_ge_30.matches(ValueRef::String("40"))); // a mismatch counts as less
//! ```

use std::cmp::Ordering;
use tableq_model::{CmpOp, Value, ValueRef, order::compare_str};

/// A comparison's literal and operator: which property values satisfy it (see the module
/// docs). Cheap to share across threads.
#[derive(Debug, Clone)]
pub struct ValueTest {
    literal: Literal,
    /// Bit `outcome` set when that outcome makes the comparison true.
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

/// The outcome bit of an ordering (`LESS`, `EQUAL` or `GREATER`), without a branch.
#[inline]
fn bit(ordering: Ordering) -> u8 {
    1 << (ordering as i8 + 1)
}

/// The outcome bit of a partial ordering (`UNORDERED` for NaN).
#[inline]
fn outcome(ordering: Option<Ordering>) -> u8 {
    match ordering {
        Some(o) => bit(o),
        None => UNORDERED,
    }
}

impl ValueTest {
    /// The test `property <op> literal`.
    pub fn new(op: CmpOp, literal: &Value) -> ValueTest {
        let literal = match literal {
            Value::String(s) => Literal::String(s.as_str().into()),
            Value::Int32(i) => Literal::Int32(*i),
            Value::Int64(i) => Literal::Int64(*i),
            Value::Double(d) => Literal::Double(*d),
            Value::Boolean(b) => Literal::Boolean(*b),
            Value::DateTime(t) => Literal::DateTime(t.ticks()),
            Value::Guid(g) => Literal::Guid(*g.as_bytes()),
            Value::Binary(b) => Literal::Binary(b.as_slice().into()),
        };
        ValueTest {
            literal,
            mask: mask_of(op),
        }
    }

    /// Whether a property holding `value` satisfies the comparison. (A missing property
    /// satisfies none: callers answer `false` without asking.)
    #[inline]
    pub fn matches(&self, value: ValueRef<'_>) -> bool {
        self.order(value) & self.mask != 0
    }

    /// [`matches`](ValueTest::matches) of an Int32 value.
    #[inline]
    pub fn matches_int32(&self, value: i32) -> bool {
        self.order_int32(value) & self.mask != 0
    }

    /// [`matches`](ValueTest::matches) of an Int64 value.
    #[inline]
    pub fn matches_int64(&self, value: i64) -> bool {
        self.order_int64(value) & self.mask != 0
    }

    /// [`matches`](ValueTest::matches) of a Double value.
    #[inline]
    pub fn matches_double(&self, value: f64) -> bool {
        self.order_double(value) & self.mask != 0
    }

    // The outcome bit of ordering a value (the property) against the literal. Matched on
    // the literal first: in a scan it is the same for every row, so only the value's type
    // is a real branch. Type mismatch: the property counts as less than the literal.

    #[inline]
    fn order_int32(&self, a: i32) -> u8 {
        match self.literal {
            Literal::Int32(b) => bit(a.cmp(&b)),
            _ => LESS,
        }
    }

    #[inline]
    fn order_int64(&self, a: i64) -> u8 {
        match self.literal {
            Literal::Int32(b) => bit(a.cmp(&i64::from(b))),
            Literal::Int64(b) => bit(a.cmp(&b)),
            _ => LESS,
        }
    }

    #[inline]
    fn order_double(&self, a: f64) -> u8 {
        match self.literal {
            Literal::Int32(b) => outcome(a.partial_cmp(&f64::from(b))),
            Literal::Int64(b) => outcome(a.partial_cmp(&(b as f64))),
            Literal::Double(b) => outcome(a.partial_cmp(&b)),
            _ => LESS,
        }
    }

    #[inline]
    fn order(&self, value: ValueRef<'_>) -> u8 {
        match (value, &self.literal) {
            (ValueRef::Int32(a), _) => self.order_int32(a),
            (ValueRef::Int64(a), _) => self.order_int64(a),
            (ValueRef::Double(a), _) => self.order_double(a),
            (ValueRef::String(a), Literal::String(b)) => bit(compare_str(a, b)),
            (ValueRef::Boolean(a), Literal::Boolean(b)) => bit(a.cmp(b)),
            (ValueRef::DateTime(a), Literal::DateTime(b)) => bit(a.ticks().cmp(b)),
            (ValueRef::Guid(a), Literal::Guid(b)) => bit(a.as_bytes().cmp(b)),
            (ValueRef::Binary(a), Literal::Binary(b)) => bit(a.cmp(b)),
            _ => LESS,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn outcome_bits() {
        assert_eq!(
            [Ordering::Less, Ordering::Equal, Ordering::Greater].map(bit),
            [LESS, EQUAL, GREATER]
        );
        assert_eq!(outcome(None), UNORDERED);
        assert_eq!(mask_of(CmpOp::Ne), LESS | GREATER | UNORDERED);
        assert_eq!(mask_of(CmpOp::Le), LESS | EQUAL);
    }

    fn number() -> impl Strategy<Value = Value> {
        prop_oneof![
            prop_oneof![Just(0i32), Just(-1), Just(42), any::<i32>()].prop_map(Value::Int32),
            prop_oneof![
                Just(0i64),
                Just(42),
                Just(9_007_199_254_740_993),
                any::<i64>()
            ]
            .prop_map(Value::Int64),
            prop_oneof![
                Just(0.0f64),
                Just(42.0),
                Just(f64::NAN),
                Just(-0.0),
                Just(9_007_199_254_740_992.0),
                any::<f64>()
            ]
            .prop_map(Value::Double),
            any::<bool>().prop_map(Value::Boolean),
            "[a-c]{0,2}".prop_map(Value::String),
        ]
    }

    proptest! {
        /// The typed entry points agree with `matches` of the same value.
        #[test]
        fn typed_tests_agree(
            lit in number(),
            a in any::<i32>(),
            b in any::<i64>(),
            c in any::<f64>(),
            op in proptest::sample::select(CmpOp::ALL.to_vec()),
        ) {
            let t = ValueTest::new(op, &lit);
            prop_assert_eq!(t.matches_int32(a), t.matches(ValueRef::Int32(a)));
            prop_assert_eq!(t.matches_int64(b), t.matches(ValueRef::Int64(b)));
            prop_assert_eq!(t.matches_double(c), t.matches(ValueRef::Double(c)));
            for v in [ValueRef::Int32(a), ValueRef::Int64(b), ValueRef::Double(c)] {
                prop_assert_eq!(t.matches(v), tableq_model::compare(Some(v), op, lit.as_ref()));
            }
        }
    }
}

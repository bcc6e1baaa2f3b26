//! The single comparison function of `$filter` evaluation.
//!
//! Every evaluator in tableq — the naive reference evaluator, the planner's key-range
//! reasoning, the compiled executor predicates — decides a comparison through [`compare()`]
//! (or, for precompiled forms, must be tested against it). The rules, from the query spec:
//!
//! 1. **Missing property** → `false` for every operator, including `ne`.
//! 2. **Numeric widening**: an Int32 literal compares by value with Int32, Int64 and Double
//!    properties; an Int64 literal with Int64 and Double properties; a Double literal with
//!    Double properties. Against a Double the integer is converted to the nearest `f64`.
//! 3. **Type mismatch** (every other pair of types) → the property counts as *less than* the
//!    literal: `eq` false, `ne` true, `lt`/`le` true, `gt`/`ge` false.
//! 4. **Same type**: the order of the data model (UTF-16 ordinal strings, `false < true`,
//!    instants, Guid bytes, Binary bytes). A NaN on either side: `ne` true, all else false.

use crate::{ValueRef, order};
use std::cmp::Ordering;
use std::fmt;

/// A comparison operator of `$filter`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CmpOp {
    /// `eq`
    Eq,
    /// `ne`
    Ne,
    /// `gt`
    Gt,
    /// `ge`
    Ge,
    /// `lt`
    Lt,
    /// `le`
    Le,
}

impl CmpOp {
    /// All operators.
    pub const ALL: [CmpOp; 6] = [
        CmpOp::Eq,
        CmpOp::Ne,
        CmpOp::Gt,
        CmpOp::Ge,
        CmpOp::Lt,
        CmpOp::Le,
    ];

    /// The OData keyword, e.g. `"eq"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            CmpOp::Eq => "eq",
            CmpOp::Ne => "ne",
            CmpOp::Gt => "gt",
            CmpOp::Ge => "ge",
            CmpOp::Lt => "lt",
            CmpOp::Le => "le",
        }
    }

    /// The operator for a (lowercase) keyword.
    pub fn from_keyword(word: &str) -> Option<CmpOp> {
        CmpOp::ALL.into_iter().find(|op| op.as_str() == word)
    }

    /// The operator with its operands swapped: `30 lt Age` is `Age gt 30`.
    pub const fn swap(self) -> CmpOp {
        match self {
            CmpOp::Eq => CmpOp::Eq,
            CmpOp::Ne => CmpOp::Ne,
            CmpOp::Gt => CmpOp::Lt,
            CmpOp::Ge => CmpOp::Le,
            CmpOp::Lt => CmpOp::Gt,
            CmpOp::Le => CmpOp::Ge,
        }
    }

    /// Whether `property <op> literal` holds given `property.cmp(literal)`.
    #[inline]
    pub const fn holds(self, ordering: Ordering) -> bool {
        match self {
            CmpOp::Eq => matches!(ordering, Ordering::Equal),
            CmpOp::Ne => !matches!(ordering, Ordering::Equal),
            CmpOp::Gt => matches!(ordering, Ordering::Greater),
            CmpOp::Ge => !matches!(ordering, Ordering::Less),
            CmpOp::Lt => matches!(ordering, Ordering::Less),
            CmpOp::Le => !matches!(ordering, Ordering::Greater),
        }
    }
}

impl fmt::Display for CmpOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a property value orders against a literal under the service's rules, or `None` when
/// the comparison is unordered (a NaN is involved). A type mismatch is `Some(Less)`.
///
/// This is the core of [`compare()`], exposed for planners that reason about ranges.
#[inline]
pub fn order_against(property: ValueRef<'_>, literal: ValueRef<'_>) -> Option<Ordering> {
    use ValueRef::*;
    match (property, literal) {
        (String(a), String(b)) => Some(order::compare_str(a, b)),
        (Int32(a), Int32(b)) => Some(a.cmp(&b)),
        (Int64(a), Int32(b)) => Some(a.cmp(&i64::from(b))),
        (Int64(a), Int64(b)) => Some(a.cmp(&b)),
        (Double(a), Int32(b)) => a.partial_cmp(&f64::from(b)),
        (Double(a), Int64(b)) => a.partial_cmp(&(b as f64)),
        (Double(a), Double(b)) => a.partial_cmp(&b),
        (Boolean(a), Boolean(b)) => Some(a.cmp(&b)),
        (DateTime(a), DateTime(b)) => Some(a.cmp(&b)),
        (Guid(a), Guid(b)) => Some(a.as_bytes().cmp(b.as_bytes())),
        (Binary(a), Binary(b)) => Some(a.cmp(b)),
        // Type mismatch: the property counts as less than the literal.
        _ => Some(Ordering::Less),
    }
}

/// Decides `property <op> literal` for one entity, by the rules in the module docs.
/// `property` is `None` when the entity lacks the property.
///
/// ```
/// use tableq_model::{compare, CmpOp, ValueRef};
/// // Widening: Int32 literal against an Int64 property.
/// assert!(compare(Some(ValueRef::Int64(7)), CmpOp::Eq, ValueRef::Int32(7)));
/// // Mismatch: an Int64 literal against an Int32 property counts as "less than".
/// assert!(compare(Some(ValueRef::Int32(7)), CmpOp::Lt, ValueRef::Int64(7)));
/// assert!(!compare(Some(ValueRef::Int32(7)), CmpOp::Eq, ValueRef::Int64(7)));
/// // NaN: only `ne` holds.
/// assert!(compare(Some(ValueRef::Double(f64::NAN)), CmpOp::Ne, ValueRef::Double(f64::NAN)));
/// ```
#[inline]
pub fn compare(property: Option<ValueRef<'_>>, op: CmpOp, literal: ValueRef<'_>) -> bool {
    match property {
        None => false,
        Some(p) => match order_against(p, literal) {
            Some(ordering) => op.holds(ordering),
            None => op == CmpOp::Ne,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DateTime, Value};
    use uuid::Uuid;

    fn check(p: Option<Value>, lit: Value, expected: [bool; 6]) {
        for (op, want) in CmpOp::ALL.into_iter().zip(expected) {
            assert_eq!(
                compare(p.as_ref().map(Value::as_ref), op, lit.as_ref()),
                want,
                "{p:?} {op} {lit}"
            );
        }
    }
    //                 eq     ne     gt     ge     lt     le
    const LESS: [bool; 6] = [false, true, false, false, true, true];
    const EQUAL: [bool; 6] = [true, false, false, true, false, true];
    const GREATER: [bool; 6] = [false, true, true, true, false, false];
    const NONE: [bool; 6] = [false; 6];
    const NAN: [bool; 6] = [false, true, false, false, false, false];

    #[test]
    fn missing_property_is_false_for_every_operator() {
        check(None, Value::from("x"), NONE);
        check(None, Value::Int32(1), NONE);
    }

    #[test]
    fn numeric_widening() {
        check(Some(Value::Int32(5)), Value::Int32(5), EQUAL);
        check(Some(Value::Int64(5)), Value::Int32(4), GREATER);
        check(Some(Value::Double(5.0)), Value::Int32(5), EQUAL);
        check(Some(Value::Double(4.5)), Value::Int64(5), LESS);
        check(
            Some(Value::Double(9007199254740992.0)),
            Value::Int64(9007199254740993),
            EQUAL,
        );
        check(Some(Value::Int64(i64::MAX)), Value::Int64(i64::MAX), EQUAL);
    }

    #[test]
    fn mismatches_count_as_less() {
        check(Some(Value::Int32(5)), Value::Int64(5), LESS);
        check(Some(Value::Int32(5)), Value::Double(5.0), LESS);
        check(Some(Value::Int64(5)), Value::Double(5.0), LESS);
        check(Some(Value::from("5")), Value::Int32(5), LESS);
        check(Some(Value::Int32(5)), Value::from("5"), LESS);
        check(Some(Value::Boolean(true)), Value::Int32(1), LESS);
        check(Some(Value::Guid(Uuid::nil())), Value::from("x"), LESS);
        check(Some(Value::DateTime(DateTime::MIN)), Value::from("x"), LESS);
        check(Some(Value::Double(f64::NAN)), Value::from("x"), LESS);
    }

    #[test]
    fn nan_is_unordered() {
        check(Some(Value::Double(f64::NAN)), Value::Double(f64::NAN), NAN);
        check(Some(Value::Double(f64::NAN)), Value::Double(1.0), NAN);
        check(Some(Value::Double(1.0)), Value::Double(f64::NAN), NAN);
        check(Some(Value::Double(f64::NAN)), Value::Int32(1), NAN);
        check(
            Some(Value::Double(f64::INFINITY)),
            Value::Double(f64::INFINITY),
            EQUAL,
        );
    }

    #[test]
    fn same_type_orders() {
        check(
            Some(Value::from("\u{10000}")),
            Value::from("\u{FFFF}"),
            LESS,
        );
        check(Some(Value::from("B")), Value::from("a"), LESS);
        check(Some(Value::Boolean(false)), Value::Boolean(true), LESS);
        check(
            Some(Value::Binary(vec![1, 2])),
            Value::Binary(vec![1]),
            GREATER,
        );
        let g1 = Uuid::parse_str("00000000-0000-0000-0000-0000000000ff").unwrap();
        let g2 = Uuid::parse_str("01000000-0000-0000-0000-000000000000").unwrap();
        check(Some(Value::Guid(g1)), Value::Guid(g2), LESS);
        let t = DateTime::parse("2020-01-01T00:00:00.0000001Z").unwrap();
        let u = DateTime::parse("2020-01-01T00:00:00Z").unwrap();
        check(Some(Value::DateTime(t)), Value::DateTime(u), GREATER);
    }

    #[test]
    fn swap_and_keywords() {
        for op in CmpOp::ALL {
            assert_eq!(op.swap().swap(), op);
            assert_eq!(CmpOp::from_keyword(op.as_str()), Some(op));
        }
        assert_eq!(CmpOp::from_keyword("EQ"), None);
    }
}

//! Typed property values: the owned [`Value`] and the borrowed, `Copy` [`ValueRef`].

use crate::{DateTime, EdmType, order};
use ordered_float::OrderedFloat;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use uuid::Uuid;

/// A typed property value.
///
/// `Display` prints the OData literal form accepted by `$filter` (`'it''s'`, `42`, `42L`,
/// `1.5`, `NaN`, `INF`, `datetime'…'`, `guid'…'`, `X'0aff'`, `true`).
///
/// `Eq`/`Ord`/`Hash` form a **total order** (types by [`EdmType`] rank, then values in the
/// spec's order, Doubles via [`OrderedFloat`] so NaN equals NaN and sorts last). This is the
/// order for sorting and deduplicating values; the *query* semantics of a comparison (missing
/// properties, widening, mismatches, NaN) live in [`crate::compare()`].
#[derive(Debug, Clone)]
pub enum Value {
    /// `Edm.Binary`.
    Binary(Vec<u8>),
    /// `Edm.Boolean`.
    Boolean(bool),
    /// `Edm.DateTime`.
    DateTime(DateTime),
    /// `Edm.Double`.
    Double(f64),
    /// `Edm.Guid`.
    Guid(Uuid),
    /// `Edm.Int32`.
    Int32(i32),
    /// `Edm.Int64`.
    Int64(i64),
    /// `Edm.String`.
    String(String),
}

/// A borrowed view of a [`Value`]: what evaluators read from any entity representation
/// without allocating.
#[derive(Debug, Clone, Copy)]
pub enum ValueRef<'a> {
    /// `Edm.Binary`.
    Binary(&'a [u8]),
    /// `Edm.Boolean`.
    Boolean(bool),
    /// `Edm.DateTime`.
    DateTime(DateTime),
    /// `Edm.Double`.
    Double(f64),
    /// `Edm.Guid`.
    Guid(Uuid),
    /// `Edm.Int32`.
    Int32(i32),
    /// `Edm.Int64`.
    Int64(i64),
    /// `Edm.String`.
    String(&'a str),
}

impl Value {
    /// The Edm type of this value.
    pub fn edm_type(&self) -> EdmType {
        self.as_ref().edm_type()
    }

    /// A borrowed view.
    pub fn as_ref(&self) -> ValueRef<'_> {
        match self {
            Value::Binary(b) => ValueRef::Binary(b),
            Value::Boolean(b) => ValueRef::Boolean(*b),
            Value::DateTime(t) => ValueRef::DateTime(*t),
            Value::Double(d) => ValueRef::Double(*d),
            Value::Guid(g) => ValueRef::Guid(*g),
            Value::Int32(i) => ValueRef::Int32(*i),
            Value::Int64(i) => ValueRef::Int64(*i),
            Value::String(s) => ValueRef::String(s),
        }
    }

    /// The string, if this is an `Edm.String`.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }
}

impl ValueRef<'_> {
    /// The Edm type of this value.
    pub fn edm_type(&self) -> EdmType {
        match self {
            ValueRef::Binary(_) => EdmType::Binary,
            ValueRef::Boolean(_) => EdmType::Boolean,
            ValueRef::DateTime(_) => EdmType::DateTime,
            ValueRef::Double(_) => EdmType::Double,
            ValueRef::Guid(_) => EdmType::Guid,
            ValueRef::Int32(_) => EdmType::Int32,
            ValueRef::Int64(_) => EdmType::Int64,
            ValueRef::String(_) => EdmType::String,
        }
    }

    /// An owned copy.
    pub fn to_owned(&self) -> Value {
        match *self {
            ValueRef::Binary(b) => Value::Binary(b.to_vec()),
            ValueRef::Boolean(b) => Value::Boolean(b),
            ValueRef::DateTime(t) => Value::DateTime(t),
            ValueRef::Double(d) => Value::Double(d),
            ValueRef::Guid(g) => Value::Guid(g),
            ValueRef::Int32(i) => Value::Int32(i),
            ValueRef::Int64(i) => Value::Int64(i),
            ValueRef::String(s) => Value::String(s.to_owned()),
        }
    }

    /// The total order described on [`Value`].
    pub fn total_cmp(&self, other: &ValueRef<'_>) -> Ordering {
        use ValueRef::*;
        match (self, other) {
            (Binary(a), Binary(b)) => a.cmp(b),
            (Boolean(a), Boolean(b)) => a.cmp(b),
            (DateTime(a), DateTime(b)) => a.cmp(b),
            (Double(a), Double(b)) => OrderedFloat(*a).cmp(&OrderedFloat(*b)),
            (Guid(a), Guid(b)) => a.as_bytes().cmp(b.as_bytes()),
            (Int32(a), Int32(b)) => a.cmp(b),
            (Int64(a), Int64(b)) => a.cmp(b),
            (String(a), String(b)) => order::compare_str(a, b),
            _ => self.edm_type().cmp(&other.edm_type()),
        }
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Value {}
impl PartialOrd for Value {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Value {
    fn cmp(&self, other: &Self) -> Ordering {
        self.as_ref().total_cmp(&other.as_ref())
    }
}
impl Hash for Value {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.edm_type().hash(state);
        match self {
            Value::Binary(b) => b.hash(state),
            Value::Boolean(b) => b.hash(state),
            Value::DateTime(t) => t.hash(state),
            Value::Double(d) => OrderedFloat(*d).hash(state),
            Value::Guid(g) => g.hash(state),
            Value::Int32(i) => i.hash(state),
            Value::Int64(i) => i.hash(state),
            Value::String(s) => s.hash(state),
        }
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::String(s.to_owned())
    }
}
impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::String(s)
    }
}
impl From<i32> for Value {
    fn from(i: i32) -> Self {
        Value::Int32(i)
    }
}
impl From<i64> for Value {
    fn from(i: i64) -> Self {
        Value::Int64(i)
    }
}
impl From<f64> for Value {
    fn from(d: f64) -> Self {
        Value::Double(d)
    }
}
impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Boolean(b)
    }
}
impl From<DateTime> for Value {
    fn from(t: DateTime) -> Self {
        Value::DateTime(t)
    }
}
impl From<Uuid> for Value {
    fn from(g: Uuid) -> Self {
        Value::Guid(g)
    }
}
impl From<Vec<u8>> for Value {
    fn from(b: Vec<u8>) -> Self {
        Value::Binary(b)
    }
}

/// Writes a Double so that it reads back as the same Double and never as an integer:
/// shortest round-trip digits, always with a fraction or an exponent (`5.0`, `1e300`).
/// Non-finite values are written `NaN`, `INF`, `-INF` (the OData literal spellings).
pub fn write_double(f: &mut impl fmt::Write, d: f64) -> fmt::Result {
    if d.is_nan() {
        f.write_str("NaN")
    } else if d.is_infinite() {
        f.write_str(if d > 0.0 { "INF" } else { "-INF" })
    } else {
        // `{:?}` is Rust's shortest round-trip representation and always carries a `.` or
        // an exponent.
        write!(f, "{d:?}")
    }
}

impl fmt::Display for ValueRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ValueRef::Binary(b) => {
                f.write_str("X'")?;
                for byte in b {
                    write!(f, "{byte:02x}")?;
                }
                f.write_str("'")
            }
            ValueRef::Boolean(b) => write!(f, "{b}"),
            ValueRef::DateTime(t) => write!(f, "datetime'{t}'"),
            ValueRef::Double(d) => write_double(f, d),
            ValueRef::Guid(g) => write!(f, "guid'{}'", g.hyphenated()),
            ValueRef::Int32(i) => write!(f, "{i}"),
            ValueRef::Int64(i) => write!(f, "{i}L"),
            ValueRef::String(s) => {
                f.write_str("'")?;
                for (i, part) in s.split('\'').enumerate() {
                    if i > 0 {
                        f.write_str("''")?;
                    }
                    f.write_str(part)?;
                }
                f.write_str("'")
            }
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.as_ref().fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_forms() {
        let g = Uuid::parse_str("A455C695-DF98-5678-AAAA-81D3367E5A34").unwrap();
        let cases: Vec<(Value, &str)> = vec![
            (Value::from("it's"), "'it''s'"),
            (Value::from(""), "''"),
            (Value::Int32(-5), "-5"),
            (Value::Int64(5), "5L"),
            (Value::Double(5.0), "5.0"),
            (Value::Double(-0.25), "-0.25"),
            (Value::Double(1e300), "1e300"),
            (Value::Double(f64::NAN), "NaN"),
            (Value::Double(f64::INFINITY), "INF"),
            (Value::Double(f64::NEG_INFINITY), "-INF"),
            (Value::Boolean(true), "true"),
            (Value::Guid(g), "guid'a455c695-df98-5678-aaaa-81d3367e5a34'"),
            (Value::Binary(vec![0x0a, 0xff]), "X'0aff'"),
            (
                Value::DateTime(DateTime::parse("2008-07-10T00:00:00Z").unwrap()),
                "datetime'2008-07-10T00:00:00Z'",
            ),
        ];
        for (v, text) in cases {
            assert_eq!(v.to_string(), text);
        }
    }

    #[test]
    fn total_order_basics() {
        assert_eq!(Value::Double(f64::NAN), Value::Double(f64::NAN));
        assert!(Value::Double(f64::INFINITY) < Value::Double(f64::NAN));
        assert!(Value::Binary(vec![9]) < Value::Boolean(false));
        assert!(Value::Boolean(false) < Value::Boolean(true));
        assert!(Value::from("\u{10000}") < Value::from("\u{FFFF}"));
    }
}

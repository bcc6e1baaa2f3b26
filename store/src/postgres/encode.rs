//! How keys and properties are stored in PostgreSQL: an order-preserving text encoding of
//! strings ([`encode_str`]) and the typed JSON form of property values ([`encode_props`],
//! [`decode_props`]), plus the wire wrappers for `jsonb` and `jsonpath` parameters.
//!
//! # Strings: text whose code-point order is the spec's UTF-16 order
//!
//! PostgreSQL compares `text COLLATE "C"` (and `jsonpath` compares strings) by UTF-8 bytes,
//! i.e. by code point, and cannot store U+0000. The spec orders strings by UTF-16 code
//! units, which differs from code-point order in one place: a supplementary-plane character
//! (a surrogate pair, 0xD800…) sorts *before* U+E000–U+FFFF. [`encode_str`] maps every
//! string to text whose code-point order equals the original's UTF-16 order:
//!
//! | character | stored as |
//! |---|---|
//! | U+0000 | U+0001 U+0001 |
//! | U+0001 | U+0001 U+0002 |
//! | U+0002 … U+D7FF | itself |
//! | U+10000 … U+10FFFF (surrogates *h*, *l*) | U+E000+(*h*−0xD800), U+E000+(*l*−0xDC00) |
//! | U+E000 … U+FFFF | U+F0000 + (*c* − 0xE000) |
//!
//! Each character maps to a code whose first character tells its length, and the codes
//! are ordered like the UTF-16 units they stand for (U+0000 < U+0001 < U+0002…U+D7FF <
//! surrogate pairs < U+E000…U+FFFF), so comparing encoded strings character by character
//! compares the originals unit by unit. Ordinary text (no control character U+0000/U+0001,
//! nothing from U+E000 up) is stored unchanged and stays readable in `psql`.
//!
//! # Properties: `{"Name": [tag, value], …}` in one `jsonb`
//!
//! | tag | Edm type | value | example |
//! |---|---|---|---|
//! | 1 | Int32 | number | `[1,42]` |
//! | 2 | Int64 | number | `[2,-9223372036854775808]` |
//! | 3 | Double (finite, not −0) | shortest round-trip decimal | `[3,0.1]` |
//! | 4 | Double NaN, ±∞, −0 | `"NaN"`, `"Infinity"`, `"-Infinity"`, `"-0"` | `[4,"NaN"]` |
//! | 5 | String | encoded text | `[5,"Seattle"]` |
//! | 6 | Boolean | `true`/`false` | `[6,true]` |
//! | 7 | DateTime | .NET ticks | `[7,637588186283795894]` |
//! | 8 | Guid | lowercase hyphenated | `[8,"a455c695-df98-5678-aaaa-81d3367e5a34"]` |
//! | 9 | Binary | lowercase hex | `[9,"00ff07"]` |
//!
//! `jsonb` keeps numbers as exact decimals, so Int64 extremes and every Double round-trip
//! exactly (a Double is written as its shortest round-trip decimal and read back with a
//! correctly rounded parse). Within one tag, `jsonpath` comparisons decide the spec's order
//! exactly: numbers by value, strings (encoded text, Guid text, hex) by code point = the
//! spec's order. The tags are numbers ordered so that the types a numeric literal compares
//! with by value form a range (Int32 literal: 1–4, Int64: 2–4, Double: 3–4): a pushed-down
//! comparison checks the type with one or two number comparisons.
//!
//! ```
//! use tableq_store::postgres::encode::{decode_str, encode_str};
//! // U+10000 sorts before U+FFFD in UTF-16 order; the encoded forms keep that order.
//! let (a, b) = (encode_str("\u{10000}"), encode_str("\u{FFFD}"));
//! assert!(a.as_ref() < b.as_ref());
//! assert_eq!(decode_str(&a).unwrap(), "\u{10000}");
//! assert_eq!(encode_str("plain"), "plain");
//! ```

use std::borrow::Cow;
use std::error::Error;
use std::fmt::Write as _;
use tableq_model::{DateTime, Entity, Property, Value};
use tokio_postgres::types::{FromSql, IsNull, ToSql, Type, to_sql_checked};

type BoxError = Box<dyn Error + Sync + Send>;

/// A stored value that tableq cannot read back (written by something else, or corrupt).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unreadable stored data: {0}")]
pub struct DecodeError(pub String);

fn bad(what: impl Into<String>) -> DecodeError {
    DecodeError(what.into())
}

/// The type tags of stored values (see the module docs).
pub(crate) mod tag {
    pub(crate) const INT32: u8 = 1;
    pub(crate) const INT64: u8 = 2;
    pub(crate) const DOUBLE: u8 = 3;
    pub(crate) const DOUBLE_SPECIAL: u8 = 4;
    pub(crate) const STRING: u8 = 5;
    pub(crate) const BOOLEAN: u8 = 6;
    pub(crate) const DATETIME: u8 = 7;
    pub(crate) const GUID: u8 = 8;
    pub(crate) const BINARY: u8 = 9;
}

const SURROGATE_BASE: u32 = 0xE000;
const HIGH_BMP_BASE: u32 = 0xF0000;

/// Whether `c` is stored as itself.
#[inline]
fn is_plain(c: char) -> bool {
    let c = c as u32;
    (2..0xE000).contains(&c)
}

/// The order-preserving text form of `s` (see the module docs); borrowed when unchanged.
pub fn encode_str(s: &str) -> Cow<'_, str> {
    if s.chars().all(is_plain) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        let u = c as u32;
        match u {
            0 => out.push_str("\u{1}\u{1}"),
            1 => out.push_str("\u{1}\u{2}"),
            0x10000.. => {
                let v = u - 0x10000;
                out.push(char_at(SURROGATE_BASE + (v >> 10)));
                out.push(char_at(SURROGATE_BASE + (v & 0x3FF)));
            }
            0xE000..=0xFFFF => out.push(char_at(HIGH_BMP_BASE + (u - 0xE000))),
            _ => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// A code point the encoding produces (always valid by construction).
fn char_at(u: u32) -> char {
    char::from_u32(u).unwrap_or(char::REPLACEMENT_CHARACTER)
}

/// The original of an [`encode_str`] text.
pub fn decode_str(s: &str) -> Result<Cow<'_, str>, DecodeError> {
    if s.chars().all(is_plain) {
        return Ok(Cow::Borrowed(s));
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        let u = c as u32;
        match u {
            1 => match chars.next().map(|c| c as u32) {
                Some(1) => out.push('\0'),
                Some(2) => out.push('\u{1}'),
                _ => return Err(bad("broken escape of U+0000/U+0001 in stored text")),
            },
            0xE000..=0xE3FF => {
                let lo = chars.next().map(|c| c as u32);
                match lo {
                    Some(lo @ 0xE000..=0xE3FF) => {
                        let v = ((u - SURROGATE_BASE) << 10) | (lo - SURROGATE_BASE);
                        out.push(char_at(0x10000 + v));
                    }
                    _ => return Err(bad("broken supplementary-plane character in stored text")),
                }
            }
            0xF0000..=0xF1FFF => out.push(char_at(0xE000 + (u - HIGH_BMP_BASE))),
            0 | 0xE400..=0xEFFFF | 0xF2000.. => {
                return Err(bad(format!(
                    "U+{u:04X} cannot occur in stored text (not written by tableq?)"
                )));
            }
            _ => out.push(c),
        }
    }
    Ok(Cow::Owned(out))
}

/// Appends `s` as a JSON string literal (also valid as a `jsonpath` string literal).
pub(crate) fn push_json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 || c == '\u{7F}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The shortest decimal that round-trips `x` (finite), in positional notation: what the
/// `"d"` tag stores and what pushed-down comparisons compare against.
pub(crate) fn double_decimal(x: f64) -> String {
    // Rust's `Display` for f64 prints the shortest round-trip digits, never an exponent.
    format!("{x}")
}

/// The `"D"` spelling of a special Double (NaN, ±∞, −0), or `None` for an ordinary one.
pub(crate) fn double_special(x: f64) -> Option<&'static str> {
    if x.is_nan() {
        Some("NaN")
    } else if x == f64::INFINITY {
        Some("Infinity")
    } else if x == f64::NEG_INFINITY {
        Some("-Infinity")
    } else if x == 0.0 && x.is_sign_negative() {
        Some("-0")
    } else {
        None
    }
}

/// The special Doubles with their `"D"` spellings.
pub(crate) const DOUBLE_SPECIALS: [(f64, &str); 4] = [
    (f64::NAN, "NaN"),
    (f64::INFINITY, "Infinity"),
    (f64::NEG_INFINITY, "-Infinity"),
    (-0.0, "-0"),
];

fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

fn unhex(s: &str) -> Result<Vec<u8>, DecodeError> {
    if !s.len().is_multiple_of(2) {
        return Err(bad("odd-length hex in a stored Binary"));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| {
            s.get(i..i + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| bad("bad hex in a stored Binary"))
        })
        .collect()
}

/// Appends one value in its stored `[tag, value]` form.
pub(crate) fn push_value(out: &mut String, value: &Value) {
    let _ = match value {
        Value::String(s) => {
            let _ = write!(out, "[{},", tag::STRING);
            push_json_string(out, &encode_str(s));
            Ok(())
        }
        Value::Int32(i) => write!(out, "[{},{i}", tag::INT32),
        Value::Int64(i) => write!(out, "[{},{i}", tag::INT64),
        Value::Double(x) => match double_special(*x) {
            Some(name) => write!(out, "[{},\"{name}\"", tag::DOUBLE_SPECIAL),
            None => write!(out, "[{},{}", tag::DOUBLE, double_decimal(*x)),
        },
        Value::Boolean(b) => write!(out, "[{},{b}", tag::BOOLEAN),
        Value::DateTime(t) => write!(out, "[{},{}", tag::DATETIME, t.ticks()),
        Value::Guid(g) => write!(out, "[{},\"{}\"", tag::GUID, g.hyphenated()),
        Value::Binary(b) => write!(out, "[{},\"{}\"", tag::BINARY, hex(b)),
    };
    out.push(']');
}

/// The stored `jsonb` text of an entity's custom properties.
pub fn encode_props(entity: &Entity) -> String {
    let mut out = String::with_capacity(16 + entity.properties().len() * 24);
    out.push('{');
    for (i, p) in entity.properties().iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_json_string(&mut out, &p.name);
        out.push(':');
        push_value(&mut out, &p.value);
    }
    out.push('}');
    out
}

/// Decodes the stored `jsonb` text of an entity's custom properties (straight from the
/// JSON tokens into [`Value`]s, without an intermediate JSON tree).
pub fn decode_props(json: &str) -> Result<Vec<Property>, DecodeError> {
    let mut de = serde_json::Deserializer::from_str(json);
    let props = serde::Deserializer::deserialize_map(&mut de, PropsVisitor)
        .map_err(|e| bad(format!("stored properties: {e}")))?;
    de.end()
        .map_err(|e| bad(format!("stored properties: {e}")))?;
    Ok(props)
}

/// Reads `{"Name": [tag, value], …}`.
struct PropsVisitor;

impl<'de> serde::de::Visitor<'de> for PropsVisitor {
    type Value = Vec<Property>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an object of [tag, value] pairs")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut map: A,
    ) -> Result<Vec<Property>, A::Error> {
        let mut props = Vec::with_capacity(map.size_hint().unwrap_or(8));
        while let Some(name) = map.next_key::<String>()? {
            let Tagged(value) = map.next_value()?;
            props.push(Property { name, value });
        }
        Ok(props)
    }
}

/// One stored `[tag, value]`.
struct Tagged(Value);

impl<'de> serde::Deserialize<'de> for Tagged {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Tagged, D::Error> {
        d.deserialize_seq(TaggedVisitor)
    }
}

struct TaggedVisitor;

impl<'de> serde::de::Visitor<'de> for TaggedVisitor {
    type Value = Tagged;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a [tag, value] pair")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Tagged, A::Error> {
        use serde::de::Error;
        let missing = || A::Error::custom("a [tag, value] pair without its value");
        let t: u8 = seq.next_element()?.ok_or_else(missing)?;
        let custom = |e: DecodeError| A::Error::custom(e.0);
        let value = match t {
            tag::INT32 => Value::Int32(seq.next_element()?.ok_or_else(missing)?),
            tag::INT64 => Value::Int64(seq.next_element()?.ok_or_else(missing)?),
            tag::DOUBLE => Value::Double(seq.next_element()?.ok_or_else(missing)?),
            tag::DOUBLE_SPECIAL => {
                let name: String = seq.next_element()?.ok_or_else(missing)?;
                Value::Double(
                    DOUBLE_SPECIALS
                        .iter()
                        .find(|(_, n)| *n == name)
                        .map(|(x, _)| *x)
                        .ok_or_else(|| {
                            A::Error::custom(format!("unknown special Double {name:?}"))
                        })?,
                )
            }
            tag::STRING => {
                let s: String = seq.next_element()?.ok_or_else(missing)?;
                Value::String(match decode_str(&s).map_err(custom)? {
                    Cow::Borrowed(_) => s,
                    Cow::Owned(decoded) => decoded,
                })
            }
            tag::BOOLEAN => Value::Boolean(seq.next_element()?.ok_or_else(missing)?),
            tag::DATETIME => {
                let ticks: i64 = seq.next_element()?.ok_or_else(missing)?;
                Value::DateTime(DateTime::from_ticks(ticks).ok_or_else(|| {
                    A::Error::custom(format!("DateTime ticks {ticks} out of range"))
                })?)
            }
            tag::GUID => {
                let g: String = seq.next_element()?.ok_or_else(missing)?;
                Value::Guid(uuid::Uuid::parse_str(&g).map_err(A::Error::custom)?)
            }
            tag::BINARY => {
                let h: String = seq.next_element()?.ok_or_else(missing)?;
                Value::Binary(unhex(&h).map_err(custom)?)
            }
            other => return Err(A::Error::custom(format!("unknown type tag {other}"))),
        };
        if seq.next_element::<serde::de::IgnoredAny>()?.is_some() {
            return Err(A::Error::custom("more than [tag, value]"));
        }
        Ok(Tagged(value))
    }
}

/// The entity stored as (encoded keys, ticks, properties).
pub fn decode_entity(pk: &str, rk: &str, ts: i64, props: &str) -> Result<Entity, DecodeError> {
    let timestamp = DateTime::from_ticks(ts).ok_or_else(|| bad(format!("Timestamp {ts}")))?;
    Ok(Entity::with_properties(
        decode_str(pk)?.into_owned(),
        decode_str(rk)?.into_owned(),
        Some(timestamp),
        decode_props(props)?,
    ))
}

// ---------------------------------------------------------------------------------------
// Wire wrappers: jsonb and jsonpath travel as a version byte (1) and their text.

/// A `jsonb` parameter given as JSON text.
#[derive(Debug, Clone)]
pub(crate) struct Jsonb(pub String);

impl ToSql for Jsonb {
    fn to_sql(
        &self,
        _ty: &Type,
        out: &mut tokio_postgres::types::private::BytesMut,
    ) -> Result<IsNull, BoxError> {
        out.extend_from_slice(&[1]);
        out.extend_from_slice(self.0.as_bytes());
        Ok(IsNull::No)
    }
    fn accepts(ty: &Type) -> bool {
        *ty == Type::JSONB
    }
    to_sql_checked!();
}

/// A `jsonpath` parameter given as its text.
#[derive(Debug, Clone)]
pub(crate) struct JsonPath(pub String);

impl ToSql for JsonPath {
    fn to_sql(
        &self,
        _ty: &Type,
        out: &mut tokio_postgres::types::private::BytesMut,
    ) -> Result<IsNull, BoxError> {
        out.extend_from_slice(&[1]);
        out.extend_from_slice(self.0.as_bytes());
        Ok(IsNull::No)
    }
    fn accepts(ty: &Type) -> bool {
        *ty == Type::JSONPATH
    }
    to_sql_checked!();
}

/// A `jsonb` column read as its JSON text (borrowed from the row).
#[derive(Debug, Clone, Copy)]
pub(crate) struct JsonbText<'a>(pub &'a str);

impl<'a> FromSql<'a> for JsonbText<'a> {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<JsonbText<'a>, BoxError> {
        let body = if *ty == Type::JSONB {
            match raw.split_first() {
                Some((1, rest)) => rest,
                _ => return Err("unsupported jsonb wire version".into()),
            }
        } else {
            raw
        };
        Ok(JsonbText(std::str::from_utf8(body)?))
    }
    fn accepts(ty: &Type) -> bool {
        *ty == Type::JSONB || *ty == Type::JSON
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::cmp::Ordering;
    use tableq_model::order::compare_str;

    #[test]
    fn encoding_table() {
        assert_eq!(encode_str("a\0b\u{1}"), "a\u{1}\u{1}b\u{1}\u{2}");
        assert_eq!(encode_str("\u{10000}"), "\u{E000}\u{E000}");
        assert_eq!(encode_str("\u{10FFFF}"), "\u{E3FF}\u{E3FF}");
        assert_eq!(encode_str("\u{E000}\u{FFFF}"), "\u{F0000}\u{F1FFF}");
        assert!(matches!(encode_str("Größe-東京"), Cow::Borrowed(_)));
        assert!(decode_str("\u{1}x").is_err());
        assert!(decode_str("\u{E000}a").is_err());
        assert!(decode_str("\u{E400}").is_err());
    }

    #[test]
    fn doubles_print_shortest_positional() {
        assert_eq!(double_decimal(0.1), "0.1");
        assert_eq!(double_decimal(5.0), "5");
        assert_eq!(double_decimal(1e21), "1000000000000000000000");
        assert!(double_decimal(5e-324).ends_with('5'));
        assert_eq!(double_decimal(5e-324).parse::<f64>().unwrap(), 5e-324);
        let big = double_decimal(f64::MAX);
        assert!(!big.contains('e'));
        assert_eq!(big.parse::<f64>().unwrap(), f64::MAX);
    }

    #[test]
    fn props_round_trip_every_type() {
        let mut e = Entity::new("p", "r");
        let values = [
            Value::String("it's \u{1F600} \u{FFFD} \0 \"x\" \\".into()),
            Value::Int32(i32::MIN),
            Value::Int64(i64::MIN),
            Value::Int64(i64::MAX),
            Value::Double(f64::NAN),
            Value::Double(f64::INFINITY),
            Value::Double(f64::NEG_INFINITY),
            Value::Double(-0.0),
            Value::Double(5e-324),
            Value::Double(f64::MAX),
            Value::Double(-0.1),
            Value::Boolean(false),
            Value::DateTime(DateTime::MAX),
            Value::DateTime(DateTime::parse("2021-06-09T01:17:08.3795894Z").unwrap()),
            Value::Guid(uuid::Uuid::parse_str("a455c695-df98-5678-aaaa-81d3367e5a34").unwrap()),
            Value::Binary(vec![0, 255, 7]),
            Value::Binary(vec![]),
        ];
        for (i, v) in values.iter().enumerate() {
            e.set(format!("P{i}"), v.clone());
        }
        let text = encode_props(&e);
        let back = decode_props(&text).unwrap();
        assert_eq!(back.len(), values.len());
        for p in back {
            let orig = e.custom(&p.name).unwrap();
            match (orig, &p.value) {
                (Value::Double(a), Value::Double(b)) => assert_eq!(a.to_bits(), b.to_bits()),
                _ => assert_eq!(orig, &p.value),
            }
        }
    }

    fn utf16_cmp(a: &str, b: &str) -> Ordering {
        a.encode_utf16().cmp(b.encode_utf16())
    }

    proptest! {
        #[test]
        fn encoding_preserves_utf16_order_and_round_trips(
            a in "[\\u{0}\\u{1}\\u{2}a\\u{D7FF}\\u{E000}\\u{E3FF}\\u{FFFF}\\u{10000}\\u{10400}\\u{10FFFF}]{0,5}",
            b in "[\\u{0}\\u{1}\\u{2}a\\u{D7FF}\\u{E000}\\u{E3FF}\\u{FFFF}\\u{10000}\\u{10400}\\u{10FFFF}]{0,5}",
        ) {
            let (ea, eb) = (encode_str(&a), encode_str(&b));
            prop_assert!(!ea.contains('\0'));
            prop_assert_eq!(ea.as_ref().cmp(eb.as_ref()), utf16_cmp(&a, &b));
            prop_assert_eq!(compare_str(&a, &b), utf16_cmp(&a, &b));
            prop_assert_eq!(decode_str(&ea).unwrap(), a.as_str());
        }

        #[test]
        fn any_text_round_trips(a in "\\PC{0,8}", b in "\\PC{0,8}") {
            let (ea, eb) = (encode_str(&a), encode_str(&b));
            prop_assert_eq!(ea.as_ref().cmp(eb.as_ref()), utf16_cmp(&a, &b));
            prop_assert_eq!(decode_str(&ea).unwrap(), a.as_str());
        }

        #[test]
        fn shortest_decimals_round_trip(x in any::<f64>()) {
            prop_assume!(x.is_finite());
            let back: f64 = double_decimal(x).parse().unwrap();
            prop_assert_eq!(back, x);
            prop_assert!(!double_decimal(x).contains('e'));
        }
    }
}

//! The value order of the spec, type by type, checked against an independent oracle:
//! strings by UTF-16 code units, Guids by their canonical hex text, Binary lexicographically,
//! DateTimes by instant, Booleans `false < true`, numbers by value.

use proptest::prelude::*;
use std::cmp::Ordering;
use tableq_model::{DateTime, Value};
use uuid::Uuid;

fn datetime() -> impl Strategy<Value = DateTime> {
    (DateTime::MIN.ticks()..=DateTime::MAX.ticks()).prop_map(|t| DateTime::from_ticks(t).unwrap())
}

proptest! {
    #[test]
    fn strings_by_utf16_code_units(a in "\\PC{0,8}", b in "\\PC{0,8}") {
        prop_assert_eq!(
            Value::from(a.as_str()).cmp(&Value::from(b.as_str())),
            a.encode_utf16().cmp(b.encode_utf16())
        );
    }

    #[test]
    fn guids_by_hex_text(a in any::<u128>(), b in any::<u128>()) {
        let (ga, gb) = (Uuid::from_u128(a), Uuid::from_u128(b));
        prop_assert_eq!(
            Value::Guid(ga).cmp(&Value::Guid(gb)),
            ga.hyphenated().to_string().cmp(&gb.hyphenated().to_string())
        );
    }

    #[test]
    fn binary_lexicographic(a in proptest::collection::vec(any::<u8>(), 0..6), b in proptest::collection::vec(any::<u8>(), 0..6)) {
        prop_assert_eq!(Value::Binary(a.clone()).cmp(&Value::Binary(b.clone())), a.cmp(&b));
    }

    #[test]
    fn datetimes_by_instant(a in datetime(), b in datetime()) {
        prop_assert_eq!(Value::DateTime(a).cmp(&Value::DateTime(b)), a.ticks().cmp(&b.ticks()));
        // ... which is the order of the instants themselves.
        let (ta, tb) = (a.to_chrono(), b.to_chrono());
        prop_assert_eq!(a.cmp(&b), ta.cmp(&tb));
    }

    #[test]
    fn numbers_by_value(a in any::<i64>(), b in any::<i64>(), x in any::<i32>(), y in any::<i32>()) {
        prop_assert_eq!(Value::Int64(a).cmp(&Value::Int64(b)), a.cmp(&b));
        prop_assert_eq!(Value::Int32(x).cmp(&Value::Int32(y)), x.cmp(&y));
        let (fa, fb) = (f64::from(x), f64::from(y));
        prop_assert_eq!(Value::Double(fa).cmp(&Value::Double(fb)), fa.partial_cmp(&fb).unwrap());
    }
}

#[test]
fn fixed_examples() {
    assert!(Value::Boolean(false) < Value::Boolean(true));
    // Supplementary-plane characters sort before U+E000-U+FFFF (UTF-16 ordinal).
    assert!(Value::from("\u{1F600}") < Value::from("\u{FFFD}"));
    assert!(Value::from("B") < Value::from("a"));
    let g = |s: &str| Value::Guid(Uuid::parse_str(s).unwrap());
    assert!(g("00000000-0000-0000-0000-0000000000ff") < g("00000000-0000-0000-0000-000000000100"));
    assert!(g("0fffffff-ffff-ffff-ffff-ffffffffffff") < g("10000000-0000-0000-0000-000000000000"));
    assert!(Value::Binary(vec![1]) < Value::Binary(vec![1, 0]));
    assert!(Value::Binary(vec![0xff]) > Value::Binary(vec![0x00, 0xff]));
    assert_eq!(
        Value::Double(f64::NAN).cmp(&Value::Double(f64::NAN)),
        Ordering::Equal
    );
}

//! Property tests of the wire format and the value order:
//! encode → decode round-trips any valid entity, decoding never panics, and `Value`'s `Ord`
//! is a total order consistent with `Eq` and `Hash`.

use proptest::prelude::*;
use std::cmp::Ordering;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use tableq_model::json::{
    DecodeOptions, EncodeOptions, MetadataLevel, decode_entity, encode_entity_to_string,
};
use tableq_model::{DateTime, Entity, Value, validate};

fn key_text() -> impl Strategy<Value = String> {
    // Any characters but the forbidden ones, supplementary planes included.
    proptest::string::string_regex("[^/\\\\#?\\x00-\\x1F\\x7F-\\x9F]{0,12}").unwrap()
}

fn property_name() -> impl Strategy<Value = String> {
    "[A-Za-z_é名Ⅻ][A-Za-z0-9_é٣名]{0,10}".prop_filter("system names are reserved", |n| {
        !matches!(n.as_str(), "PartitionKey" | "RowKey" | "Timestamp")
    })
}

fn datetime() -> impl Strategy<Value = DateTime> {
    (DateTime::MIN.ticks()..=DateTime::MAX.ticks()).prop_map(|t| DateTime::from_ticks(t).unwrap())
}

fn double() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>(),
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(0.0),
        Just(-0.0),
        Just(5.0),
        (-1e6f64..1e6),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..40).prop_map(Value::Binary),
        any::<bool>().prop_map(Value::Boolean),
        datetime().prop_map(Value::DateTime),
        double().prop_map(Value::Double),
        any::<u128>().prop_map(|g| Value::Guid(uuid::Uuid::from_u128(g))),
        any::<i32>().prop_map(Value::Int32),
        any::<i64>().prop_map(Value::Int64),
        "\\PC{0,20}".prop_map(Value::String),
        any::<String>().prop_map(Value::String),
    ]
}

/// Values that survive `nometadata`: String, Int32, finite Double, Boolean.
fn self_describing_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<bool>().prop_map(Value::Boolean),
        any::<f64>()
            .prop_filter("finite", |d| d.is_finite())
            .prop_map(Value::Double),
        any::<i32>().prop_map(Value::Int32),
        "\\PC{0,20}".prop_map(Value::String),
    ]
}

fn entity_with(values: impl Strategy<Value = Value>) -> impl Strategy<Value = Entity> {
    (
        key_text(),
        key_text(),
        proptest::option::of(datetime()),
        proptest::collection::vec((property_name(), values), 0..12),
    )
        .prop_map(|(pk, rk, ts, props)| {
            let mut e = Entity::new(pk, rk);
            e.set_timestamp(ts);
            for (name, v) in props {
                e.set(name, v);
            }
            e
        })
}

fn hash_of(v: &Value) -> u64 {
    let mut h = DefaultHasher::new();
    v.hash(&mut h);
    h.finish()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn round_trip_with_types(e in entity_with(value())) {
        prop_assert_eq!(validate::entity(&e), Ok(()));
        for level in [MetadataLevel::MinimalMetadata, MetadataLevel::FullMetadata] {
            let text = encode_entity_to_string(&e, &EncodeOptions::level(level));
            let back = decode_entity(&text, &DecodeOptions::STORED);
            prop_assert_eq!(back.as_ref(), Ok(&e), "{:?}: {}", level, text);
        }
    }

    #[test]
    fn round_trip_without_metadata(e in entity_with(self_describing_value())) {
        let text = encode_entity_to_string(&e, &EncodeOptions::level(MetadataLevel::NoMetadata));
        let back = decode_entity(&text, &DecodeOptions::STORED);
        prop_assert_eq!(back.as_ref(), Ok(&e), "{}", text);
    }

    #[test]
    fn decode_never_panics_on_text(text in any::<String>()) {
        let _ = decode_entity(&text, &DecodeOptions::STORED);
        let _ = decode_entity(&text, &DecodeOptions::SERVICE);
    }

    #[test]
    fn decode_never_panics_on_json_like_text(
        members in proptest::collection::vec(
            (
                prop_oneof![
                    Just("PartitionKey".to_owned()), Just("RowKey".to_owned()),
                    Just("Timestamp".to_owned()), Just("A".to_owned()),
                    Just("A@odata.type".to_owned()), Just("odata.etag".to_owned()),
                    "\\PC{0,6}",
                ],
                prop_oneof![
                    Just("null".to_owned()), Just("true".to_owned()), Just("1".to_owned()),
                    Just("-1.5e3".to_owned()), Just("1e999".to_owned()), Just("[]".to_owned()),
                    Just("{}".to_owned()), Just(r#""\ud800""#.to_owned()),
                    Just(r#""Edm.Int64""#.to_owned()), Just(r#""Edm.DateTime""#.to_owned()),
                    Just(r#""Edm.Binary""#.to_owned()), Just(r#""Edm.Guid""#.to_owned()),
                    Just(r#""Edm.Double""#.to_owned()), Just(r#""NaN""#.to_owned()),
                    "\"[ -~]{0,8}\"",
                ],
            ),
            0..8,
        )
    ) {
        let body: Vec<String> = members
            .iter()
            .map(|(k, v)| format!("{}:{v}", serde_json::to_string(k).unwrap()))
            .collect();
        let text = format!("{{{}}}", body.join(","));
        for options in [DecodeOptions::STORED, DecodeOptions::SERVICE] {
            if let Ok(e) = decode_entity(&text, &options) {
                // Whatever decodes is valid and survives a round trip.
                prop_assert_eq!(validate::entity(&e), Ok(()));
                let again = encode_entity_to_string(&e, &EncodeOptions::default());
                prop_assert_eq!(decode_entity(&again, &DecodeOptions::STORED), Ok(e));
            }
        }
    }

    #[test]
    fn value_order_is_total_and_consistent(a in value(), b in value(), c in value()) {
        let ab = a.cmp(&b);
        prop_assert_eq!(ab, b.cmp(&a).reverse());
        prop_assert_eq!(a.cmp(&a), Ordering::Equal);
        prop_assert_eq!(ab == Ordering::Equal, a == b);
        prop_assert_eq!(a.partial_cmp(&b), Some(ab));
        if a == b {
            prop_assert_eq!(hash_of(&a), hash_of(&b));
        }
        if ab != Ordering::Greater && b.cmp(&c) != Ordering::Greater {
            prop_assert_ne!(a.cmp(&c), Ordering::Greater);
        }
        let mut v = [a.clone(), b.clone(), c.clone()];
        v.sort();
        prop_assert!(v.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn equal_values_hash_equal(x in double()) {
        // -0.0 == 0.0 and NaN == NaN under the total order: their hashes must agree.
        let (a, b) = (Value::Double(x), Value::Double(if x == 0.0 { -x } else { x }));
        prop_assert_eq!(&a, &b);
        prop_assert_eq!(hash_of(&a), hash_of(&b));
    }
}

//! Property tests of the fast decoding path's contract: whenever `decode_borrowed` accepts a
//! line, `decode_entity` accepts it too (with both option sets) and returns the same entity;
//! on encoder output without escapes the fast path accepts.

use proptest::prelude::*;
use tableq_model::json::{
    BorrowedEntity, DecodeOptions, EncodeOptions, MetadataLevel, decode_borrowed, decode_entity,
    encode_entity_to_string,
};
use tableq_model::{DateTime, Entity, Value};

fn check(text: &str) -> Result<(), TestCaseError> {
    for options in [DecodeOptions::STORED, DecodeOptions::SERVICE] {
        let mut view = BorrowedEntity::new();
        if decode_borrowed(text, &options, &mut view) {
            let slow = decode_entity(text, &options);
            prop_assert_eq!(slow, Ok(view.to_entity()), "{}", text);
        }
    }
    Ok(())
}

fn member() -> impl Strategy<Value = (String, String)> {
    (
        prop_oneof![
            Just("PartitionKey".to_owned()),
            Just("RowKey".to_owned()),
            Just("Timestamp".to_owned()),
            Just("Timestamp@odata.type".to_owned()),
            Just("PartitionKey@odata.type".to_owned()),
            Just("A".to_owned()),
            Just("B".to_owned()),
            Just("A@odata.type".to_owned()),
            Just("B@odata.type".to_owned()),
            Just("odata.etag".to_owned()),
            Just("x@y".to_owned()),
            Just("first-name".to_owned()),
            Just("é名".to_owned()),
            "[A-Za-z_][A-Za-z0-9_]{0,3}",
            "\\PC{0,4}",
        ],
        prop_oneof![
            Just("null".to_owned()),
            Just("true".to_owned()),
            Just("false".to_owned()),
            Just("0".to_owned()),
            Just("-0".to_owned()),
            Just("1".to_owned()),
            Just("2147483648".to_owned()),
            Just("-9223372036854775809".to_owned()),
            Just("-1.5e3".to_owned()),
            Just("1E+2".to_owned()),
            Just("1e999".to_owned()),
            Just("[]".to_owned()),
            Just("{}".to_owned()),
            Just(r#""\ud800""#.to_owned()),
            Just(r#""""#.to_owned()),
            Just(r#""a/b""#.to_owned()),
            Just(r#""Edm.Int64""#.to_owned()),
            Just(r#""Edm.Int32""#.to_owned()),
            Just(r#""Edm.String""#.to_owned()),
            Just(r#""Edm.Boolean""#.to_owned()),
            Just(r#""Edm.DateTime""#.to_owned()),
            Just(r#""Edm.Binary""#.to_owned()),
            Just(r#""Edm.Guid""#.to_owned()),
            Just(r#""Edm.Double""#.to_owned()),
            Just(r#""NaN""#.to_owned()),
            Just(r#""-Infinity""#.to_owned()),
            Just(r#""+12""#.to_owned()),
            Just(r#""TRUE""#.to_owned()),
            Just(r#"".5e1""#.to_owned()),
            Just(r#""AAE=""#.to_owned()),
            Just(r#""AQ""#.to_owned()),
            Just(r#""2024-02-30T00:00:00Z""#.to_owned()),
            Just(r#""1600-12-31T23:59:59Z""#.to_owned()),
            Just(r#""2024-05-01T10:00:00.5+01:00""#.to_owned()),
            Just(r#""A455C695-DF98-5678-AAAA-81D3367E5A34""#.to_owned()),
            "\"[ -~]{0,8}\"",
            "-?[0-9]{1,12}(\\.[0-9]{1,3})?",
        ],
    )
}

fn datetime() -> impl Strategy<Value = DateTime> {
    (DateTime::MIN.ticks()..=DateTime::MAX.ticks()).prop_map(|t| DateTime::from_ticks(t).unwrap())
}

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..20).prop_map(Value::Binary),
        any::<bool>().prop_map(Value::Boolean),
        datetime().prop_map(Value::DateTime),
        any::<f64>().prop_map(Value::Double),
        any::<u128>().prop_map(|g| Value::Guid(uuid::Uuid::from_u128(g))),
        any::<i32>().prop_map(Value::Int32),
        any::<i64>().prop_map(Value::Int64),
        "[^\"\\\\\\x00-\\x1F]{0,12}".prop_map(Value::String),
    ]
}

fn entity() -> impl Strategy<Value = Entity> {
    let key = || "[^/\\\\#?\"\\x00-\\x1F\\x7F-\\x9F]{0,10}";
    (
        key(),
        key(),
        proptest::option::of(datetime()),
        proptest::collection::vec(("[A-Za-z_é名][A-Za-z0-9_é]{0,8}", value()), 0..10),
    )
        .prop_map(|(pk, rk, ts, props)| {
            let mut e = Entity::new(pk, rk);
            e.set_timestamp(ts);
            for (name, v) in props {
                if !matches!(name.as_str(), "PartitionKey" | "RowKey" | "Timestamp") {
                    e.set(name, v);
                }
            }
            e
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn accepted_lines_decode_the_same(members in proptest::collection::vec(member(), 0..9), ws in any::<bool>()) {
        let sep = if ws { " , " } else { "," };
        let body: Vec<String> = members
            .iter()
            .map(|(k, v)| format!("{}:{v}", serde_json::to_string(k).unwrap()))
            .collect();
        check(&format!("{{{}}}", body.join(sep)))?;
        // Always-valid keys in front: more lines get past the key checks.
        check(&format!("{{\"PartitionKey\":\"p\",\"RowKey\":\"r\"{}{}}}", if body.is_empty() { "" } else { "," }, body.join(sep)))?;
    }

    #[test]
    fn mutated_lines_decode_the_same(e in entity(), at in any::<prop::sample::Index>(), byte in any::<u8>(), op in 0u8..3) {
        let text = encode_entity_to_string(&e, &EncodeOptions::level(MetadataLevel::MinimalMetadata));
        let mut bytes = text.into_bytes();
        let i = at.index(bytes.len() + 1);
        match op {
            0 if i < bytes.len() => { bytes.remove(i); }
            1 => bytes.insert(i, byte),
            _ if i < bytes.len() => bytes[i] = byte,
            _ => {}
        }
        if let Ok(text) = String::from_utf8(bytes) {
            check(&text)?;
        }
    }

    #[test]
    fn encoder_output_takes_the_fast_path(e in entity()) {
        for level in [MetadataLevel::MinimalMetadata, MetadataLevel::FullMetadata] {
            let text = encode_entity_to_string(&e, &EncodeOptions::level(level));
            let mut view = BorrowedEntity::new();
            prop_assert!(decode_borrowed(&text, &DecodeOptions::STORED, &mut view), "{}", text);
            prop_assert_eq!(view.to_entity(), e.clone());
        }
    }
}

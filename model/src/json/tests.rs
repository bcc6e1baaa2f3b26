//! Unit tests of the JSON wire format: every decoding rule with a passing and a failing case,
//! the three metadata levels, round trips of every type, the ETag.

use super::*;
use crate::{DateTime, Entity, ErrorCode, ModelError, Value};
use uuid::Uuid;

fn dec(text: &str) -> Result<Entity, ModelError> {
    decode_entity(text, &DecodeOptions::default())
}

/// Decodes `{"PartitionKey":"p","RowKey":"r",<members>}` and returns property `V`.
fn value(members: &str) -> Result<Option<Value>, ModelError> {
    dec(&format!(r#"{{"PartitionKey":"p","RowKey":"r",{members}}}"#))
        .map(|e| e.custom("V").cloned())
}

fn typed(json: &str, edm: &str) -> Result<Option<Value>, ModelError> {
    value(&format!(r#""V@odata.type":"{edm}","V":{json}"#))
}

fn code<T: std::fmt::Debug>(r: Result<T, ModelError>) -> ErrorCode {
    r.expect_err("expected an error").code
}

fn dt(s: &str) -> DateTime {
    DateTime::parse(s).unwrap()
}

#[test]
fn untyped_inference() {
    assert_eq!(value(r#""V":"x""#), Ok(Some(Value::from("x"))));
    assert_eq!(value(r#""V":42"#), Ok(Some(Value::Int32(42))));
    assert_eq!(
        value(r#""V":-2147483648"#),
        Ok(Some(Value::Int32(i32::MIN)))
    );
    assert_eq!(
        value(r#""V":2147483648"#),
        Ok(Some(Value::Double(2147483648.0)))
    );
    assert_eq!(
        value(r#""V":123456789012345678901234"#),
        Ok(Some(Value::Double(1.2345678901234568e23)))
    );
    assert_eq!(value(r#""V":5.0"#), Ok(Some(Value::Double(5.0))));
    assert_eq!(value(r#""V":1e3"#), Ok(Some(Value::Double(1000.0))));
    assert_eq!(value(r#""V":-0.25"#), Ok(Some(Value::Double(-0.25))));
    assert_eq!(value(r#""V":true"#), Ok(Some(Value::Boolean(true))));
    assert_eq!(value(r#""V":false"#), Ok(Some(Value::Boolean(false))));
    // An untyped "NaN" string is a String, not a Double.
    assert_eq!(value(r#""V":"NaN""#), Ok(Some(Value::from("NaN"))));
    assert_eq!(code(value(r#""V":1e400"#)), ErrorCode::InvalidInput);
}

#[test]
fn null_is_absent() {
    assert_eq!(value(r#""V":null"#), Ok(None));
    assert_eq!(value(r#""V@odata.type":"Edm.Int64","V":null"#), Ok(None));
    // An annotation for a property that is not there adds nothing.
    assert_eq!(value(r#""V@odata.type":"Edm.Int64""#), Ok(None));
    // ... but must still name a type.
    assert_eq!(
        code(value(r#""V@odata.type":"Edm.Int128""#)),
        ErrorCode::InvalidInput
    );
    assert_eq!(
        code(value(r#""V@odata.type":null,"V":1"#)),
        ErrorCode::InvalidInput
    );
    let e = dec(r#"{"PartitionKey":"p","RowKey":"r","A":null,"B":1}"#).unwrap();
    assert_eq!(e.len(), 1);
}

#[test]
fn objects_and_arrays_are_not_values() {
    for v in [r#"{}"#, r#"{"a":1}"#, r#"[]"#, r#"[1,2]"#] {
        let e = value(&format!(r#""V":{v}"#)).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidInput, "{v}");
        assert!(e.message.contains("`V`"), "{}", e.message);
    }
    assert_eq!(code(typed("[1]", "Edm.String")), ErrorCode::InvalidInput);
}

#[test]
fn annotation_before_or_after() {
    let before = value(r#""V@odata.type":"Edm.Int64","V":"5""#);
    let after = value(r#""V":"5","V@odata.type":"Edm.Int64""#);
    assert_eq!(before, Ok(Some(Value::Int64(5))));
    assert_eq!(after, before);
}

#[test]
fn unknown_or_malformed_annotation() {
    for t in ["Edm.Int128", "edm.int32", "Edm.Single", "", "Int32"] {
        assert_eq!(code(typed("1", t)), ErrorCode::InvalidInput, "{t}");
    }
    assert_eq!(
        code(value(r#""V@odata.type":5,"V":1"#)),
        ErrorCode::InvalidInput
    );
    let m = typed("1", "Edm.Int128").unwrap_err().message;
    assert!(
        m.contains("V@odata.type") && m.contains("Edm.Int128"),
        "{m}"
    );
}

#[test]
fn int32_conversions() {
    assert_eq!(typed("12", "Edm.Int32"), Ok(Some(Value::Int32(12))));
    assert_eq!(
        typed(r#""12345""#, "Edm.Int32"),
        Ok(Some(Value::Int32(12345)))
    );
    assert_eq!(typed(r#""+7""#, "Edm.Int32"), Ok(Some(Value::Int32(7))));
    assert_eq!(
        typed(r#""-2147483648""#, "Edm.Int32"),
        Ok(Some(Value::Int32(i32::MIN)))
    );
    for bad in [
        "2147483648",
        r#""2147483648""#,
        "1.5",
        "1.0",
        "1e2",
        r#""1.0""#,
        r#""""#,
        r#""12a""#,
        r#"" 1""#,
        "true",
        r#""0x10""#,
    ] {
        assert_eq!(
            code(typed(bad, "Edm.Int32")),
            ErrorCode::InvalidInput,
            "{bad}"
        );
    }
}

#[test]
fn int64_conversions() {
    assert_eq!(
        typed(r#""9223372036854775807""#, "Edm.Int64"),
        Ok(Some(Value::Int64(i64::MAX)))
    );
    assert_eq!(
        typed(r#""-9223372036854775808""#, "Edm.Int64"),
        Ok(Some(Value::Int64(i64::MIN)))
    );
    assert_eq!(typed("12", "Edm.Int64"), Ok(Some(Value::Int64(12))));
    assert_eq!(
        typed("9007199254740993", "Edm.Int64"),
        Ok(Some(Value::Int64(9007199254740993)))
    );
    for bad in [
        r#""9223372036854775808""#,
        "9223372036854775808",
        r#""-9223372036854775809""#,
        r#""1L""#,
        "1.0",
        r#""x""#,
        "false",
    ] {
        let e = typed(bad, "Edm.Int64").unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidInput, "{bad}");
        assert!(
            e.message.contains("`V`") && e.message.contains("Edm.Int64"),
            "{}",
            e.message
        );
    }
}

#[test]
fn boolean_conversions() {
    assert_eq!(typed("true", "Edm.Boolean"), Ok(Some(Value::Boolean(true))));
    assert_eq!(
        typed(r#""False""#, "Edm.Boolean"),
        Ok(Some(Value::Boolean(false)))
    );
    assert_eq!(
        typed(r#""TRUE""#, "Edm.Boolean"),
        Ok(Some(Value::Boolean(true)))
    );
    for bad in ["1", "0", r#""yes""#, r#""1""#, r#""""#, r#"" true""#] {
        assert_eq!(
            code(typed(bad, "Edm.Boolean")),
            ErrorCode::InvalidInput,
            "{bad}"
        );
    }
}

#[test]
fn double_conversions() {
    assert_eq!(typed("5", "Edm.Double"), Ok(Some(Value::Double(5.0))));
    assert_eq!(
        typed("2147483648", "Edm.Double"),
        Ok(Some(Value::Double(2147483648.0)))
    );
    assert_eq!(
        typed(r#""2.5""#, "Edm.Double"),
        Ok(Some(Value::Double(2.5)))
    );
    assert_eq!(
        typed(r#""-1e-5""#, "Edm.Double"),
        Ok(Some(Value::Double(-1e-5)))
    );
    assert_eq!(
        typed(r#""NaN""#, "Edm.Double")
            .unwrap()
            .map(|v| v.as_ref().edm_type()),
        Some(crate::EdmType::Double)
    );
    assert_eq!(
        typed(r#""NaN""#, "Edm.Double"),
        Ok(Some(Value::Double(f64::NAN)))
    );
    assert_eq!(
        typed(r#""Infinity""#, "Edm.Double"),
        Ok(Some(Value::Double(f64::INFINITY)))
    );
    assert_eq!(
        typed(r#""-Infinity""#, "Edm.Double"),
        Ok(Some(Value::Double(f64::NEG_INFINITY)))
    );
    for bad in [
        r#""nan""#,
        r#""INF""#,
        r#""inf""#,
        r#""infinity""#,
        r#""+Infinity""#,
        r#""1e400""#,
        "1e400",
        r#""abc""#,
        r#""""#,
        r#""1,5""#,
        "true",
    ] {
        assert_eq!(
            code(typed(bad, "Edm.Double")),
            ErrorCode::InvalidInput,
            "{bad}"
        );
    }
}

#[test]
fn datetime_conversions() {
    let t = typed(r#""2013-08-02T17:37:43.9004348Z""#, "Edm.DateTime");
    assert_eq!(
        t,
        Ok(Some(Value::DateTime(dt("2013-08-02T17:37:43.9004348Z"))))
    );
    assert_eq!(
        typed(r#""2013-08-02T17:37:43""#, "Edm.DateTime"),
        Ok(Some(Value::DateTime(dt("2013-08-02T17:37:43Z"))))
    );
    assert_eq!(
        typed(r#""2013-08-02T19:37:43.5+02:00""#, "Edm.DateTime"),
        Ok(Some(Value::DateTime(dt("2013-08-02T17:37:43.5Z"))))
    );
    assert_eq!(
        typed(r#""1601-01-01T00:00:00Z""#, "Edm.DateTime"),
        Ok(Some(Value::DateTime(DateTime::MIN)))
    );
    for bad in [
        r#""2013-08-02""#,
        r#""2013-08-02T17:37:43.12345678Z""#,
        r#""2013-08-02 17:37:43Z""#,
        r#""2013-02-30T00:00:00Z""#,
        "0",
        r#""""#,
    ] {
        assert_eq!(
            code(typed(bad, "Edm.DateTime")),
            ErrorCode::InvalidInput,
            "{bad}"
        );
    }
    for out in [
        r#""1600-12-31T23:59:59Z""#,
        r#""0001-01-01T00:00:00Z""#,
        r#""1601-01-01T00:30:00+01:00""#,
    ] {
        let e = typed(out, "Edm.DateTime").unwrap_err();
        assert_eq!(e.code, ErrorCode::OutOfRangeInput, "{out}");
        assert!(
            e.message.contains("`V`") && e.message.contains("1601"),
            "{}",
            e.message
        );
    }
    // Without an annotation a DateTime-looking string stays a String.
    assert_eq!(
        value(r#""V":"2013-08-02T17:37:43Z""#),
        Ok(Some(Value::from("2013-08-02T17:37:43Z")))
    );
}

#[test]
fn guid_conversions() {
    let g = Uuid::parse_str("c9da6455-213d-42c9-9a79-3e9149a57833").unwrap();
    assert_eq!(
        typed(r#""c9da6455-213d-42c9-9a79-3e9149a57833""#, "Edm.Guid"),
        Ok(Some(Value::Guid(g)))
    );
    assert_eq!(
        typed(r#""C9DA6455-213D-42C9-9A79-3E9149A57833""#, "Edm.Guid"),
        Ok(Some(Value::Guid(g)))
    );
    for bad in [
        r#""c9da6455213d42c99a793e9149a57833""#,
        r#""{c9da6455-213d-42c9-9a79-3e9149a57833}""#,
        r#""urn:uuid:c9da6455-213d-42c9-9a79-3e9149a57833""#,
        r#""c9da6455-213d-42c9-9a79-3e9149a5783g""#,
        r#""c9da6455-213d-42c9-9a793-e9149a57833""#,
        "1",
    ] {
        assert_eq!(
            code(typed(bad, "Edm.Guid")),
            ErrorCode::InvalidInput,
            "{bad}"
        );
    }
}

#[test]
fn binary_conversions() {
    assert_eq!(
        typed(r#""AQID""#, "Edm.Binary"),
        Ok(Some(Value::Binary(vec![1, 2, 3])))
    );
    assert_eq!(
        typed(r#""AQ==""#, "Edm.Binary"),
        Ok(Some(Value::Binary(vec![1])))
    );
    assert_eq!(
        typed(r#""""#, "Edm.Binary"),
        Ok(Some(Value::Binary(vec![])))
    );
    for bad in [
        r#""AQ""#,
        r#""AQ=""#,
        r#""A""#,
        r#""AQ==AQ==""#,
        r#""AQ-_""#,
        r#""!!!!""#,
        "1",
        r#""AR==""#,
    ] {
        assert_eq!(
            code(typed(bad, "Edm.Binary")),
            ErrorCode::InvalidInput,
            "{bad}"
        );
    }
}

#[test]
fn string_conversions() {
    assert_eq!(typed(r#""x""#, "Edm.String"), Ok(Some(Value::from("x"))));
    // A JSON number with Edm.String becomes its exact text.
    assert_eq!(typed("1.50", "Edm.String"), Ok(Some(Value::from("1.50"))));
    assert_eq!(typed("-12", "Edm.String"), Ok(Some(Value::from("-12"))));
    assert_eq!(typed("1E+2", "Edm.String"), Ok(Some(Value::from("1E+2"))));
    assert_eq!(code(typed("true", "Edm.String")), ErrorCode::InvalidInput);
    // Control characters are fine in String values.
    assert_eq!(
        value(r#""V":"a\u0001\t\n""#),
        Ok(Some(Value::from("a\u{1}\t\n")))
    );
}

#[test]
fn self_describing_annotations_accepted() {
    assert_eq!(typed("7", "Edm.Int32"), Ok(Some(Value::Int32(7))));
    assert_eq!(typed("7.5", "Edm.Double"), Ok(Some(Value::Double(7.5))));
    assert_eq!(
        typed("false", "Edm.Boolean"),
        Ok(Some(Value::Boolean(false)))
    );
}

#[test]
fn lone_surrogates() {
    for bad in [
        r#""\ud800""#,
        r#""\udc00""#,
        r#""a\ud800b""#,
        r#""\ud800\u0041""#,
    ] {
        let e = value(&format!(r#""V":{bad}"#)).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidInput, "{bad}");
        assert!(e.message.contains("surrogate"), "{}", e.message);
    }
    // In a key value and in a property name too.
    assert_eq!(
        code(dec(r#"{"PartitionKey":"\ud800","RowKey":"r"}"#)),
        ErrorCode::InvalidInput
    );
    assert_eq!(
        code(dec(r#"{"PartitionKey":"p","RowKey":"r","\udfff":1}"#)),
        ErrorCode::InvalidInput
    );
    // A proper pair is fine.
    assert_eq!(value(r#""V":"\ud83d\ude00""#), Ok(Some(Value::from("😀"))));
}

#[test]
fn keys_required_and_strings() {
    assert_eq!(
        code(dec(r#"{"RowKey":"r"}"#)),
        ErrorCode::PropertiesNeedValue
    );
    assert_eq!(
        code(dec(r#"{"PartitionKey":"p"}"#)),
        ErrorCode::PropertiesNeedValue
    );
    assert_eq!(code(dec(r#"{}"#)), ErrorCode::PropertiesNeedValue);
    assert_eq!(
        code(dec(r#"{"PartitionKey":null,"RowKey":"r"}"#)),
        ErrorCode::PropertiesNeedValue
    );
    let m = dec(r#"{"PartitionKey":"p"}"#).unwrap_err().message;
    assert!(m.contains("RowKey"), "{m}");
    for bad in ["1", "true", "1.5", r#"["p"]"#, r#"{"a":"p"}"#] {
        let e = dec(&format!(r#"{{"PartitionKey":{bad},"RowKey":"r"}}"#)).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidInput, "{bad}");
        assert!(e.message.contains("PartitionKey"), "{}", e.message);
        assert_eq!(
            code(dec(&format!(r#"{{"PartitionKey":"p","RowKey":{bad}}}"#))),
            ErrorCode::InvalidInput
        );
    }
    assert_eq!(
        code(dec(
            r#"{"PartitionKey":"p","RowKey":"r","RowKey@odata.type":"Edm.Int32"}"#
        )),
        ErrorCode::InvalidInput
    );
    let e =
        dec(r#"{"PartitionKey":"","RowKey":"","PartitionKey@odata.type":"Edm.String"}"#).unwrap();
    assert_eq!((e.partition_key(), e.row_key()), ("", ""));
    // Key rules are validated on decode.
    assert_eq!(
        code(dec(r#"{"PartitionKey":"a/b","RowKey":"r"}"#)),
        ErrorCode::InvalidInput
    );
    assert_eq!(
        code(dec(r#"{"PartitionKey":"p","RowKey":"\u0007"}"#)),
        ErrorCode::InvalidInput
    );
    let long = "k".repeat(1025);
    assert_eq!(
        code(dec(&format!(r#"{{"PartitionKey":"p","RowKey":"{long}"}}"#))),
        ErrorCode::KeyValueTooLarge
    );
}

#[test]
fn duplicates() {
    for text in [
        r#"{"PartitionKey":"p","RowKey":"r","A":1,"A":1}"#,
        r#"{"PartitionKey":"p","RowKey":"r","A":1,"A":null}"#,
        r#"{"PartitionKey":"p","PartitionKey":"p","RowKey":"r"}"#,
        r#"{"PartitionKey":"p","RowKey":"r","A@odata.type":"Edm.Int32","A":1,"A@odata.type":"Edm.Int32"}"#,
        r#"{"PartitionKey":"p","RowKey":"r","\u0041":1,"A":2}"#,
    ] {
        let e = dec(text).unwrap_err();
        assert_eq!(e.code, ErrorCode::DuplicatePropertiesSpecified, "{text}");
    }
    // Case matters: `a` and `A` are different properties.
    assert_eq!(
        dec(r#"{"PartitionKey":"p","RowKey":"r","a":1,"A":1}"#).map(|e| e.len()),
        Ok(2)
    );
}

#[test]
fn metadata_keys_ignored() {
    let e = dec(r#"{"odata.metadata":"http://x/$metadata#t/@Element","odata.etag":"W/\"x\"","odata.type":"a.t","odata.id":"http://x/t()","odata.editLink":"t()","@odata.context":"c","PartitionKey":"p","RowKey":"r","A@odata.mediaEtag":"x","A":1}"#).unwrap();
    assert_eq!(e.len(), 1);
    assert_eq!(e.custom("A"), Some(&Value::Int32(1)));
}

#[test]
fn property_names_checked() {
    assert_eq!(
        code(value(r#""first-name":1"#)),
        ErrorCode::PropertyNameInvalid
    );
    assert_eq!(code(value(r#""1a":1"#)), ErrorCode::PropertyNameInvalid);
    assert_eq!(code(value(r#""":1"#)), ErrorCode::PropertyNameInvalid);
    assert_eq!(
        code(value(&format!(r#""{}":1"#, "n".repeat(256)))),
        ErrorCode::PropertyNameTooLong
    );
    assert_eq!(
        value(&format!(r#""{}":1"#, "n".repeat(255))).map(|_| ()),
        Ok(())
    );
    // `timestamp` in another case is an ordinary property.
    let e = dec(r#"{"PartitionKey":"p","RowKey":"r","timestamp":1}"#).unwrap();
    assert_eq!(e.custom("timestamp"), Some(&Value::Int32(1)));
}

#[test]
fn timestamp_by_option() {
    let text = r#"{"PartitionKey":"p","RowKey":"r","Timestamp@odata.type":"Edm.DateTime","Timestamp":"2021-06-09T01:17:08.3795894Z"}"#;
    assert_eq!(dec(text).unwrap().timestamp(), None);
    let kept = decode_entity(text, &DecodeOptions::STORED).unwrap();
    assert_eq!(kept.timestamp(), Some(dt("2021-06-09T01:17:08.3795894Z")));
    // Unannotated is fine too when kept.
    let plain = r#"{"PartitionKey":"p","RowKey":"r","Timestamp":"2021-06-09T01:17:08Z"}"#;
    assert!(
        decode_entity(plain, &DecodeOptions::STORED)
            .unwrap()
            .timestamp()
            .is_some()
    );
    // The service ignores whatever is there; a file's Timestamp must be valid.
    let junk = r#"{"PartitionKey":"p","RowKey":"r","Timestamp":"yesterday"}"#;
    assert_eq!(dec(junk).map(|e| e.timestamp()), Ok(None));
    assert_eq!(
        code(decode_entity(junk, &DecodeOptions::STORED)),
        ErrorCode::InvalidInput
    );
    let old = r#"{"PartitionKey":"p","RowKey":"r","Timestamp":"1600-01-01T00:00:00Z"}"#;
    assert_eq!(
        code(decode_entity(old, &DecodeOptions::STORED)),
        ErrorCode::OutOfRangeInput
    );
    let typed = r#"{"PartitionKey":"p","RowKey":"r","Timestamp@odata.type":"Edm.String","Timestamp":"2021-06-09T01:17:08Z"}"#;
    assert_eq!(
        code(decode_entity(typed, &DecodeOptions::STORED)),
        ErrorCode::InvalidInput
    );
    let null = r#"{"PartitionKey":"p","RowKey":"r","Timestamp":null}"#;
    assert_eq!(
        decode_entity(null, &DecodeOptions::STORED).map(|e| e.timestamp()),
        Ok(None)
    );
}

#[test]
fn not_an_object() {
    for text in [
        "",
        "   ",
        "[]",
        "1",
        "\"x\"",
        "null",
        "{",
        r#"{"PartitionKey":"p",}"#,
        "{} {}",
        "{'a':1}",
        r#"{"PartitionKey":"p","RowKey":"r"} x"#,
    ] {
        assert_eq!(code(dec(text)), ErrorCode::InvalidInput, "{text:?}");
    }
    assert!(dec("[1]").unwrap_err().message.contains("JSON object"));
    assert!(dec("{").unwrap_err().message.contains("not valid JSON"));
}

#[test]
fn limits_checked_on_decode() {
    let mut members: Vec<String> = (0..253).map(|i| format!(r#""P{i}":1"#)).collect();
    let text = format!(
        r#"{{"PartitionKey":"p","RowKey":"r",{}}}"#,
        members.join(",")
    );
    assert_eq!(code(dec(&text)), ErrorCode::TooManyProperties);
    members.pop();
    let text = format!(
        r#"{{"PartitionKey":"p","RowKey":"r",{}}}"#,
        members.join(",")
    );
    assert_eq!(dec(&text).map(|e| e.len()), Ok(252));
    let big = "x".repeat(32 * 1024 + 1);
    assert_eq!(
        code(value(&format!(r#""V":"{big}""#))),
        ErrorCode::PropertyValueTooLarge
    );
}

#[test]
fn decode_from_value() {
    let v: serde_json::Value =
        serde_json::from_str(r#"{"PartitionKey":"p","RowKey":"r","A":1.5}"#).unwrap();
    let e = decode_entity_value(&v, &DecodeOptions::default()).unwrap();
    assert_eq!(e.custom("A"), Some(&Value::Double(1.5)));
}

fn sample() -> Entity {
    let mut e = Entity::new("p1", "r1");
    e.set_timestamp(Some(dt("2021-06-09T01:17:08.3795894Z")));
    e.set("S", "it's");
    e.set("I", 42);
    e.set("L", i64::MAX);
    e.set("D", 5.0);
    e.set("N", f64::NAN);
    e.set("B", true);
    e.set("T", dt("2013-08-02T17:37:43.9000000Z"));
    e.set(
        "G",
        Uuid::parse_str("C9DA6455-213D-42C9-9A79-3E9149A57833").unwrap(),
    );
    e.set("X", vec![1u8, 2, 3]);
    e
}

#[test]
fn encode_levels() {
    let e = sample();
    let env = Envelope {
        metadata: Some("http://127.0.0.1:10002/devstoreaccount1/$metadata#t/@Element".into()),
        type_name: Some("devstoreaccount1.t".into()),
        id: Some("http://127.0.0.1:10002/devstoreaccount1/t(PartitionKey='p1',RowKey='r1')".into()),
        etag: Some(etag(e.timestamp().unwrap())),
        edit_link: Some("t(PartitionKey='p1',RowKey='r1')".into()),
    };
    let opts = |level| EncodeOptions {
        level,
        envelope: env.clone(),
    };
    assert_eq!(
        encode_entity_to_string(&e, &opts(MetadataLevel::NoMetadata)),
        r#"{"PartitionKey":"p1","RowKey":"r1","Timestamp":"2021-06-09T01:17:08.3795894Z","B":true,"D":5.0,"G":"c9da6455-213d-42c9-9a79-3e9149a57833","I":42,"L":"9223372036854775807","N":"NaN","S":"it's","T":"2013-08-02T17:37:43.9Z","X":"AQID"}"#
    );
    assert_eq!(
        encode_entity_to_string(&e, &opts(MetadataLevel::MinimalMetadata)),
        concat!(
            r#"{"odata.metadata":"http://127.0.0.1:10002/devstoreaccount1/$metadata#t/@Element","#,
            r#""odata.etag":"W/\"datetime'2021-06-09T01%3A17%3A08.3795894Z'\"","#,
            r#""PartitionKey":"p1","RowKey":"r1","Timestamp":"2021-06-09T01:17:08.3795894Z","#,
            r#""B":true,"D":5.0,"G@odata.type":"Edm.Guid","G":"c9da6455-213d-42c9-9a79-3e9149a57833","I":42,"#,
            r#""L@odata.type":"Edm.Int64","L":"9223372036854775807","N@odata.type":"Edm.Double","N":"NaN","S":"it's","#,
            r#""T@odata.type":"Edm.DateTime","T":"2013-08-02T17:37:43.9Z","X@odata.type":"Edm.Binary","X":"AQID"}"#
        )
    );
    assert_eq!(
        encode_entity_to_string(&e, &opts(MetadataLevel::FullMetadata)),
        concat!(
            r#"{"odata.metadata":"http://127.0.0.1:10002/devstoreaccount1/$metadata#t/@Element","#,
            r#""odata.type":"devstoreaccount1.t","#,
            r#""odata.id":"http://127.0.0.1:10002/devstoreaccount1/t(PartitionKey='p1',RowKey='r1')","#,
            r#""odata.etag":"W/\"datetime'2021-06-09T01%3A17%3A08.3795894Z'\"","#,
            r#""odata.editLink":"t(PartitionKey='p1',RowKey='r1')","#,
            r#""PartitionKey":"p1","RowKey":"r1","Timestamp@odata.type":"Edm.DateTime","Timestamp":"2021-06-09T01:17:08.3795894Z","#,
            r#""B":true,"D":5.0,"#,
            r#""G@odata.type":"Edm.Guid","G":"c9da6455-213d-42c9-9a79-3e9149a57833","I":42,"#,
            r#""L@odata.type":"Edm.Int64","L":"9223372036854775807","N@odata.type":"Edm.Double","N":"NaN","S":"it's","#,
            r#""T@odata.type":"Edm.DateTime","T":"2013-08-02T17:37:43.9Z","X@odata.type":"Edm.Binary","X":"AQID"}"#
        )
    );
    // The map form holds the same members.
    let map = encode_entity(&e, &opts(MetadataLevel::MinimalMetadata));
    assert_eq!(
        map.get("L@odata.type"),
        Some(&serde_json::json!("Edm.Int64"))
    );
    assert_eq!(map.get("D"), Some(&serde_json::json!(5.0)));
    assert!(!map.contains_key("odata.type"));
}

#[test]
fn encode_doubles() {
    for (d, text) in [
        (5.0, "5.0"),
        (-0.5, "-0.5"),
        (1e300, "1e300"),
        (1e-7, "1e-7"),
        (-0.0, "-0.0"),
    ] {
        let mut e = Entity::new("p", "r");
        e.set("D", d);
        let s = encode_entity_to_string(&e, &EncodeOptions::level(MetadataLevel::NoMetadata));
        let written = s.split("\"D\":").nth(1).unwrap().trim_end_matches('}');
        assert!(written.contains(['.', 'e']), "{written}");
        assert_eq!(written.parse::<f64>().unwrap(), d, "{text}");
    }
    for (d, text) in [
        (f64::INFINITY, "Infinity"),
        (f64::NEG_INFINITY, "-Infinity"),
    ] {
        let mut e = Entity::new("p", "r");
        e.set("D", d);
        let s = encode_entity_to_string(&e, &EncodeOptions::level(MetadataLevel::MinimalMetadata));
        assert!(
            s.ends_with(&format!(r#""D@odata.type":"Edm.Double","D":"{text}"}}"#)),
            "{s}"
        );
    }
}

#[test]
fn round_trip_every_type() {
    let e = sample();
    for level in [MetadataLevel::MinimalMetadata, MetadataLevel::FullMetadata] {
        let text = encode_entity_to_string(&e, &EncodeOptions::level(level));
        assert_eq!(
            decode_entity(&text, &DecodeOptions::STORED),
            Ok(e.clone()),
            "{level:?}"
        );
    }
    // No metadata loses the types JSON cannot express: they come back as Strings.
    let text = encode_entity_to_string(&e, &EncodeOptions::level(MetadataLevel::NoMetadata));
    let back = decode_entity(&text, &DecodeOptions::STORED).unwrap();
    assert_eq!(back.custom("I"), Some(&Value::Int32(42)));
    assert_eq!(back.custom("D"), Some(&Value::Double(5.0)));
    assert_eq!(back.custom("B"), Some(&Value::Boolean(true)));
    assert_eq!(back.custom("L"), Some(&Value::from("9223372036854775807")));
    assert_eq!(back.timestamp(), e.timestamp());
}

#[test]
fn metadata_level_names() {
    assert_eq!(
        MetadataLevel::from_name("nometadata"),
        Some(MetadataLevel::NoMetadata)
    );
    assert_eq!(
        MetadataLevel::from_name("FullMetadata"),
        Some(MetadataLevel::FullMetadata)
    );
    assert_eq!(MetadataLevel::from_name("verbose"), None);
    assert_eq!(MetadataLevel::default(), MetadataLevel::MinimalMetadata);
}

#[test]
fn etags() {
    let t = dt("2021-06-09T01:17:08.3795894Z");
    assert_eq!(etag(t), r#"W/"datetime'2021-06-09T01%3A17%3A08.3795894Z'""#);
    assert_eq!(parse_etag(&etag(t)), Ok(t));
    assert_eq!(
        parse_etag(r#"W/"datetime'2021-06-09T01%3a17%3a08.3795894Z'""#),
        Ok(t)
    );
    assert_eq!(
        etag(dt("2021-06-09T01:17:08Z")),
        r#"W/"datetime'2021-06-09T01%3A17%3A08Z'""#
    );
    for bad in [
        "*",
        "",
        r#""datetime'2021-06-09T01%3A17%3A08Z'""#,
        r#"W/"0x8D92AF1D0E9BA10""#,
        r#"W/"datetime'yesterday'""#,
    ] {
        assert_eq!(code(parse_etag(bad)), ErrorCode::InvalidInput, "{bad}");
    }
}

#[test]
fn checks_run_in_a_fixed_order() {
    // Keys before custom properties, whatever the member order.
    assert_eq!(
        code(dec(r#"{"bad-name":1,"PartitionKey":"a/b","RowKey":"r"}"#)),
        ErrorCode::InvalidInput
    );
    // Missing keys before value conversions.
    assert_eq!(
        code(dec(r#"{"RowKey":"r","A@odata.type":"Edm.Int64","A":"x"}"#)),
        ErrorCode::PropertiesNeedValue
    );
    // A payload may lack keys; present ones are checked.
    let p = decode_payload(r#"{"A":1}"#, &DecodeOptions::default()).unwrap();
    assert_eq!((p.partition_key, p.properties.len()), (None, 1));
    assert_eq!(
        code(decode_payload(
            r##"{"RowKey":"#","A":1}"##,
            &DecodeOptions::default()
        )),
        ErrorCode::InvalidInput
    );
    // The property count before names; null members do not count.
    let mut members: Vec<String> = (0..252).map(|i| format!(r#""P{i}":1"#)).collect();
    members.push(r#""bad-name":1"#.to_owned());
    let text = format!(
        r#"{{"PartitionKey":"p","RowKey":"r",{}}}"#,
        members.join(",")
    );
    assert_eq!(code(dec(&text)), ErrorCode::TooManyProperties);
    members.pop();
    members.push(r#""Q":null"#.to_owned());
    let text = format!(
        r#"{{"PartitionKey":"p","RowKey":"r",{}}}"#,
        members.join(",")
    );
    assert_eq!(dec(&text).map(|e| e.len()), Ok(252));
    // Duplicates before everything but JSON syntax.
    assert_eq!(
        code(dec(r#"{"A":1,"A":2}"#)),
        ErrorCode::DuplicatePropertiesSpecified
    );
}

#[test]
fn syntax_errors_in_the_users_terms() {
    let message = |text: &str| dec(text).unwrap_err().message;
    assert_eq!(
        message("this line is not JSON"),
        "the entity is not valid JSON: expected `true`, `false` or `null` (text values need \
         double quotes), at byte 1 (found `h`)"
    );
    assert_eq!(
        message("{broken"),
        "the entity is not valid JSON: expected a property name in double quotes, at byte 1 \
         (found `b`)"
    );
    assert_eq!(
        message("{\"a\":\"\t\"}"),
        "the entity is not valid JSON: a control character inside a string (write it as an \
         escape such as \\t or \\u0009), at byte 6 (found U+0009)"
    );
    assert!(message("{\"a\":").contains("ends before the JSON object does"));
    assert!(message("\u{FEFF}{}").contains("byte-order mark (U+FEFF)"));
    for text in [
        "{\"a\" 1}",
        "{\"a\":1 \"b\":2}",
        "{\"a\":1} x",
        "{\"a\":01}",
    ] {
        let m = message(text);
        assert!(!m.contains("line 1") && m.contains("at byte "), "{m}");
    }
}

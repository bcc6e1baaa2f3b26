//! Property tests of the streaming writer (`EntityWriter`, `CollectionWriter`): byte for byte
//! the output of the `EncodedEntity` encoder at every metadata level, with and without an
//! envelope; projections equal the encoder's members picked in selection order (with
//! `null` for missing names); round trips through the decoder; property listing order does
//! not matter.

use proptest::prelude::*;
use tableq_model::json::{
    CollectionWriter, DecodeOptions, EncodeOptions, EntityWriter, Envelope, EnvelopeRef,
    ListProperties, MetadataLevel, decode_entity, encode_entity_ordered, encode_entity_to_string,
};
use tableq_model::{DateTime, Entity, EntityView, Value, ValueRef};

fn key_text() -> impl Strategy<Value = String> {
    proptest::string::string_regex("[^/\\\\#?\\x00-\\x1F\\x7F-\\x9F]{0,12}").unwrap()
}

/// Names mixing ASCII, Latin, CJK, U+E000–U+FFFF and supplementary-plane letters, so that
/// byte order and UTF-16 order disagree now and then.
fn property_name() -> impl Strategy<Value = String> {
    "[A-Za-z_é名\u{F900}\u{1D400}][A-Za-z0-9_é名\u{FF21}\u{1D401}]{0,8}"
        .prop_filter("system names are reserved", |n| {
            !matches!(n.as_str(), "PartitionKey" | "RowKey" | "Timestamp")
        })
}

fn datetime() -> impl Strategy<Value = DateTime> {
    (DateTime::MIN.ticks()..=DateTime::MAX.ticks()).prop_map(|t| DateTime::from_ticks(t).unwrap())
}

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..20).prop_map(Value::Binary),
        any::<bool>().prop_map(Value::Boolean),
        datetime().prop_map(Value::DateTime),
        prop_oneof![
            any::<f64>(),
            Just(f64::NAN),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            Just(5.0),
            Just(-0.0),
            Just(1e21),
            Just(1.5e-7),
        ]
        .prop_map(Value::Double),
        any::<u128>().prop_map(|g| Value::Guid(uuid::Uuid::from_u128(g))),
        any::<i32>().prop_map(Value::Int32),
        any::<i64>().prop_map(Value::Int64),
        any::<String>().prop_map(Value::String),
    ]
}

fn entity() -> impl Strategy<Value = Entity> {
    (
        key_text(),
        key_text(),
        proptest::option::of(datetime()),
        proptest::collection::vec((property_name(), value()), 0..10),
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

fn level() -> impl Strategy<Value = MetadataLevel> {
    prop_oneof![
        Just(MetadataLevel::NoMetadata),
        Just(MetadataLevel::MinimalMetadata),
        Just(MetadataLevel::FullMetadata),
    ]
}

fn envelope() -> impl Strategy<Value = Envelope> {
    let field = || proptest::option::of("[ -~\u{e9}]{0,10}");
    (field(), field(), field(), field(), field()).prop_map(
        |(metadata, type_name, id, etag, edit_link)| Envelope {
            metadata,
            type_name,
            id,
            etag,
            edit_link,
        },
    )
}

/// An entity whose properties are listed in reverse byte order (the writer must sort).
struct Reversed<'a>(&'a Entity);

impl EntityView for Reversed<'_> {
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
        EntityView::custom(self.0, name)
    }
}

impl ListProperties for Reversed<'_> {
    fn for_each_custom(&self, f: &mut dyn FnMut(&str, ValueRef<'_>)) {
        for p in self.0.properties().iter().rev() {
            f(&p.name, p.value.as_ref());
        }
    }
}

/// The projection as `tableq eval` used to build it: the encoder's members, picked in
/// selection order, `null` for a missing name.
fn projected_by_encoder(e: &Entity, options: &EncodeOptions, select: &[String]) -> String {
    let encoded = encode_entity_ordered(e, options);
    let mut out = Vec::new();
    for (k, v) in encoded.members() {
        if k.starts_with("odata.") {
            out.push(format!("{}:{v}", serde_json::to_string(k).unwrap()));
        }
    }
    for name in select {
        let annotation = format!("{name}@odata.type");
        let mut value = serde_json::Value::Null;
        for (k, v) in encoded.members() {
            if *k == annotation {
                out.push(format!("{}:{v}", serde_json::to_string(k).unwrap()));
            } else if k == name {
                value = v.clone();
            }
        }
        out.push(format!("{}:{value}", serde_json::to_string(name).unwrap()));
    }
    format!("{{{}}}", out.join(","))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn same_bytes_as_the_encoder(e in entity(), level in level(), env in envelope()) {
        let expected = encode_entity_to_string(
            &e,
            &EncodeOptions { level, envelope: env.clone() },
        );
        let writer = EntityWriter::new(level);
        prop_assert_eq!(&writer.to_string(&e, env.as_envelope_ref()), &expected);
        // The listing order of the properties does not change the output.
        prop_assert_eq!(&writer.to_string(&Reversed(&e), env.as_envelope_ref()), &expected);
    }

    #[test]
    fn projection_picks_the_encoder_members(
        e in entity(),
        level in level(),
        extra in proptest::collection::vec(property_name(), 0..3),
        system in proptest::sample::subsequence(vec!["Timestamp", "RowKey", "PartitionKey"], 0..3),
        take in 0usize..4,
    ) {
        let mut select: Vec<String> = e.properties().iter().take(take).map(|p| p.name.clone()).collect();
        select.extend(extra);
        select.extend(system.iter().map(|s| s.to_string()));
        let mut seen = std::collections::HashSet::new();
        select.retain(|n| seen.insert(n.clone()));
        let env = Envelope { etag: Some("W/\"x\"".to_owned()), id: Some("i".to_owned()), ..Envelope::default() };
        let writer = EntityWriter::new(level).with_select(Some(&select));
        let got = writer.to_string(&e, env.as_envelope_ref());
        let expected = projected_by_encoder(&e, &EncodeOptions { level, envelope: env }, &select);
        prop_assert_eq!(got, expected);
    }

    #[test]
    fn round_trips_through_the_decoder(e in entity()) {
        for level in [MetadataLevel::MinimalMetadata, MetadataLevel::FullMetadata] {
            let text = EntityWriter::new(level).to_string(&e, EnvelopeRef::default());
            let back = decode_entity(&text, &DecodeOptions::STORED);
            prop_assert_eq!(back.as_ref(), Ok(&e), "{:?}: {}", level, text);
        }
    }

    #[test]
    fn collections_are_json_with_every_row(
        rows in proptest::collection::vec(entity(), 0..5),
        level in level(),
    ) {
        let writer = EntityWriter::new(level);
        let mut out = Vec::new();
        let mut page = CollectionWriter::begin(&mut out, level, Some("http://127.0.0.1:10002/a/$metadata#t"));
        for e in &rows {
            page.entity(&mut out, &writer, e, EnvelopeRef::default());
        }
        prop_assert_eq!(page.rows(), rows.len());
        page.end(&mut out);
        let json: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let value = json["value"].as_array().unwrap();
        prop_assert_eq!(value.len(), rows.len());
        prop_assert_eq!(json.get("odata.metadata").is_some(), level != MetadataLevel::NoMetadata);
        for (v, e) in value.iter().zip(&rows) {
            let back = decode_entity(&v.to_string(), &DecodeOptions::STORED).unwrap();
            prop_assert_eq!(back.partition_key(), e.partition_key());
            prop_assert_eq!(back.row_key(), e.row_key());
        }
    }
}

#[test]
fn collection_forms_at_each_level() {
    let mut e = Entity::new("p", "r");
    e.set("N", Value::Int32(1));
    // Full metadata annotates no Int32, as the service writes it.
    let url = "http://127.0.0.1:10002/devstoreaccount1/$metadata#t";
    let expected = [
        (MetadataLevel::NoMetadata, r#"{"value":[{"PartitionKey":"p","RowKey":"r","N":1},{"PartitionKey":"p","RowKey":"r","N":1}]}"#.to_owned()),
        (MetadataLevel::MinimalMetadata, format!(r#"{{"odata.metadata":"{url}","value":[{{"odata.etag":"E","PartitionKey":"p","RowKey":"r","N":1}},{{"odata.etag":"E","PartitionKey":"p","RowKey":"r","N":1}}]}}"#)),
        (MetadataLevel::FullMetadata, format!(r#"{{"odata.metadata":"{url}","value":[{{"odata.type":"a.t","odata.id":"I","odata.etag":"E","odata.editLink":"L","PartitionKey":"p","RowKey":"r","N":1}},{{"odata.type":"a.t","odata.id":"I","odata.etag":"E","odata.editLink":"L","PartitionKey":"p","RowKey":"r","N":1}}]}}"#)),
    ];
    for (level, want) in expected {
        let writer = EntityWriter::new(level);
        let envelope = EnvelopeRef {
            metadata: None,
            type_name: Some("a.t"),
            id: Some("I"),
            etag: Some("E"),
            edit_link: Some("L"),
        };
        let mut out = Vec::new();
        let mut page = CollectionWriter::begin(&mut out, level, Some(url));
        page.entity(&mut out, &writer, &e, envelope);
        page.entity(&mut out, &writer, &e, envelope);
        page.end(&mut out);
        assert_eq!(String::from_utf8(out).unwrap(), want, "{level:?}");
    }
    // An empty page, and a raw item.
    let mut out = Vec::new();
    let mut page = CollectionWriter::begin(&mut out, MetadataLevel::NoMetadata, Some(url));
    page.item(&mut out);
    out.extend_from_slice(br#"{"TableName":"t"}"#);
    page.end(&mut out);
    assert_eq!(out, br#"{"value":[{"TableName":"t"}]}"#);
}

#[test]
fn utf16_order_of_names() {
    // U+FF21 sorts before U+1D400 in UTF-8 byte order but after it in UTF-16 order (where
    // U+1D400 is the surrogate pair D835 DC00).
    let mut e = Entity::new("p", "r");
    e.set("\u{1D400}", Value::Int32(1));
    e.set("\u{FF21}", Value::Int32(2));
    let text = EntityWriter::new(MetadataLevel::NoMetadata).to_string(&e, EnvelopeRef::default());
    assert_eq!(
        text,
        "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"\u{1D400}\":1,\"\u{FF21}\":2}"
    );
    assert_eq!(
        text,
        encode_entity_to_string(&e, &EncodeOptions::level(MetadataLevel::NoMetadata))
    );
}

#[test]
fn select_of_system_properties_and_missing_names() {
    let mut e = Entity::new("p", "r");
    e.set_timestamp(Some(DateTime::parse("2024-05-01T10:00:00.5Z").unwrap()));
    e.set("Big", Value::Int64(-3));
    let select: Vec<String> = ["Timestamp", "Missing", "RowKey", "Big"]
        .map(String::from)
        .to_vec();
    let minimal = EntityWriter::new(MetadataLevel::MinimalMetadata).with_select(Some(&select));
    assert_eq!(
        minimal.to_string(&e, EnvelopeRef::default()),
        r#"{"Timestamp":"2024-05-01T10:00:00.5Z","Missing":null,"RowKey":"r","Big@odata.type":"Edm.Int64","Big":"-3"}"#
    );
    // Full metadata annotates the Timestamp too.
    let full = EntityWriter::new(MetadataLevel::FullMetadata).with_select(Some(&select));
    assert!(
        full.to_string(&e, EnvelopeRef::default())
            .starts_with(r#"{"Timestamp@odata.type":"Edm.DateTime","Timestamp":"#)
    );
    let none = EntityWriter::new(MetadataLevel::NoMetadata).with_select(Some(&select));
    assert_eq!(
        none.to_string(&e, EnvelopeRef::default()),
        r#"{"Timestamp":"2024-05-01T10:00:00.5Z","Missing":null,"RowKey":"r","Big":"-3"}"#
    );
    let empty: Vec<String> = Vec::new();
    let nothing = EntityWriter::new(MetadataLevel::MinimalMetadata).with_select(Some(&empty));
    assert_eq!(nothing.to_string(&e, EnvelopeRef::default()), "{}");
}

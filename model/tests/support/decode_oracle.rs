//! The oracle of JSON entity decoding, shared by the `decode_entity` fuzz target
//! (`fuzz/fuzz_targets/decode_entity.rs` includes this file with `#[path]`) and the stable
//! tests that replay its findings (`model/tests/json_regressions.rs`).
//!
//! For any bytes (read as UTF-8 with invalid sequences replaced, as a server that accepts
//! them lossily would): decoding with either Timestamp mode never panics; an error carries a
//! 400 code and a short message; an entity that decodes is valid by `validate::entity`, has
//! no Timestamp unless the options keep it, and survives the round trip — encoded at minimal
//! and full metadata it decodes back to an equal entity, and encoded without metadata it
//! decodes to what a reader without types sees (Int64, DateTime, Guid, Binary and non-finite
//! Doubles as their wire strings), or to the same size error when those strings are larger.

use base64::Engine;
use tableq_model::json::{
    DecodeOptions, EncodeOptions, MetadataLevel, decode_entity, decode_payload,
    encode_entity_to_string,
};
use tableq_model::{Entity, Property, Value, validate};

/// The longest error message accepted: messages quote user text only in short excerpts.
const MAX_MESSAGE_LEN: usize = 1024;

/// Runs every check on one input; panics with the input on any violation.
pub fn check(bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    for options in [DecodeOptions::SERVICE, DecodeOptions::STORED] {
        match decode_entity(&text, &options) {
            Ok(entity) => check_entity(&text, &entity, options),
            Err(e) => {
                assert_eq!(e.code.http_status(), 400, "{e} for {text:?}");
                assert!(
                    !e.message.is_empty() && e.message.len() <= MAX_MESSAGE_LEN,
                    "message of {} bytes for {text:?}",
                    e.message.len()
                );
            }
        }
    }
    if let Err(e) = decode_payload(&text, &DecodeOptions::STORED) {
        assert_eq!(e.code.http_status(), 400, "{e} for {text:?}");
    }
}

fn check_entity(text: &str, entity: &Entity, options: DecodeOptions) {
    assert_eq!(
        validate::entity(entity),
        Ok(()),
        "decoded but invalid: {text:?}"
    );
    if !options.keep_timestamp {
        assert_eq!(entity.timestamp(), None, "Timestamp not ignored: {text:?}");
    }
    for level in [MetadataLevel::MinimalMetadata, MetadataLevel::FullMetadata] {
        let out = encode_entity_to_string(entity, &EncodeOptions::level(level));
        assert_eq!(
            decode_entity(&out, &DecodeOptions::STORED).as_ref(),
            Ok(entity),
            "{level:?} round trip of {text:?} through {out:?}"
        );
    }
    let out = encode_entity_to_string(entity, &EncodeOptions::level(MetadataLevel::NoMetadata));
    let back = decode_entity(&out, &DecodeOptions::STORED);
    let expected = untyped(entity);
    match validate::entity(&expected) {
        Ok(()) => assert_eq!(
            back.as_ref(),
            Ok(&expected),
            "nometadata round trip of {text:?} through {out:?}"
        ),
        Err(e) => assert_eq!(
            back.map_err(|b| b.code),
            Err(e.code),
            "nometadata round trip of {text:?} through {out:?}"
        ),
    }
}

/// The entity as a reader without metadata sees it: values JSON cannot type become strings.
fn untyped(entity: &Entity) -> Entity {
    let properties = entity.properties().iter().map(|p| Property {
        name: p.name.clone(),
        value: match &p.value {
            Value::Int64(i) => Value::String(i.to_string()),
            Value::DateTime(t) => Value::String(t.to_string()),
            Value::Guid(g) => Value::String(g.hyphenated().to_string()),
            Value::Binary(b) => Value::String(base64::engine::general_purpose::STANDARD.encode(b)),
            Value::Double(d) if d.is_nan() => Value::String("NaN".into()),
            Value::Double(d) if d.is_infinite() && *d > 0.0 => Value::String("Infinity".into()),
            Value::Double(d) if d.is_infinite() => Value::String("-Infinity".into()),
            v => v.clone(),
        },
    });
    Entity::with_properties(
        entity.partition_key(),
        entity.row_key(),
        entity.timestamp(),
        properties,
    )
}

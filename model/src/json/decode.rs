//! Decoding entities from the service's JSON.

use super::borrowed::{BorrowedEntity, decode_borrowed};
use super::convert::{
    DecodeOptions, KeyKind, classify, expected_form, finite_double, from_string, invalid,
    lone_surrogate_error, out_of_range_int,
};
use crate::validate::{self, excerpt};
use crate::{
    DateTime, EdmType, Entity, ErrorCode, ModelError, Property, SystemProperty, UnknownEdmType,
    Value,
};
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fmt;

/// A decoded payload before the entity-level checks: keys may be missing (a merge or an
/// update takes them from the URL) and the value and entity size limits are not yet applied.
///
/// Already checked: the text is one JSON object, no key appears twice, annotations name Edm
/// types, keys that are present are JSON strings and valid key values, there are at most 252
/// custom properties, every custom property name is valid and every value converts to its
/// (annotated or inferred) type. Not yet checked: presence of the keys, value and entity
/// sizes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Payload {
    /// The PartitionKey, if the payload has one (not null).
    pub partition_key: Option<String>,
    /// The RowKey, if the payload has one (not null).
    pub row_key: Option<String>,
    /// The Timestamp, if kept by the options and present (not null).
    pub timestamp: Option<DateTime>,
    /// The custom properties in payload order; null values are left out.
    pub properties: Vec<Property>,
}

impl Payload {
    /// Checks that both keys are present (else `PropertiesNeedValue`).
    pub fn require_keys(&self) -> Result<(), ModelError> {
        let missing = match (&self.partition_key, &self.row_key) {
            (None, None) => "PartitionKey and RowKey",
            (None, Some(_)) => "PartitionKey",
            (Some(_), None) => "RowKey",
            _ => return Ok(()),
        };
        Err(ModelError::new(
            ErrorCode::PropertiesNeedValue,
            format!("the entity has no {missing}: every entity needs both keys (as JSON strings)"),
        ))
    }

    /// Builds the entity: both keys must be present (else `PropertiesNeedValue`). Runs no
    /// other check; see [`crate::validate::entity`].
    pub fn into_entity(self) -> Result<Entity, ModelError> {
        self.require_keys()?;
        Ok(Entity::with_properties(
            self.partition_key.unwrap_or_default(),
            self.row_key.unwrap_or_default(),
            self.timestamp,
            self.properties,
        ))
    }
}

/// Decodes and fully validates one entity from its JSON text (one JSON object in the
/// service's form): the one call that yields the service's error code for any bad payload.
///
/// The same checks as [`decode_payload`] (with missing keys reported right after the keys),
/// then [`Payload::into_entity`] and [`crate::validate::entity`].
pub fn decode_entity(text: &str, options: &DecodeOptions) -> Result<Entity, ModelError> {
    // The common shapes first: the borrowed decoder accepts only what this function
    // accepts, and then yields the same entity (its contract); anything else is judged here.
    let mut view = BorrowedEntity::new();
    if decode_borrowed(text, options, &mut view) {
        return Ok(view.to_entity());
    }
    let entity = decode(text, options, true)?.into_entity()?;
    validate::entity(&entity)?;
    Ok(entity)
}

/// Like [`decode_entity`], from an already parsed JSON value. (A `serde_json::Value` cannot
/// hold duplicate keys, so `DuplicatePropertiesSpecified` is only detected from text.)
pub fn decode_entity_value(
    value: &serde_json::Value,
    options: &DecodeOptions,
) -> Result<Entity, ModelError> {
    decode_entity(&value.to_string(), options)
}

/// A JSON object as its entries in text order, values kept as raw text. Keys are
/// borrowed from the text unless they hold escapes.
struct RawObject<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

/// An object key: borrowed from the text when it has no escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a property name")
            }
            fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

impl<'de> Deserialize<'de> for RawObject<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ObjectVisitor;
        impl<'de> Visitor<'de> for ObjectVisitor {
            type Value = RawObject<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(24));
                while let Some((Key(key), value)) = map.next_entry::<Key<'de>, &'de RawValue>()? {
                    entries.push((key, value));
                }
                Ok(RawObject(entries))
            }
        }
        deserializer.deserialize_map(ObjectVisitor)
    }
}

/// Most keys checked for duplicates by comparing them pairwise (more go through a hash set).
const SMALL_OBJECT: usize = 48;

/// The first key (in text order of its second occurrence) that appears twice.
fn first_duplicate<'e>(entries: &'e [(Cow<'_, str>, &RawValue)]) -> Option<&'e str> {
    if entries.len() <= SMALL_OBJECT {
        return entries.iter().enumerate().find_map(|(i, (key, _))| {
            entries[..i]
                .iter()
                .any(|(k, _)| k == key)
                .then_some(key.as_ref())
        });
    }
    let mut seen: HashSet<&str> = HashSet::with_capacity(entries.len());
    entries
        .iter()
        .find_map(|(key, _)| (!seen.insert(key.as_ref())).then_some(key.as_ref()))
}

/// The error for a payload that is not one JSON object, in the user's terms: what is wrong,
/// at which byte (0-based) of the text, and what was found there.
fn top_level_error(text: &str, e: &serde_json::Error) -> ModelError {
    if text.starts_with('\u{FEFF}') {
        return invalid(
            "the entity starts with a byte-order mark (U+FEFF): only the very start of a file \
             may carry one; remove it",
        );
    }
    if let Some(m) = lone_surrogate_error(e, "", true) {
        return m;
    }
    if e.classify() == serde_json::error::Category::Data {
        // Valid JSON, but not an object (keys and raw values accept anything else).
        let what = match text.trim_start().as_bytes().first() {
            Some(b'[') => "an array",
            Some(b'"') => "a string",
            Some(b'n') => "null",
            Some(b't' | b'f') => "a boolean",
            _ => "a number",
        };
        return invalid(format!(
            "the entity is {what}, not a JSON object: an entity is one JSON object"
        ));
    }
    invalid(format!(
        "the entity is not valid JSON: {}",
        syntax_problem(text, e)
    ))
}

/// A JSON syntax error as `<what> at byte N (found …)`, with serde_json's wording
/// translated and its line/column (always line 1 for one line) replaced by a byte offset.
fn syntax_problem(text: &str, e: &serde_json::Error) -> String {
    let raw = e.to_string();
    let raw = raw.rfind(" at line ").map_or(raw.as_str(), |i| &raw[..i]);
    let what = match raw {
        "expected ident" => "expected `true`, `false` or `null` (text values need double quotes)",
        "expected value" => {
            "expected a value (a string in double quotes, a number, true, false or null)"
        }
        "key must be a string" => "expected a property name in double quotes",
        "expected `:`" => "expected `:` after a property name",
        "expected `,` or `}`" => "expected `,` or `}` after a value",
        "trailing characters" => "unexpected text after the end of the object",
        "invalid number" | "number out of range" => "not a valid number",
        "invalid escape" => {
            "invalid escape in a string (allowed: \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)"
        }
        other if other.starts_with("control character") => {
            "a control character inside a string (write it as an escape such as \\t or \\u0009)"
        }
        other if other.starts_with("EOF while parsing") => {
            return "the text ends before the JSON object does (a missing `}` or `\"`?)".to_owned();
        }
        other => other,
    };
    // serde_json counts columns in bytes from 1, pointing at the offending byte.
    let mut at = e.column().saturating_sub(1).min(text.len());
    if what.starts_with("a control character") {
        // serde_json points just before the character.
        at += text.as_bytes()[at..]
            .iter()
            .take_while(|b| **b >= 0x20)
            .count();
    }
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    match text[at..].chars().next() {
        Some(c) if !c.is_control() => format!("{what}, at byte {at} (found `{c}`)"),
        Some(c) => format!("{what}, at byte {at} (found U+{:04X})", u32::from(c)),
        None => format!("{what}, at byte {at} (the end of the text)"),
    }
}

/// Decodes one payload (a JSON object) without the entity-level checks; see [`Payload`].
///
/// Rules: keys appear at most once (→ `DuplicatePropertiesSpecified`); `Name@odata.type`
/// annotations name an Edm type (unknown → `InvalidInput`) and may come before or after the
/// value; `odata.*` metadata and other annotations are ignored; a `null` value is an absent
/// property (an annotation alone adds nothing); objects, arrays and values that do not
/// convert to their type are `InvalidInput` (a DateTime out of range is `OutOfRangeInput`);
/// PartitionKey and RowKey must be JSON strings; the Timestamp is handled as
/// [`DecodeOptions::keep_timestamp`] says; custom names must be valid property names.
pub fn decode_payload(text: &str, options: &DecodeOptions) -> Result<Payload, ModelError> {
    decode(text, options, false)
}

/// The decoder. Checks run in a fixed order: JSON syntax and shape, duplicate keys,
/// annotations, PartitionKey, RowKey, (missing keys when `require_keys`), Timestamp, the
/// custom property count, then each custom property in payload order (name, then value).
fn decode(text: &str, options: &DecodeOptions, require_keys: bool) -> Result<Payload, ModelError> {
    let RawObject(entries) =
        serde_json::from_str::<RawObject<'_>>(text).map_err(|e| top_level_error(text, &e))?;

    if let Some(key) = first_duplicate(&entries) {
        return Err(ModelError::new(
            ErrorCode::DuplicatePropertiesSpecified,
            format!(
                "`{}` appears more than once in the entity: each property (and annotation) \
                 may be given only once",
                excerpt(key)
            ),
        ));
    }
    // Annotations are few: a list is faster to search than a map (keys are unique).
    let mut types: Vec<(&str, EdmType)> = Vec::new();
    let mut system: [Option<&RawValue>; 3] = [None; 3];
    let mut custom: Vec<(&str, &RawValue)> = Vec::with_capacity(entries.len());
    for (key, raw) in &entries {
        match classify(key) {
            KeyKind::TypeAnnotation(name) => {
                types.push((name, annotation_type(key, raw)?));
            }
            KeyKind::Ignored => {}
            KeyKind::Property => match key.as_ref() {
                "PartitionKey" => system[0] = Some(raw),
                "RowKey" => system[1] = Some(raw),
                "Timestamp" => system[2] = Some(raw),
                name => custom.push((name, raw)),
            },
        }
    }
    let types_map: Option<HashMap<&str, EdmType>> =
        (types.len() > SMALL_OBJECT).then(|| types.iter().copied().collect());
    let declared = |name: &str| match &types_map {
        Some(map) => map.get(name).copied(),
        None => types.iter().find(|(n, _)| *n == name).map(|(_, t)| *t),
    };

    let mut payload = Payload {
        properties: Vec::with_capacity(custom.len()),
        ..Payload::default()
    };
    for (which, raw) in [
        (SystemProperty::PartitionKey, system[0]),
        (SystemProperty::RowKey, system[1]),
    ] {
        let Some(raw) = raw else { continue };
        let value = key_value(which.name(), raw, declared(which.name()))?;
        if let Some(v) = &value {
            validate::key(which, v)?;
        }
        match which {
            SystemProperty::PartitionKey => payload.partition_key = value,
            _ => payload.row_key = value,
        }
    }
    if require_keys {
        payload.require_keys()?;
    }
    if let (true, Some(raw)) = (options.keep_timestamp, system[2]) {
        if let Some(t) = declared("Timestamp").filter(|t| *t != EdmType::DateTime) {
            return Err(invalid(format!(
                "Timestamp is annotated {t}: the Timestamp is always an Edm.DateTime"
            )));
        }
        payload.timestamp = match convert("Timestamp", raw, Some(EdmType::DateTime))? {
            Some(Value::DateTime(t)) => Some(t),
            _ => None,
        };
    }
    let count = custom.iter().filter(|(_, raw)| raw.get() != "null").count();
    validate::property_count(count)?;
    for (name, raw) in custom {
        validate::property_name(name)?;
        if let Some(value) = convert(name, raw, declared(name))? {
            payload.properties.push(Property {
                name: name.to_owned(),
                value,
            });
        }
    }
    Ok(payload)
}

fn annotation_type(key: &str, raw: &RawValue) -> Result<EdmType, ModelError> {
    let text: Cow<'_, str> = match raw.get().as_bytes().first() {
        Some(b'"') => string_text(key, raw)?,
        _ => {
            return Err(invalid(format!(
                "annotation `{}` must be a string naming an Edm type, not {}",
                excerpt(key),
                excerpt(raw.get())
            )));
        }
    };
    // The unknown name is shown as an excerpt: the message must not echo a payload of any
    // length (found by the `decode_entity` fuzz target, regression `long-unknown-annotation`).
    text.parse::<EdmType>().map_err(|e| {
        let shown = UnknownEdmType(excerpt(&e.0));
        invalid(format!("annotation `{}`: {shown}", excerpt(key)))
    })
}

fn key_value(
    name: &str,
    raw: &RawValue,
    declared: Option<EdmType>,
) -> Result<Option<String>, ModelError> {
    if let Some(t) = declared.filter(|t| *t != EdmType::String) {
        return Err(invalid(format!(
            "{name} is annotated {t}: keys are always Edm.String"
        )));
    }
    match raw.get().as_bytes().first() {
        Some(b'n') => Ok(None),
        Some(b'"') => Ok(Some(parse_string(name, raw)?)),
        _ => Err(invalid(format!(
            "{name} must be a JSON string, not {}",
            excerpt(raw.get())
        ))),
    }
}

fn parse_string(name: &str, raw: &RawValue) -> Result<String, ModelError> {
    string_text(name, raw).map(Cow::into_owned)
}

/// The text of a JSON string (a raw value that starts with `"`): borrowed from the payload
/// when it holds no escape (the JSON syntax is already checked, so every character between
/// the quotes is the string's own), else unescaped by serde_json.
fn string_text<'r>(name: &str, raw: &'r RawValue) -> Result<Cow<'r, str>, ModelError> {
    let text = raw.get();
    if let Some(inner) = text
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .filter(|inner| !inner.contains('\\'))
    {
        return Ok(Cow::Borrowed(inner));
    }
    serde_json::from_str::<String>(text)
        .map(Cow::Owned)
        .map_err(|e| value_error(name, &e))
}

/// An error from parsing one (already syntax-checked) value: serde_json's position would be
/// relative to the value, so it is left out.
fn value_error(name: &str, e: &serde_json::Error) -> ModelError {
    let place = format!("property `{}`: ", excerpt(name));
    lone_surrogate_error(e, &place, false).unwrap_or_else(|| {
        let text = e.to_string();
        let text = text
            .rfind(" at line ")
            .map_or(text.as_str(), |i| &text[..i]);
        invalid(format!("{place}{text}"))
    })
}

/// Converts one raw JSON value to a typed value (`None` for null).
fn convert(
    name: &str,
    raw: &RawValue,
    declared: Option<EdmType>,
) -> Result<Option<Value>, ModelError> {
    let text = raw.get();
    let cannot = |what: &str, t: EdmType, expected: &str| {
        invalid(format!(
            "property `{}`: {what} {} cannot be read as {t} (expected {expected})",
            excerpt(name),
            excerpt(text)
        ))
    };
    let value = match text.as_bytes().first() {
        Some(b'n') => return Ok(None),
        Some(b'{') | Some(b'[') => {
            return Err(invalid(format!(
                "property `{}`: a JSON {} is not a property value (values are strings, numbers \
                 or booleans)",
                excerpt(name),
                if text.starts_with('{') {
                    "object"
                } else {
                    "array"
                }
            )));
        }
        Some(b't') | Some(b'f') => {
            let b = text == "true";
            match declared {
                None | Some(EdmType::Boolean) => Value::Boolean(b),
                Some(t) => return Err(cannot("the boolean", t, expected_form(t))),
            }
        }
        Some(b'"') => {
            let s = string_text(name, raw)?;
            match declared {
                None | Some(EdmType::String) => Value::String(s.into_owned()),
                Some(t) => from_string(name, &s, t)?,
            }
        }
        _ => {
            // A JSON number, kept as its exact text.
            let integer = !text.contains(['.', 'e', 'E']);
            match declared {
                None if integer => match text.parse::<i32>() {
                    Ok(i) => Value::Int32(i),
                    Err(_) => Value::Double(finite_double(name, text)?),
                },
                None | Some(EdmType::Double) => Value::Double(finite_double(name, text)?),
                Some(EdmType::String) => Value::String(text.to_owned()),
                Some(EdmType::Int32) if integer => Value::Int32(
                    text.parse()
                        .map_err(|_| out_of_range_int(name, text, EdmType::Int32))?,
                ),
                Some(EdmType::Int64) if integer => Value::Int64(
                    text.parse()
                        .map_err(|_| out_of_range_int(name, text, EdmType::Int64))?,
                ),
                Some(t) => return Err(cannot("the number", t, expected_form(t))),
            }
        }
    };
    Ok(Some(value))
}

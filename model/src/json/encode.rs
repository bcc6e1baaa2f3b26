//! Encoding entities in the three OData metadata levels.

use crate::{EdmType, Entity, Value, order};
use base64::Engine;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value as Json};

/// The OData JSON metadata level of a response (`Accept: application/json;odata=<level>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MetadataLevel {
    /// `nometadata`: bare values, no `odata.*` keys, no type annotations (types that JSON
    /// cannot express — Int64, DateTime, Guid, Binary, non-finite Double — read back as
    /// strings).
    NoMetadata,
    /// `minimalmetadata` (the default): `odata.metadata`, `odata.etag`, and `Name@odata.type`
    /// for Int64, DateTime, Guid, Binary and non-finite Double (not for the Timestamp, whose
    /// type clients know: the service sends it bare).
    #[default]
    MinimalMetadata,
    /// `fullmetadata`: minimal metadata plus `odata.type`, `odata.id`, `odata.editLink` and
    /// the Timestamp's annotation (the other annotations are minimal metadata's: the
    /// service annotates no Int32, Boolean or finite Double at full metadata either).
    FullMetadata,
}

impl MetadataLevel {
    /// The level for its `odata=` parameter value (`nometadata`, `minimalmetadata`,
    /// `fullmetadata`, ASCII case-insensitive).
    pub fn from_name(name: &str) -> Option<MetadataLevel> {
        [
            MetadataLevel::NoMetadata,
            MetadataLevel::MinimalMetadata,
            MetadataLevel::FullMetadata,
        ]
        .into_iter()
        .find(|l| l.as_str().eq_ignore_ascii_case(name))
    }

    /// The `odata=` parameter value, e.g. `"minimalmetadata"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            MetadataLevel::NoMetadata => "nometadata",
            MetadataLevel::MinimalMetadata => "minimalmetadata",
            MetadataLevel::FullMetadata => "fullmetadata",
        }
    }
}

/// The `odata.*` envelope of an entity, filled in by whoever knows the URLs (the server).
/// Every field is optional; a field is written only at the levels that carry it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Envelope {
    /// `odata.metadata` (minimal and full), e.g. `<base>/$metadata#t/@Element`.
    pub metadata: Option<String>,
    /// `odata.type` (full), e.g. `account.t`.
    pub type_name: Option<String>,
    /// `odata.id` (full): the entity's absolute URL.
    pub id: Option<String>,
    /// `odata.etag` (minimal and full); see [`super::etag`].
    pub etag: Option<String>,
    /// `odata.editLink` (full), e.g. `t(PartitionKey='p',RowKey='r')`.
    pub edit_link: Option<String>,
}

/// How to encode an entity.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EncodeOptions {
    /// The metadata level.
    pub level: MetadataLevel,
    /// The `odata.*` envelope.
    pub envelope: Envelope,
}

impl EncodeOptions {
    /// Options for a level with an empty envelope.
    pub fn level(level: MetadataLevel) -> EncodeOptions {
        EncodeOptions {
            level,
            envelope: Envelope::default(),
        }
    }
}

/// An encoded entity: JSON members in output order. Serializes as a JSON object in exactly
/// this order (envelope, PartitionKey, RowKey, Timestamp, then custom properties by UTF-16
/// ordinal name, each annotation right before its value).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EncodedEntity {
    members: Vec<(String, Json)>,
}

impl EncodedEntity {
    /// The members in output order.
    pub fn members(&self) -> &[(String, Json)] {
        &self.members
    }

    /// Appends a member (e.g. `"Prop": null` for a `$select`ed property the entity lacks).
    pub fn push(&mut self, key: impl Into<String>, value: Json) {
        self.members.push((key.into(), value));
    }

    /// The members as a `serde_json` map (whose iteration order is the map's own).
    pub fn into_map(self) -> Map<String, Json> {
        self.members.into_iter().collect()
    }

    /// Compact JSON text in member order.
    pub fn to_json_string(&self) -> String {
        // Serializing strings, numbers and booleans into a String cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }
}

impl Serialize for EncodedEntity {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.members.len()))?;
        for (k, v) in &self.members {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// The JSON form of a value, and whether minimal metadata must annotate it.
fn wire_value(value: &Value) -> (Json, bool) {
    match value {
        Value::String(s) => (Json::String(s.clone()), false),
        Value::Int32(i) => (Json::from(*i), false),
        Value::Int64(i) => (Json::String(i.to_string()), true),
        Value::Double(d) => match serde_json::Number::from_f64(*d) {
            Some(n) => (Json::Number(n), false),
            None => {
                let text = if d.is_nan() {
                    "NaN"
                } else if *d > 0.0 {
                    "Infinity"
                } else {
                    "-Infinity"
                };
                (Json::String(text.to_owned()), true)
            }
        },
        Value::Boolean(b) => (Json::Bool(*b), false),
        Value::DateTime(t) => (Json::String(t.to_string()), true),
        Value::Guid(g) => (Json::String(g.hyphenated().to_string()), true),
        Value::Binary(b) => (
            Json::String(base64::engine::general_purpose::STANDARD.encode(b)),
            true,
        ),
    }
}

fn annotation(name: &str, t: EdmType) -> (String, Json) {
    (
        format!("{name}@odata.type"),
        Json::String(t.as_str().to_owned()),
    )
}

/// Encodes an entity at a metadata level, members in output order; see [`EncodedEntity`].
///
/// Doubles always carry a fraction or exponent (`5.0`), so readers infer Double; non-finite
/// Doubles are the annotated strings `"NaN"`, `"Infinity"`, `"-Infinity"`; Guids are
/// lowercase; DateTimes have up to 7 fraction digits with trailing zeros dropped; Int64 is a
/// decimal string; Binary is padded base64.
pub fn encode_entity_ordered(entity: &Entity, options: &EncodeOptions) -> EncodedEntity {
    let level = options.level;
    let env = &options.envelope;
    let mut out = EncodedEntity {
        members: Vec::with_capacity(4 + entity.len() * 2),
    };
    let mut meta = |key: &str, value: &Option<String>, full_only: bool| {
        let wanted = match level {
            MetadataLevel::NoMetadata => false,
            MetadataLevel::MinimalMetadata => !full_only,
            MetadataLevel::FullMetadata => true,
        };
        if let (true, Some(v)) = (wanted, value) {
            out.push(key, Json::String(v.clone()));
        }
    };
    meta("odata.metadata", &env.metadata, false);
    meta("odata.type", &env.type_name, true);
    meta("odata.id", &env.id, true);
    meta("odata.etag", &env.etag, false);
    meta("odata.editLink", &env.edit_link, true);

    out.push(
        "PartitionKey",
        Json::String(entity.partition_key().to_owned()),
    );
    out.push("RowKey", Json::String(entity.row_key().to_owned()));
    if let Some(t) = entity.timestamp() {
        if level == MetadataLevel::FullMetadata {
            let (k, v) = annotation("Timestamp", EdmType::DateTime);
            out.push(k, v);
        }
        out.push("Timestamp", Json::String(t.to_string()));
    }
    let mut props: Vec<_> = entity.properties().iter().collect();
    props.sort_by(|a, b| order::compare_str(&a.name, &b.name));
    for p in props {
        let (json, needs_type) = wire_value(&p.value);
        // Full metadata annotates what minimal metadata does (see `EntityWriter`).
        let annotate = match level {
            MetadataLevel::NoMetadata => false,
            MetadataLevel::MinimalMetadata | MetadataLevel::FullMetadata => needs_type,
        };
        if annotate {
            let (k, v) = annotation(&p.name, p.value.edm_type());
            out.push(k, v);
        }
        out.push(p.name.clone(), json);
    }
    out
}

/// Encodes an entity as a `serde_json` map; see [`encode_entity_ordered`] for the forms.
/// (Use [`encode_entity_to_string`] or [`EncodedEntity`] when member order matters.)
pub fn encode_entity(entity: &Entity, options: &EncodeOptions) -> Map<String, Json> {
    encode_entity_ordered(entity, options).into_map()
}

/// Encodes an entity as compact JSON text with members in a deterministic order:
/// envelope, PartitionKey, RowKey, Timestamp, then custom properties sorted by name.
pub fn encode_entity_to_string(entity: &Entity, options: &EncodeOptions) -> String {
    encode_entity_ordered(entity, options).to_json_string()
}

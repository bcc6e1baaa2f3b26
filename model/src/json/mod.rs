//! The Table service's JSON wire format for entities, and the ETag.
//!
//! **Decoding** ([`decode_entity`]) reads one JSON object in the service's form and applies
//! every rule of the data model, so that one call yields the service's error code:
//!
//! * `Name@odata.type` annotations, before or after the value; an unknown type is
//!   `InvalidInput`. `odata.*` metadata (`odata.metadata`, `odata.etag`, …) and other
//!   annotations are ignored.
//! * Without an annotation a value's type is inferred: string → String, integer in i32 range
//!   → Int32, any other number → Double, `true`/`false` → Boolean.
//! * Annotated values convert leniently, as the service does: Int32/Int64 from a JSON
//!   integer or a `[+-]digits` string; Boolean from JSON or `"true"`/`"false"` in any case;
//!   Double from a number, a numeric string, `"NaN"`, `"Infinity"`, `"-Infinity"`; DateTime
//!   from the strict form (out of range → `OutOfRangeInput`); Guid from the dashed form in
//!   either case; Binary from padded base64; String from a string or a number's text.
//! * `null` is an absent property; a JSON object or array as a value, a lone surrogate
//!   escape, or any unconvertible value is `InvalidInput`; PartitionKey and RowKey must be
//!   JSON strings (missing → `PropertiesNeedValue`); the same key twice is
//!   `DuplicatePropertiesSpecified` (detected on the raw text).
//! * The Timestamp is kept or ignored per [`DecodeOptions`].
//!
//! [`decode_borrowed`] is the fast path for bulk input: the common line shapes decoded
//! straight into a reusable [`BorrowedEntity`] without `serde_json` or allocation; it
//! accepts only what [`decode_entity`] accepts (with the same result) and defers everything
//! else to it.
//!
//! **Encoding** writes the three metadata levels of [`MetadataLevel`], with an optional
//! envelope (`odata.metadata`, `odata.etag`, …) that the server fills in:
//!
//! * [`EntityWriter`] writes one entity — any [`ListProperties`] view, e.g. a borrowed row
//!   of a store — straight into a byte buffer, optionally projected to a `$select` list
//!   (`"Name":null` for a missing name), and [`CollectionWriter`] wraps rows in the
//!   collection object `{"odata.metadata":…,"value":[…]}` incrementally: the streaming
//!   path for query results;
//! * [`encode_entity_to_string`], [`encode_entity_ordered`] and [`encode_entity`] build an
//!   [`EncodedEntity`] (a member list of `serde_json` values) from an [`Entity`](crate::Entity); the
//!   writer produces the same bytes.
//!
//! ```
//! use tableq_model::json::{self, DecodeOptions, EncodeOptions, MetadataLevel};
//! use tableq_model::{ErrorCode, Value};
//!
//! let text = r#"{"PartitionKey":"p","RowKey":"r","Age":42,"Big@odata.type":"Edm.Int64","Big":"9007199254740993"}"#;
//! let e = json::decode_entity(text, &DecodeOptions::default()).unwrap();
//! assert_eq!(e.custom("Age"), Some(&Value::Int32(42)));
//! assert_eq!(e.custom("Big"), Some(&Value::Int64(9007199254740993)));
//!
//! let out = json::encode_entity_to_string(&e, &EncodeOptions::level(MetadataLevel::MinimalMetadata));
//! assert_eq!(out, r#"{"PartitionKey":"p","RowKey":"r","Age":42,"Big@odata.type":"Edm.Int64","Big":"9007199254740993"}"#);
//!
//! let err = json::decode_entity(r#"{"PartitionKey":"p","RowKey":"r","a":1,"a":2}"#,
//!                               &DecodeOptions::default()).unwrap_err();
//! assert_eq!(err.code, ErrorCode::DuplicatePropertiesSpecified);
//!
//! let t = tableq_model::DateTime::parse("2021-06-09T01:17:08.3795894Z").unwrap();
//! assert_eq!(json::etag(t), r#"W/"datetime'2021-06-09T01%3A17%3A08.3795894Z'""#);
//! assert_eq!(json::parse_etag(&json::etag(t)), Ok(t));
//! ```

mod borrowed;
mod convert;
mod decode;
mod encode;
mod etag;
mod writer;

pub use borrowed::{BorrowedEntity, decode_borrowed};
pub use convert::DecodeOptions;
pub use decode::{Payload, decode_entity, decode_entity_value, decode_payload};
pub use encode::{
    EncodeOptions, EncodedEntity, Envelope, MetadataLevel, encode_entity, encode_entity_ordered,
    encode_entity_to_string,
};
pub use etag::{etag, parse_etag};
pub use writer::{CollectionWriter, EntityWriter, EnvelopeRef, ListProperties};

#[cfg(test)]
mod tests;

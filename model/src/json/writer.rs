//! Streaming JSON output of entities: [`EntityWriter`] writes one entity straight into a byte
//! buffer (no `serde_json::Value` tree), at one [`MetadataLevel`], optionally projected to a
//! `$select` list; [`CollectionWriter`] wraps rows in the service's collection object
//! `{"odata.metadata":"<base>/$metadata#t","value":[...]}`, written incrementally (begin, one
//! row at a time, end) so a page can be streamed. Both append to a `Vec<u8>` (never fails);
//! [`EntityWriter::write_io`] writes to any `io::Write` through a reused buffer.
//!
//! Entities are read through [`ListProperties`] (an [`EntityView`] that can also list its
//! custom properties), so borrowed rows of any store are written without building an
//! [`Entity`].
//!
//! **Forms** (byte for byte those of [`super::encode_entity_to_string`] where both apply):
//! members in the order envelope (`odata.metadata`, `odata.type`, `odata.id`, `odata.etag`,
//! `odata.editLink`, each only at the levels that carry it), PartitionKey, RowKey,
//! Timestamp, then custom properties by UTF-16 ordinal name, each `Name@odata.type`
//! annotation right before its value. Minimal metadata annotates Int64, DateTime, Guid,
//! Binary and non-finite Double (not the Timestamp, as the service); full metadata the same
//! plus the Timestamp (never Int32, Boolean or a finite Double: the service's recorded
//! full-metadata replies carry none); no metadata nothing. Doubles always carry a fraction or an exponent (`5.0`), non-finite ones
//! are the strings `"NaN"`, `"Infinity"`, `"-Infinity"`; Guids are lowercase; DateTimes have
//! up to 7 fraction digits; Int64 is a decimal string; Binary is padded base64.
//!
//! **Projection** (`$select`): exactly the selected names, in the given order (pass them
//! deduplicated, as a query plan lists them): a system property only when
//! named, `"Name":null` for a name the entity lacks (no annotation), the envelope unchanged.
//!
//! ```
//! use tableq_model::json::{CollectionWriter, EntityWriter, EnvelopeRef, MetadataLevel};
//! use tableq_model::{Entity, Value};
//!
//! let mut e = Entity::new("p", "r");
//! e.set("Big", Value::Int64(5));
//! e.set("Age", Value::Int32(3));
//!
//! // One entity, minimal metadata, no envelope.
//! let writer = EntityWriter::new(MetadataLevel::MinimalMetadata);
//! let mut out = Vec::new();
//! writer.write(&mut out, &e, EnvelopeRef::default());
//! assert_eq!(out, br#"{"PartitionKey":"p","RowKey":"r","Age":3,"Big@odata.type":"Edm.Int64","Big":"5"}"#);
//!
//! // A page: the collection wrapper around projected rows, each with its ETag.
//! let select = ["Age".to_owned(), "Name".to_owned()];
//! let writer = EntityWriter::new(MetadataLevel::MinimalMetadata).with_select(Some(&select));
//! let mut out = Vec::new();
//! let mut page = CollectionWriter::begin(&mut out, MetadataLevel::MinimalMetadata,
//!                                        Some("http://h/acct/$metadata#t"));
//! let etag = r#"W/"datetime'2024-01-01T00%3A00%3A00Z'""#;
//! page.entity(&mut out, &writer, &e, EnvelopeRef { etag: Some(etag), ..EnvelopeRef::default() });
//! page.end(&mut out);
//! assert_eq!(
//!     String::from_utf8(out).unwrap(),
//!     r#"{"odata.metadata":"http://h/acct/$metadata#t","value":[{"odata.etag":"W/\"datetime'2024-01-01T00%3A00%3A00Z'\"","Age":3,"Name":null}]}"#
//! );
//! ```

use super::encode::{Envelope, MetadataLevel};
use crate::order::compare_str;
use crate::{Entity, EntityView, SystemProperty, Value, ValueRef};
use base64::Engine;

/// An [`EntityView`] that can also list its custom properties: what the writers need to
/// print a whole entity (a projection only reads by name).
pub trait ListProperties: EntityView {
    /// Calls `f` once with each custom property (system properties excluded). Any order is
    /// correct; listing in ascending byte order of names (as [`Entity::properties`] does)
    /// lets the writers skip a sort.
    fn for_each_custom(&self, f: &mut dyn FnMut(&str, ValueRef<'_>));

    /// Calls `f` once with each custom property in UTF-16 ordinal order of names (the
    /// order the writers print, [`compare_str`]) and returns `true` — when the entity
    /// knows its properties are listed so without comparing names (a store that numbers
    /// names in that order). Otherwise returns `false` without calling `f`, and the
    /// writers check the order of what [`ListProperties::for_each_custom`] lists.
    fn for_each_custom_sorted(&self, _f: &mut dyn FnMut(&str, ValueRef<'_>)) -> bool {
        false
    }
}

impl ListProperties for Entity {
    fn for_each_custom(&self, f: &mut dyn FnMut(&str, ValueRef<'_>)) {
        for p in self.properties() {
            f(&p.name, p.value.as_ref());
        }
    }
}

/// A borrowed [`Envelope`]: the `odata.*` members of one entity, filled in by whoever knows
/// the URLs (the server). Each field is written only at the levels that carry it:
/// `metadata` and `etag` at minimal and full metadata, `type_name`, `id` and `edit_link` at
/// full metadata only; nothing at no metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EnvelopeRef<'a> {
    /// `odata.metadata`, e.g. `<base>/$metadata#t/@Element` for a single entity (entities
    /// inside a collection have none).
    pub metadata: Option<&'a str>,
    /// `odata.type`, e.g. `account.t`.
    pub type_name: Option<&'a str>,
    /// `odata.id`: the entity's absolute URL.
    pub id: Option<&'a str>,
    /// `odata.etag`; see [`super::etag`].
    pub etag: Option<&'a str>,
    /// `odata.editLink`, e.g. `t(PartitionKey='p',RowKey='r')`.
    pub edit_link: Option<&'a str>,
}

impl Envelope {
    /// The borrowed form, for [`EntityWriter::write`].
    pub fn as_envelope_ref(&self) -> EnvelopeRef<'_> {
        EnvelopeRef {
            metadata: self.metadata.as_deref(),
            type_name: self.type_name.as_deref(),
            id: self.id.as_deref(),
            etag: self.etag.as_deref(),
            edit_link: self.edit_link.as_deref(),
        }
    }
}

/// Writes entities as compact JSON at one metadata level, optionally projected to a
/// `$select` list. Cheap to copy and to share between threads; see the module docs for the
/// exact forms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntityWriter<'s> {
    level: MetadataLevel,
    select: Option<&'s [String]>,
}

impl<'s> EntityWriter<'s> {
    /// A writer for `level`, writing every property.
    pub fn new(level: MetadataLevel) -> EntityWriter<'s> {
        EntityWriter {
            level,
            select: None,
        }
    }

    /// Projects to `select` (`None` = every property): exactly these names in this order,
    /// `null` for a name the entity lacks. Pass distinct names.
    pub fn with_select(mut self, select: Option<&'s [String]>) -> EntityWriter<'s> {
        self.select = select;
        self
    }

    /// The metadata level.
    pub fn level(&self) -> MetadataLevel {
        self.level
    }

    /// The `$select` list, if any.
    pub fn select(&self) -> Option<&'s [String]> {
        self.select
    }

    /// Appends one entity as a JSON object to `out` (no newline).
    pub fn write<E: ListProperties + ?Sized>(
        &self,
        out: &mut Vec<u8>,
        entity: &E,
        envelope: EnvelopeRef<'_>,
    ) {
        let mut object = Object::open(out);
        self.write_envelope(&mut object, envelope);
        match self.select {
            Some(names) => {
                for name in names {
                    match entity.get(name) {
                        Some(v) if name == SystemProperty::Timestamp.name() => {
                            object.member(name, v, self.annotates_timestamp());
                        }
                        Some(v) => object.member(name, v, self.annotates(v)),
                        None => object.null_member(name),
                    }
                }
            }
            None => {
                object.member(
                    SystemProperty::PartitionKey.name(),
                    ValueRef::String(entity.partition_key()),
                    false,
                );
                object.member(
                    SystemProperty::RowKey.name(),
                    ValueRef::String(entity.row_key()),
                    false,
                );
                if let Some(t) = entity.timestamp() {
                    let v = ValueRef::DateTime(t);
                    object.member(
                        SystemProperty::Timestamp.name(),
                        v,
                        self.annotates_timestamp(),
                    );
                }
                self.write_custom(&mut object, entity);
            }
        }
        object.close();
    }

    /// Writes one entity to an [`io::Write`](std::io::Write), encoding it into `scratch`
    /// first (a buffer to reuse from call to call, so nothing is allocated per entity).
    ///
    /// ```
    /// use tableq_model::json::{EntityWriter, MetadataLevel};
    /// let mut out: Vec<u8> = Vec::new();
    /// let mut scratch = Vec::new();
    /// EntityWriter::new(MetadataLevel::NoMetadata)
    ///     .write_io(&mut out, &mut scratch, &tableq_model::Entity::new("p", "r"), Default::default())
    ///     .unwrap();
    /// assert_eq!(out, br#"{"PartitionKey":"p","RowKey":"r"}"#);
    /// ```
    pub fn write_io<W: std::io::Write + ?Sized, E: ListProperties + ?Sized>(
        &self,
        out: &mut W,
        scratch: &mut Vec<u8>,
        entity: &E,
        envelope: EnvelopeRef<'_>,
    ) -> std::io::Result<()> {
        scratch.clear();
        self.write(scratch, entity, envelope);
        out.write_all(scratch)
    }

    /// The entity as a `String` (for tests and small tools; prefer [`EntityWriter::write`]).
    pub fn to_string<E: ListProperties + ?Sized>(
        &self,
        entity: &E,
        envelope: EnvelopeRef<'_>,
    ) -> String {
        let mut out = Vec::with_capacity(256);
        self.write(&mut out, entity, envelope);
        // Everything written is UTF-8: JSON text from `&str`s and ASCII.
        String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into())
    }

    fn write_envelope(&self, object: &mut Object<'_>, envelope: EnvelopeRef<'_>) {
        let (minimal, full) = match self.level {
            MetadataLevel::NoMetadata => return,
            MetadataLevel::MinimalMetadata => (true, false),
            MetadataLevel::FullMetadata => (true, true),
        };
        for (key, value, wanted) in [
            ("odata.metadata", envelope.metadata, minimal),
            ("odata.type", envelope.type_name, full),
            ("odata.id", envelope.id, full),
            ("odata.etag", envelope.etag, minimal),
            ("odata.editLink", envelope.edit_link, full),
        ] {
            if let (true, Some(v)) = (wanted, value) {
                object.member(key, ValueRef::String(v), false);
            }
        }
    }

    /// Whether this level annotates a (non-key) value.
    /// The Timestamp is annotated at full metadata only: the service sends it bare at
    /// minimal metadata (clients know its type), and the JS SDK then hands users a string.
    fn annotates_timestamp(&self) -> bool {
        self.level == MetadataLevel::FullMetadata
    }

    ///
    /// Full metadata annotates the same values as minimal metadata (plus the Timestamp):
    /// the service's recorded full-metadata replies carry no annotation for an Int32, a
    /// Boolean or a finite Double (docs/rest.md, "Protocol notes") — and the legacy Python SDK
    /// turns an annotated Boolean into a wrapper object that is always true.
    fn annotates(&self, value: ValueRef<'_>) -> bool {
        match self.level {
            MetadataLevel::NoMetadata => false,
            MetadataLevel::MinimalMetadata | MetadataLevel::FullMetadata => needs_annotation(value),
        }
    }

    /// Custom properties in UTF-16 ordinal name order. The common case — names listed in
    /// ascending byte order, none with a character at or above U+E000 (where byte order and
    /// UTF-16 order part) — is written as listed; anything else is collected and sorted.
    fn write_custom<E: ListProperties + ?Sized>(&self, object: &mut Object<'_>, entity: &E) {
        if entity.for_each_custom_sorted(&mut |name, value| {
            object.member(name, value, self.annotates(value));
        }) {
            return;
        }
        let rollback = object.mark();
        let mut previous = NameBuffer::default();
        let mut in_order = true;
        entity.for_each_custom(&mut |name, value| {
            if !in_order {
                return;
            }
            if !previous.precedes(name) || name.bytes().any(|b| b >= 0xEE) {
                in_order = false;
                return;
            }
            previous.set(name);
            object.member(name, value, self.annotates(value));
        });
        if in_order {
            return;
        }
        object.reset(rollback);
        let mut all: Vec<(String, Value)> = Vec::new();
        entity.for_each_custom(&mut |name, value| all.push((name.to_owned(), value.to_owned())));
        all.sort_by(|a, b| compare_str(&a.0, &b.0));
        for (name, value) in &all {
            object.member(name, value.as_ref(), self.annotates(value.as_ref()));
        }
    }
}

/// The previous property name, kept on the stack (names up to 64 bytes; a longer one ends
/// the in-order fast path).
struct NameBuffer {
    bytes: [u8; 64],
    len: Option<usize>,
}

impl Default for NameBuffer {
    fn default() -> NameBuffer {
        NameBuffer {
            bytes: [0; 64],
            len: None,
        }
    }
}

impl NameBuffer {
    /// Whether `name` comes strictly after the stored name in byte order (`true` when empty).
    fn precedes(&self, name: &str) -> bool {
        match self.len {
            None => name.len() <= self.bytes.len(),
            Some(n) => name.len() <= self.bytes.len() && self.bytes[..n] < *name.as_bytes(),
        }
    }

    fn set(&mut self, name: &str) {
        self.bytes[..name.len()].copy_from_slice(name.as_bytes());
        self.len = Some(name.len());
    }
}

/// Whether minimal and full metadata annotate this value: the types JSON cannot show.
fn needs_annotation(value: ValueRef<'_>) -> bool {
    match value {
        ValueRef::Int64(_) | ValueRef::DateTime(_) | ValueRef::Guid(_) | ValueRef::Binary(_) => {
            true
        }
        ValueRef::Double(d) => !d.is_finite(),
        ValueRef::String(_) | ValueRef::Int32(_) | ValueRef::Boolean(_) => false,
    }
}

/// A JSON object being written: tracks the separator.
struct Object<'o> {
    out: &'o mut Vec<u8>,
    empty: bool,
}

impl<'o> Object<'o> {
    fn open(out: &'o mut Vec<u8>) -> Object<'o> {
        out.push(b'{');
        Object { out, empty: true }
    }

    fn close(self) {
        self.out.push(b'}');
    }

    fn mark(&self) -> (usize, bool) {
        (self.out.len(), self.empty)
    }

    fn reset(&mut self, (len, empty): (usize, bool)) {
        self.out.truncate(len);
        self.empty = empty;
    }

    fn key(&mut self, key: &str) {
        if !self.empty {
            self.out.push(b',');
        }
        self.empty = false;
        write_json_string(self.out, key);
        self.out.push(b':');
    }

    fn null_member(&mut self, name: &str) {
        self.key(name);
        self.out.extend_from_slice(b"null");
    }

    /// `"Name@odata.type":"Edm.X",` when `annotate`, then `"Name":<value>`.
    fn member(&mut self, name: &str, value: ValueRef<'_>, annotate: bool) {
        if annotate {
            if !self.empty {
                self.out.push(b',');
            }
            self.empty = false;
            // The name as a JSON string, its closing quote replaced by the suffix.
            write_json_string(self.out, name);
            self.out.pop();
            self.out.extend_from_slice(b"@odata.type\":\"");
            self.out
                .extend_from_slice(value.edm_type().as_str().as_bytes());
            self.out.push(b'"');
        }
        self.key(name);
        write_value(self.out, value);
    }
}

/// Appends `s` as a JSON string, escaped exactly as `serde_json` escapes it: `"`, `\` and
/// the control characters U+0000–U+001F, nothing else. Text without any of those (every
/// property name, most values) is copied as it is.
fn write_json_string(out: &mut Vec<u8>, s: &str) {
    if !needs_escape(s.as_bytes()) {
        out.reserve(s.len() + 2);
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
        return;
    }
    // Writing into a Vec<u8> cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

/// Whether `s` holds a byte JSON escapes: `"`, `\\` or one below 0x20. Eight bytes at a
/// time (a byte-wise loop was ~5 % of a page's CPU): the usual "has a zero byte" and
/// "has a byte below n" word tests, exact for whether any byte qualifies.
#[inline]
fn needs_escape(s: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let (words, rest) = s.as_chunks::<8>();
    for word in words {
        let w = u64::from_le_bytes(*word);
        let quote = w ^ (ONES * u64::from(b'"'));
        let backslash = w ^ (ONES * u64::from(b'\\'));
        let below_space = w.wrapping_sub(ONES * 0x20) & !w;
        let zero_quote = quote.wrapping_sub(ONES) & !quote;
        let zero_backslash = backslash.wrapping_sub(ONES) & !backslash;
        if (below_space | zero_quote | zero_backslash) & HIGHS != 0 {
            return true;
        }
    }
    rest.iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\')
}

/// Appends the JSON form of a value (see the module docs).
fn write_value(out: &mut Vec<u8>, value: ValueRef<'_>) {
    // Writing into a Vec<u8> cannot fail: the results below are all `Ok`.
    match value {
        ValueRef::String(s) => write_json_string(out, s),
        ValueRef::Int32(i) => {
            let _ = serde_json::to_writer(&mut *out, &i);
        }
        ValueRef::Int64(i) => {
            out.push(b'"');
            let _ = serde_json::to_writer(&mut *out, &i);
            out.push(b'"');
        }
        ValueRef::Double(d) if d.is_finite() => {
            // serde_json (ryu) always writes a fraction or an exponent.
            let _ = serde_json::to_writer(&mut *out, &d);
        }
        ValueRef::Double(d) => out.extend_from_slice(if d.is_nan() {
            b"\"NaN\""
        } else if d > 0.0 {
            b"\"Infinity\""
        } else {
            b"\"-Infinity\""
        }),
        ValueRef::Boolean(b) => out.extend_from_slice(if b { b"true" } else { b"false" }),
        ValueRef::DateTime(t) => {
            let (text, len) = t.render();
            out.push(b'"');
            out.extend_from_slice(&text[..len]);
            out.push(b'"');
        }
        ValueRef::Guid(g) => {
            let mut buf = uuid::Uuid::encode_buffer();
            out.push(b'"');
            out.extend_from_slice(g.hyphenated().encode_lower(&mut buf).as_bytes());
            out.push(b'"');
        }
        ValueRef::Binary(bytes) => {
            let engine = base64::engine::general_purpose::STANDARD;
            out.push(b'"');
            let start = out.len();
            let len = base64::encoded_len(bytes.len(), true).unwrap_or(0);
            out.resize(start + len, 0);
            if engine.encode_slice(bytes, &mut out[start..]).is_err() {
                // Not reachable (the slice has the encoded length); stay correct anyway.
                out.truncate(start);
                out.extend_from_slice(engine.encode(bytes).as_bytes());
            }
            out.push(b'"');
        }
    }
}

/// The collection object of a query response,
/// `{"odata.metadata":"<base>/$metadata#t","value":[<row>,<row>,...]}` (`{"value":[...]}`
/// at no metadata), written incrementally: [`begin`](CollectionWriter::begin), one
/// [`entity`](CollectionWriter::entity) (or [`item`](CollectionWriter::item) + your own JSON
/// value) per row, [`end`](CollectionWriter::end). Bytes can be sent after any call, so a
/// server can stream a page.
#[derive(Debug)]
#[must_use = "a collection must be closed with `end`"]
pub struct CollectionWriter {
    rows: usize,
}

impl CollectionWriter {
    /// Writes the opening `{"odata.metadata":"…","value":[` (the metadata URL only at
    /// minimal and full metadata, and only if given).
    pub fn begin(
        out: &mut Vec<u8>,
        level: MetadataLevel,
        metadata: Option<&str>,
    ) -> CollectionWriter {
        out.push(b'{');
        if let (true, Some(url)) = (level != MetadataLevel::NoMetadata, metadata) {
            out.extend_from_slice(b"\"odata.metadata\":");
            write_json_string(out, url);
            out.push(b',');
        }
        out.extend_from_slice(b"\"value\":[");
        CollectionWriter { rows: 0 }
    }

    /// Writes the separator before a row; the caller then appends one JSON value (e.g.
    /// `{"TableName":"t"}` for a table listing).
    pub fn item(&mut self, out: &mut Vec<u8>) {
        if self.rows > 0 {
            out.push(b',');
        }
        self.rows += 1;
    }

    /// Writes one entity row with `writer` and its per-entity envelope (ETag, id, edit link;
    /// `envelope.metadata` is normally `None` inside a collection).
    pub fn entity<E: ListProperties + ?Sized>(
        &mut self,
        out: &mut Vec<u8>,
        writer: &EntityWriter<'_>,
        entity: &E,
        envelope: EnvelopeRef<'_>,
    ) {
        self.item(out);
        writer.write(out, entity, envelope);
    }

    /// Rows written so far.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Writes the closing `]}`.
    pub fn end(self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"]}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The copy of text that needs no escape and the escaping of the rest are
        /// serde_json's, byte for byte.
        #[test]
        fn strings_are_written_as_serde_json_writes_them(
            s in prop_oneof![
                "[a-zA-Z0-9_ ]{0,12}",
                "[\u{0}-\u{7F}]{0,12}",
                ".{0,12}",
                Just("\"\\\u{1F}\u{7F}é\u{10000}".to_owned()),
            ]
        ) {
            let mut out = Vec::new();
            write_json_string(&mut out, &s);
            prop_assert_eq!(out, serde_json::to_vec(&s).unwrap());
        }

        /// The word-wise test agrees with a byte-wise one, wherever in a word the byte is.
        #[test]
        fn needs_escape_is_the_bytewise_test(
            bytes in proptest::collection::vec(
                prop_oneof![Just(0u8), Just(0x1F), Just(0x20), Just(b'"'), Just(b'\\'),
                            Just(0x7F), Just(0x80), Just(0xFF), Just(0x21), any::<u8>()],
                0..40,
            )
        ) {
            let bytewise = bytes.iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\');
            prop_assert_eq!(needs_escape(&bytes), bytewise);
        }
    }
}

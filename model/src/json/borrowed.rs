//! The fast decoding path: [`decode_borrowed`] reads the common shapes of entity JSON
//! straight from the text into a reusable [`BorrowedEntity`] whose strings borrow the text —
//! no `serde_json` pass, no allocation per line once the buffers are warm.
//!
//! **Contract: accept or defer, never judge.** `decode_borrowed` returns `true` only for a
//! line that [`decode_entity`](super::decode_entity) accepts with the same options, and then
//! the view holds exactly the entity `decode_entity` returns. Anything it does not handle —
//! escapes in strings, `null`, nested values, duplicate keys, an unknown or mismatched
//! annotation, any value that does not convert, any rule of the data model broken — makes it
//! return `false`, and the caller runs `decode_entity`, which accepts the line or reports
//! the service's error. The conversions themselves are the decoder's own functions, so the
//! two paths cannot drift; a property test checks the contract on random and mutated lines.
//!
//! Handled: one JSON object (JSON whitespace allowed), keys and string values without
//! backslash escapes or control characters, numbers, `true`/`false`, `Name@odata.type`
//! annotations of the eight Edm types, ignored `odata.*` keys and other annotations.
//!
//! ```
//! use tableq_model::json::{BorrowedEntity, DecodeOptions, decode_borrowed, decode_entity};
//! use tableq_model::{EntityView, ValueRef};
//!
//! let line = r#"{"PartitionKey":"p","RowKey":"r","Age":42,"Big@odata.type":"Edm.Int64","Big":"7"}"#;
//! let mut view = BorrowedEntity::new();
//! assert!(decode_borrowed(line, &DecodeOptions::STORED, &mut view));
//! assert!(matches!(view.custom("Big"), Some(ValueRef::Int64(7))));
//! assert_eq!(view.to_entity(), decode_entity(line, &DecodeOptions::STORED).unwrap());
//!
//! // An escape: deferred to `decode_entity` (which accepts this one).
//! assert!(!decode_borrowed(r#"{"PartitionKey":"p","RowKey":"r","S":"a\"b"}"#,
//!                          &DecodeOptions::STORED, &mut view));
//! ```

use super::convert::{DecodeOptions, KeyKind, classify, finite_double, from_string};
use super::writer::ListProperties;
use crate::order::utf16_len;
use crate::validate::{self, MAX_BINARY_LEN, MAX_ENTITY_SIZE, MAX_STRING_LEN};
use crate::{DateTime, EdmType, Entity, EntityView, Property, SystemProperty, Value, ValueRef};
use base64::Engine;

/// An entity decoded by [`decode_borrowed`], its strings borrowed from the JSON text. Reuse
/// one per thread (or per buffer of lines): its vectors keep their capacity.
#[derive(Debug, Default)]
pub struct BorrowedEntity<'a> {
    partition_key: &'a str,
    row_key: &'a str,
    timestamp: Option<DateTime>,
    /// Custom properties sorted by name (byte order); names are distinct.
    properties: Vec<(&'a str, Slot<'a>)>,
    /// Decoded Binary values, indexed by [`Slot::Binary`].
    binary: Vec<u8>,
    /// Scratch: the object's members in text order.
    members: Vec<(&'a str, Token<'a>)>,
    /// Scratch: keys for the duplicate check (many members), and the annotations.
    keys: Vec<&'a str>,
    types: Vec<(&'a str, EdmType)>,
}

/// A property value; strings borrow the text, Binary bytes live in `binary`.
#[derive(Debug, Clone, Copy)]
enum Slot<'a> {
    String(&'a str),
    Int32(i32),
    Int64(i64),
    Double(f64),
    Boolean(bool),
    DateTime(DateTime),
    Guid(uuid::Uuid),
    Binary(usize, usize),
}

/// A JSON value of the handled shapes.
#[derive(Debug, Clone, Copy)]
enum Token<'a> {
    /// A string's content (no escapes).
    String(&'a str),
    /// A number's text.
    Number(&'a str),
    Bool(bool),
}

impl<'a> BorrowedEntity<'a> {
    /// An empty view, to pass to [`decode_borrowed`].
    pub fn new() -> BorrowedEntity<'a> {
        BorrowedEntity::default()
    }

    /// The number of custom properties.
    pub fn len(&self) -> usize {
        self.properties.len()
    }

    /// Whether the entity has no custom properties.
    pub fn is_empty(&self) -> bool {
        self.properties.is_empty()
    }

    /// The entity as an owned [`Entity`].
    pub fn to_entity(&self) -> Entity {
        Entity::with_properties(
            self.partition_key,
            self.row_key,
            self.timestamp,
            self.properties.iter().map(|(name, slot)| Property {
                name: (*name).to_owned(),
                value: self.value(*slot).to_owned(),
            }),
        )
    }

    fn value(&self, slot: Slot<'a>) -> ValueRef<'_> {
        match slot {
            Slot::String(s) => ValueRef::String(s),
            Slot::Int32(i) => ValueRef::Int32(i),
            Slot::Int64(i) => ValueRef::Int64(i),
            Slot::Double(d) => ValueRef::Double(d),
            Slot::Boolean(b) => ValueRef::Boolean(b),
            Slot::DateTime(t) => ValueRef::DateTime(t),
            Slot::Guid(g) => ValueRef::Guid(g),
            Slot::Binary(start, end) => ValueRef::Binary(&self.binary[start..end]),
        }
    }

    fn clear(&mut self) {
        self.partition_key = "";
        self.row_key = "";
        self.timestamp = None;
        self.properties.clear();
        self.binary.clear();
        self.members.clear();
        self.keys.clear();
        self.types.clear();
    }
}

impl EntityView for BorrowedEntity<'_> {
    fn partition_key(&self) -> &str {
        self.partition_key
    }
    fn row_key(&self) -> &str {
        self.row_key
    }
    fn timestamp(&self) -> Option<DateTime> {
        self.timestamp
    }
    fn custom(&self, name: &str) -> Option<ValueRef<'_>> {
        self.properties
            .binary_search_by(|(n, _)| (*n).cmp(name))
            .ok()
            .map(|i| self.value(self.properties[i].1))
    }
}

impl ListProperties for BorrowedEntity<'_> {
    fn for_each_custom(&self, f: &mut dyn FnMut(&str, ValueRef<'_>)) {
        for (name, slot) in &self.properties {
            f(name, self.value(*slot));
        }
    }
}

/// Decodes `text` into `into` when the line has one of the handled shapes and is valid;
/// returns `false` otherwise (`into` is then unspecified): call
/// [`decode_entity`](super::decode_entity) for the verdict. See the module docs.
pub fn decode_borrowed<'a>(
    text: &'a str,
    options: &DecodeOptions,
    into: &mut BorrowedEntity<'a>,
) -> bool {
    into.clear();
    decode(text, options, into).is_some()
}

fn decode<'a>(text: &'a str, options: &DecodeOptions, e: &mut BorrowedEntity<'a>) -> Option<()> {
    scan_object(text, &mut e.members)?;

    // Duplicate keys (raw keys are the decoded keys: there are no escapes).
    if has_duplicates(&e.members, &mut e.keys) {
        return None;
    }
    // One pass over the members: annotations, system properties, and the custom ones
    // (moved to the front of `members`, in text order).
    let (mut pk, mut rk, mut ts) = (None, None, None);
    let mut custom = 0usize;
    for i in 0..e.members.len() {
        let (key, token) = e.members[i];
        match classify(key) {
            KeyKind::TypeAnnotation(name) => {
                let Token::String(t) = token else { return None };
                e.types.push((name, t.parse::<EdmType>().ok()?));
            }
            KeyKind::Ignored => {}
            KeyKind::Property => match key {
                "PartitionKey" => pk = Some(token),
                "RowKey" => rk = Some(token),
                "Timestamp" => ts = Some(token),
                _ => {
                    e.members[custom] = (key, token);
                    custom += 1;
                }
            },
        }
    }
    e.members.truncate(custom);
    let declared = |types: &[(&str, EdmType)], name: &str| {
        types.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
    };

    for (which, token) in [
        (SystemProperty::PartitionKey, pk),
        (SystemProperty::RowKey, rk),
    ] {
        if declared(&e.types, which.name()).is_some_and(|t| t != EdmType::String) {
            return None;
        }
        let Some(Token::String(value)) = token else {
            return None;
        };
        validate::key(which, value).ok()?;
        match which {
            SystemProperty::PartitionKey => e.partition_key = value,
            _ => e.row_key = value,
        }
    }
    if let (true, Some(token)) = (options.keep_timestamp, ts) {
        if declared(&e.types, "Timestamp").is_some_and(|t| t != EdmType::DateTime) {
            return None;
        }
        let Token::String(s) = token else { return None };
        e.timestamp = Some(DateTime::parse(s).ok()?);
    }
    validate::property_count(custom).ok()?;

    let mut size = 4 + utf16_len(e.partition_key) * 2 + utf16_len(e.row_key) * 2;
    for i in 0..e.members.len() {
        let (name, token) = e.members[i];
        validate::property_name(name).ok()?;
        let slot = convert(name, token, declared(&e.types, name), &mut e.binary)?;
        size += 8
            + utf16_len(name) * 2
            + match slot {
                Slot::String(s) => {
                    let len = utf16_len(s);
                    if len > MAX_STRING_LEN {
                        return None;
                    }
                    len * 2 + 4
                }
                Slot::Binary(start, end) => {
                    if end - start > MAX_BINARY_LEN {
                        return None;
                    }
                    end - start + 4
                }
                Slot::Int32(_) => 4,
                Slot::Int64(_) | Slot::Double(_) | Slot::DateTime(_) => 8,
                Slot::Boolean(_) => 1,
                Slot::Guid(_) => 16,
            };
        e.properties.push((name, slot));
    }
    if size > MAX_ENTITY_SIZE {
        return None;
    }
    e.properties.sort_unstable_by(|a, b| a.0.cmp(b.0));
    Some(())
}

/// Whether two members have the same key: a 64-slot open-addressing table on a cheap hash
/// of the key's ends and length (a typical entity has 10–20 members), sorting the keys when
/// there are many.
fn has_duplicates<'a>(members: &[(&'a str, Token<'a>)], keys: &mut Vec<&'a str>) -> bool {
    const SLOTS: usize = 64;
    if members.len() > SLOTS * 3 / 4 {
        keys.clear();
        keys.extend(members.iter().map(|(k, _)| *k));
        keys.sort_unstable();
        return keys.windows(2).any(|w| w[0] == w[1]);
    }
    // Member index + 1 per slot; 0 = empty.
    let mut table = [0u8; SLOTS];
    for (i, (key, _)) in members.iter().enumerate() {
        let mut slot = key_hash(key.as_bytes()) as usize % SLOTS;
        loop {
            match table[slot] {
                0 => {
                    table[slot] = i as u8 + 1;
                    break;
                }
                j if members[usize::from(j) - 1].0 == *key => return true,
                _ => slot = (slot + 1) % SLOTS,
            }
        }
    }
    false
}

/// A cheap hash of a key: its length and five of its bytes (equal hashes are compared in
/// full, so collisions cost only time).
fn key_hash(k: &[u8]) -> u64 {
    let n = k.len();
    let at = |i: usize| u64::from(k.get(i).copied().unwrap_or(0));
    let h = n as u64
        | at(0) << 16
        | at(1) << 24
        | at(n / 2) << 32
        | at(n.wrapping_sub(2)) << 40
        | at(n.wrapping_sub(1)) << 48;
    h.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32
}

/// The value of one custom property, by the decoder's rules (see `decode::convert`).
fn convert<'a>(
    name: &str,
    token: Token<'a>,
    declared: Option<EdmType>,
    binary: &mut Vec<u8>,
) -> Option<Slot<'a>> {
    Some(match token {
        Token::Bool(b) => match declared {
            None | Some(EdmType::Boolean) => Slot::Boolean(b),
            Some(_) => return None,
        },
        Token::String(s) => match declared {
            None | Some(EdmType::String) => Slot::String(s),
            Some(EdmType::Binary) => {
                let start = binary.len();
                base64::engine::general_purpose::STANDARD
                    .decode_vec(s, binary)
                    .ok()?;
                Slot::Binary(start, binary.len())
            }
            Some(t) => match from_string(name, s, t).ok()? {
                Value::Int32(i) => Slot::Int32(i),
                Value::Int64(i) => Slot::Int64(i),
                Value::Double(d) => Slot::Double(d),
                Value::Boolean(b) => Slot::Boolean(b),
                Value::DateTime(t) => Slot::DateTime(t),
                Value::Guid(g) => Slot::Guid(g),
                Value::String(_) | Value::Binary(_) => return None,
            },
        },
        Token::Number(text) => {
            let integer = !text.contains(['.', 'e', 'E']);
            match declared {
                None if integer => match text.parse::<i32>() {
                    Ok(i) => Slot::Int32(i),
                    Err(_) => Slot::Double(finite_double(name, text).ok()?),
                },
                None | Some(EdmType::Double) => Slot::Double(finite_double(name, text).ok()?),
                Some(EdmType::String) => Slot::String(text),
                Some(EdmType::Int32) if integer => Slot::Int32(text.parse().ok()?),
                Some(EdmType::Int64) if integer => Slot::Int64(text.parse().ok()?),
                Some(_) => return None,
            }
        }
    })
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = b.get(i) {
        i += 1;
    }
    i
}

/// Splits one JSON object into its members, or `None` for anything outside the handled
/// shapes (including every syntax error).
fn scan_object<'a>(text: &'a str, members: &mut Vec<(&'a str, Token<'a>)>) -> Option<()> {
    let b = text.as_bytes();
    let mut i = skip_ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i = skip_ws(b, i + 1);
    if b.get(i) == Some(&b'}') {
        // `{}` has no keys: the decoder reports it.
        return None;
    }
    loop {
        let (key, next) = scan_string(text, i)?;
        i = skip_ws(b, next);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = skip_ws(b, i + 1);
        let (token, next) = match b.get(i)? {
            b'"' => {
                let (s, next) = scan_string(text, i)?;
                (Token::String(s), next)
            }
            b't' if b[i..].starts_with(b"true") => (Token::Bool(true), i + 4),
            b'f' if b[i..].starts_with(b"false") => (Token::Bool(false), i + 5),
            b'-' | b'0'..=b'9' => {
                let end = scan_number(b, i)?;
                (Token::Number(&text[i..end]), end)
            }
            _ => return None,
        };
        members.push((key, token));
        i = skip_ws(b, next);
        match b.get(i)? {
            b',' => i = skip_ws(b, i + 1),
            b'}' => {
                return (skip_ws(b, i + 1) == b.len()).then_some(());
            }
            _ => return None,
        }
    }
}

/// A string starting at `b[i] == '"'` without escapes or control characters: its content
/// and the index after the closing quote.
fn scan_string(text: &str, i: usize) -> Option<(&str, usize)> {
    let b = text.as_bytes();
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let start = i + 1;
    let mut j = start;
    // Eight bytes at a time while none is `"`, `\\` or a control character (a candidate
    // word — possibly a false alarm — is then scanned byte by byte).
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    while let Some(word) = b.get(j..j + 8) {
        let x = u64::from_le_bytes(<[u8; 8]>::try_from(word).ok()?);
        let special = zero_byte(x ^ (ONES * u64::from(b'"')))
            | zero_byte(x ^ (ONES * u64::from(b'\\')))
            | (x.wrapping_sub(ONES * 0x20) & !x & HIGH);
        if special != 0 {
            break;
        }
        j += 8;
    }
    loop {
        match *b.get(j)? {
            b'"' => return Some((&text[start..j], j + 1)),
            b'\\' | 0..=0x1F => return None,
            _ => j += 1,
        }
    }
}

/// A JSON number starting at `i` (`-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`): the
/// index after it.
fn scan_number(b: &[u8], mut i: usize) -> Option<usize> {
    let digits = |b: &[u8], i: usize| b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    match b.get(i)? {
        b'0' => i += 1,
        b'1'..=b'9' => i += digits(b, i),
        _ => return None,
    }
    if b.get(i) == Some(&b'.') {
        let n = digits(b, i + 1);
        if n == 0 {
            return None;
        }
        i += 1 + n;
    }
    if let Some(b'e' | b'E') = b.get(i) {
        i += 1;
        if let Some(b'+' | b'-') = b.get(i) {
            i += 1;
        }
        let n = digits(b, i);
        if n == 0 {
            return None;
        }
        i += n;
    }
    Some(i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::decode_entity;

    fn fast(text: &str) -> Option<Entity> {
        let mut view = BorrowedEntity::new();
        decode_borrowed(text, &DecodeOptions::STORED, &mut view).then(|| view.to_entity())
    }

    #[test]
    fn handles_the_common_shape_like_the_decoder() {
        let line = r#" { "PartitionKey" : "p" ,"RowKey":"r","Timestamp":"2024-01-01T00:00:00Z","A":1,"B":-2.5e3,"C":true,"D":"x","odata.etag":"e","E@odata.type":"Edm.Guid","E":"A455C695-DF98-5678-AAAA-81D3367E5A34","F@odata.type":"Edm.Binary","F":"AAE=","G":3000000000,"H@odata.type":"Edm.String","H":12} "#;
        assert_eq!(fast(line), decode_entity(line, &DecodeOptions::STORED).ok());
        assert!(fast(line).is_some());
    }

    #[test]
    fn defers_what_it_does_not_handle() {
        for line in [
            r#"{"PartitionKey":"p","RowKey":"r","S":"a\"b"}"#,
            r#"{"PartitionKey":"p","RowKey":"r","S":null}"#,
            r#"{"PartitionKey":"p","RowKey":"r","S":[1]}"#,
            r#"{"PartitionKey":"p","RowKey":"r","S":1,"S":2}"#,
            r#"{"PartitionKey":"p","RowKey":"r","S":01}"#,
            r#"{"PartitionKey":"p","RowKey":"r","S":1.}"#,
            r#"{"PartitionKey":"p","RowKey":"r","S":1e999}"#,
            r#"{"PartitionKey":"p","RowKey":"r"} x"#,
            r#"{"PartitionKey":"p","RowKey":"r",}"#,
            r#"{"PartitionKey":"p"}"#,
            r#"{"PartitionKey":"p","RowKey":"a/b"}"#,
            r#"{"PartitionKey":"p","RowKey":"r","S@odata.type":"Edm.Int16","S":1}"#,
            r#"{"PartitionKey":"p","RowKey":"r","S@odata.type":"Edm.Int32","S":"x"}"#,
            r#"{"PartitionKey":"p","RowKey":"r","Timestamp":"yesterday"}"#,
            r#"{"PartitionKey":"p","RowKey":"r","first-name":1}"#,
            "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"S\":\"\t\"}",
            "\u{FEFF}{\"PartitionKey\":\"p\",\"RowKey\":\"r\"}",
            "{}",
            "[]",
        ] {
            assert!(fast(line).is_none(), "{line}");
        }
    }

    #[test]
    fn strings_are_scanned_to_the_first_special_byte_at_any_position() {
        for len in 0..24 {
            for (special, ends) in [(b'"', true), (b'\\', false), (0x01, false), (0x1F, false)] {
                let mut text = vec![b'"'];
                text.extend(std::iter::repeat_n(b'a', len));
                text.push(special);
                text.extend_from_slice("é\"xyz".as_bytes());
                let text = String::from_utf8(text).unwrap();
                let got = scan_string(&text, 0);
                if ends {
                    assert_eq!(got, Some((&text[1..1 + len], len + 2)), "{len}");
                } else {
                    assert_eq!(got, None, "{len} {special}");
                }
            }
            let text = format!("\"{}é€\u{1F600}\"", "b".repeat(len));
            assert_eq!(scan_string(&text, 0).map(|s| s.1), Some(text.len()));
        }
    }

    #[test]
    fn duplicates_among_many_members_are_deferred() {
        let many: Vec<String> = (0..60).map(|i| format!("\"P{i}\":{i}")).collect();
        let line = format!(
            "{{\"PartitionKey\":\"p\",\"RowKey\":\"r\",{}}}",
            many.join(",")
        );
        assert!(fast(&line).is_some());
        let line = format!(
            "{{\"PartitionKey\":\"p\",\"RowKey\":\"r\",{},\"P7\":1}}",
            many.join(",")
        );
        assert!(fast(&line).is_none());
        assert!(fast(r#"{"PartitionKey":"p","RowKey":"r","A":1,"B":2,"A":3}"#).is_none());
    }

    #[test]
    fn a_payload_timestamp_is_ignored_for_the_service() {
        let line = r#"{"PartitionKey":"p","RowKey":"r","Timestamp":"not a date"}"#;
        let mut view = BorrowedEntity::new();
        assert!(decode_borrowed(line, &DecodeOptions::SERVICE, &mut view));
        assert_eq!(view.timestamp(), None);
    }
}

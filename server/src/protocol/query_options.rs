//! The query string: OData options (`$filter`, `$select`, `$top`, `$format`) and the
//! continuation parameters (`NextPartitionKey`, `NextRowKey`, `NextTableName`).
//!
//! Names and values are percent-decoded as UTF-8, with `+` read as a space (form encoding;
//! clients send a literal plus as `%2B`). Every other `$`-option (`$orderby`, `$skip`,
//! `$expand`, …) is rejected with 400 `InvalidInput` naming it; an option given twice is
//! rejected too; an empty `$filter` or `$select` (`$select=&$filter=`) is absent. Parameters
//! without `$` that this server does not use (`timeout`, SAS
//! parameters, …) are ignored.
//!
//! ```
//! use tableq_server::query_options::QueryParams;
//! let q = QueryParams::parse(Some("$filter=Age%20gt%2030&$top=5&NextPartitionKey=1!4!cA&timeout=30")).unwrap();
//! assert_eq!(q.filter.as_deref(), Some("Age gt 30"));
//! assert_eq!(q.top.as_deref(), Some("5"));
//! assert_eq!(q.next_partition_key.as_deref(), Some("1!4!cA"));
//! assert_eq!(QueryParams::parse(Some("$orderby=Age")).unwrap_err().code(), "InvalidInput");
//! ```

use std::borrow::Cow;
use tableq_model::ErrorCode;
use tableq_parser::QueryOption;
use tableq_planner::Predicate;

use crate::protocol::error::ApiError;

/// The query parameters this server reads, raw (decoded, not yet parsed).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueryParams {
    /// `$filter`.
    pub filter: Option<String>,
    /// `$select` (absent when empty).
    pub select: Option<String>,
    /// `$select` as given, even empty (`odata.metadata` repeats it).
    pub select_given: Option<String>,
    /// `$top`.
    pub top: Option<String>,
    /// `$format`.
    pub format: Option<String>,
    /// `NextPartitionKey` (a continuation token).
    pub next_partition_key: Option<String>,
    /// `NextRowKey` (a continuation token).
    pub next_row_key: Option<String>,
    /// `NextTableName` (a continuation token).
    pub next_table_name: Option<String>,
    /// Not a parameter of the URL: a condition authorization adds to an entity query (a SAS
    /// token's key range), joined to the parsed `$filter` as a typed predicate
    /// ([`tableq_planner::Query::restrict`]), so it never counts against the comparison
    /// limit nor shows in a diagnostic.
    pub restriction: Option<Predicate>,
}

/// Percent-decodes one name or value of a query string as UTF-8, with `+` read as a space;
/// `None` when the bytes are not UTF-8. A part without `%` or `+` (most SAS fields and
/// option names) is returned as it is, without allocating; any other is decoded in one
/// pass into one buffer.
pub(crate) fn decode_component(part: &str) -> Option<Cow<'_, str>> {
    if !part.contains(['%', '+']) {
        return Some(Cow::Borrowed(part));
    }
    let mut decoded = Vec::with_capacity(part.len());
    for_each_decoded(part.as_bytes(), |run| decoded.extend_from_slice(run));
    String::from_utf8(decoded).ok().map(Cow::Owned)
}

/// Whether `part` percent-decodes to UTF-8 ([`decode_component`] would return `Some`),
/// without allocating for a part of up to 256 bytes.
pub(crate) fn decodes_to_utf8(part: &str) -> bool {
    /// Decoding never lengthens a part: a part this long or shorter fits the buffer.
    const STACK_BYTES: usize = 256;
    if !part.contains('%') {
        // `part` is UTF-8 already, and `+` → space keeps it so.
        return true;
    }
    if part.len() > STACK_BYTES {
        return decode_component(part).is_some();
    }
    let mut buffer = [0u8; STACK_BYTES];
    let mut len = 0;
    for_each_decoded(part.as_bytes(), |run| {
        // Decoding never lengthens: the runs of a part this short fit.
        if let Some(slot) = buffer.get_mut(len..len + run.len()) {
            slot.copy_from_slice(run);
        }
        len += run.len();
    });
    match buffer.get(..len) {
        Some(decoded) => std::str::from_utf8(decoded).is_ok(),
        None => decode_component(part).is_some(),
    }
}

/// Calls `emit` with the decoded bytes of `part`, run by run: `+` is a space, `%` with two
/// hex digits is the byte they name, and every other byte (a `%` without two hex digits
/// included) is itself — exactly `percent_decode` after replacing `+` with a space. The
/// bytes between escapes are passed on as whole slices.
fn for_each_decoded(part: &[u8], mut emit: impl FnMut(&[u8])) {
    let hex = |b: Option<&u8>| b.and_then(|&b| char::from(b).to_digit(16));
    let mut rest = part;
    while let Some(at) = memchr::memchr2(b'%', b'+', rest) {
        emit(&rest[..at]);
        let (byte, used) = match rest[at] {
            b'+' => (b' ', 1),
            _ => match (hex(rest.get(at + 1)), hex(rest.get(at + 2))) {
                // Two hex digits: a value below 256.
                (Some(high), Some(low)) => ((high * 16 + low) as u8, 3),
                _ => (b'%', 1),
            },
        };
        emit(&[byte]);
        rest = &rest[at + used..];
    }
    emit(rest);
}

fn not_utf8(part: &str) -> ApiError {
    ApiError::new(
        ErrorCode::InvalidInput,
        format!("the query parameter `{part}` is not UTF-8 after percent-decoding"),
    )
}

fn decode(part: &str) -> Result<Cow<'_, str>, ApiError> {
    decode_component(part).ok_or_else(|| not_utf8(part))
}

/// Where a query parameter goes, by its (decoded) name.
enum Slot {
    Format,
    Filter,
    Select,
    Top,
    NextPartitionKey,
    NextRowKey,
    NextTableName,
    /// A parameter this server does not use (`timeout`, SAS fields, …).
    Ignored,
    /// A `$`-option the service does not support: refused (once its value is checked).
    Unsupported(tableq_parser::ParseError),
}

impl Slot {
    fn of(name: &str) -> Slot {
        if name == "$format" {
            return Slot::Format;
        }
        match QueryOption::from_name(name) {
            Ok(Some(QueryOption::Filter)) => Slot::Filter,
            Ok(Some(QueryOption::Select)) => Slot::Select,
            Ok(Some(QueryOption::Top)) => Slot::Top,
            Ok(None) => match name {
                "NextPartitionKey" => Slot::NextPartitionKey,
                "NextRowKey" => Slot::NextRowKey,
                "NextTableName" => Slot::NextTableName,
                _ => Slot::Ignored,
            },
            Err(e) => Slot::Unsupported(e),
        }
    }
}

impl QueryParams {
    /// Reads a raw query string (without the `?`).
    pub fn parse(query: Option<&str>) -> Result<QueryParams, ApiError> {
        let mut out = QueryParams::default();
        let Some(query) = query else {
            return Ok(out);
        };
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (raw_name, raw_value) = pair.split_once('=').unwrap_or((pair, ""));
            let name = decode(raw_name)?;
            let slot = match Slot::of(&name) {
                // Only checked: every value must decode, used or not.
                Slot::Ignored if decodes_to_utf8(raw_value) => continue,
                Slot::Ignored => return Err(not_utf8(raw_value)),
                slot => slot,
            };
            let value = decode(raw_value)?;
            if matches!(slot, Slot::Select) && out.select_given.is_none() {
                out.select_given = Some(value.clone().into_owned());
            }
            let slot = match slot {
                Slot::Format => &mut out.format,
                Slot::Filter => &mut out.filter,
                Slot::Select => &mut out.select,
                Slot::Top => &mut out.top,
                Slot::NextPartitionKey => &mut out.next_partition_key,
                Slot::NextRowKey => &mut out.next_row_key,
                Slot::NextTableName => &mut out.next_table_name,
                Slot::Ignored => continue,
                Slot::Unsupported(e) => {
                    let mut detail = e.message();
                    if let Some(hint) = e.hint() {
                        detail.push_str(": ");
                        detail.push_str(hint);
                    }
                    return Err(ApiError::new(ErrorCode::InvalidInput, detail));
                }
            };
            // An empty `$filter=` or `$select=` is an absent option (Storage Explorer's first
            // request for a table sends `$select=&$filter=`); an empty `$top=` or `$format=`
            // stays an invalid value.
            if value.is_empty() && (name == "$filter" || name == "$select") {
                continue;
            }
            if slot.replace(value.into_owned()).is_some() {
                return Err(ApiError::new(
                    ErrorCode::InvalidInput,
                    format!("the query parameter `{name}` is given more than once"),
                ));
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoding_and_plus() {
        let q = QueryParams::parse(Some(
            "%24filter=Name+eq+%27a%2Bb%27&$select=A,B&NextRowKey=&NextTableName=x",
        ))
        .unwrap();
        assert_eq!(q.filter.as_deref(), Some("Name eq 'a+b'"));
        assert_eq!(q.select.as_deref(), Some("A,B"));
        assert_eq!(q.next_row_key.as_deref(), Some(""));
        assert_eq!(q.next_table_name.as_deref(), Some("x"));
        assert_eq!(q.select_given.as_deref(), Some("A,B"));
        // Empty options are absent ones; `odata.metadata` still repeats the empty `$select`.
        let empty = QueryParams::parse(Some("$select=&$filter=")).unwrap();
        assert_eq!(
            empty,
            QueryParams {
                select_given: Some(String::new()),
                ..QueryParams::default()
            }
        );
        let top = QueryParams::parse(Some("$top=")).unwrap();
        assert_eq!(
            top.top.as_deref(),
            Some(""),
            "an empty $top is parsed (and refused) later"
        );
    }

    #[test]
    fn components_decode_without_allocating_when_plain() {
        assert!(matches!(decode_component("sv"), Some(Cow::Borrowed("sv"))));
        assert!(matches!(
            decode_component("2019-02-02"),
            Some(Cow::Borrowed("2019-02-02"))
        ));
        assert_eq!(decode_component("a%2Bb+c").as_deref(), Some("a+b c"));
        assert_eq!(
            decode_component("2099-01-01T00%3A00%3A00Z").as_deref(),
            Some("2099-01-01T00:00:00Z")
        );
        assert_eq!(decode_component("%C3%BC").as_deref(), Some("ü"));
        assert_eq!(decode_component("%FF"), None);
        assert_eq!(decode_component("%"), Some(Cow::Owned("%".to_owned())));
    }

    /// The decoding as first written: `+` to space, then `percent_decode`, then UTF-8.
    fn reference_decode(part: &str) -> Option<String> {
        let spaced = part.replace('+', " ");
        let decoded: Vec<u8> = percent_encoding::percent_decode(spaced.as_bytes()).collect();
        String::from_utf8(decoded).ok()
    }

    proptest::proptest! {
        /// One-pass decoding is `+` → space then percent-decoding, on any text: stray and
        /// truncated `%`, `%2B`, `+`, invalid and valid UTF-8 sequences.
        #[test]
        fn decoding_is_plus_then_percent_decoding(
            part in "([a-zA-Z0-9+%=:,./ü😀-]|%[0-9a-fA-F]{2}|%[89a-fA-F][0-9a-fA-F]%[89abAB][0-9a-fA-F]){0,40}"
        ) {
            let expected = reference_decode(&part);
            proptest::prop_assert_eq!(decode_component(&part).map(Cow::into_owned), expected.clone());
            proptest::prop_assert_eq!(decodes_to_utf8(&part), expected.is_some());
        }
    }

    #[test]
    fn long_and_odd_parts_decode_like_the_reference() {
        let long_bad = format!("{}%FF", "a".repeat(300));
        let long_good = format!("{}%C3%BC", "%41".repeat(100));
        for part in [
            "%",
            "%4",
            "%%41",
            "%2",
            "+%2B+",
            "%e2%82%ac",
            "%e2%82",
            "%C0%AF",
            "%ED%A0%80",
            long_bad.as_str(),
            long_good.as_str(),
        ] {
            assert_eq!(
                decode_component(part).map(Cow::into_owned),
                reference_decode(part),
                "{part}"
            );
            assert_eq!(
                decodes_to_utf8(part),
                reference_decode(part).is_some(),
                "{part}"
            );
        }
    }

    #[test]
    fn every_value_must_decode_even_when_unused() {
        // SAS fields, `timeout`: ignored, but a value that is not UTF-8 is still refused.
        let sas = "sv=2019-02-02&ss=t&srt=sco&sp=rwdlacu&se=2099-01-01T00%3A00%3A00Z\
                   &spr=https%2Chttp&sig=p8wax4aIU7vXZ8f8KX7TNwC%2B48Aw4AwSmVILNF1yni8%3D";
        assert_eq!(
            QueryParams::parse(Some(sas)).unwrap(),
            QueryParams::default()
        );
        for bad in ["timeout=%FF", "sig=%C3", "x=%ED%A0%80&$top=1", "%FF=1"] {
            let e = QueryParams::parse(Some(bad)).unwrap_err();
            assert_eq!(e.code(), "InvalidInput", "{bad}");
            assert!(e.detail().unwrap().contains("is not UTF-8"), "{bad}");
        }
        // The value is checked before the option name is refused, as before.
        let e = QueryParams::parse(Some("$skip=%FF")).unwrap_err();
        assert!(e.detail().unwrap().contains("`%FF` is not UTF-8"), "{e:?}");
        let e = QueryParams::parse(Some("$skip=1")).unwrap_err();
        assert!(e.detail().unwrap().contains("`$skip`"), "{e:?}");
        // Repeated ignored parameters are fine; repeated options are not.
        assert!(QueryParams::parse(Some("sv=1&sv=2&timeout=3&timeout=4")).is_ok());
        let q = QueryParams::parse(Some(
            "$format=application%2Fjson%3Bodata%3Dnometadata&$top=5",
        ))
        .unwrap();
        assert_eq!(
            q.format.as_deref(),
            Some("application/json;odata=nometadata")
        );
        assert_eq!(q.top.as_deref(), Some("5"));
    }

    #[test]
    fn rejections() {
        for bad in [
            "$skip=1",
            "$Filter=a",
            "$top=1&$top=2",
            "$filter=%FF",
            "NextPartitionKey=a&NextPartitionKey=b",
        ] {
            assert_eq!(
                QueryParams::parse(Some(bad)).unwrap_err().code(),
                "InvalidInput",
                "{bad}"
            );
        }
        let e = QueryParams::parse(Some("$orderby=Age")).unwrap_err();
        assert!(e.detail().unwrap().contains("`$orderby` is not supported"));
        assert_eq!(
            QueryParams::parse(Some("timeout=30&sig=x&&")).unwrap(),
            QueryParams::default()
        );
    }
}

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
//! use tableq_server::query::QueryParams;
//! let q = QueryParams::parse(Some("$filter=Age%20gt%2030&$top=5&NextPartitionKey=1!4!cA&timeout=30")).unwrap();
//! assert_eq!(q.filter.as_deref(), Some("Age gt 30"));
//! assert_eq!(q.top.as_deref(), Some("5"));
//! assert_eq!(q.next_partition_key.as_deref(), Some("1!4!cA"));
//! assert_eq!(QueryParams::parse(Some("$orderby=Age")).unwrap_err().code(), "InvalidInput");
//! ```

use percent_encoding::percent_decode;
use std::borrow::Cow;
use tableq_model::ErrorCode;
use tableq_parser::QueryOption;
use tableq_planner::Predicate;

use crate::error::ApiError;

/// The query parameters this server reads, raw (decoded, not yet parsed).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueryParams {
    /// `$filter`.
    pub filter: Option<String>,
    /// `$select`.
    pub select: Option<String>,
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
/// option names) is returned as it is, without allocating.
pub(crate) fn decode_component(part: &str) -> Option<Cow<'_, str>> {
    if !part.contains(['%', '+']) {
        return Some(Cow::Borrowed(part));
    }
    let spaced = part.replace('+', " ");
    let decoded: Vec<u8> = percent_decode(spaced.as_bytes()).collect();
    String::from_utf8(decoded).ok().map(Cow::Owned)
}

fn decode(part: &str) -> Result<Cow<'_, str>, ApiError> {
    decode_component(part).ok_or_else(|| {
        ApiError::new(
            ErrorCode::InvalidInput,
            format!("the query parameter `{part}` is not UTF-8 after percent-decoding"),
        )
    })
}

impl QueryParams {
    /// Reads a raw query string (without the `?`).
    pub fn parse(query: Option<&str>) -> Result<QueryParams, ApiError> {
        let mut out = QueryParams::default();
        let Some(query) = query else {
            return Ok(out);
        };
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let name = decode(name)?;
            let value = decode(value)?;
            // An empty `$filter=` or `$select=` is an absent option (Storage Explorer's first
            // request for a table sends `$select=&$filter=`); an empty `$top=` or `$format=`
            // stays an invalid value.
            let empty_option = value.is_empty() && (name == "$filter" || name == "$select");
            let slot = if name == "$format" {
                &mut out.format
            } else {
                match QueryOption::from_name(&name) {
                    Ok(Some(QueryOption::Filter)) => &mut out.filter,
                    Ok(Some(QueryOption::Select)) => &mut out.select,
                    Ok(Some(QueryOption::Top)) => &mut out.top,
                    Ok(None) => match &*name {
                        "NextPartitionKey" => &mut out.next_partition_key,
                        "NextRowKey" => &mut out.next_row_key,
                        "NextTableName" => &mut out.next_table_name,
                        _ => continue,
                    },
                    Err(e) => {
                        let mut detail = e.message();
                        if let Some(hint) = e.hint() {
                            detail.push_str(": ");
                            detail.push_str(hint);
                        }
                        return Err(ApiError::new(ErrorCode::InvalidInput, detail));
                    }
                }
            };
            if empty_option {
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
        let empty = QueryParams::parse(Some("$select=&$filter=")).unwrap();
        assert_eq!(empty, QueryParams::default());
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

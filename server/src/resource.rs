//! Request paths: `/{account}/{resource}` with path-style accounts, and the links
//! (`odata.id`, `odata.editLink`, `Location`) that name resources in responses.
//!
//! The account is the first path segment (percent-decoded, compared exactly). The rest
//! must be one segment: it is percent-decoded as UTF-8 and parsed by the parser crate's
//! resource-path parser ([`tableq_parser::parse_resource`]: `Tables`, `Tables('t')`,
//! `$batch`, `t`, `t()`, `t(PartitionKey='p',RowKey='r')`, keys as OData string literals).
//! A path that names no resource → 400 `InvalidUri` with the parser's diagnostic.
//!
//! ```
//! use tableq_server::resource::{parse_path, entity_link, Resource};
//! let p = parse_path("/devstoreaccount1/t(PartitionKey='a%27%27b',RowKey='%F0%9F%98%80')").unwrap();
//! assert_eq!(p.account, "devstoreaccount1");
//! let Resource::Entity { table, partition_key, row_key } = &p.resource else { panic!() };
//! assert_eq!((table.name.as_str(), partition_key.value.as_str(), row_key.value.as_str()), ("t", "a'b", "😀"));
//! assert_eq!(entity_link("t", "a'b", "😀"), "t(PartitionKey='a''b',RowKey='%F0%9F%98%80')");
//! ```

use percent_encoding::percent_decode_str;
use tableq_model::ErrorCode;

use crate::error::ApiError;

pub use tableq_parser::Resource;

/// A short description of a resource for messages, e.g. ``the table collection `Tables` ``.
pub fn describe(resource: &Resource) -> String {
    match resource {
        Resource::Tables { .. } => "the table collection `Tables`".into(),
        Resource::Table { table } => format!(
            "the table resource `{resource}`",
            resource = table_link(&table.name)
        ),
        Resource::Batch { .. } => "`$batch`".into(),
        Resource::Entities { table } => format!("the entities of table `{}`", table.name),
        Resource::Entity { table, .. } => format!("an entity of table `{}`", table.name),
    }
}

/// A parsed request path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestPath {
    /// The account (the first path segment).
    pub account: String,
    /// The resource.
    pub resource: Resource,
}

fn invalid_uri(detail: impl Into<String>) -> ApiError {
    ApiError::new(ErrorCode::InvalidUri, detail)
}

/// Splits `/{account}/{resource}` and parses the resource (see the module docs).
pub fn parse_path(path: &str) -> Result<RequestPath, ApiError> {
    let rest = path.strip_prefix('/').unwrap_or(path);
    let (account, resource) = match rest.split_once('/') {
        Some((a, r)) => (a, r),
        None => (rest, ""),
    };
    let account = decode(account)?;
    if account.is_empty() {
        return Err(invalid_uri(
            "the path names no account: use /{account}/Tables or /{account}/{table}()",
        ));
    }
    if resource.is_empty() {
        return Err(invalid_uri(format!(
            "the path names the account `{account}` but no resource: use /{account}/Tables \
             or /{account}/{{table}}()"
        )));
    }
    if resource.contains('/') {
        return Err(invalid_uri(format!(
            "`{resource}` has more than one path segment after the account"
        )));
    }
    let resource = tableq_parser::parse_resource(&decode(resource)?)
        .map_err(|e| ApiError::parse(ErrorCode::InvalidUri, "resource path", &e))?;
    Ok(RequestPath { account, resource })
}

/// Percent-decodes one path segment as UTF-8.
fn decode(segment: &str) -> Result<String, ApiError> {
    percent_decode_str(segment)
        .decode_utf8()
        .map(|s| s.into_owned())
        .map_err(|_| invalid_uri("the path is not UTF-8 after percent-decoding"))
}

pub use tableq_client::path::{entity_link, table_link};

#[cfg(test)]
mod tests {
    use super::*;

    fn code(path: &str) -> Result<Resource, &'static str> {
        parse_path(path).map(|p| p.resource).map_err(|e| e.code())
    }

    #[test]
    fn accounts_and_segments() {
        assert!(matches!(code("/acct/Tables"), Ok(Resource::Tables { .. })));
        assert!(matches!(code("/acct/%24batch"), Ok(Resource::Batch { .. })));
        for bad in [
            "/",
            "//Tables",
            "/acct",
            "/acct/",
            "/acct/t/x",
            "/acct/%FF",
            "/acct/t(",
            "/acct/t(PartitionKey='a')",
        ] {
            assert_eq!(code(bad).unwrap_err(), "InvalidUri", "{bad}");
        }
        let e = parse_path("/acct/t(PartitionKey=1,RowKey='r')").unwrap_err();
        let detail = e.detail().unwrap();
        assert!(
            detail.starts_with("resource path: PartitionKey must be a string literal"),
            "{detail}"
        );
        assert!(detail.contains('^'), "{detail}");
    }

    #[test]
    fn links_round_trip_through_the_parser() {
        for (pk, rk) in [
            ("a'b", "c d"),
            ("%2F", "ü#?"),
            ("", "''"),
            ("😀", "\u{e000}"),
        ] {
            let link = entity_link("t", pk, rk);
            assert!(link.is_ascii(), "{link}");
            let p = parse_path(&format!("/acct/{link}")).unwrap();
            let Resource::Entity {
                table,
                partition_key,
                row_key,
            } = &p.resource
            else {
                panic!("{link}")
            };
            assert_eq!(
                (
                    table.name.as_str(),
                    partition_key.value.as_str(),
                    row_key.value.as_str()
                ),
                ("t", pk, rk)
            );
        }
        assert_eq!(table_link("t"), "Tables('t')");
        let p = parse_path(&format!("/acct/{}", table_link("My'T"))).unwrap();
        assert!(matches!(&p.resource, Resource::Table { table } if table.name == "My'T"));
    }
}

//! Request paths: `/{account}/{resource}` with path-style accounts, and the links
//! (`odata.id`, `odata.editLink`, `Location`) that name resources in responses.
//!
//! The account is the first path segment (percent-decoded, compared exactly). The rest
//! must be one segment: it is percent-decoded as UTF-8 and parsed by the parser crate's
//! resource-path parser ([`tableq_parser::parse_resource`]: `Tables`, `Tables('t')`,
//! `$batch`, `t`, `t()`, `t(PartitionKey='p',RowKey='r')`, keys as OData string literals).
//! A path that names no resource → 400 `InvalidUri` with the parser's diagnostic. One
//! trailing `/` is the same resource (`/acct/Tables/`, `/acct/t()/`, `/acct/$batch/`).
//!
//! [`parse_target`] adds what the query string selects: the account's service properties
//! and statistics (`/acct/?restype=service&comp=properties|stats`, also without the `/`)
//! and a table's ACL (`/acct/t?comp=acl`); and tableq's own administrative operations
//! (`/acct/?restype=tableq&comp=faults|reset`).
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
use std::borrow::Cow;
use tableq_model::ErrorCode;

use crate::protocol::error::ApiError;

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

/// What a request names: a resource of the OData protocol, or one of the administration
/// operations the query string selects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `/{account}/?restype=service&comp=properties`.
    ServiceProperties,
    /// `/{account}/?restype=service&comp=stats`.
    ServiceStats,
    /// `/{account}/?restype=tableq&comp=faults`: tableq's fault rules (not the service's).
    Faults,
    /// `/{account}/?restype=tableq&comp=reset`: reset the account's data (not the
    /// service's).
    Reset,
    /// `/{account}/{table}?comp=acl`.
    TableAcl {
        /// The table, as named.
        table: String,
    },
    /// A resource of the OData protocol.
    Resource(Resource),
}

/// A request's account and target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestTarget {
    /// The account (the first path segment, maybe `{account}-secondary`).
    pub account: String,
    /// What the request names.
    pub target: Target,
}

/// The values of `restype` and `comp` in a raw query string (percent-decoded, lossily; the
/// first of each if repeated), read in one pass.
fn restype_and_comp(query: Option<&str>) -> (Option<Cow<'_, str>>, Option<Cow<'_, str>>) {
    let (mut restype, mut comp) = (None, None);
    for pair in query.into_iter().flat_map(|q| q.split('&')) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let slot = match name {
            "restype" => &mut restype,
            "comp" => &mut comp,
            _ => continue,
        };
        if slot.is_none() {
            *slot = Some(percent_decode_str(value).decode_utf8_lossy());
        }
    }
    (restype, comp)
}

/// `/{acct}-secondary/{acct}/…` → `/{acct}-secondary/…`: the Python SDK reaches the
/// secondary of a path-style endpoint by putting `/{acct}-secondary` before the primary path.
fn without_repeated_account(path: &str) -> std::borrow::Cow<'_, str> {
    let rest = path.strip_prefix('/').unwrap_or(path);
    let (first, tail) = rest.split_once('/').unwrap_or((rest, ""));
    if let Some(base) = first.strip_suffix(crate::auth::SECONDARY_SUFFIX)
        && !base.is_empty()
    {
        let (second, after) = tail
            .split_once('/')
            .map_or((tail, None), |(a, b)| (a, Some(b)));
        if second == base {
            return match after {
                Some(after) => format!("/{first}/{after}").into(),
                None => format!("/{first}").into(),
            };
        }
    }
    path.into()
}

/// Splits `/{account}/{resource}` and reads the query string's `restype` and `comp`.
pub fn parse_target(path: &str, query: Option<&str>) -> Result<RequestTarget, ApiError> {
    let path = without_repeated_account(path);
    let path = path.as_ref();
    let rest = path.strip_prefix('/').unwrap_or(path);
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    let (restype, comp) = restype_and_comp(query);
    if !rest.contains('/') && restype.is_some() {
        let account = decode(rest)?.into_owned();
        if account.is_empty() {
            return Err(invalid_uri("the path names no account"));
        }
        let target = match (restype.as_deref(), comp.as_deref()) {
            (Some("service"), Some("properties")) => Target::ServiceProperties,
            (Some("service"), Some("stats")) => Target::ServiceStats,
            (Some("tableq"), Some("faults")) => Target::Faults,
            (Some("tableq"), Some("reset")) => Target::Reset,
            (restype, comp) => {
                return Err(ApiError::new(
                    ErrorCode::InvalidQueryParameterValue,
                    format!(
                        "restype={} comp={} names no operation: use restype=service with \
                         comp=properties or comp=stats",
                        restype.unwrap_or(""),
                        comp.unwrap_or("")
                    ),
                ));
            }
        };
        return Ok(RequestTarget { account, target });
    }
    let RequestPath { account, resource } = parse_path(path)?;
    let target = match (comp.as_deref(), resource) {
        (Some("acl"), Resource::Entities { table } | Resource::Table { table }) => {
            Target::TableAcl { table: table.name }
        }
        (Some("acl"), other) => {
            return Err(ApiError::new(
                ErrorCode::InvalidQueryParameterValue,
                format!(
                    "comp=acl applies to a table (/{{account}}/{{table}}?comp=acl), not to {}",
                    describe(&other)
                ),
            ));
        }
        (_, resource) => Target::Resource(resource),
    };
    Ok(RequestTarget { account, target })
}

/// Splits `/{account}/{resource}` and parses the resource (see the module docs).
pub fn parse_path(path: &str) -> Result<RequestPath, ApiError> {
    let rest = path.strip_prefix('/').unwrap_or(path);
    let (account, resource) = match rest.split_once('/') {
        Some((a, r)) => (a, r),
        None => (rest, ""),
    };
    // One trailing `/` names the same resource.
    let resource = resource.strip_suffix('/').unwrap_or(resource);
    let account = decode(account)?.into_owned();
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

/// Percent-decodes one path segment as UTF-8 (borrowed when it has no `%`).
fn decode(segment: &str) -> Result<Cow<'_, str>, ApiError> {
    percent_decode_str(segment)
        .decode_utf8()
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
            "/acct//",
            "/acct/t/x",
            "/acct/t/x/",
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
    fn trailing_slashes_and_targets() {
        assert!(matches!(code("/acct/Tables/"), Ok(Resource::Tables { .. })));
        assert!(matches!(code("/acct/t()/"), Ok(Resource::Entities { .. })));
        assert!(matches!(code("/acct/$batch/"), Ok(Resource::Batch { .. })));
        let t = |path: &str, query: &str| parse_target(path, Some(query)).map(|t| t.target);
        assert_eq!(
            t("/acct/", "restype=service&comp=properties"),
            Ok(Target::ServiceProperties)
        );
        assert_eq!(
            t("/acct-secondary", "comp=stats&restype=service"),
            Ok(Target::ServiceStats)
        );
        // The Python SDK's secondary form of a path-style endpoint.
        assert_eq!(
            t("/acct-secondary/acct/", "restype=service&comp=stats"),
            Ok(Target::ServiceStats)
        );
        let p = parse_target("/acct-secondary/acct/Tables", None).unwrap();
        assert_eq!(p.account, "acct-secondary");
        assert!(matches!(
            p.target,
            Target::Resource(Resource::Tables { .. })
        ));
        assert_eq!(
            t("/acct/Orders", "comp=acl"),
            Ok(Target::TableAcl {
                table: "Orders".into()
            })
        );
        assert_eq!(
            t("/acct/", "restype=service&comp=list").unwrap_err().code(),
            "InvalidQueryParameterValue"
        );
        assert_eq!(
            t("/acct/", "comp=properties").unwrap_err().code(),
            "InvalidUri"
        );
        assert!(matches!(
            t("/acct/Tables", "timeout=5"),
            Ok(Target::Resource(Resource::Tables { .. }))
        ));
        assert_eq!(
            parse_target("/acct/", Some("restype=service&comp=properties"))
                .unwrap()
                .account,
            "acct"
        );
    }

    #[test]
    fn restype_and_comp_are_read_in_one_pass() {
        let both = |q: &str| {
            let (r, c) = restype_and_comp(Some(q));
            (r.map(Cow::into_owned), c.map(Cow::into_owned))
        };
        let some = |s: &str| Some(s.to_owned());
        assert_eq!(
            both("comp=stats&restype=service"),
            (some("service"), some("stats"))
        );
        // The first of each counts; values are percent-decoded (lossily), names are not.
        assert_eq!(
            both("comp=a%63l&comp=x&restype&%63omp=y&restype=z"),
            (some(""), some("acl"))
        );
        assert_eq!(both("comp=%FF&&sig=x"), (None, some("\u{fffd}")));
        assert_eq!(restype_and_comp(None), (None, None));
        assert_eq!(both(""), (None, None));
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

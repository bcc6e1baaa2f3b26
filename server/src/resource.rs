//! Request paths: `/{account}/{resource}` with path-style accounts, and the links
//! (`odata.id`, `odata.editLink`, `Location`) that name resources in responses.
//!
//! | path after the account | [`Resource`] |
//! |---|---|
//! | `Tables`, `Tables()` | [`Resource::Tables`] |
//! | `Tables('t')` | [`Resource::Table`] |
//! | `$batch` | [`Resource::Batch`] |
//! | `t`, `t()` | [`Resource::Entities`] |
//! | `t(PartitionKey='p',RowKey='r')` (either order) | [`Resource::Entity`] |
//!
//! The resource segment is percent-decoded (as UTF-8) before it is parsed; keys and table
//! names are OData string literals (`''` is one quote). The account is the first path
//! segment, compared exactly. A path that names none of these → 400 `InvalidUri`.
//!
//! [`parse_resource`] is the one function that reads the resource text: it is the seam
//! where the parser crate's resource-path parser plugs in.
//!
//! ```
//! use tableq_server::resource::{parse_path, Resource, entity_link};
//! let p = parse_path("/devstoreaccount1/t(PartitionKey='a%27%27b',RowKey='%F0%9F%98%80')").unwrap();
//! assert_eq!(p.account, "devstoreaccount1");
//! assert_eq!(p.resource, Resource::Entity {
//!     table: "t".into(), partition_key: "a'b".into(), row_key: "😀".into() });
//! assert_eq!(entity_link("t", "a'b", "😀"), "t(PartitionKey='a''b',RowKey='%F0%9F%98%80')");
//! ```

use percent_encoding::{AsciiSet, CONTROLS, percent_decode_str, utf8_percent_encode};
use tableq_model::ErrorCode;

use crate::error::ApiError;

/// What a request path names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resource {
    /// The table collection: create and query tables.
    Tables,
    /// One table: delete it (or read it).
    Table {
        /// The table name as written.
        name: String,
    },
    /// The entity-group transaction endpoint.
    Batch,
    /// A table's entities: insert and query.
    Entities {
        /// The table name as written.
        table: String,
    },
    /// One entity.
    Entity {
        /// The table name as written.
        table: String,
        /// The PartitionKey.
        partition_key: String,
        /// The RowKey.
        row_key: String,
    },
}

impl Resource {
    /// A short description for messages, e.g. ``the table collection `Tables` ``.
    pub fn describe(&self) -> String {
        match self {
            Resource::Tables => "the table collection `Tables`".into(),
            Resource::Table { name } => format!("the table resource `Tables('{name}')`"),
            Resource::Batch => "`$batch`".into(),
            Resource::Entities { table } => format!("the entities of table `{table}`"),
            Resource::Entity { table, .. } => format!("an entity of table `{table}`"),
        }
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
    let resource = parse_resource(&decode(resource)?)?;
    Ok(RequestPath { account, resource })
}

/// Percent-decodes one path segment as UTF-8.
fn decode(segment: &str) -> Result<String, ApiError> {
    percent_decode_str(segment)
        .decode_utf8()
        .map(|s| s.into_owned())
        .map_err(|_| invalid_uri("the path is not UTF-8 after percent-decoding"))
}

/// Parses the (decoded) resource text after the account.
pub fn parse_resource(text: &str) -> Result<Resource, ApiError> {
    if text == "$batch" {
        return Ok(Resource::Batch);
    }
    let (name, args) = match text.find('(') {
        None => (text, None),
        Some(open) => {
            let Some(inner) = text[open + 1..].strip_suffix(')') else {
                return Err(invalid_uri(format!(
                    "`{text}`: the parenthesis opened at character {} is not closed at the end",
                    text[..open].chars().count() + 1
                )));
            };
            (&text[..open], Some(inner))
        }
    };
    if name.is_empty() {
        return Err(invalid_uri(format!("`{text}` names no table")));
    }
    if name == "Tables" {
        return match args {
            None | Some("") => Ok(Resource::Tables),
            Some(args) => {
                let (literal, rest) = string_literal(args)
                    .ok_or_else(|| invalid_uri(format!("`{text}`: expected Tables('name')")))?;
                if !rest.is_empty() {
                    return Err(invalid_uri(format!("`{text}`: expected Tables('name')")));
                }
                Ok(Resource::Table { name: literal })
            }
        };
    }
    let table = name.to_owned();
    match args {
        None | Some("") => Ok(Resource::Entities { table }),
        Some(args) => {
            let (partition_key, row_key) = entity_keys(args).ok_or_else(|| {
                invalid_uri(format!(
                    "`{text}`: expected {name}(PartitionKey='…',RowKey='…') with both keys \
                     as quoted strings ('' for a quote)"
                ))
            })?;
            Ok(Resource::Entity {
                table,
                partition_key,
                row_key,
            })
        }
    }
}

/// `PartitionKey='a',RowKey='b'` in either order.
fn entity_keys(args: &str) -> Option<(String, String)> {
    let mut pk = None;
    let mut rk = None;
    let mut rest = args;
    for i in 0..2 {
        if i == 1 {
            rest = rest.strip_prefix(',')?;
        }
        let (name, after) = rest.split_once('=')?;
        let (value, after) = string_literal(after)?;
        let slot = match name {
            "PartitionKey" => &mut pk,
            "RowKey" => &mut rk,
            _ => return None,
        };
        if slot.replace(value).is_some() {
            return None;
        }
        rest = after;
    }
    if !rest.is_empty() {
        return None;
    }
    Some((pk?, rk?))
}

/// An OData string literal at the start of `text`: its value and the text after it.
fn string_literal(text: &str) -> Option<(String, &str)> {
    let body = text.strip_prefix('\'')?;
    let mut value = String::new();
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        if c == '\'' {
            if body[i + 1..].starts_with('\'') {
                value.push('\'');
                chars.next();
            } else {
                return Some((value, &body[i + 1..]));
            }
        } else {
            value.push(c);
        }
    }
    None
}

/// Characters escaped in links: controls, space, and those with a meaning in URLs.
const LINK: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'`')
    .add(b'{')
    .add(b'}')
    .add(b'/')
    .add(b'\\')
    .add(b'^')
    .add(b'|')
    .add(b'[')
    .add(b']')
    .add(b'&')
    .add(b'+');

/// A string as an OData literal, percent-encoded for a URL path: `'a''b'`.
fn literal_in_link(value: &str) -> String {
    let quoted = value.replace('\'', "''");
    format!("'{}'", utf8_percent_encode(&quoted, LINK))
}

/// The link of an entity relative to the account: `t(PartitionKey='p',RowKey='r')`,
/// percent-encoded (ASCII, usable in headers).
pub fn entity_link(table: &str, partition_key: &str, row_key: &str) -> String {
    format!(
        "{}(PartitionKey={},RowKey={})",
        utf8_percent_encode(table, LINK),
        literal_in_link(partition_key),
        literal_in_link(row_key)
    )
}

/// The link of a table relative to the account: `Tables('t')`.
pub fn table_link(name: &str) -> String {
    format!("Tables({})", literal_in_link(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(text: &str) -> Result<Resource, String> {
        parse_resource(text).map_err(|e| e.code().to_owned())
    }

    #[test]
    fn every_form() {
        assert_eq!(res("Tables"), Ok(Resource::Tables));
        assert_eq!(res("Tables()"), Ok(Resource::Tables));
        assert_eq!(
            res("Tables('My''T')"),
            Ok(Resource::Table {
                name: "My'T".into()
            })
        );
        assert_eq!(res("$batch"), Ok(Resource::Batch));
        assert_eq!(res("t"), Ok(Resource::Entities { table: "t".into() }));
        assert_eq!(res("t()"), Ok(Resource::Entities { table: "t".into() }));
        let e = Resource::Entity {
            table: "t".into(),
            partition_key: "a,b".into(),
            row_key: "".into(),
        };
        assert_eq!(res("t(PartitionKey='a,b',RowKey='')"), Ok(e.clone()));
        assert_eq!(res("t(RowKey='',PartitionKey='a,b')"), Ok(e));
    }

    #[test]
    fn malformed_paths_are_invalid_uri() {
        for bad in [
            "t(",
            "t(PartitionKey='a')",
            "t(PartitionKey='a',RowKey='b'",
            "t(PartitionKey='a',RowKey=b)",
            "t(PartitionKey='a',PartitionKey='b')",
            "t(PartitionKey='a',RowKey='b',X='c')",
            "t(PartitionKey='a''',RowKey='b')x",
            "Tables('a",
            "Tables('a')x",
            "()",
        ] {
            assert_eq!(res(bad), Err("InvalidUri".into()), "{bad}");
        }
        for bad in ["/", "//Tables", "/acct", "/acct/", "/acct/t/x", "/acct/%FF"] {
            assert_eq!(
                parse_path(bad).map_err(|e| e.code()),
                Err("InvalidUri"),
                "{bad}"
            );
        }
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
            assert_eq!(
                p.resource,
                Resource::Entity {
                    table: "t".into(),
                    partition_key: pk.into(),
                    row_key: rk.into()
                }
            );
        }
        assert_eq!(table_link("t"), "Tables('t')");
    }
}

//! Resource paths of the Table service REST protocol: the one path segment after the
//! account — `Tables`, `Tables('t')`, `t`, `t()`, `t(PartitionKey='p',RowKey='r')`,
//! `$batch` — parsed to a typed [`Resource`] whose parts carry byte [`Span`]s.
//!
//! The input is the segment **after percent-decoding**: the server decodes, this module
//! parses (`%27` is already `'` here). The server only calls [`parse_resource`].
//!
//! | segment | resource |
//! |---|---|
//! | `Tables`, `Tables()` | [`Resource::Tables`]: the table collection |
//! | `Tables('t')`, `Tables(TableName='t')` | [`Resource::Table`]: one table |
//! | `t`, `t()` | [`Resource::Entities`]: the entities of table `t` |
//! | `t(PartitionKey='p',RowKey='r')`, `t(RowKey='r',PartitionKey='p')` | [`Resource::Entity`] |
//! | `$batch` | [`Resource::Batch`] |
//!
//! Decisions:
//!
//! * **Key values** (and the table name in `Tables('…')`) are OData string literals, read
//!   by the `$filter` lexer's string rule: `''` is one quote, any Unicode is allowed, the
//!   empty `''` too. A value that is not a string literal (`PartitionKey=1`,
//!   `RowKey=guid'…'`, `RowKey=abc`) is [`ErrorKind::KeyNotString`], naming what was written.
//! * **Key names** are `PartitionKey` and `RowKey`, case-sensitive, in either order (OData
//!   named keys may come in any order), each exactly once. Other names, a key given twice,
//!   a missing key, an unnamed value (`t('a')`) and a third key are errors.
//! * **No spaces** outside quotes: the OData syntax of key predicates has none, and a space
//!   there is an error with a hint (a space inside a table name is left to the name check).
//! * **`Tables`** is recognised in any ASCII case: the name is reserved, so no table can be
//!   called that and nothing becomes ambiguous. `$batch` is exact; any other `$`-segment is
//!   [`ErrorKind::UnknownResource`].
//! * **The table name** is everything before the first `(`. It must not be empty, contain
//!   `)` or `'`, or start with `$` — the characters that would make the segment ambiguous.
//!   Anything else is returned as written: whether it is a *valid* table name is
//!   `tableq_model::validate::table_name`'s decision (so the server answers
//!   `InvalidResourceName` or `OutOfRangeInput` as the service does). Likewise the data
//!   model's key rules (length, forbidden characters) are `tableq_model::validate::key`'s.
//! * **Nothing may follow** the closing `)` (or a bare name); unbalanced parentheses and
//!   unterminated literals are errors pointing at the offending bytes.
//!
//! Errors are [`ParseError`]s (kind, span, expected, hint), rendered with carets by
//! `Display`. Parsing is one forward pass without recursion: linear time on any input.
//!
//! `Display` prints the canonical form — `Tables`, `Tables('t')`, `t()`,
//! `t(PartitionKey='p',RowKey='r')`, `$batch` — *not* percent-encoded; every resource that
//! [`parse_resource`] returns prints to text that parses back to an equal resource
//! (equality ignores spans).
//!
//! ```
//! use tableq_parser::{parse_resource, ErrorKind, Resource};
//!
//! let r = parse_resource("people(RowKey='it''s',PartitionKey='')").unwrap();
//! let Resource::Entity { table, partition_key, row_key } = &r else { panic!() };
//! assert_eq!((table.name.as_str(), partition_key.value.as_str()), ("people", ""));
//! assert_eq!((row_key.value.as_str(), row_key.span.range()), ("it's", 14..21));
//! assert_eq!(r.to_string(), "people(PartitionKey='',RowKey='it''s')");
//!
//! assert!(matches!(parse_resource("Tables('people')"), Ok(Resource::Table { .. })));
//! assert!(matches!(parse_resource("people()"), Ok(Resource::Entities { .. })));
//!
//! let err = parse_resource("people(PartitionKey=1,RowKey='r')").unwrap_err();
//! assert_eq!(err.message(), "PartitionKey must be a string literal, not the Edm.Int32 literal `1`");
//! assert_eq!(err.hint(), Some("key values are quoted: PartitionKey='1'"));
//! assert_eq!(err.span().range(), 20..21);
//! ```

use crate::error::{ErrorKind, ParseError};
use crate::lexer::{UNTERMINATED_STRING_HINT, string_body};
use crate::token::unescape;
use crate::{Span, Token, lex};
use std::fmt;

/// A resource of the Table service REST protocol, named by one path segment.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Resource {
    /// `Tables` or `Tables()`: the table collection (create table, query tables).
    Tables {
        /// The whole segment.
        span: Span,
    },
    /// `Tables('t')`: one table (delete table).
    Table {
        /// The table name; its span covers the quoted literal.
        table: TableName,
    },
    /// `t` or `t()`: the entities of a table (insert entity, query entities).
    Entities {
        /// The table name as written.
        table: TableName,
    },
    /// `t(PartitionKey='p',RowKey='r')`: one entity (get, update, merge, delete).
    Entity {
        /// The table name as written.
        table: TableName,
        /// The PartitionKey, `''` escapes decoded.
        partition_key: KeyValue,
        /// The RowKey, `''` escapes decoded.
        row_key: KeyValue,
    },
    /// `$batch`: an entity group transaction.
    Batch {
        /// The whole segment.
        span: Span,
    },
}

/// A table name as written in a resource path (not yet validated).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TableName {
    /// The name (decoded, for the quoted form of `Tables('…')`).
    pub name: String,
    /// Where it was written: the bare name, or the quoted literal of `Tables('…')`.
    pub span: Span,
}

/// A PartitionKey or RowKey value from a key predicate.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct KeyValue {
    /// The key, `''` escapes decoded.
    pub value: String,
    /// The quoted literal, quotes included.
    pub span: Span,
}

impl TableName {
    /// A table name without a position (for building resources to print).
    pub fn new(name: impl Into<String>) -> TableName {
        TableName {
            name: name.into(),
            span: Span::default(),
        }
    }
}

impl KeyValue {
    /// A key value without a position (for building resources to print).
    pub fn new(value: impl Into<String>) -> KeyValue {
        KeyValue {
            value: value.into(),
            span: Span::default(),
        }
    }
}

impl Resource {
    /// The table the resource names, for [`Resource::Table`], [`Resource::Entities`] and
    /// [`Resource::Entity`].
    pub fn table(&self) -> Option<&TableName> {
        match self {
            Resource::Table { table }
            | Resource::Entities { table }
            | Resource::Entity { table, .. } => Some(table),
            Resource::Tables { .. } | Resource::Batch { .. } => None,
        }
    }
}

/// Writes `s` as an OData string literal: quoted, each `'` doubled.
fn write_literal(f: &mut fmt::Formatter<'_>, s: &str) -> fmt::Result {
    f.write_str("'")?;
    for (i, part) in s.split('\'').enumerate() {
        if i > 0 {
            f.write_str("''")?;
        }
        f.write_str(part)?;
    }
    f.write_str("'")
}

impl fmt::Display for Resource {
    /// The canonical form (not percent-encoded): `Tables`, `Tables('t')`, `t()`,
    /// `t(PartitionKey='p',RowKey='r')`, `$batch`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Resource::Tables { .. } => f.write_str(TABLES),
            Resource::Table { table } => {
                f.write_str("Tables(")?;
                write_literal(f, &table.name)?;
                f.write_str(")")
            }
            Resource::Entities { table } => write!(f, "{}()", table.name),
            Resource::Entity {
                table,
                partition_key,
                row_key,
            } => {
                write!(f, "{}(PartitionKey=", table.name)?;
                write_literal(f, &partition_key.value)?;
                f.write_str(",RowKey=")?;
                write_literal(f, &row_key.value)?;
                f.write_str(")")
            }
            Resource::Batch { .. } => f.write_str(BATCH),
        }
    }
}

const TABLES: &str = "Tables";
const BATCH: &str = "$batch";
const KEY_NAMES: [&str; 2] = ["PartitionKey", "RowKey"];
const EXPECT_RESOURCE: &[&str] = &["a table name", "`Tables`", "`$batch`"];
const EXPECT_KEY_NAME: &[&str] = &["`PartitionKey`", "`RowKey`"];
const EXPECT_AFTER_KEY: &[&str] = &["`,`", "`)`"];
const NO_SPACES: &str = "spaces are not allowed in a resource path outside quoted keys";

/// Parses one resource path segment (percent-decoded); see the [module docs](self) for
/// the forms and every decision.
///
/// ```
/// use tableq_parser::{parse_resource, ErrorKind, Resource};
/// assert!(matches!(parse_resource("Tables"), Ok(Resource::Tables { .. })));
/// assert!(matches!(parse_resource("$batch"), Ok(Resource::Batch { .. })));
/// let e = parse_resource("t(PartitionKey='a')").unwrap_err();
/// assert_eq!(e.kind(), &ErrorKind::MissingKey("RowKey"));
/// ```
pub fn parse_resource(text: &str) -> Result<Resource, ParseError> {
    if text.starts_with('$') {
        return batch(text);
    }
    let mut c = Cursor { text, pos: 0 };
    let name_end = text.find('(').unwrap_or(text.len());
    let name = &text[..name_end];
    check_name(text, name)?;
    let table = TableName {
        name: name.to_owned(),
        span: Span::new(0, name_end),
    };
    let tables = name.eq_ignore_ascii_case(TABLES);
    c.pos = name_end;
    let whole = Span::new(0, text.len());
    // `t`, `t()`, `Tables` and `Tables()` name collections; `(…)` with content, one item.
    let resource = if !c.eat('(') || c.eat(')') {
        if tables {
            Resource::Tables { span: whole }
        } else {
            Resource::Entities { table }
        }
    } else if tables {
        Resource::Table {
            table: table_key(&mut c, name_end)?,
        }
    } else {
        entity_keys(&mut c, table, name_end)?
    };
    if c.pos < text.len() {
        let rest = &text[c.pos..];
        return Err(ParseError::new(
            ErrorKind::TrailingPath(shown(rest)),
            Span::new(c.pos, text.len()),
            text,
        )
        .with_hint("the resource path must end here"));
    }
    Ok(resource)
}

/// `$batch`, or the error for any other `$`-segment.
fn batch(text: &str) -> Result<Resource, ParseError> {
    let word_end = text.find('(').unwrap_or(text.len());
    let word = &text[..word_end];
    if word == BATCH {
        if word_end < text.len() {
            return Err(ParseError::new(
                ErrorKind::TrailingPath(shown(&text[word_end..])),
                Span::new(word_end, text.len()),
                text,
            )
            .with_hint("`$batch` takes no parentheses"));
        }
        return Ok(Resource::Batch {
            span: Span::new(0, text.len()),
        });
    }
    let err = ParseError::new(
        ErrorKind::UnknownResource(shown(word)),
        Span::new(0, word_end),
        text,
    )
    .with_expected(&["`$batch`"]);
    Err(if word.eq_ignore_ascii_case(BATCH) {
        err.with_hint("resource names are case-sensitive: did you mean `$batch`?")
    } else {
        err.with_hint("the Table service's resources are `Tables`, `<table>` and `$batch`")
    })
}

/// The table name before the first `(`: not empty, no `)` or `'`.
fn check_name(text: &str, name: &str) -> Result<(), ParseError> {
    if name.is_empty() {
        let span = Span::new(0, text.len().min(1));
        return Err(ParseError::new(ErrorKind::MissingTableName, span, text)
            .with_expected(EXPECT_RESOURCE)
            .with_hint(if text.is_empty() {
                "the path names no resource after the account"
            } else {
                "a key predicate follows a table name: t(PartitionKey='…',RowKey='…')"
            }));
    }
    match name.char_indices().find(|&(_, ch)| ch == ')' || ch == '\'') {
        None => Ok(()),
        Some((i, ')')) => Err(ParseError::new(
            ErrorKind::UnmatchedParen,
            Span::new(i, i + 1),
            text,
        )
        .with_hint("this `)` closes no `(`")),
        Some((i, ch)) => Err(ParseError::new(
            ErrorKind::UnexpectedChar(ch),
            Span::new(i, i + ch.len_utf8()),
            text,
        )
        .with_hint(
            "a table name cannot contain `'`; keys go in parentheses: t(PartitionKey='…',RowKey='…')",
        )),
    }
}

/// After `Tables(`: `'t')` or `TableName='t')`.
fn table_key(c: &mut Cursor<'_>, open: usize) -> Result<TableName, ParseError> {
    let key_name_end = c.key_name_end();
    let key_name = &c.text[c.pos..key_name_end];
    if !key_name.is_empty() && c.text[key_name_end..].starts_with('=') {
        if key_name != "TableName" {
            return Err(c
                .error(
                    ErrorKind::UnknownKey(shown(key_name)),
                    Span::new(c.pos, key_name_end),
                )
                .with_expected(&["`TableName`", "a quoted table name"])
                .with_hint("`Tables(…)` addresses one table: write Tables('name')"));
        }
        c.pos = key_name_end + 1;
    }
    let value = key_value(c, "TableName")?;
    match c.peek() {
        Some(')') => {
            c.pos += 1;
            Ok(TableName {
                name: value.value,
                span: value.span,
            })
        }
        None => Err(c.unclosed(open)),
        Some(',') => Err(c
            .unexpected(&["`)`"])
            .with_hint("`Tables(…)` takes one table name")),
        Some(_) => Err(c.unexpected(&["`)`"])),
    }
}

/// After `t(`: the two named keys and the closing `)`.
fn entity_keys(c: &mut Cursor<'_>, table: TableName, open: usize) -> Result<Resource, ParseError> {
    // The hint of several errors, written only when one is (not for every path parsed).
    let both = || {
        format!(
            "an entity is addressed by both keys: {}(PartitionKey='…',RowKey='…')",
            shown(&table.name)
        )
    };
    // (value, span of `Name='value'`) per key, in KEY_NAMES order.
    let mut keys: [Option<(KeyValue, Span)>; 2] = [None, None];
    loop {
        let start = c.pos;
        let name_end = c.key_name_end();
        let name = &c.text[start..name_end];
        if name.is_empty() {
            return Err(match c.peek() {
                Some('\'') => {
                    let end = string_body(&c.text[start + 1..])
                        .map_or(c.text.len(), |body| start + body.len() + 2);
                    c.error(ErrorKind::UnnamedKey, Span::new(start, end))
                        .with_expected(EXPECT_KEY_NAME)
                        .with_hint(both())
                }
                _ => c.unexpected(EXPECT_KEY_NAME),
            });
        }
        let which = match KEY_NAMES.iter().position(|k| *k == name) {
            Some(i) => i,
            None => {
                let err = c
                    .error(
                        ErrorKind::UnknownKey(shown(name)),
                        Span::new(start, name_end),
                    )
                    .with_expected(EXPECT_KEY_NAME);
                return Err(
                    match KEY_NAMES.iter().find(|k| k.eq_ignore_ascii_case(name)) {
                        Some(k) => err.with_hint(format!(
                            "key names are case-sensitive: did you mean `{k}`?"
                        )),
                        None => err.with_hint(both()),
                    },
                );
            }
        };
        c.pos = name_end;
        if !c.eat('=') {
            return Err(c.unexpected(&["`=`"]));
        }
        let value = key_value(c, KEY_NAMES[which])?;
        let span = Span::new(start, c.pos);
        if let Some((_, first)) = &keys[which] {
            let column = c.text[..first.start].chars().count() + 1;
            return Err(c
                .error(ErrorKind::DuplicateKey(KEY_NAMES[which]), span)
                .with_hint(format!(
                    "`{}` was first given at column {column}",
                    KEY_NAMES[which]
                )));
        }
        keys[which] = Some((value, span));
        match c.peek() {
            Some(',') if keys.iter().all(Option::is_some) => {
                return Err(c.unexpected(&["`)`"]).with_hint(
                    "an entity is addressed by exactly two keys, PartitionKey and RowKey",
                ));
            }
            Some(',') => c.pos += 1,
            Some(')') => {
                c.pos += 1;
                break;
            }
            None => return Err(c.unclosed(open)),
            Some(ch) if ch.is_alphanumeric() => {
                return Err(c
                    .unexpected(EXPECT_AFTER_KEY)
                    .with_hint("a quote inside a key is written `''`, e.g. 'it''s'"));
            }
            Some(_) => return Err(c.unexpected(EXPECT_AFTER_KEY)),
        }
    }
    let close = Span::new(c.pos - 1, c.pos);
    match keys {
        [Some((partition_key, _)), Some((row_key, _))] => Ok(Resource::Entity {
            table,
            partition_key,
            row_key,
        }),
        [None, _] => Err(c
            .error(ErrorKind::MissingKey("PartitionKey"), close)
            .with_hint(both())),
        [_, None] => Err(c
            .error(ErrorKind::MissingKey("RowKey"), close)
            .with_hint(both())),
    }
}

/// A quoted key value at the cursor, or the error for whatever is there instead.
fn key_value(c: &mut Cursor<'_>, key: &'static str) -> Result<KeyValue, ParseError> {
    let start = c.pos;
    match c.peek() {
        Some('\'') => match string_body(&c.text[start + 1..]) {
            Some(body) => {
                c.pos = start + body.len() + 2;
                Ok(KeyValue {
                    value: unescape(body),
                    span: Span::new(start, c.pos),
                })
            }
            None => Err(c
                .error(
                    ErrorKind::Unterminated("string"),
                    Span::new(start, c.text.len()),
                )
                .with_hint(UNTERMINATED_STRING_HINT)),
        },
        Some(' ') => Err(c.unexpected(&["a quoted key such as 'a'"])),
        None | Some(',' | ')') => Err(c
            .unexpected(&["a quoted key such as 'a'"])
            .with_hint(format!("{key} needs a value: {key}='…'"))),
        Some(_) => {
            let end = c.text[start..]
                .find([',', ')'])
                .map_or(c.text.len(), |i| start + i);
            let raw = &c.text[start..end];
            // Show the quoted fix only for a short, plain value.
            let simple = raw.len() <= 40
                && raw
                    .chars()
                    .all(|ch| ch.is_alphanumeric() || matches!(ch, '.' | '-' | '+' | '_'));
            let hint = match (simple, key) {
                (true, "TableName") => format!("table names are quoted: Tables('{raw}')"),
                (true, _) => format!("key values are quoted: {key}='{raw}'"),
                (false, _) => format!("key values are quoted strings: {key}='…'"),
            };
            Err(c
                .error(
                    ErrorKind::KeyNotString {
                        key,
                        found: describe(raw),
                    },
                    Span::new(start, end),
                )
                .with_hint(hint))
        }
    }
}

/// What a non-string key value is, for a headline: ``the Edm.Int32 literal `1` ``,
/// ``the word `abc` ``, or the text itself.
fn describe(raw: &str) -> String {
    let shown = shown(raw);
    match lex(raw).as_deref() {
        Ok([(Token::Literal(v), _)]) => format!("the {} literal `{shown}`", v.edm_type()),
        Ok([(Token::Ident(_), _)]) => format!("the word `{shown}`"),
        _ => format!("`{shown}`"),
    }
}

/// User text for a headline or hint: at most 60 characters, control characters escaped
/// (quotes are not: they are the syntax being explained).
fn shown(text: &str) -> String {
    const MAX: usize = 60;
    let mut out = String::new();
    for (i, ch) in text.chars().enumerate() {
        if i == MAX {
            out.push('…');
            break;
        }
        if ch.is_control() {
            out.extend(ch.escape_debug());
        } else {
            out.push(ch);
        }
    }
    out
}

/// A position in the segment being parsed.
struct Cursor<'s> {
    text: &'s str,
    pos: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<char> {
        self.text[self.pos..].chars().next()
    }

    fn eat(&mut self, ch: char) -> bool {
        let hit = self.peek() == Some(ch);
        if hit {
            self.pos += ch.len_utf8();
        }
        hit
    }

    /// The end of the key name starting at the cursor: the first `=`, `,`, `(`, `)`, `'`
    /// or space, or the end of the text.
    fn key_name_end(&self) -> usize {
        self.text[self.pos..]
            .find(['=', ',', '(', ')', '\'', ' '])
            .map_or(self.text.len(), |i| self.pos + i)
    }

    fn error(&self, kind: ErrorKind, span: Span) -> ParseError {
        ParseError::new(kind, span, self.text)
    }

    /// The error for whatever is at the cursor when one of `expected` was required.
    fn unexpected(&self, expected: &[&'static str]) -> ParseError {
        match self.peek() {
            None => self
                .error(
                    ErrorKind::UnexpectedEnd,
                    Span::new(self.text.len(), self.text.len()),
                )
                .with_expected(expected),
            Some(ch) => {
                let err = self
                    .error(
                        ErrorKind::UnexpectedChar(ch),
                        Span::new(self.pos, self.pos + ch.len_utf8()),
                    )
                    .with_expected(expected);
                if ch == ' ' {
                    err.with_hint(NO_SPACES)
                } else {
                    err
                }
            }
        }
    }

    /// The error for a `(` at `open` that the text never closes.
    fn unclosed(&self, open: usize) -> ParseError {
        self.error(ErrorKind::UnclosedParen, Span::new(open, open + 1))
            .with_expected(&["`)`"])
            .with_hint("this `(` is never closed")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_print_with_doubled_quotes() {
        let r = Resource::Entity {
            table: TableName::new("t"),
            partition_key: KeyValue::new("it's"),
            row_key: KeyValue::new("''"),
        };
        assert_eq!(r.to_string(), "t(PartitionKey='it''s',RowKey='''''')");
        assert_eq!(parse_resource(&r.to_string()), Ok(r));
    }

    #[test]
    fn table_accessor() {
        assert_eq!(
            parse_resource("t()")
                .unwrap()
                .table()
                .map(|t| t.name.as_str()),
            Some("t")
        );
        assert_eq!(parse_resource("$batch").unwrap().table(), None);
    }
}

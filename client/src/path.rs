//! Resource paths of the Table REST API, relative to the account's endpoint: the one place
//! where keys become URL text (the emulator writes its `Location` and `odata.id` links with
//! the same functions).
//!
//! Keys are OData string literals (`'` doubled) and percent-encoded: controls, space and
//! every character with a meaning in a URL path or query (`/`, `?`, `#`, `%`, `&`, `+`, …);
//! other characters, including non-ASCII ones, are percent-encoded as UTF-8.
//!
//! ```
//! use tableq_client::path::{entity_link, table_link};
//! assert_eq!(entity_link("t", "a'b", "😀"), "t(PartitionKey='a''b',RowKey='%F0%9F%98%80')");
//! assert_eq!(entity_link("t", "a/b c", ""), "t(PartitionKey='a%2Fb%20c',RowKey='')");
//! assert_eq!(table_link("Orders"), "Tables('Orders')");
//! ```

use percent_encoding::{AsciiSet, CONTROLS, utf8_percent_encode};

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

/// The path of a table's entity set, where inserts go: `t`.
pub fn entity_set_link(table: &str) -> String {
    utf8_percent_encode(table, LINK).to_string()
}

/// The path of a table's entity queries: `t()`.
pub fn query_link(table: &str) -> String {
    format!("{}()", entity_set_link(table))
}

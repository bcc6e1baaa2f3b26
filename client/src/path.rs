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
    let mut out = String::with_capacity(value.len() + 2);
    push_literal(&mut out, value);
    out
}

/// Appends `value` as an OData literal, percent-encoded for a URL path: `'a''b'`.
fn push_literal(out: &mut String, value: &str) {
    out.push('\'');
    for chunk in utf8_percent_encode(value, LINK) {
        // `'` is not in `LINK`: doubling it in the encoded text is doubling it before.
        let mut pieces = chunk.split('\'');
        if let Some(first) = pieces.next() {
            out.push_str(first);
        }
        for piece in pieces {
            out.push_str("''");
            out.push_str(piece);
        }
    }
    out.push('\'');
}

/// The link of an entity relative to the account: `t(PartitionKey='p',RowKey='r')`,
/// percent-encoded (ASCII, usable in headers). Written into one string (every write's
/// reply carries it twice, in `Location` and `DataServiceId`).
pub fn entity_link(table: &str, partition_key: &str, row_key: &str) -> String {
    let mut out = String::with_capacity(table.len() + partition_key.len() + row_key.len() + 32);
    out.extend(utf8_percent_encode(table, LINK));
    out.push_str("(PartitionKey=");
    push_literal(&mut out, partition_key);
    out.push_str(",RowKey=");
    push_literal(&mut out, row_key);
    out.push(')');
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The link is the keys with `'` doubled, then percent-encoded, in the OData form.
        #[test]
        fn entity_links_double_quotes_then_encode(
            table in "[A-Za-z0-9]{1,8}",
            pk in "['a/ %+&😀é\\x00-\\x1f]{0,12}",
            rk in "\\PC{0,12}",
        ) {
            let literal = |v: &str| format!("'{}'", utf8_percent_encode(&v.replace('\'', "''"), LINK));
            proptest::prop_assert_eq!(
                entity_link(&table, &pk, &rk),
                format!("{table}(PartitionKey={},RowKey={})", literal(&pk), literal(&rk))
            );
            proptest::prop_assert_eq!(literal_in_link(&pk), literal(&pk));
        }
    }
}

//! Property names in `$filter` and `$select`: the data model's property-name rules
//! (`tableq_model::validate::property_name`), except that the system properties
//! `PartitionKey`, `RowKey` and `Timestamp` may of course be named in queries.
//!
//! ```
//! // `Größe` is a valid name; a name of 256 characters is not.
//! use tableq_parser::{parse_select, ast::Select};
//! assert!(parse_select("Größe,PartitionKey").is_ok());
//! assert!(parse_select(&"a".repeat(256)).is_err());
//! ```

use tableq_model::SystemProperty;

/// The longest property name, in UTF-16 code units.
pub(crate) const MAX_LEN: usize = tableq_model::validate::MAX_PROPERTY_NAME_LEN;

/// Checks a property name; the error is a sentence explaining the rule that was broken.
pub(crate) fn check(name: &str) -> Result<(), String> {
    if SystemProperty::from_name(name).is_some() {
        return Ok(());
    }
    tableq_model::validate::property_name(name).map_err(|e| e.message)
}

/// A short, printable excerpt of a name for a headline: at most 40 characters.
pub(crate) fn excerpt(name: &str) -> String {
    const MAX: usize = 40;
    let mut out: String = name
        .chars()
        .take(MAX)
        .flat_map(char::escape_debug)
        .collect();
    if name.chars().nth(MAX).is_some() {
        out.push('…');
    }
    out
}

//! Validation of every data-model rule of the Table service: table names, property names,
//! key values, property counts, value sizes and the entity-size formula.
//!
//! Each check returns `Ok(())` or a [`ModelError`] carrying the service's [`ErrorCode`] and a
//! message that names the offending name or value and the limit it broke. Lengths are
//! counted in UTF-16 code units, as the service counts them.
//!
//! | rule | error code |
//! |---|---|
//! | table name not 3–63 long | `OutOfRangeInput` |
//! | table name not `^[A-Za-z][A-Za-z0-9]*$`, or `tables` (any case) | `InvalidResourceName` |
//! | property name longer than 255 | `PropertyNameTooLong` |
//! | property name not an identifier, `odata.`/`@` syntax, a system name | `PropertyNameInvalid` |
//! | key longer than 1,024 | `KeyValueTooLarge` |
//! | key with `/ \ # ?`, U+0000–U+001F or U+007F–U+009F | `InvalidInput` |
//! | more than 252 custom properties | `TooManyProperties` |
//! | String over 32,768 units, Binary over 65,536 bytes | `PropertyValueTooLarge` |
//! | entity over 1 MiB by [`entity_size`] | `EntityTooLarge` |
//!
//! Checks run in a fixed order, so an entity with several problems always reports the same
//! one: PartitionKey, RowKey, property count, then each property in name order (name, then
//! value), then the total size. (The JSON decoder keeps this order, with JSON syntax,
//! duplicates and annotations first, missing keys right after the keys, and properties in
//! payload order.) For names, the length is checked before the characters (as
//! the service does for table names).
//!
//! ```
//! use tableq_model::{validate, Entity, ErrorCode, SystemProperty};
//!
//! assert!(validate::table_name("Customers2024").is_ok());
//! assert_eq!(validate::table_name("ab").unwrap_err().code, ErrorCode::OutOfRangeInput);
//! assert_eq!(validate::table_name("Tables").unwrap_err().code, ErrorCode::InvalidResourceName);
//!
//! assert!(validate::property_name("Größe_2").is_ok());
//! assert_eq!(validate::property_name("first-name").unwrap_err().code,
//!            ErrorCode::PropertyNameInvalid);
//!
//! let err = validate::key(SystemProperty::RowKey, "a/b").unwrap_err();
//! assert_eq!(err.code, ErrorCode::InvalidInput);
//!
//! let mut e = Entity::new("p", "r");
//! e.set("Age", 42);
//! assert!(validate::entity(&e).is_ok());
//! // 4 + 1·2 + 1·2 + (8 + 3·2 + 4)
//! assert_eq!(validate::entity_size(&e), 26);
//! ```

use crate::order::utf16_len;
use crate::{Entity, ErrorCode, ModelError, SystemProperty, Value};
use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};

/// Shortest table name, in characters.
pub const MIN_TABLE_NAME_LEN: usize = 3;
/// Longest table name, in characters.
pub const MAX_TABLE_NAME_LEN: usize = 63;
/// Longest property name, in UTF-16 code units.
pub const MAX_PROPERTY_NAME_LEN: usize = 255;
/// Longest PartitionKey or RowKey, in UTF-16 code units (1 KiB, decided).
pub const MAX_KEY_LEN: usize = 1024;
/// Most custom properties of one entity (255 including the three system properties).
pub const MAX_CUSTOM_PROPERTIES: usize = 252;
/// Longest String value, in UTF-16 code units (64 KiB of UTF-16).
pub const MAX_STRING_LEN: usize = 32 * 1024;
/// Largest Binary value, in bytes.
pub const MAX_BINARY_LEN: usize = 64 * 1024;
/// Largest entity by [`entity_size`], in bytes.
pub const MAX_ENTITY_SIZE: usize = 1024 * 1024;

fn err(code: ErrorCode, message: impl Into<String>) -> Result<(), ModelError> {
    Err(ModelError::new(code, message))
}

/// A short, printable excerpt of user text for messages: at most 40 characters, with
/// control characters escaped.
pub(crate) fn excerpt(text: &str) -> String {
    const MAX: usize = 40;
    let mut out = String::new();
    for (i, c) in text.chars().enumerate() {
        if i == MAX {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// Checks a table name: `^[A-Za-z][A-Za-z0-9]{2,62}$`, and not `tables` in any case.
///
/// A name of bad length is `OutOfRangeInput` (checked first); bad characters, a first
/// character that is not a letter, or the reserved name `tables` are `InvalidResourceName`.
/// (Uniqueness within an account is case-insensitive; that is the storage layer's check.)
pub fn table_name(name: &str) -> Result<(), ModelError> {
    let len = utf16_len(name);
    if !(MIN_TABLE_NAME_LEN..=MAX_TABLE_NAME_LEN).contains(&len) {
        return err(
            ErrorCode::OutOfRangeInput,
            format!(
                "table name `{}` is {len} characters long: a table name must be \
                 {MIN_TABLE_NAME_LEN} to {MAX_TABLE_NAME_LEN} characters",
                excerpt(name)
            ),
        );
    }
    let mut chars = name.chars();
    if !chars.next().is_some_and(|c| c.is_ascii_alphabetic()) {
        return err(
            ErrorCode::InvalidResourceName,
            format!(
                "table name `{}` must start with a letter A-Z or a-z",
                excerpt(name)
            ),
        );
    }
    if let Some(bad) = chars.find(|c| !c.is_ascii_alphanumeric()) {
        return err(
            ErrorCode::InvalidResourceName,
            format!(
                "table name `{}` contains `{}`: only letters A-Z, a-z and digits 0-9 are allowed",
                excerpt(name),
                bad.escape_default()
            ),
        );
    }
    if name.eq_ignore_ascii_case("tables") {
        return err(
            ErrorCode::InvalidResourceName,
            format!("table name `{name}` is reserved (`tables` in any case)"),
        );
    }
    Ok(())
}

/// The form under which table names are unique and looked up: ASCII lowercase. Table names
/// are unique within an account case-insensitively (`MyTable` and `mytable` are one table);
/// the case given at creation is kept for display.
///
/// ```
/// use tableq_model::validate::table_key;
/// assert_eq!(table_key("MyTable"), table_key("mytable"));
/// assert_ne!(table_key("MyTable"), table_key("MyTable2"));
/// ```
pub fn table_key(name: &str) -> String {
    name.to_ascii_lowercase()
}

/// Whether `c` counts as a letter of a property name: the Unicode letter categories
/// (Lu, Ll, Lt, Lm, Lo) and letter numbers (Nl), like a C# identifier's letter-character.
fn is_name_letter(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphabetic();
    }
    matches!(
        c.general_category(),
        GeneralCategory::UppercaseLetter
            | GeneralCategory::LowercaseLetter
            | GeneralCategory::TitlecaseLetter
            | GeneralCategory::ModifierLetter
            | GeneralCategory::OtherLetter
            | GeneralCategory::LetterNumber
    )
}

/// Whether `c` is a decimal digit (category Nd) of a property name.
fn is_name_digit(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_digit();
    }
    c.general_category() == GeneralCategory::DecimalNumber
}

/// Checks a custom property name.
///
/// Rules: 1–255 UTF-16 code units (longer → `PropertyNameTooLong`); shaped like a C#
/// identifier — first a Unicode letter (categories Lu, Ll, Lt, Lm, Lo, Nl) or `_`, then
/// letters, decimal digits (Nd) or `_` — so no `-`, no spaces, no combining marks, no
/// control, format, private-use or unassigned code points; not annotation syntax (starting
/// with `odata.` or containing `@`); not one of the system names `PartitionKey`, `RowKey`,
/// `Timestamp` (other cases such as `timestamp` are ordinary names). All violations other
/// than length are `PropertyNameInvalid`.
pub fn property_name(name: &str) -> Result<(), ModelError> {
    let len = utf16_len(name);
    if len > MAX_PROPERTY_NAME_LEN {
        return err(
            ErrorCode::PropertyNameTooLong,
            format!(
                "property name `{}` is {len} UTF-16 code units long: the limit is \
                 {MAX_PROPERTY_NAME_LEN}",
                excerpt(name)
            ),
        );
    }
    if name.is_empty() {
        return err(
            ErrorCode::PropertyNameInvalid,
            "property name is empty: a name needs 1 to 255 characters",
        );
    }
    if name.starts_with("odata.") || name.contains('@') {
        return err(
            ErrorCode::PropertyNameInvalid,
            format!(
                "property name `{}` is annotation syntax (names starting with `odata.` or \
                 containing `@` are reserved for OData annotations)",
                excerpt(name)
            ),
        );
    }
    if let Some(system) = SystemProperty::from_name(name) {
        return err(
            ErrorCode::PropertyNameInvalid,
            format!(
                "property name `{}` is reserved for the system property; a custom property \
                 cannot use it",
                system.name()
            ),
        );
    }
    for (i, c) in name.chars().enumerate() {
        let ok = c == '_' || is_name_letter(c) || (i > 0 && is_name_digit(c));
        if !ok {
            let what = if i == 0 {
                "must start with a letter or `_`"
            } else {
                "may contain only letters, decimal digits and `_`"
            };
            return err(
                ErrorCode::PropertyNameInvalid,
                format!(
                    "property name `{}` contains `{}` (U+{:04X}) at character {}: a name {what}",
                    excerpt(name),
                    c.escape_default(),
                    u32::from(c),
                    i + 1
                ),
            );
        }
    }
    Ok(())
}

/// Whether `c` may not appear in a PartitionKey or RowKey.
pub fn is_forbidden_key_char(c: char) -> bool {
    matches!(c, '/' | '\\' | '#' | '?' | '\u{0}'..='\u{1F}' | '\u{7F}'..='\u{9F}')
}

/// Checks a PartitionKey or RowKey value (`which` names it in the message).
///
/// Rules: at most 1,024 UTF-16 code units (→ `KeyValueTooLarge`, checked first); none of
/// `/`, `\`, `#`, `?`, U+0000–U+001F, U+007F–U+009F (→ `InvalidInput`). The empty string is
/// a valid key.
pub fn key(which: SystemProperty, value: &str) -> Result<(), ModelError> {
    let name = which.name();
    let len = utf16_len(value);
    if len > MAX_KEY_LEN {
        return err(
            ErrorCode::KeyValueTooLarge,
            format!(
                "{name} `{}` is {len} UTF-16 code units long: the limit is {MAX_KEY_LEN} (1 KiB)",
                excerpt(value)
            ),
        );
    }
    if let Some((i, c)) = value
        .chars()
        .enumerate()
        .find(|&(_, c)| is_forbidden_key_char(c))
    {
        return err(
            ErrorCode::InvalidInput,
            format!(
                "{name} `{}` contains the forbidden character {} (U+{:04X}) at character {}: \
                 keys may not contain `/`, `\\`, `#`, `?` or control characters \
                 U+0000-U+001F, U+007F-U+009F",
                excerpt(value),
                if c.is_control() {
                    String::from("(control)")
                } else {
                    format!("`{c}`")
                },
                u32::from(c),
                i + 1
            ),
        );
    }
    Ok(())
}

/// The size of a value by the service's formula: String `len·2 + 4` (UTF-16), Binary
/// `len + 4`, Int32 4, Int64 8, Double 8, Boolean 1, DateTime 8, Guid 16.
pub fn value_size(value: &Value) -> usize {
    match value {
        Value::String(s) => utf16_len(s) * 2 + 4,
        Value::Binary(b) => b.len() + 4,
        Value::Int32(_) => 4,
        Value::Int64(_) | Value::Double(_) | Value::DateTime(_) => 8,
        Value::Boolean(_) => 1,
        Value::Guid(_) => 16,
    }
}

/// The size of an entity by the service's formula (decided):
/// `4 + len(PartitionKey)·2 + len(RowKey)·2 + Σ (8 + len(name)·2 + value size)` over custom
/// properties, lengths in UTF-16 code units (see [`value_size`]). The Timestamp is not
/// counted.
pub fn entity_size(entity: &Entity) -> usize {
    let keys = 4 + utf16_len(entity.partition_key()) * 2 + utf16_len(entity.row_key()) * 2;
    entity
        .properties()
        .iter()
        .map(|p| 8 + utf16_len(&p.name) * 2 + value_size(&p.value))
        .sum::<usize>()
        + keys
}

/// Checks a value's size: String at most 32 K UTF-16 code units, Binary at most 64 KiB
/// (→ `PropertyValueTooLarge`). Other types have fixed sizes; DateTime ranges are enforced by
/// [`crate::DateTime`] itself.
pub fn value(property: &str, value: &Value) -> Result<(), ModelError> {
    match value {
        Value::String(s) => {
            let len = utf16_len(s);
            if len > MAX_STRING_LEN {
                return err(
                    ErrorCode::PropertyValueTooLarge,
                    format!(
                        "property `{}`: String value is {len} UTF-16 code units long: the \
                         limit is {MAX_STRING_LEN} (64 KiB)",
                        excerpt(property)
                    ),
                );
            }
        }
        Value::Binary(b) if b.len() > MAX_BINARY_LEN => {
            return err(
                ErrorCode::PropertyValueTooLarge,
                format!(
                    "property `{}`: Binary value is {} bytes long: the limit is {MAX_BINARY_LEN} \
                     (64 KiB)",
                    excerpt(property),
                    b.len()
                ),
            );
        }
        _ => {}
    }
    Ok(())
}

/// Checks the number of custom properties: at most 252 (255 with the three system
/// properties), else `TooManyProperties`.
pub fn property_count(count: usize) -> Result<(), ModelError> {
    if count > MAX_CUSTOM_PROPERTIES {
        return err(
            ErrorCode::TooManyProperties,
            format!(
                "the entity has {count} custom properties ({} with the 3 system properties): \
                 the limit is {MAX_CUSTOM_PROPERTIES} (255 in all)",
                count + 3
            ),
        );
    }
    Ok(())
}

/// Checks a whole entity against every rule: both keys ([`key`]), at most 252 custom
/// properties (→ `TooManyProperties`), each property's name ([`property_name`]) and value
/// ([`value()`]), and the total size (→ `EntityTooLarge` over 1 MiB by [`entity_size`]).
pub fn entity(entity: &Entity) -> Result<(), ModelError> {
    key(SystemProperty::PartitionKey, entity.partition_key())?;
    key(SystemProperty::RowKey, entity.row_key())?;
    property_count(entity.len())?;
    for p in entity.properties() {
        property_name(&p.name)?;
        value(&p.name, &p.value)?;
    }
    let size = entity_size(entity);
    if size > MAX_ENTITY_SIZE {
        return err(
            ErrorCode::EntityTooLarge,
            format!(
                "the entity is {size} bytes by the service's size formula: the limit is \
                 {MAX_ENTITY_SIZE} bytes (1 MiB)"
            ),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DateTime;

    fn code<T: std::fmt::Debug>(r: Result<T, ModelError>) -> ErrorCode {
        r.expect_err("expected an error").code
    }

    #[test]
    fn table_names() {
        for ok in [
            "abc",
            "Abc",
            "a12",
            "MyTable",
            "tables1",
            "Table",
            &format!("a{}", "b".repeat(62)),
        ] {
            assert_eq!(table_name(ok), Ok(()), "{ok}");
        }
        for (bad, expected) in [
            ("", ErrorCode::OutOfRangeInput),
            ("a", ErrorCode::OutOfRangeInput),
            ("ab", ErrorCode::OutOfRangeInput),
            ("1", ErrorCode::OutOfRangeInput),
            (&format!("a{}", "b".repeat(63)), ErrorCode::OutOfRangeInput),
            ("1abc", ErrorCode::InvalidResourceName),
            ("_abc", ErrorCode::InvalidResourceName),
            ("ab-c", ErrorCode::InvalidResourceName),
            ("ab_c", ErrorCode::InvalidResourceName),
            ("ab c", ErrorCode::InvalidResourceName),
            ("abcé", ErrorCode::InvalidResourceName),
            ("tables", ErrorCode::InvalidResourceName),
            ("Tables", ErrorCode::InvalidResourceName),
            ("TABLES", ErrorCode::InvalidResourceName),
        ] {
            assert_eq!(code(table_name(bad)), expected, "{bad:?}");
        }
        let m = table_name("ab").unwrap_err().message;
        assert!(m.contains("`ab`") && m.contains("3 to 63"), "{m}");
    }

    #[test]
    fn property_names() {
        for ok in [
            "a",
            "_",
            "_1",
            "Name",
            "timestamp",
            "partitionkey",
            "Rowkey",
            "odata",
            "odataX",
            "Größe",
            "名前",
            "Ⅻ", // Nl letter number
            "aⅫ",
            "x٣",         // Arabic-Indic digit (Nd) after the first character
            "ǅx",         // Lt
            "ʰx",         // Lm
            "a\u{10400}", // Deseret capital (Lu, supplementary plane)
            &"n".repeat(255),
        ] {
            assert_eq!(property_name(ok), Ok(()), "{ok:?}");
        }
        for (bad, expected) in [
            ("", ErrorCode::PropertyNameInvalid),
            ("1a", ErrorCode::PropertyNameInvalid),
            ("٣x", ErrorCode::PropertyNameInvalid),
            ("first-name", ErrorCode::PropertyNameInvalid),
            ("a b", ErrorCode::PropertyNameInvalid),
            ("a.b", ErrorCode::PropertyNameInvalid),
            ("a$", ErrorCode::PropertyNameInvalid),
            ("e\u{301}", ErrorCode::PropertyNameInvalid), // combining mark (Mn)
            ("a\u{903}", ErrorCode::PropertyNameInvalid), // spacing mark (Mc)
            ("a\u{200D}", ErrorCode::PropertyNameInvalid), // format (Cf)
            ("a\u{E000}", ErrorCode::PropertyNameInvalid), // private use
            ("a\u{378}", ErrorCode::PropertyNameInvalid), // unassigned
            ("a\t", ErrorCode::PropertyNameInvalid),
            ("a²", ErrorCode::PropertyNameInvalid), // No, not Nd
            ("a‿b", ErrorCode::PropertyNameInvalid), // Pc other than `_`
            ("odata.type", ErrorCode::PropertyNameInvalid),
            ("odata.x", ErrorCode::PropertyNameInvalid),
            ("A@odata.type", ErrorCode::PropertyNameInvalid),
            ("PartitionKey", ErrorCode::PropertyNameInvalid),
            ("RowKey", ErrorCode::PropertyNameInvalid),
            ("Timestamp", ErrorCode::PropertyNameInvalid),
            (&"n".repeat(256), ErrorCode::PropertyNameTooLong),
            (&"\u{10400}".repeat(128), ErrorCode::PropertyNameTooLong), // 256 UTF-16 units
        ] {
            assert_eq!(code(property_name(bad)), expected, "{bad:?}");
        }
        assert_eq!(property_name(&"\u{10400}".repeat(127)), Ok(()));
        let m = property_name("first-name").unwrap_err().message;
        assert!(m.contains("first-name") && m.contains("`-`"), "{m}");
        let m = property_name(&"n".repeat(300)).unwrap_err().message;
        assert!(m.contains("300") && m.contains("255"), "{m}");
    }

    #[test]
    fn keys() {
        use SystemProperty::*;
        for ok in [
            "",
            "a",
            "a b",
            "é",
            "~!@$%^&*()",
            "\u{A0}",
            "\u{10000}",
            &"k".repeat(1024),
        ] {
            assert_eq!(key(PartitionKey, ok), Ok(()), "{ok:?}");
        }
        assert_eq!(key(RowKey, &"\u{10000}".repeat(512)), Ok(()));
        for bad in [
            "a/b", "a\\b", "#", "?", "\u{0}", "a\tb", "\n", "\r", "\u{1F}", "\u{7F}", "\u{80}",
            "\u{9F}",
        ] {
            assert_eq!(code(key(RowKey, bad)), ErrorCode::InvalidInput, "{bad:?}");
        }
        assert_eq!(
            code(key(PartitionKey, &"k".repeat(1025))),
            ErrorCode::KeyValueTooLarge
        );
        assert_eq!(
            code(key(RowKey, &"\u{10000}".repeat(513))),
            ErrorCode::KeyValueTooLarge
        );
        let m = key(RowKey, "a?b").unwrap_err().message;
        assert!(m.starts_with("RowKey `a?b`") && m.contains("`?`"), "{m}");
        let m = key(PartitionKey, &"k".repeat(2000)).unwrap_err().message;
        assert!(
            m.contains("PartitionKey") && m.contains("2000") && m.contains("1024"),
            "{m}"
        );
    }

    #[test]
    fn size_formula() {
        let mut e = Entity::new("pk", "rowkey");
        assert_eq!(entity_size(&e), 4 + 4 + 12);
        e.set_timestamp(Some(DateTime::MIN)); // not counted
        assert_eq!(entity_size(&e), 20);
        let base = 20;
        let cases: Vec<(Value, usize)> = vec![
            (Value::from("héllo\u{10000}"), 7 * 2 + 4),
            (Value::Binary(vec![1, 2, 3]), 3 + 4),
            (Value::Int32(1), 4),
            (Value::Int64(1), 8),
            (Value::Double(1.0), 8),
            (Value::Boolean(true), 1),
            (Value::DateTime(DateTime::MIN), 8),
            (Value::Guid(uuid::Uuid::nil()), 16),
        ];
        for (v, size) in cases {
            let mut e2 = e.clone();
            e2.set("Ab", v.clone());
            assert_eq!(entity_size(&e2), base + 8 + 4 + size, "{v:?}");
        }
    }

    #[test]
    fn property_count() {
        let mut e = Entity::new("p", "r");
        for i in 0..252 {
            e.set(format!("P{i}"), i);
        }
        assert_eq!(entity(&e), Ok(()));
        e.set("P252", 1);
        let error = entity(&e).unwrap_err();
        assert_eq!(error.code, ErrorCode::TooManyProperties);
        assert!(
            error.message.contains("253") && error.message.contains("252"),
            "{}",
            error.message
        );
    }

    #[test]
    fn value_sizes() {
        let mut e = Entity::new("p", "r");
        e.set("S", "s".repeat(MAX_STRING_LEN));
        e.set("B", vec![0u8; MAX_BINARY_LEN]);
        assert_eq!(entity(&e), Ok(()));
        let mut big = e.clone();
        big.set("S", "s".repeat(MAX_STRING_LEN + 1));
        let error = entity(&big).unwrap_err();
        assert_eq!(error.code, ErrorCode::PropertyValueTooLarge);
        assert!(
            error.message.contains("`S`") && error.message.contains("32768"),
            "{}",
            error.message
        );
        // 16,385 supplementary characters are 32,770 UTF-16 units.
        big.set("S", "\u{10000}".repeat(MAX_STRING_LEN / 2 + 1));
        assert_eq!(code(entity(&big)), ErrorCode::PropertyValueTooLarge);
        let mut big = e.clone();
        big.set("B", vec![0u8; MAX_BINARY_LEN + 1]);
        let error = entity(&big).unwrap_err();
        assert_eq!(error.code, ErrorCode::PropertyValueTooLarge);
        assert!(
            error.message.contains("`B`") && error.message.contains("65537"),
            "{}",
            error.message
        );
    }

    #[test]
    fn entity_too_large() {
        // 16 Binary properties of 64 KiB: 4 + 2 + 2 + 16·(8 + 2·2 + 65540) = 1,048,840 > 1 MiB.
        let mut e = Entity::new("p", "r");
        for i in 0..16 {
            e.set(format!("B{i:x}"), vec![0u8; MAX_BINARY_LEN]);
        }
        assert_eq!(entity_size(&e), 1_048_840);
        let error = entity(&e).unwrap_err();
        assert_eq!(error.code, ErrorCode::EntityTooLarge);
        assert!(
            error.message.contains("1048840") && error.message.contains("1048576"),
            "{}",
            error.message
        );
        // Exactly 1 MiB is allowed.
        e.set("Bf", vec![0u8; MAX_BINARY_LEN - 264]);
        assert_eq!(entity_size(&e), MAX_ENTITY_SIZE);
        assert_eq!(entity(&e), Ok(()));
    }

    #[test]
    fn entity_reports_names_keys_in_order() {
        let mut e = Entity::new("a/b", "r");
        e.set("bad-name", 1);
        assert_eq!(code(entity(&e)), ErrorCode::InvalidInput);
        e.set_partition_key("p");
        assert_eq!(code(entity(&e)), ErrorCode::PropertyNameInvalid);
        e.remove("bad-name");
        e.set("Timestamp", 1);
        assert_eq!(code(entity(&e)), ErrorCode::PropertyNameInvalid);
        e.remove("Timestamp");
        e.set("timestamp", 1);
        assert_eq!(entity(&e), Ok(()));
        e.set_row_key("r".repeat(1025));
        assert_eq!(code(entity(&e)), ErrorCode::KeyValueTooLarge);
    }
}

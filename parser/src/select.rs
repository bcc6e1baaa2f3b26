//! `$select` and `$top`.
//!
//! * `$select`: property names separated by commas, with optional spaces around each name
//!   (decided); `*` alone selects everything; an empty item is an error; duplicates are kept
//!   as written (the projection collapses them); at most 255 names; every name follows the
//!   data model's property-name rules (system property names included).
//! * `$top`: a decimal integer from 1 to 1000 (spaces around it are allowed, decided).
//!
//! ```
//! use tableq_parser::{parse_select, parse_top, ast::Select};
//! let s = parse_select("PartitionKey, Age ,Name").unwrap();
//! assert_eq!(s.to_string(), "PartitionKey,Age,Name");
//! assert!(matches!(parse_select(" * ").unwrap(), Select::All(_)));
//! assert!(parse_select("A,,B").is_err());
//! assert_eq!(parse_top("25").unwrap().value, 25);
//! assert!(parse_top("0").is_err());
//! ```

use crate::ast::{Property, Select, Top};
use crate::error::{ErrorKind, ParseError};
use crate::{Span, names};

/// The most names a `$select` may list.
pub const MAX_SELECT: usize = 255;
/// The largest `$top`.
pub const MAX_TOP: u32 = 1000;

/// Parses a `$select` value.
///
/// Errors: an empty item (`A,,B`, a trailing comma, an empty or all-space text), `*` with
/// other items, an invalid property name, more than 255 names.
pub fn parse_select(text: &str) -> Result<Select, ParseError> {
    let trimmed = text.trim_matches(' ');
    if trimmed == "*" {
        let start = text.len() - text.trim_start_matches(' ').len();
        return Ok(Select::All(Span::new(start, start + 1)));
    }
    let mut properties = Vec::new();
    let mut offset = 0;
    for item in text.split(',') {
        let item_start = offset;
        offset += item.len() + 1;
        let lead = item.len() - item.trim_start_matches(' ').len();
        let name = item.trim_matches(' ');
        let span = Span::new(item_start + lead, item_start + lead + name.len());
        if name.is_empty() {
            // Point at the empty item: the comma that follows it, or the end of the text.
            let at = (item_start + item.len()).min(text.len());
            let at = Span::new(at, (at + 1).min(text.len()));
            return Err(ParseError::new(ErrorKind::EmptySelectItem, at, text)
                .with_expected(&["a property name", "`*`"])
                .with_hint("expected a property name here"));
        }
        if name == "*" {
            return Err(ParseError::new(ErrorKind::StarNotAlone, span, text)
                .with_hint("select either `*` or a list of property names"));
        }
        if let Err(why) = names::check(name) {
            let hint = if name.contains(' ') {
                "separate property names with commas".to_owned()
            } else {
                why
            };
            return Err(ParseError::new(
                ErrorKind::InvalidPropertyName(names::excerpt(name)),
                span,
                text,
            )
            .with_hint(hint));
        }
        if properties.len() == MAX_SELECT {
            let count = text.split(',').count();
            return Err(ParseError::new(
                ErrorKind::TooManySelected {
                    count,
                    limit: MAX_SELECT,
                },
                span,
                text,
            )
            .with_hint(format!("name {} is over the limit", MAX_SELECT + 1)));
        }
        properties.push(Property {
            name: name.to_owned(),
            span,
        });
    }
    Ok(Select::Properties(properties))
}

/// Parses a `$top` value: an integer from 1 to 1000.
pub fn parse_top(text: &str) -> Result<Top, ParseError> {
    let lead = text.len() - text.trim_start_matches(' ').len();
    let value = text.trim_matches(' ');
    let span = Span::new(lead, lead + value.len());
    let digits = value.strip_prefix('-').unwrap_or(value);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(
            ParseError::new(ErrorKind::InvalidTop(names::excerpt(value)), span, text)
                .with_expected(&["an integer from 1 to 1000"]),
        );
    }
    let n = if value.starts_with('-') {
        None
    } else {
        value
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=MAX_TOP).contains(n))
    };
    match n {
        Some(n) => Ok(Top { value: n, span }),
        None => Err(
            ParseError::new(ErrorKind::TopOutOfRange(names::excerpt(value)), span, text)
                .with_hint("a page holds 1 to 1000 entities"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(text: &str) -> Vec<String> {
        match parse_select(text) {
            Ok(Select::Properties(ps)) => ps.into_iter().map(|p| p.name).collect(),
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn select_lists() {
        assert_eq!(names("A"), ["A"]);
        assert_eq!(names("A,B"), ["A", "B"]);
        assert_eq!(names("A , B,  C "), ["A", "B", "C"]);
        assert_eq!(names("A,A"), ["A", "A"]);
        assert_eq!(
            names("PartitionKey,RowKey,Timestamp,Größe"),
            ["PartitionKey", "RowKey", "Timestamp", "Größe"]
        );
        assert!(matches!(parse_select("*"), Ok(Select::All(_))));
        assert!(matches!(parse_select("  *  "), Ok(Select::All(s)) if s.range() == (2..3)));
        let spans: Vec<_> = match parse_select("A , Bc") {
            Ok(Select::Properties(ps)) => ps.iter().map(|p| p.span.range()).collect(),
            _ => vec![],
        };
        assert_eq!(spans, [0..1, 4..6]);
    }

    #[test]
    fn select_errors() {
        for (text, kind) in [
            ("", ErrorKind::EmptySelectItem),
            ("  ", ErrorKind::EmptySelectItem),
            ("A,,B", ErrorKind::EmptySelectItem),
            ("A,", ErrorKind::EmptySelectItem),
            (",A", ErrorKind::EmptySelectItem),
            ("*,A", ErrorKind::StarNotAlone),
            ("A,*", ErrorKind::StarNotAlone),
        ] {
            assert_eq!(parse_select(text).unwrap_err().kind(), &kind, "{text:?}");
        }
        for bad in ["1A", "A-B", "A B", "odata.etag", "a@b", "A/B", "A\tB", "**"] {
            assert!(
                matches!(
                    parse_select(bad).unwrap_err().kind(),
                    ErrorKind::InvalidPropertyName(_)
                ),
                "{bad}"
            );
        }
        assert_eq!(parse_select("A,,B").unwrap_err().span().range(), 2..3);
        assert!(parse_select(&"a".repeat(255)).is_ok());
        assert!(parse_select(&"a".repeat(256)).is_err());
    }

    #[test]
    fn select_count_limit() {
        let list = |n: usize| {
            (0..n)
                .map(|i| format!("P{i}"))
                .collect::<Vec<_>>()
                .join(",")
        };
        assert!(parse_select(&list(255)).is_ok());
        let e = parse_select(&list(256)).unwrap_err();
        assert_eq!(
            e.kind(),
            &ErrorKind::TooManySelected {
                count: 256,
                limit: 255
            }
        );
        assert_eq!(
            e.message(),
            "$select lists 256 properties; at most 255 are allowed"
        );
        // Duplicates count as listed.
        assert!(parse_select(&vec!["A"; 256].join(",")).is_err());
    }

    #[test]
    fn top() {
        assert_eq!(parse_top("1").unwrap().value, 1);
        assert_eq!(parse_top("1000").unwrap().value, 1000);
        assert_eq!(parse_top(" 7 ").unwrap().span.range(), 1..2);
        for bad in ["0", "1001", "-1", "-0", "99999999999999999999"] {
            assert!(
                matches!(
                    parse_top(bad).unwrap_err().kind(),
                    ErrorKind::TopOutOfRange(_)
                ),
                "{bad}"
            );
        }
        for bad in ["", " ", "abc", "1.5", "+5", "5L", "1e3", "1 0", "0x10"] {
            assert!(
                matches!(parse_top(bad).unwrap_err().kind(), ErrorKind::InvalidTop(_)),
                "{bad}"
            );
        }
    }
}

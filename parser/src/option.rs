//! The names of OData system query options: the Table service supports `$filter`,
//! `$select` and `$top`; every other `$`-option (`$orderby`, `$skip`, `$expand`, `$count`,
//! …) is rejected with a typed error naming it.
//!
//! ```
//! use tableq_parser::{QueryOption, ErrorKind};
//! assert_eq!(QueryOption::from_name("$top").unwrap(), Some(QueryOption::Top));
//! assert_eq!(QueryOption::from_name("NextPartitionKey").unwrap(), None);
//! let e = QueryOption::from_name("$orderby").unwrap_err();
//! assert_eq!(e.kind(), &ErrorKind::UnsupportedOption("$orderby".into()));
//! assert_eq!(e.message(), "the query option `$orderby` is not supported");
//! ```

use crate::error::{ErrorKind, ParseError};
use crate::{Span, names};
use std::fmt;

/// A supported OData system query option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QueryOption {
    /// `$filter`
    Filter,
    /// `$select`
    Select,
    /// `$top`
    Top,
}

impl QueryOption {
    /// The option's name, e.g. `"$filter"`.
    pub const fn name(self) -> &'static str {
        match self {
            QueryOption::Filter => "$filter",
            QueryOption::Select => "$select",
            QueryOption::Top => "$top",
        }
    }

    /// Classifies a query parameter name: `Ok(Some(_))` for `$filter`, `$select`, `$top`;
    /// `Ok(None)` for a name that is not a system query option (no leading `$`, e.g.
    /// `NextPartitionKey`); an [`ErrorKind::UnsupportedOption`] error for any other
    /// `$`-name. Names are case-sensitive; a wrongly-cased supported name gets a hint.
    pub fn from_name(name: &str) -> Result<Option<QueryOption>, ParseError> {
        let option = match name {
            "$filter" => QueryOption::Filter,
            "$select" => QueryOption::Select,
            "$top" => QueryOption::Top,
            _ if !name.starts_with('$') => return Ok(None),
            _ => {
                let err = ParseError::new(
                    ErrorKind::UnsupportedOption(names::excerpt(name)),
                    Span::new(0, name.len()),
                    name,
                )
                .with_expected(&["`$filter`", "`$select`", "`$top`"]);
                let known = [QueryOption::Filter, QueryOption::Select, QueryOption::Top];
                return Err(
                    match known.iter().find(|o| o.name().eq_ignore_ascii_case(name)) {
                        Some(o) => err.with_hint(format!(
                            "query option names are case-sensitive: did you mean `{}`?",
                            o.name()
                        )),
                        None => err.with_hint(
                            "the Table service supports only `$filter`, `$select` and `$top`",
                        ),
                    },
                );
            }
        };
        Ok(Some(option))
    }
}

impl fmt::Display for QueryOption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn supported_and_other_names() {
        for o in [QueryOption::Filter, QueryOption::Select, QueryOption::Top] {
            assert_eq!(QueryOption::from_name(o.name()), Ok(Some(o)));
        }
        for name in ["NextPartitionKey", "NextRowKey", "timeout", ""] {
            assert_eq!(QueryOption::from_name(name), Ok(None), "{name}");
        }
        for name in [
            "$orderby", "$skip", "$expand", "$count", "$format", "$search", "$",
        ] {
            let e = QueryOption::from_name(name).unwrap_err();
            assert_eq!(e.kind(), &ErrorKind::UnsupportedOption(name.into()));
        }
        let e = QueryOption::from_name("$Filter").unwrap_err();
        assert_eq!(
            e.hint(),
            Some("query option names are case-sensitive: did you mean `$filter`?")
        );
    }
}

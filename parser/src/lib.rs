//! # tableq-parser — `$filter`, `$select`, `$top` and resource paths to spanned syntax
//!
//! This crate owns the query *syntax* of the Table service: a `logos` [lexer](lex), a `nom`
//! parser over the token slice, the spanned [`ast`], and [`ParseError`] diagnostics that
//! point at the offending bytes. It also parses the REST protocol's [resource paths](resource)
//! (`Tables('t')`, `t()`, `t(PartitionKey='p',RowKey='r')`, …) with [`parse_resource`],
//! reusing the lexer's string literals and the same diagnostics. It is the front door for
//! untrusted URL input: it never panics, never recurses while parsing (the nesting limit
//! bounds the depth of the AST), and runs in linear time.
//!
//! ```
//! use tableq_parser::{parse_filter, parse_select, parse_top, FilterOptions};
//!
//! let filter = parse_filter("PartitionKey eq 'p1' and not (Age lt 18 or Banned)",
//!                           &FilterOptions::default()).unwrap();
//! assert_eq!(filter.to_string(), "PartitionKey eq 'p1' and not (Age lt 18 or Banned)");
//!
//! let err = parse_filter("PartitionKey EQ 'a'", &FilterOptions::default()).unwrap_err();
//! assert_eq!(err.hint(), Some("keywords are lowercase: did you mean `eq`?"));
//!
//! assert_eq!(parse_select("Name, Age").unwrap().to_string(), "Name,Age");
//! assert_eq!(parse_top("10").unwrap().value, 10);
//!
//! use tableq_parser::{parse_resource, Resource};
//! let r = parse_resource("people(PartitionKey='p1',RowKey='O''Brien')").unwrap();
//! assert!(matches!(&r, Resource::Entity { row_key, .. } if row_key.value == "O'Brien"));
//! ```
//!
//! Stages: [`lex`] → [`parse_filter`] (grammar in the `filter` module) → [`ast::Filter`],
//! whose `Display` prints canonical OData that parses back to an equal AST.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod ast;
mod comparison;
mod error;
mod filter;
mod input;
mod lexer;
mod names;
mod option;
mod print;
pub mod resource;
mod select;
mod span;
mod token;

pub use error::{ErrorKind, ParseError, Unsupported};
pub use lexer::lex;
pub use option::QueryOption;
pub use resource::{Resource, parse_resource};
pub use select::{MAX_SELECT, MAX_TOP, parse_select, parse_top};
pub use span::Span;
pub use token::Token;

/// The service's nesting limit: `(` and `not` levels.
pub const DEFAULT_MAX_DEPTH: usize = 100;
/// The service's comparison limit (a bare boolean property counts as one).
pub const DEFAULT_MAX_COMPARISONS: usize = 15;
/// The service's filter length limit in UTF-8 bytes (32 KiB).
pub const DEFAULT_MAX_LEN: usize = 32 * 1024;
/// The largest nesting limit honoured, whatever [`FilterOptions::max_depth`] says. The
/// parser itself does not recurse, but code walking the AST (printing, `Drop`, planners)
/// recurses once per level; this keeps every such walk far from a thread's stack limit.
pub const MAX_DEPTH_CAP: usize = 1000;

/// Limits applied by [`parse_filter`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FilterOptions {
    /// Most nested levels of `(` and `not` (default 100; the 101st is an error). Values
    /// above [`MAX_DEPTH_CAP`] act as [`MAX_DEPTH_CAP`].
    pub max_depth: usize,
    /// Most comparisons, bare boolean properties included (default `Some(15)`; `None` =
    /// unlimited).
    pub max_comparisons: Option<usize>,
    /// Longest filter text in UTF-8 bytes (default 32,768).
    pub max_len: usize,
}

impl Default for FilterOptions {
    /// The Table service's limits.
    fn default() -> FilterOptions {
        FilterOptions {
            max_depth: DEFAULT_MAX_DEPTH,
            max_comparisons: Some(DEFAULT_MAX_COMPARISONS),
            max_len: DEFAULT_MAX_LEN,
        }
    }
}

impl FilterOptions {
    /// The service's limits without the comparison limit (nesting and length limits stay).
    pub fn unlimited() -> FilterOptions {
        FilterOptions {
            max_comparisons: None,
            ..FilterOptions::default()
        }
    }
}

/// Parses a `$filter` expression.
///
/// An empty or all-space text is "no filter" (`Filter { expr: None }`). Errors carry the
/// span of the offending text, what was expected and often a hint; see [`ErrorKind`] for
/// everything that is rejected.
///
/// ```
/// use tableq_parser::{parse_filter, FilterOptions, ast::Expr};
/// let f = parse_filter("30 lt Age", &FilterOptions::default()).unwrap();
/// let Some(Expr::Comparison(c)) = &f.expr else { panic!() };
/// assert_eq!((c.property.name.as_str(), c.normalized_op().as_str()), ("Age", "gt"));
/// assert_eq!(parse_filter("   ", &FilterOptions::default()).unwrap().expr, None);
/// ```
pub fn parse_filter(text: &str, options: &FilterOptions) -> Result<ast::Filter, ParseError> {
    filter::parse(text, options)
}

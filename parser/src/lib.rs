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
mod limits;
mod names;
mod option;
mod print;
pub mod resource;
mod select;
mod span;
mod token;

pub use error::{ErrorKind, ParseError, Unsupported};
pub use filter::parse_filter;
pub use lexer::lex;
pub use limits::{
    DEFAULT_MAX_COMPARISONS, DEFAULT_MAX_DEPTH, DEFAULT_MAX_LEN, FilterOptions, MAX_DEPTH_CAP,
};
pub use option::QueryOption;
pub use resource::{Resource, parse_resource};
pub use select::{MAX_SELECT, MAX_TOP, parse_select, parse_top};
pub use span::Span;
pub use token::Token;

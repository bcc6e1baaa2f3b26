//! # tableq-parser — `$filter`, `$select` and `$top` text to a spanned AST
//!
//! This crate owns the query *syntax* of the Table service: a `logos` lexer, a `nom` parser
//! over the token slice, the spanned [`ast`], and [`ParseError`] diagnostics that point at
//! the offending bytes. It is the front door for untrusted URL input.
//!
//! (The lexer and parser are being built; see the crate's issue.)
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod ast;
mod span;

pub use span::Span;

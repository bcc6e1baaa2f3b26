//! # tableq-planner — typed predicates, key ranges, residuals, explain
//!
//! (Being built: lowers the parser's AST to a normalised predicate and a [`plan::Plan`].)
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod plan;
pub mod predicate;

//! # tableq — a query compiler and executor for the Azure Table service data model
//!
//! This facade re-exports the layers of the pipeline, lowest first:
//!
//! * [`model`] — Edm types and values, entities, validation, the JSON wire format;
//! * [`parser`] — `$filter`/`$select`/`$top` text to a spanned AST;
//! * [`planner`] — typed predicates, key ranges and residuals;
//! * [`exec`] — parallel execution over any ordered entity source.
//!
//! and, for test suites, [`testing`]: the emulator started in-process on a free port.
//!
//! ```
//! use tableq::model::{Entity, Value};
//! let mut e = Entity::new("p", "r");
//! e.set("Age", Value::Int32(3));
//! assert!(e.get("Age").is_some());
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod datagen;
pub mod testing;

pub use tableq_exec as exec;
pub use tableq_model as model;
pub use tableq_parser as parser;
pub use tableq_planner as planner;

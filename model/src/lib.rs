//! # tableq-model — the Azure Table service data model
//!
//! This crate owns everything the Table service says about *data*, independent of queries:
//!
//! * [`EdmType`] and [`Value`] / [`ValueRef`] — the eight Edm property types, printed in
//!   OData literal form by `Display`;
//! * [`DateTime`] — a UTC instant in 100 ns ticks limited to 1601-01-01 … 9999-12-31;
//! * [`Entity`] — PartitionKey, RowKey, Timestamp and custom properties, and the
//!   [`EntityView`] trait through which evaluators read any entity representation;
//! * [`order`] — the one value order of the spec (UTF-16 ordinal strings, Guid bytes, …);
//! * [`compare()`] — the **single** function that decides a `$filter` comparison
//!   (missing properties, numeric widening, type mismatch, NaN);
//! * [`ErrorCode`] / [`ModelError`] — the service's error codes with actionable messages;
//! * [`validate`] — every data-model rule (table and property names, keys, counts, sizes,
//!   the entity-size formula), each violation with the service's error code;
//! * [`json`] — the JSON wire format: decoding with annotations and the service's lenient
//!   conversions, encoding in the three metadata levels, and the ETag.
//!
//! Lower layers never depend on higher ones: this crate knows nothing of parsing or planning.
//!
//! ```
//! use tableq_model::{compare, CmpOp, Entity, Value};
//!
//! let mut e = Entity::new("p1", "r1");
//! e.set("Age", Value::Int32(42));
//! // An Int32 literal compared with an Int32 property: by value.
//! assert!(compare(e.get("Age"), CmpOp::Gt, Value::Int32(30).as_ref()));
//! // A missing property makes every comparison false, even `ne`.
//! assert!(!compare(e.get("Name"), CmpOp::Ne, Value::from("x").as_ref()));
//!
//! // Entities come from the service's JSON and are validated on the way in.
//! use tableq_model::json::{decode_entity, DecodeOptions};
//! let e = decode_entity(r#"{"PartitionKey":"p","RowKey":"r","Age":42}"#,
//!                       &DecodeOptions::default()).unwrap();
//! assert!(tableq_model::validate::entity(&e).is_ok());
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod compare;
mod datetime;
mod edm;
mod entity;
mod error;
pub mod json;
pub mod order;
pub mod validate;
mod value;

pub use compare::{CmpOp, compare, order_against};
pub use datetime::{DateTime, DateTimeError};
pub use edm::{EdmType, UnknownEdmType};
pub use entity::{Entity, EntityView, Property, SystemProperty};
pub use error::{ErrorCode, ModelError};
pub use value::{Value, ValueRef, write_double};

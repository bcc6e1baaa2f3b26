//! Layer 4, operations.

pub(crate) mod admin;
pub(crate) mod batch;
pub(crate) mod cors;
pub(crate) mod entities;
pub(crate) mod explorer;
pub(crate) mod query;
pub(crate) mod tables;

//! Layer 2, protocol pieces.

pub(crate) mod body;
pub(crate) mod context;
pub mod continuation;
pub(crate) mod encode;
pub mod error;
pub(crate) mod formats;
pub mod negotiate;
pub mod query_options;
pub mod resource;
pub mod xml;

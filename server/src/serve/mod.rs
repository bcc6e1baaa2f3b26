//! Layer 6, serving.

pub(crate) mod connection;
pub(crate) mod https;
pub(crate) mod observe;
pub(crate) mod server;

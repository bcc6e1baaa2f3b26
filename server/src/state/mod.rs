//! Layer 1, shared state: what the whole server shares and every other layer may read.

pub mod config;
pub mod tls;
pub mod token;

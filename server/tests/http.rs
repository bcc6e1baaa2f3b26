//! The server's end-to-end tests, one test binary: each file under `server/tests/` is one
//! module (`autotests = false` in `Cargo.toml`), and a test's name starts with its file's
//! (`cargo test -p tableq-server --test http batch::`). One binary links the workspace
//! once instead of once per file; the files share `server_support` (the in-process server
//! and its signed requests) and the stores the protocol tests run on.

#[path = "server_support/pg.rs"]
mod pg;
mod server_support;
#[path = "server_support/stores.rs"]
mod stores;

mod admin;
mod batch;
mod corners;
mod cors;
mod entities;
mod faults;
mod legacy_clients;
mod protocol;
mod query;
mod service_replies;
mod tables;

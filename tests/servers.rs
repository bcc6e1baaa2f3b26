//! One test binary for `tableq serve` over real HTTP: the server's flags, banner, TLS,
//! limits, logs and tokens; authorization; hostile input; concurrency; crash safety and
//! data trust; the conformance corpus and the store's contract suite over HTTP; PostgreSQL
//! faults; the testing features (fixtures, cycles).
//!
//! See `tests/commands.rs` for why the root's tests are three binaries; tests are named
//! `<file>::<test>` (`cargo test --test servers server_auth::`).

#[path = "conformance/corpus.rs"]
#[allow(dead_code)]
mod corpus;
mod http_backend;
#[path = "../server/tests/server_support/pg.rs"]
mod pg;
mod robust_support;
mod serve_support;
#[path = "../server/tests/server_support/mod.rs"]
mod server_support;
#[path = "../store/tests/suite/mod.rs"]
#[macro_use]
mod suite;
mod testing_support;

mod client;
mod concurrency;
mod conformance_http;
mod crash_safety;
mod data_trust;
mod hostile_input;
mod pg_faults;
mod serve_fixtures;
mod server_auth;
mod server_disk_full;
mod server_explorer;
mod server_lifecycle;
mod server_limits;
mod server_observability;
mod server_tokens;
mod store_suite_http;
mod testing_server;

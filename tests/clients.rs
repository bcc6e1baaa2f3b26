//! One test binary for the suites of real clients, each run by its script against the
//! built `tableq`: the official SDKs (`sdk_clients`), the other public clients
//! (`compat_clients`), the test-fixture packages (`fixture_packages`), and headless
//! Chromium (`browser_cors`, `browser_explorer`).
//!
//! See `tests/commands.rs` for why the root's tests are three binaries; tests are named
//! `<file>::<test>` (`cargo test --test clients sdk_clients::`).

mod browser_support;
#[path = "../store/tests/pg/cluster.rs"]
mod pg_cluster;
mod suite_runner;

mod browser_cors;
mod browser_explorer;
mod compat_clients;
mod fixture_packages;
mod sdk_clients;

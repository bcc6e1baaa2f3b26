//! PostgreSQL servers for the engine's tests, started through `scripts/pg-cluster.sh`
//! (locating and starting them is `cluster.rs`, shared with the HTTP tests of the root crate).
//!
//! How servers are started and stopped (the Rust test harness has no global teardown):
//!
//! * Each test binary starts its servers once, on first use (a `OnceLock`), with
//!   `pg-cluster.sh up --owner-pid <this process> --no-fsync`. The script leaves a watcher
//!   that stops the servers (`pg_ctl stop` on their data directories) and removes the
//!   temporary directory as soon as the test process has exited — normally, by panic, or
//!   killed — so no test has to be "last". `up` also reaps clusters whose owner died while
//!   the watcher was not running.
//! * Every test works in its own schema (`?schema=…`), so tests run in parallel on one
//!   server without seeing each other's tables.
//! * Without PostgreSQL binaries (`pg-cluster.sh bindir` finds no `PG_BINDIR`, no
//!   `pg_config`, no `/usr/lib/postgresql/*/bin/initdb`) every test prints `SKIPPED: …` on
//!   stderr and returns; with binaries present, a server that does not start fails the tests.
#![allow(dead_code)]

mod cluster;

pub use cluster::Cluster;
use cluster::{skipped, start};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use tableq_store::postgres::{PostgresBackend, PostgresConfig, provision_sharded};

/// One server for this test binary, or `None` (after a SKIPPED message) without binaries.
pub fn single(test: &str) -> Option<&'static Cluster> {
    static SINGLE: OnceLock<Option<Cluster>> = OnceLock::new();
    let c = SINGLE.get_or_init(|| start(0)).as_ref();
    if c.is_none() {
        skipped(test);
    }
    c
}

/// A coordinator and three shards for this test binary, or `None` without binaries.
pub fn sharded(test: &str) -> Option<&'static Cluster> {
    static SHARDED: OnceLock<Option<Cluster>> = OnceLock::new();
    let c = SHARDED.get_or_init(|| start(3)).as_ref();
    if c.is_none() {
        skipped(test);
    }
    c
}

/// A schema name no other test of this process uses.
pub fn fresh_schema() -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    format!(
        "t{}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// The URL of `schema` on `url`.
pub fn url_with_schema(url: &str, schema: &str) -> String {
    format!("{url}?schema={schema}&pool_size=6")
}

/// Opens a fresh schema on the single server.
pub fn open_single(cluster: &Cluster) -> (PostgresBackend, String) {
    let url = url_with_schema(&cluster.url, &fresh_schema());
    (PostgresBackend::open(&url).expect("open"), url)
}

/// Provisions a fresh partitioned schema over the shards and opens it.
pub fn open_sharded(cluster: &Cluster) -> (PostgresBackend, String) {
    let schema = fresh_schema();
    let url = url_with_schema(&cluster.url, &schema);
    let coordinator = PostgresConfig::from_url(&url).expect("coordinator url");
    let shards: Vec<PostgresConfig> = cluster
        .shards
        .iter()
        .map(|u| PostgresConfig::from_url(&url_with_schema(u, &schema)).expect("shard url"))
        .collect();
    provision_sharded(&coordinator, &shards).expect("provision");
    (PostgresBackend::open(&url).expect("open"), url)
}

/// A single-threaded runtime for the engine's async entry (`Backend::get_nonblocking`).
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

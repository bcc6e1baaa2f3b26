//! A PostgreSQL server for the HTTP tests on the PostgreSQL engine, started once per test
//! binary through `scripts/pg-cluster.sh up --owner-pid <this process>` (the script's
//! watcher stops it and removes its directory when the test process exits, however it
//! exits). Without PostgreSQL's server binaries, [`server_url`] prints `SKIPPED: …` and
//! returns `None`. Locating and starting the servers is the engine tests' `cluster.rs`
//! (`store/tests/pg/cluster.rs`), so both suites find and skip PostgreSQL the same way.

#[path = "../../../store/tests/pg/cluster.rs"]
pub(crate) mod cluster;

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A URL of the server with a schema no other test of this process uses, or `None` (after
/// a `SKIPPED` message naming `test`) when PostgreSQL is not installed.
pub fn server_url(test: &str) -> Option<String> {
    static URL: OnceLock<Option<String>> = OnceLock::new();
    static SCHEMA: AtomicUsize = AtomicUsize::new(0);
    match URL.get_or_init(|| cluster::start(0).map(|c| c.url)) {
        Some(url) => Some(format!(
            "{url}?schema=http{}_{}&pool_size=4",
            std::process::id(),
            SCHEMA.fetch_add(1, Ordering::Relaxed)
        )),
        None => {
            cluster::skipped(test);
            None
        }
    }
}

//! PostgreSQL servers for the engine's tests, started through `scripts/pg-cluster.sh`.
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
//! * Without PostgreSQL binaries (no `PG_BINDIR`, no `pg_config`, no
//!   `/usr/lib/postgresql/*/bin/initdb`) every test prints `SKIPPED: …` on stderr and
//!   returns; with binaries present, a server that does not start fails the tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use tableq_store::postgres::{PostgresBackend, PostgresConfig, provision_sharded};

/// A running set of servers.
#[derive(Debug)]
pub struct Cluster {
    /// The script's directory (for `down`).
    pub dir: String,
    /// The coordinator (or the single server).
    pub url: String,
    /// The shards' URLs (empty for a single server).
    pub shards: Vec<String>,
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from(".."))
}

/// Whether PostgreSQL's server binaries are installed where the script looks.
pub fn binaries_available() -> bool {
    if let Ok(dir) = std::env::var("PG_BINDIR") {
        return Path::new(&dir).join("initdb").exists();
    }
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output()
        && out.status.success()
    {
        let dir = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        if Path::new(&dir).join("initdb").exists() {
            return true;
        }
    }
    std::fs::read_dir("/usr/lib/postgresql")
        .map(|entries| {
            entries
                .flatten()
                .any(|e| e.path().join("bin/initdb").exists())
        })
        .unwrap_or(false)
}

fn start(shards: usize) -> Option<Cluster> {
    if !binaries_available() {
        return None;
    }
    let script = workspace_root().join("scripts/pg-cluster.sh");
    let out = Command::new("bash")
        .arg(&script)
        .args(["up", "--no-fsync", "--shards", &shards.to_string()])
        .args(["--owner-pid", &std::process::id().to_string()])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "pg-cluster.sh up --shards {shards} failed:\n{stderr}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let var = |name: &str| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}=")))
            .map(|v| v.trim_matches('\'').to_owned())
            .unwrap_or_else(|| panic!("pg-cluster.sh printed no {name}:\n{stdout}\n{stderr}"))
    };
    Some(Cluster {
        dir: var("TABLEQ_PG_DIR"),
        url: var("TABLEQ_PG_URL"),
        shards: var("TABLEQ_PG_SHARDS")
            .split_whitespace()
            .map(str::to_owned)
            .collect(),
    })
}

fn skipped(what: &str) {
    eprintln!(
        "SKIPPED: {what}: PostgreSQL binaries not found (install Debian's postgresql-15, or set \
         PG_BINDIR to the directory holding initdb and pg_ctl)"
    );
}

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

/// One `#[test]` per suite case, each on a fixture from `$fixture(test_name) ->
/// Option<Fixture>` (`None`: skipped, the fixture printed why), plus a test that the list
/// names every case of the shared suite's `backend_suite!` and `durable_suite!` (so a case
/// added there cannot silently miss PostgreSQL).
#[macro_export]
macro_rules! pg_cases {
    ($fixture:path; $($case:ident),* $(,)?) => {
        $(
            #[test]
            fn $case() {
                let Some(mut f) = $fixture(stringify!($case)) else { return };
                suite::$case(&mut f);
            }
        )*

        #[test]
        fn every_shared_suite_case_runs_here() {
            let mut expected = pg::shared_suite_cases();
            let mut here: Vec<String> = [$(stringify!($case)),*].iter().map(|s| (*s).to_owned()).collect();
            expected.sort();
            here.sort();
            assert_eq!(here, expected, "add the new suite cases to pg_cases!");
        }
    };
}

/// The case names listed in `backend_suite!` and `durable_suite!` of the shared suite.
pub fn shared_suite_cases() -> Vec<String> {
    let text = include_str!("../suite/mod.rs");
    let mut names = Vec::new();
    for mac in ["macro_rules! backend_suite", "macro_rules! durable_suite"] {
        let start = text.find(mac).expect("suite macro");
        let body = &text[start..];
        let list = &body[body.find("$fixture;").expect("case list") + "$fixture;".len()..];
        let list = &list[..list.find(");").expect("end of case list")];
        names.extend(
            list.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
        );
    }
    names
}

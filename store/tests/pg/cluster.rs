//! Local PostgreSQL servers for tests, through `scripts/pg-cluster.sh` — the one place that
//! locates the binaries (`pg-cluster.sh bindir`) and starts servers (`pg-cluster.sh up`).
//!
//! Shared by the engine's tests (`store/tests/pg/mod.rs`, as `mod cluster`) and the HTTP
//! tests of the workspace root (`tests/server_support/pg.rs`, through `#[path]`), so both
//! find, start and skip PostgreSQL the same way. It uses only the standard library.
//!
//! Servers are started with `--owner-pid <this process> --no-fsync`: the script's watcher
//! stops them (`pg_ctl stop` on their data directories) and removes the temporary directory
//! once the test process has exited — normally, by panic, or killed.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Stdio};

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

/// `scripts/pg-cluster.sh` of this workspace (the including crate is the workspace root or
/// one of its member crates).
pub fn script() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let here = manifest.join("scripts/pg-cluster.sh");
    if here.exists() {
        return here;
    }
    manifest.join("../scripts/pg-cluster.sh")
}

/// Whether PostgreSQL's server binaries are installed where the script looks (`PG_BINDIR`,
/// `pg_config --bindir`, the newest `/usr/lib/postgresql/*/bin`).
pub fn binaries_available() -> bool {
    Command::new("bash")
        .arg(script())
        .arg("bindir")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// Prints the `SKIPPED` line of a test that needs PostgreSQL when it is not installed.
pub fn skipped(what: &str) {
    eprintln!(
        "SKIPPED: {what}: PostgreSQL binaries not found (install Debian's postgresql-15, or set \
         PG_BINDIR to the directory holding initdb and pg_ctl)"
    );
}

/// Starts one server (`shards` 0) or a coordinator over `shards` shards for this process, or
/// `None` without binaries. With binaries present, a failed start panics with the script's
/// messages (a test must not pass because its server did not start).
pub fn start(shards: usize) -> Option<Cluster> {
    if !binaries_available() {
        return None;
    }
    let script = script();
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

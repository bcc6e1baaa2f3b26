//! Local PostgreSQL servers for tests, through `scripts/pg-cluster.sh` — the one place that
//! locates the binaries (`pg-cluster.sh bindir`) and starts servers (`pg-cluster.sh up`).
//!
//! Shared by the engine's tests (`store/tests/pg/mod.rs`, as `mod cluster`) and the HTTP
//! tests of the workspace root (`server/tests/server_support/pg.rs`, through `#[path]`), so both
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
    /// The same server through its Unix socket.
    pub socket_url: String,
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

/// Where Debian installs PostgreSQL 15's server binaries: when this directory exists and
/// the `CI` variable is set, the PostgreSQL tests must run — a server that cannot be
/// found or started fails them instead of skipping them.
pub const CI_BINDIR: &str = "/usr/lib/postgresql/15/bin";

/// Whether PostgreSQL tests are mandatory here: `CI` is set (not empty, `0` or `false`) and
/// [`CI_BINDIR`] exists.
pub fn required() -> bool {
    let ci = std::env::var("CI").is_ok_and(|v| {
        let v = v.trim().to_ascii_lowercase();
        !v.is_empty() && v != "0" && v != "false"
    });
    ci && std::path::Path::new(CI_BINDIR).is_dir()
}

/// Reports a test that needs PostgreSQL when it is not available: the `SKIPPED` line, or,
/// where PostgreSQL is [`required`] (CI with the binaries installed), a panic that fails
/// the test.
pub fn skipped(what: &str) {
    assert!(
        !required(),
        "{what}: CI is set and {CI_BINDIR} exists, but scripts/pg-cluster.sh finds no usable \
         PostgreSQL binaries (`bash scripts/pg-cluster.sh bindir` says why); PostgreSQL tests \
         are not skipped in CI"
    );
    eprintln!(
        "SKIPPED: {what}: PostgreSQL binaries not found (install Debian's postgresql-15, or set \
         PG_BINDIR to the directory holding initdb and pg_ctl)"
    );
}

/// Starts one server (`shards` 0) or a coordinator over `shards` shards for this process, or
/// `None` without binaries (the caller then reports [`skipped`], which fails where
/// PostgreSQL is [`required`]). With binaries present, a failed start panics with the
/// script's messages (a test must not pass because its server did not start).
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
        socket_url: var("TABLEQ_PG_SOCKET_URL"),
        shards: var("TABLEQ_PG_SHARDS")
            .split_whitespace()
            .map(str::to_owned)
            .collect(),
    })
}

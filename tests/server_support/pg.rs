//! A PostgreSQL server for the HTTP tests on the PostgreSQL engine, started once per test
//! binary through `scripts/pg-cluster.sh up --owner-pid <this process>` (the script's
//! watcher stops it and removes its directory when the test process exits, however it
//! exits). Without PostgreSQL's server binaries, [`server_url`] prints `SKIPPED: …` and
//! returns `None` — the same convention as the engine's own tests (`store/tests/pg/`).

use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

fn binaries_available() -> bool {
    if let Ok(dir) = std::env::var("PG_BINDIR") {
        return Path::new(&dir).join("initdb").exists();
    }
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output()
        && out.status.success()
        && Path::new(String::from_utf8_lossy(&out.stdout).trim())
            .join("initdb")
            .exists()
    {
        return true;
    }
    std::fs::read_dir("/usr/lib/postgresql")
        .map(|entries| {
            entries
                .flatten()
                .any(|e| e.path().join("bin/initdb").exists())
        })
        .unwrap_or(false)
}

fn start() -> Option<String> {
    if !binaries_available() {
        return None;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/pg-cluster.sh");
    let out = Command::new("bash")
        .arg(&script)
        .args([
            "up",
            "--no-fsync",
            "--owner-pid",
            &std::process::id().to_string(),
        ])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "pg-cluster.sh up failed:\n{stderr}");
    let url = stdout
        .lines()
        .find_map(|l| l.strip_prefix("TABLEQ_PG_URL="))
        .map(|v| v.trim_matches('\'').to_owned())
        .unwrap_or_else(|| panic!("pg-cluster.sh printed no TABLEQ_PG_URL:\n{stdout}\n{stderr}"));
    Some(url)
}

/// A URL of the server with a schema no other test of this process uses, or `None` (after
/// a `SKIPPED` message naming `test`) when PostgreSQL is not installed.
pub fn server_url(test: &str) -> Option<String> {
    static URL: OnceLock<Option<String>> = OnceLock::new();
    static SCHEMA: AtomicUsize = AtomicUsize::new(0);
    match URL.get_or_init(start) {
        Some(url) => Some(format!(
            "{url}?schema=http{}_{}&pool_size=4",
            std::process::id(),
            SCHEMA.fetch_add(1, Ordering::Relaxed)
        )),
        None => {
            eprintln!(
                "SKIPPED: {test}: PostgreSQL binaries not found (install Debian's \
                 postgresql-15, or set PG_BINDIR to the directory holding initdb and pg_ctl)"
            );
            None
        }
    }
}

//! The client-compatibility suites, run from `cargo test --workspace`:
//! `scripts/compat-tests.sh` installs five clients of the Table service into project-local
//! environments from pinned files — the legacy Node `azure-storage` 2.10.7 and
//! `azure-table-node` 1.5.0 (npm), the legacy Python `azure-cosmosdb-table` 1.0.6 (PyPI), the
//! Rust `azure_data_tables` 0.21 crate (`tests/compat/rust`, a crate of its own outside this
//! workspace, built into its own target dir) and the Azure CLI (Debian's `azure-cli`, installed
//! by the script when it runs as root) — starts the `tableq` binary built for this test with
//! `serve` on a free loopback port, runs every suite against it, and stops it by its pid.
//!
//! One test runs them on the durable default store (a fresh data directory), one on
//! PostgreSQL (`--store pg`, a server that `scripts/pg-cluster.sh` starts and stops). The
//! PostgreSQL test prints `SKIPPED: …` and passes only where PostgreSQL's server binaries are
//! not installed, and fails instead in CI (`pg_cluster::skipped`). Where the Azure CLI cannot
//! be installed the script skips its suite with the reason printed — and fails in CI
//! (`CI=true`), as it does for any missing tool.
//!
//! On failure the panic lists the failing tests of each runner (node's `✖`, pytest's
//! `FAILED`, the Rust crate runner's `FAILED`) and the script's summary; the full output is
//! printed above it.

use crate::pg_cluster;
use crate::suite_runner;

/// The lines that name failing tests or say what failed, each once: pytest's `FAILED` and
/// `ERROR <nodeid>` summary lines (not its captured `ERROR    logger` records), node's `✖`
/// lines after its failing-tests header, the Rust runner's `FAILED` lines, and the script's
/// own `compat-tests:` lines. (The runners' stdout comes before the script's stderr, so
/// node's header flag is not reset between suites; the de-duplication keeps one line each.)
fn failure_lines(output: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = Vec::new();
    let mut node_summary = false;
    for line in output.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("✖ failing tests") {
            node_summary = true;
            continue;
        }
        let is_pytest_or_rust = trimmed.starts_with("FAILED ")
            || (trimmed.starts_with("ERROR ") && !trimmed.starts_with("ERROR  "));
        let is_node = node_summary && trimmed.starts_with('✖');
        let wanted = is_pytest_or_rust || is_node || trimmed.starts_with("compat-tests:");
        if wanted && !lines.contains(&line) {
            lines.push(line);
        }
    }
    lines
}

/// What a passing run should still show: each runner's totals, every skip with its reason,
/// and the script's summary lines.
fn notable_lines(output: &str) -> Vec<&str> {
    output
        .lines()
        .filter(|line| {
            let trimmed = line.trim_start();
            suite_runner::is_runner_summary(trimmed)
                || (trimmed.starts_with("compat-tests:") && trimmed.contains(" suite"))
                || trimmed.starts_with("compat-tests: all suites")
                || trimmed.starts_with("rust: ")
        })
        .collect()
}

/// Runs `scripts/compat-tests.sh ARGS` with this test's `tableq` binary (module
/// `suite_runner`).
fn run_compat_tests(args: &[&str]) {
    suite_runner::Script {
        path: "scripts/compat-tests.sh",
        tag: "compat-tests:",
        log: "compat_clients",
        programs: &["python3", "node", "npm", "cargo"],
        missing_hint: "The compatibility suites need python3 (with venv), node (>= 20), npm \
                       and cargo — see docs/testing.md.",
        unset: &["TABLEQ_COMPAT_ENDPOINT"],
        failure_lines,
        notable_lines,
    }
    .run(args);
}

#[test]
fn every_client_passes_its_suite_against_tableq_serve() {
    run_compat_tests(&["--store", "durable"]);
}

#[test]
fn every_client_passes_its_suite_against_tableq_serve_on_postgres() {
    if !pg_cluster::binaries_available() {
        // SKIPPED with the reason, or a failure in CI where the binaries are installed.
        pg_cluster::skipped("every_client_passes_its_suite_against_tableq_serve_on_postgres");
        return;
    }
    run_compat_tests(&["--store", "pg"]);
}

#[test]
fn failure_lines_name_the_failing_tests_of_every_runner() {
    let output = "\
compat-tests: running the node-legacy suite (azure-storage 2.10.7)
\u{2714} tables (5ms)
\u{2716} batches (7ms)
\u{2716} failing tests:
\u{2716} batches (7ms)
  AssertionError [ERR_ASSERTION]: Expected values
\u{2716} table SAS (3ms)
\u{2139} tests 7
\u{2716} failing tests:
\u{2716} table SAS (3ms)
compat-tests: running the python-legacy suite (azure-cosmosdb-table 1.0.6)
E   AssertionError: nope
ERROR    azure.cosmosdb.table.common.storageclient:storageclient.py:424 Retry policy did not allow
FAILED test_legacy_python.py::test_x - AssertionError: nope
ERROR test_legacy_python.py::test_y - RuntimeError: setup
=========== 1 failed, 3 passed in 2.00s ===========
compat-tests: running the rust suite (azure_data_tables 0.21)
ok tables (0.10 s)
FAILED transactions: transaction: server error
rust: 1 passed, 1 failed
compat-tests: FAILED: node-legacy python-legacy rust
";
    assert_eq!(
        failure_lines(output),
        [
            "compat-tests: running the node-legacy suite (azure-storage 2.10.7)",
            "\u{2716} batches (7ms)",
            "\u{2716} table SAS (3ms)",
            "compat-tests: running the python-legacy suite (azure-cosmosdb-table 1.0.6)",
            "FAILED test_legacy_python.py::test_x - AssertionError: nope",
            "ERROR test_legacy_python.py::test_y - RuntimeError: setup",
            "compat-tests: running the rust suite (azure_data_tables 0.21)",
            "FAILED transactions: transaction: server error",
            "compat-tests: FAILED: node-legacy python-legacy rust",
        ]
    );
}

#[test]
fn notable_lines_keep_totals_skips_and_summaries() {
    let output = "\
compat-tests: installing tests/compat/rust
\u{2139} pass 9
\u{2139} skipped 0
=========== 19 passed in 3.00s ===========
ok tables (0.10 s)
rust: 7 passed, 0 failed
compat-tests: SKIPPED: azcli suite: az is not installed
compat-tests: rust suite (azure_data_tables 0.21, store durable): passed in 40 s
compat-tests: all suites passed
";
    assert_eq!(
        notable_lines(output),
        [
            "\u{2139} pass 9",
            "\u{2139} skipped 0",
            "=========== 19 passed in 3.00s ===========",
            "rust: 7 passed, 0 failed",
            "compat-tests: SKIPPED: azcli suite: az is not installed",
            "compat-tests: rust suite (azure_data_tables 0.21, store durable): passed in 40 s",
            "compat-tests: all suites passed",
        ]
    );
}

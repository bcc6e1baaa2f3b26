//! The real-client suites, run from `cargo test --workspace`: `scripts/sdk-tests.sh` installs
//! the official SDKs (Python `azure-data-tables`, JavaScript `@azure/data-tables`) into
//! project-local environments, starts the `tableq` binary built for this test with
//! `serve` on the durable default store (a fresh data directory) on a free loopback port,
//! runs both suites against it (plus the restart and `UseDevelopmentStorage=true` tests,
//! which start their own servers), and stops every server by its pid.
//!
//! Needs `python3` (with `venv`), `node` ≥ 20 and `npm`, and the PyPI and npm registries on
//! the first run; later runs reuse `tests/sdk/python/.venv` and `tests/sdk/js/node_modules`.
//! On failure the panic lists the failing Python and JS tests; the full output is printed
//! above it.
//!
//! Both suites run again against `tableq serve --store postgres://…` on one PostgreSQL
//! server, and the Python suite on a coordinator hash-partitioned over 3 shards
//! (postgres_fdw), started by `scripts/sdk-tests.sh --store pg|pg-sharded` through
//! `scripts/pg-cluster.sh` and stopped by their pids at the end (the JS suite is not repeated
//! on the shards: the engine is the same, the sharded layout is what the Python run checks,
//! and CI time is bounded). Those tests print `SKIPPED: …` and pass only when PostgreSQL's
//! server binaries are not installed — and fail instead in CI where
//! `/usr/lib/postgresql/15/bin` exists (`pg_cluster::skipped`). The in-memory engine is
//! covered by the Rust HTTP tests and the store suite.

use crate::pg_cluster;
use crate::suite_runner;

/// The lines of the runner's output that name failing tests or say what failed: pytest's
/// `FAILED`/`ERROR` summary lines, node's `✖` lines, and the runner's own `sdk-tests:` lines.
fn failure_lines(output: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut node_summary = false;
    for line in output.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("✖ failing tests") {
            node_summary = true;
            continue;
        }
        let is_pytest = trimmed.starts_with("FAILED ") || trimmed.starts_with("ERROR ");
        let is_node = node_summary && trimmed.starts_with('✖');
        if is_pytest || is_node || trimmed.starts_with("sdk-tests:") {
            lines.push(line);
        }
    }
    lines
}

/// What a passing run should still show: the runner's summary and every skipped test with
/// its reason (pytest `SKIPPED [n] file:line: reason`, node's spec reporter
/// `﹣ name (time) # reason`).
fn notable_lines(output: &str) -> Vec<&str> {
    output
        .lines()
        .filter(|line| {
            let trimmed = line.trim_start();
            suite_runner::is_runner_summary(trimmed)
                || trimmed.starts_with("sdk-tests: python suite")
                || trimmed.starts_with("sdk-tests: js suite")
        })
        .collect()
}

/// Runs `scripts/sdk-tests.sh ARGS` with this test's `tableq` binary (module
/// `suite_runner`), needing `programs` on `PATH`.
fn run_sdk_tests(args: &[&str], programs: &[&str]) {
    suite_runner::Script {
        path: "scripts/sdk-tests.sh",
        tag: "sdk-tests:",
        log: "sdk_clients",
        programs,
        missing_hint: "The SDK suites need python3 (>= 3.8, with venv), node (>= 20) and npm \
                       (CI has them) — see docs/testing.md.",
        unset: &["TABLEQ_SDK_ENDPOINT", "TABLEQ_SDK_STORE"],
        failure_lines,
        notable_lines,
    }
    .run(args);
}

#[test]
fn python_and_js_sdk_suites_pass_against_tableq_serve() {
    run_sdk_tests(&["--store", "durable"], &["python3", "node", "npm"]);
}

/// `suite` (`all` or `python`) against `tableq serve --store postgres://…` on `store` (`pg`
/// or `pg-sharded`); skipped, with a printed reason, only when PostgreSQL is not installed.
fn sdk_suites_on(store: &str, suite: &str, test: &str) {
    if !pg_cluster::binaries_available() {
        // SKIPPED with the reason, or a failure in CI where the binaries are installed.
        pg_cluster::skipped(test);
        return;
    }
    let programs: &[&str] = if suite == "python" {
        &["python3"]
    } else {
        &["python3", "node", "npm"]
    };
    run_sdk_tests(&["--suite", suite, "--store", store], programs);
}

#[test]
fn python_and_js_sdk_suites_pass_against_tableq_serve_on_postgres() {
    sdk_suites_on(
        "pg",
        "all",
        "python_and_js_sdk_suites_pass_against_tableq_serve_on_postgres",
    );
}

#[test]
fn python_sdk_suite_passes_against_tableq_serve_on_postgres_with_3_shards() {
    sdk_suites_on(
        "pg-sharded",
        "python",
        "python_sdk_suite_passes_against_tableq_serve_on_postgres_with_3_shards",
    );
}

#[test]
fn failure_lines_name_the_failing_tests_of_both_runners() {
    let output = "\
sdk-tests: running the Python suite (azure-data-tables 12.7.0, pytest)
test_query.py:12: in test_x
E   AssertionError: nope
FAILED test_query.py::test_x[0] - AssertionError: nope
ERROR test_restart.py::test_y - RuntimeError: did not start
=========== 1 failed, 3 passed, 1 error in 2.00s ===========
\u{2716} upsertEntity Merge inserts (5ms)
\u{2716} failing tests:
\u{2716} upsertEntity Merge inserts (5ms)
  AssertionError [ERR_ASSERTION]: Expected values
sdk-tests: FAILED: python js
";
    assert_eq!(
        failure_lines(output),
        [
            "sdk-tests: running the Python suite (azure-data-tables 12.7.0, pytest)",
            "FAILED test_query.py::test_x[0] - AssertionError: nope",
            "ERROR test_restart.py::test_y - RuntimeError: did not start",
            "\u{2716} upsertEntity Merge inserts (5ms)",
            "sdk-tests: FAILED: python js",
        ]
    );
}

#[test]
fn notable_lines_keep_skip_reasons_and_summaries() {
    let output = "\
SKIPPED [1] test_devstorage.py:14: port 10002 is in use
=========== 120 passed, 1 skipped in 30.00s ===========
\u{2714} some test (3ms)
\u{FE63} UseDevelopmentStorage=true works unchanged (1ms) # port 10002 is in use
\u{2139} pass 115
\u{2139} skipped 1
sdk-tests: python suite (azure-data-tables): passed
sdk-tests: js suite (@azure/data-tables): passed
";
    assert_eq!(
        notable_lines(output),
        [
            "SKIPPED [1] test_devstorage.py:14: port 10002 is in use",
            "=========== 120 passed, 1 skipped in 30.00s ===========",
            "\u{FE63} UseDevelopmentStorage=true works unchanged (1ms) # port 10002 is in use",
            "\u{2139} pass 115",
            "\u{2139} skipped 1",
            "sdk-tests: python suite (azure-data-tables): passed",
            "sdk-tests: js suite (@azure/data-tables): passed",
        ]
    );
}

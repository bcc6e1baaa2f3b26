//! The real-client suites, run from `cargo test --workspace`: `scripts/sdk-tests.sh` installs
//! the official SDKs (Python `azure-data-tables`, JavaScript `@azure/data-tables`) into
//! project-local environments, starts the `tableq` binary built for this test with
//! `serve --in-memory` on a free loopback port, runs both suites against it (plus the
//! restart and `UseDevelopmentStorage=true` tests, which start their own servers), and
//! stops every server by its pid.
//!
//! Needs `python3` (with `venv`), `node` ≥ 20 and `npm`, and the PyPI and npm registries on
//! the first run; later runs reuse `tests/sdk/python/.venv` and `tests/sdk/js/node_modules`.
//! On failure the panic lists the failing Python and JS tests; the full output is printed
//! above it.
//!
//! The Python suite runs twice more against `tableq serve --store postgres://…`: on one
//! PostgreSQL server and on a coordinator hash-partitioned over 3 shards (postgres_fdw),
//! both started by `scripts/sdk-tests.sh --store pg|pg-sharded` through
//! `scripts/pg-cluster.sh` and stopped by their pids at the end. Those two tests print
//! `SKIPPED: …` and pass only when PostgreSQL's server binaries are not installed — and
//! fail instead in CI where `/usr/lib/postgresql/15/bin` exists (`pg_cluster::skipped`).

#[path = "../store/tests/pg/cluster.rs"]
mod pg_cluster;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

/// Whether `program --version` runs.
fn available(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

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
            trimmed.starts_with("SKIPPED")
                || trimmed.starts_with('\u{FE63}')
                || trimmed.starts_with("sdk-tests: python suite")
                || trimmed.starts_with("sdk-tests: js suite")
                || (trimmed.starts_with("=") && trimmed.contains(" passed"))
                || trimmed.starts_with("ℹ pass")
                || trimmed.starts_with("ℹ skipped")
        })
        .collect()
}

/// Runs `scripts/sdk-tests.sh ARGS` with this test's `tableq` binary; panics with the failing
/// tests when it fails, and prints the skipped tests and summaries when it passes.
fn run_sdk_tests(args: &[&str], programs: &[&str]) {
    let missing: Vec<&str> = programs
        .iter()
        .copied()
        .filter(|program| !available(program))
        .collect();
    assert!(
        missing.is_empty(),
        "the SDK suites need python3 (>= 3.8, with venv), node (>= 20) and npm on PATH; \
         missing: {}. Install them (CI has them) — see README \"Using the emulator from the \
         Azure SDKs\".",
        missing.join(", ")
    );

    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let started = Instant::now();
    let output = Command::new("bash")
        .arg(root.join("scripts/sdk-tests.sh"))
        .args(args)
        .current_dir(root)
        .env("TABLEQ_BIN", env!("CARGO_BIN_EXE_tableq"))
        .env_remove("TABLEQ_SDK_ENDPOINT")
        .env_remove("TABLEQ_SDK_STORE")
        .env("NO_COLOR", "1")
        .env("FORCE_COLOR", "0")
        .stdin(Stdio::null())
        .output()
        .expect("run bash scripts/sdk-tests.sh");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );

    if !output.status.success() {
        eprintln!("{text}");
        let mut summary = failure_lines(&text);
        if !summary
            .iter()
            .any(|line| !line.trim_start().starts_with("sdk-tests:"))
        {
            // No test ran to a verdict (setup failed): show how the output ended.
            let lines: Vec<&str> = text.lines().collect();
            summary = lines[lines.len().saturating_sub(30)..].to_vec();
        }
        panic!(
            "scripts/sdk-tests.sh {} failed ({}); failing tests and summary:\n{}",
            args.join(" "),
            output.status,
            summary.join("\n")
        );
    }

    // Shown even though the test passed (written past the test harness's capture), so a
    // skipped test is never silent.
    let mut stderr = std::io::stderr().lock();
    for line in notable_lines(&text) {
        let _ = writeln!(stderr, "sdk_clients: {}", line.trim());
    }
    let _ = writeln!(
        stderr,
        "sdk_clients: scripts/sdk-tests.sh {} took {:.0} s",
        args.join(" "),
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn python_and_js_sdk_suites_pass_against_tableq_serve() {
    run_sdk_tests(&[], &["python3", "node", "npm"]);
}

/// The Python suite against `tableq serve --store postgres://…` on `store` (`pg` or
/// `pg-sharded`); skipped, with a printed reason, only when PostgreSQL is not installed.
fn python_sdk_suite_on(store: &str, test: &str) {
    if !pg_cluster::binaries_available() {
        // SKIPPED with the reason, or a failure in CI where the binaries are installed.
        pg_cluster::skipped(test);
        return;
    }
    run_sdk_tests(&["--suite", "python", "--store", store], &["python3"]);
}

#[test]
fn python_sdk_suite_passes_against_tableq_serve_on_postgres() {
    python_sdk_suite_on(
        "pg",
        "python_sdk_suite_passes_against_tableq_serve_on_postgres",
    );
}

#[test]
fn python_sdk_suite_passes_against_tableq_serve_on_postgres_with_3_shards() {
    python_sdk_suite_on(
        "pg-sharded",
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

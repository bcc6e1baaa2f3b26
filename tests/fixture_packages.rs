//! The test-fixture packages, each installed by its own script from a clean environment and
//! run against the `tableq` binary of this build (issue 30):
//!
//! * `packages/pytest-tableq/run-tests.sh` — the pytest plugin built and installed into a
//!   fresh virtual environment with azure-data-tables and pytest, its example suite run;
//! * `packages/tableq-testing/run-tests.sh` — the Node package packed and installed into a
//!   fresh node project with @azure/data-tables, its example node:test suite run.
//!
//! Both go through the client-suite runner (`tests/suite_runner`): tools checked on `PATH`,
//! `TABLEQ_BIN` set, the failing tests listed in the panic. Needs `python3` (with `venv`),
//! `node` ≥ 20 and `npm`, and PyPI and the npm registry on the first run: the wheels are
//! kept in `~/.cache/tableq-fixture-tests`, the npm packages in npm's cache, so later runs
//! install offline.

use crate::suite_runner;

/// pytest's `FAILED`/`ERROR` lines, node's `✖` lines, and the scripts' own lines.
fn failure_lines(output: &str) -> Vec<&str> {
    output
        .lines()
        .filter(|line| {
            let trimmed = line.trim_start();
            trimmed.starts_with("FAILED ")
                || trimmed.starts_with("ERROR ")
                || trimmed.starts_with('\u{2716}')
                || trimmed.starts_with("pytest-tableq:")
                || trimmed.starts_with("tableq-testing:")
        })
        .collect()
}

/// The summaries a passing run still shows.
fn notable_lines(output: &str) -> Vec<&str> {
    output
        .lines()
        .filter(|line| {
            let trimmed = line.trim_start();
            suite_runner::is_runner_summary(trimmed)
                || trimmed.starts_with("pytest-tableq:")
                || trimmed.starts_with("tableq-testing:")
        })
        .collect()
}

fn run(path: &str, tag: &str, programs: &[&str]) {
    suite_runner::Script {
        path,
        tag,
        log: "fixture_packages",
        programs,
        missing_hint: "The fixture packages' tests need python3 (with venv), node (>= 20) and \
                       npm (CI has them).",
        unset: &["PYTEST_ADDOPTS", "NODE_OPTIONS"],
        failure_lines,
        notable_lines,
    }
    .run(&[]);
}

#[test]
fn the_pytest_plugin_installs_into_a_fresh_venv_and_its_example_suite_passes() {
    run(
        "packages/pytest-tableq/run-tests.sh",
        "pytest-tableq:",
        &["python3"],
    );
}

#[test]
fn the_node_package_installs_into_a_fresh_project_and_its_example_suite_passes() {
    run(
        "packages/tableq-testing/run-tests.sh",
        "tableq-testing:",
        &["node", "npm"],
    );
}

#[test]
fn failure_lines_name_the_failing_tests_of_both_runners() {
    let output = "\
pytest-tableq: installed pytest-tableq into a fresh environment in 9 s
test_example.py::test_x PASSED
FAILED test_example.py::test_y - AssertionError
\u{2714} fine (3ms)
\u{2716} insert, query and upsert (5ms)
tableq-testing: example suite: FAILED (status 1)
";
    assert_eq!(
        failure_lines(output),
        [
            "pytest-tableq: installed pytest-tableq into a fresh environment in 9 s",
            "FAILED test_example.py::test_y - AssertionError",
            "\u{2716} insert, query and upsert (5ms)",
            "tableq-testing: example suite: FAILED (status 1)",
        ]
    );
    assert_eq!(
        notable_lines("===== 8 passed in 1.0s =====\n\u{2139} pass 4\nother\n"),
        ["===== 8 passed in 1.0s =====", "\u{2139} pass 4"]
    );
}

//! Runs one file of `tests/browser` (node --test, playwright-core driving Debian's headless
//! Chromium) through `scripts/browser-tests.sh`, against the `tableq` binary built for the
//! calling test, and checks that it passed — or, outside CI, that it was skipped with a
//! printed reason (`SKIPPED: …`, repeated on stderr past the test harness's capture). In
//! CI (`CI` set to anything but `false` or `0`; `.ci/run` runs with `CI=true`) a browser
//! test that cannot run fails: the script refuses to skip there, and so does this check,
//! whichever of the script or the test file reported the skip.
//!
//! The script installs Chromium with apt-get when it is missing and can be installed (CI
//! runs as root); it starts `tableq serve --in-memory` (authorization on) on a free
//! loopback port and stops it by its pid. The page and the test get account SAS tokens of
//! the development account built here: one that may do everything, one that may only read
//! and list.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use tableq_client::sign::{AccountKey, SasBuilder};

/// Runs `tests/browser/{file}` (e.g. `test/cors.test.mjs`) holding `tests` tests; `label`
/// prefixes the lines repeated on stderr.
pub fn run_browser_test(file: &str, tests: usize, label: &str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let sas = SasBuilder::account("sco")
        .permissions("rwdlacu")
        .window_from_now(Some(-300), 3600)
        .sign(&AccountKey::development());
    // The page of a user who may only read and list (the explorer offers no New/Import).
    let read_only = SasBuilder::account("sco")
        .permissions("rl")
        .window_from_now(Some(-300), 3600)
        .sign(&AccountKey::development());
    let mut command = Command::new("bash");
    command
        .arg(root.join("scripts/browser-tests.sh"))
        .arg(file)
        .current_dir(root)
        .env("TABLEQ_BIN", env!("CARGO_BIN_EXE_tableq"))
        .env("TABLEQ_BROWSER_SAS", sas)
        .env("TABLEQ_BROWSER_SAS_READONLY", read_only)
        .env("NO_COLOR", "1")
        .env("FORCE_COLOR", "0")
        .stdin(Stdio::null());
    let output = command.output().expect("run bash scripts/browser-tests.sh");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success(),
        "scripts/browser-tests.sh {file} failed ({}):\n{text}",
        output.status
    );
    // A skip is never silent: shown past the harness's capture.
    let mut stderr = std::io::stderr().lock();
    for line in text.lines().filter(|l| {
        let l = l.trim_start();
        l.starts_with("SKIPPED") || l.starts_with("ℹ pass") || l.starts_with("ℹ skipped")
    }) {
        let _ = writeln!(stderr, "{label}: {}", line.trim());
    }
    let skipped = text.contains("SKIPPED") || !text.contains("ℹ skipped 0\n");
    if skipped && in_ci() {
        panic!("{label}: the browser test was skipped, which CI does not allow:\n{text}");
    }
    if !text.contains("SKIPPED") {
        assert!(
            text.contains(&format!("ℹ pass {tests}\n")),
            "the browser test did not run:\n{text}"
        );
    }
}

/// Whether this runs in CI: `CI` set to anything but empty, `false` or `0` (the rule of
/// `scripts/browser-tests.sh`).
fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !matches!(v.as_str(), "" | "false" | "0"))
}

//! CORS from a real browser: `scripts/browser-tests.sh` runs `tests/browser` (node --test,
//! playwright-core driving Debian's headless Chromium) against the `tableq` binary built for
//! this test: a page served from its own loopback origin calls tableq with `fetch()`, and
//! Chromium lets it see the answers exactly when the account's CORS rules allow its origin.
//!
//! The script installs Chromium with apt-get when it is missing and can be installed (CI
//! runs as root); where it cannot, it prints `SKIPPED: <reason>` and this test passes,
//! repeating the reason on stderr. The page gets an account SAS built here.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use tableq_client::sign::{AccountKey, SasBuilder};

#[test]
fn a_browser_page_reaches_tableq_only_through_its_cors_rules() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let sas = SasBuilder::account("sco")
        .permissions("rwdlacu")
        .window_from_now(Some(-300), 3600)
        .sign(&AccountKey::development());
    let output = Command::new("bash")
        .arg(root.join("scripts/browser-tests.sh"))
        .current_dir(root)
        .env("TABLEQ_BIN", env!("CARGO_BIN_EXE_tableq"))
        .env("TABLEQ_BROWSER_SAS", sas)
        .env("NO_COLOR", "1")
        .env("FORCE_COLOR", "0")
        .stdin(Stdio::null())
        .output()
        .expect("run bash scripts/browser-tests.sh");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success(),
        "scripts/browser-tests.sh failed ({}):\n{text}",
        output.status
    );
    // A skip is never silent: shown past the harness's capture.
    let mut stderr = std::io::stderr().lock();
    for line in text.lines().filter(|l| {
        let l = l.trim_start();
        l.starts_with("SKIPPED") || l.starts_with("ℹ pass") || l.starts_with("ℹ skipped")
    }) {
        let _ = writeln!(stderr, "browser_cors: {}", line.trim());
    }
    if !text.contains("SKIPPED") {
        assert!(
            text.contains("ℹ pass 1"),
            "the browser test did not run:\n{text}"
        );
    }
}

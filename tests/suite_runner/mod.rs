//! Running a client-suite script (`scripts/sdk-tests.sh`, `scripts/compat-tests.sh`) from
//! `cargo test`: one home for what `tests/sdk_clients.rs` and `tests/compat_clients.rs`
//! share — the tools the script needs on `PATH`, the script run with this test's `tableq`
//! binary, a panic that lists the failing tests when it fails, and the summaries and skips
//! printed (past the harness's capture) when it passes, so a skipped test is never silent.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

/// Whether `program --version` runs.
pub fn available(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// A summary line every runner prints, whatever the script (`trimmed`: the line without
/// its indentation): a skip with its reason (`SKIPPED …`, node's `﹣ name # reason`),
/// pytest's `=== N passed … ===`, node's `ℹ pass N` and `ℹ skipped N`.
pub fn is_runner_summary(trimmed: &str) -> bool {
    trimmed.starts_with("SKIPPED")
        || trimmed.starts_with('\u{FE63}')
        || (trimmed.starts_with('=') && trimmed.contains(" passed"))
        || trimmed.starts_with("\u{2139} pass")
        || trimmed.starts_with("\u{2139} skipped")
}

/// One script and how to read its output.
pub struct Script<'a> {
    /// The script, relative to the repository (`scripts/sdk-tests.sh`).
    pub path: &'a str,
    /// The prefix of the script's own lines (`sdk-tests:`).
    pub tag: &'a str,
    /// The prefix of the lines this test prints (`sdk_clients`).
    pub log: &'a str,
    /// The tools it needs on `PATH`, and what to say when one is missing.
    pub programs: &'a [&'a str],
    /// The advice that follows the list of missing tools.
    pub missing_hint: &'a str,
    /// Variables of the caller's environment that would point the script elsewhere.
    pub unset: &'a [&'a str],
    /// The lines that name failing tests.
    pub failure_lines: fn(&str) -> Vec<&str>,
    /// The lines a passing run still shows.
    pub notable_lines: fn(&str) -> Vec<&str>,
}

impl Script<'_> {
    /// Runs the script with `args`; panics with the failing tests when it fails, and prints
    /// the summaries and skips when it passes.
    pub fn run(&self, args: &[&str]) {
        let missing: Vec<&str> = self
            .programs
            .iter()
            .copied()
            .filter(|program| !available(program))
            .collect();
        assert!(
            missing.is_empty(),
            "{} needs {} on PATH; missing: {}. {}",
            self.path,
            self.programs.join(", "),
            missing.join(", "),
            self.missing_hint
        );
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let started = Instant::now();
        let mut command = Command::new("bash");
        command
            .arg(root.join(self.path))
            .args(args)
            .current_dir(root)
            .env("TABLEQ_BIN", env!("CARGO_BIN_EXE_tableq"))
            .env("NO_COLOR", "1")
            .env("FORCE_COLOR", "0")
            .stdin(Stdio::null());
        for name in self.unset {
            command.env_remove(name);
        }
        let output = command
            .output()
            .unwrap_or_else(|e| panic!("run bash {}: {e}", self.path));
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        if !output.status.success() {
            eprintln!("{text}");
            let mut summary = (self.failure_lines)(&text);
            if !summary
                .iter()
                .any(|line| !line.trim_start().starts_with(self.tag))
            {
                // No test ran to a verdict (setup failed): show how the output ended.
                let lines: Vec<&str> = text.lines().collect();
                summary = lines[lines.len().saturating_sub(30)..].to_vec();
            }
            panic!(
                "{} {} failed ({}); failing tests and summary:\n{}",
                self.path,
                args.join(" "),
                output.status,
                summary.join("\n")
            );
        }
        let mut stderr = std::io::stderr().lock();
        for line in (self.notable_lines)(&text) {
            let _ = writeln!(stderr, "{}: {}", self.log, line.trim());
        }
        let _ = writeln!(
            stderr,
            "{}: {} {} took {:.0} s",
            self.log,
            self.path,
            args.join(" "),
            started.elapsed().as_secs_f64()
        );
    }
}

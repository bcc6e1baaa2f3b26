//! Problems of the input on stderr: [`Warnings`] (the first [`Warnings::SHOWN`] printed
//! around the progress bar, the rest counted), an invalid line made fatal by `--strict`
//! ([`fatal_line`]), and the summary of skipped lines and repeated keys after a read
//! ([`report_input`]).

use super::context::Failure;
use super::progress::Progress;
use crate::cli::input;
use tableq::exec::stream::Repeat;
use tableq::model::ModelError;

/// Warnings on stderr: the first [`Warnings::SHOWN`], then only counted; printed around
/// the progress bar.
pub(super) struct Warnings {
    shown: usize,
    hidden: u64,
    /// Lines already reported (a restarted pass does not report them again).
    pub reported_through: u64,
    /// The read's progress bar.
    pub progress: Progress,
}

impl Warnings {
    /// How many warnings are printed.
    pub const SHOWN: usize = 20;

    pub(super) fn new(progress: Progress) -> Warnings {
        Warnings {
            shown: 0,
            hidden: 0,
            reported_through: 0,
            progress,
        }
    }

    /// Prints (or counts) one warning.
    pub fn warn(&mut self, message: &str) {
        if self.shown < Self::SHOWN {
            self.shown += 1;
            self.progress.suspend(|| eprintln!("warning: {message}"));
        } else {
            self.hidden += 1;
        }
    }

    /// Counts warnings that are not shown (past the cap anyway).
    pub fn count_unshown(&mut self, n: u64) {
        self.hidden += n;
    }

    /// Warns about an invalid line (`line N: <Code>: <message>`).
    pub fn invalid_line(&mut self, line: u64, e: &ModelError) {
        self.warn(&input::problem(&format!("line {line}"), e));
    }

    /// Prints a summary that is always shown (not counted against the cap).
    pub fn summary(&mut self, message: &str) {
        self.progress.suspend(|| eprintln!("warning: {message}"));
    }

    /// Prints the count of warnings not shown.
    pub(super) fn finish(&mut self) {
        self.progress.finish();
        if self.hidden > 0 {
            eprintln!(
                "warning: {} more {} not shown",
                self.hidden,
                if self.hidden == 1 {
                    "warning"
                } else {
                    "warnings"
                }
            );
        }
    }
}

/// Reports an invalid line as fatal (`--strict`).
pub(super) fn fatal_line(line: u64, e: &ModelError) -> Failure {
    eprintln!("error: {}", input::problem(&format!("line {line}"), e));
    Failure::Reported
}

/// The summary of skipped lines and repeated keys after a read; with `--strict` a repeat is
/// fatal.
pub(super) fn report_input(
    label: &str,
    skipped: u64,
    repeats: &[Repeat],
    strict: bool,
    warnings: &mut Warnings,
) -> Result<(), Failure> {
    if let (true, Some(r)) = (strict, repeats.first()) {
        return Err(Failure::Message(format!("{label}: {}", repeat_message(r))));
    }
    if skipped > 0 {
        warnings.summary(&format!(
            "{label}: skipped {skipped} invalid {}",
            if skipped == 1 { "line" } else { "lines" }
        ));
    }
    for r in repeats {
        warnings.warn(&format!("{}; the later line wins", repeat_message(r)));
    }
    if !repeats.is_empty() {
        let n = repeats.len();
        warnings.summary(&format!(
            "{label}: {n} {} the keys of an earlier line; the later line wins",
            if n == 1 {
                "line repeats"
            } else {
                "lines repeat"
            }
        ));
    }
    Ok(())
}

fn repeat_message(r: &Repeat) -> String {
    format!(
        "line {} repeats the keys of line {} (PartitionKey {}, RowKey {})",
        r.later,
        r.earlier,
        json_string(&r.partition_key),
        json_string(&r.row_key)
    )
}

/// `s` as a JSON string (keys in messages and in `--stats`).
pub(super) fn json_string(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

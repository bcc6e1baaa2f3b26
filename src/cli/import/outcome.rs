//! [`Outcome`]: what a run achieved so far — entities loaded, lines rejected (the first
//! [`SHOWN`] kept by line number, the rest counted per code) and the failure that stopped
//! the run — shared by the reading thread and the destination's writers, and printed at
//! the end ([`print_rejections`]).

use crate::cli::input;
use std::collections::BTreeMap;
use std::sync::Mutex;
use tableq::model::{ErrorCode, ModelError};

/// How many rejected lines are printed (the rest are counted), as for `eval`'s warnings.
pub const SHOWN: usize = 20;

/// What a run achieved so far; shared by the reader and the writer threads.
#[derive(Default)]
pub struct Outcome {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    loaded: u64,
    rejected: u64,
    /// The rejections with the lowest line numbers (at most [`SHOWN`]).
    shown: BTreeMap<u64, (ErrorCode, String)>,
    per_code: BTreeMap<&'static str, u64>,
    /// The first failure that stopped the run.
    fatal: Option<String>,
}

impl Outcome {
    /// Counts `n` loaded entities.
    pub fn loaded(&self, n: u64) {
        if let Ok(mut s) = self.state.lock() {
            s.loaded += n;
        }
    }

    /// Records a rejected line.
    pub fn reject(&self, line: u64, code: ErrorCode, message: String) {
        let Ok(mut s) = self.state.lock() else { return };
        s.rejected += 1;
        *s.per_code.entry(code.as_str()).or_default() += 1;
        s.shown.insert(line, (code, message));
        if s.shown.len() > SHOWN {
            s.shown.pop_last();
        }
    }

    /// Records the failure that stops the run (the first one is kept).
    pub fn fail(&self, why: String) {
        if let Ok(mut s) = self.state.lock() {
            s.fatal.get_or_insert(why);
        }
    }

    /// The failure that stopped the run, if any.
    pub fn failure(&self) -> Option<String> {
        self.state.lock().ok().and_then(|s| s.fatal.clone())
    }

    /// (loaded, rejected).
    pub fn counts(&self) -> (u64, u64) {
        self.state
            .lock()
            .map(|s| (s.loaded, s.rejected))
            .unwrap_or_default()
    }
}

/// Prints the shown rejections, then the counts of the rest.
pub fn print_rejections(outcome: &Outcome) {
    let Ok(state) = outcome.state.lock() else {
        return;
    };
    for (line, (code, message)) in &state.shown {
        let e = ModelError::new(*code, message.clone());
        eprintln!("rejected: {}", input::problem(&format!("line {line}"), &e));
    }
    let hidden = state.rejected - state.shown.len() as u64;
    if hidden > 0 {
        let codes: Vec<String> = state
            .per_code
            .iter()
            .map(|(code, n)| format!("{code} {n}"))
            .collect();
        eprintln!(
            "rejected: {hidden} more {} not shown (by code: {})",
            if hidden == 1 { "line" } else { "lines" },
            codes.join(", ")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_first_rejections_by_line_are_kept() {
        let outcome = Outcome::default();
        for line in (1..=50).rev() {
            outcome.reject(line, ErrorCode::InvalidInput, format!("bad {line}"));
        }
        outcome.reject(99, ErrorCode::EntityAlreadyExists, "dup".into());
        let state = outcome.state.lock().unwrap();
        assert_eq!(state.rejected, 51);
        assert_eq!(state.shown.len(), SHOWN);
        assert_eq!(state.shown.keys().next(), Some(&1));
        assert_eq!(state.shown.keys().last(), Some(&(SHOWN as u64)));
        assert_eq!(state.per_code.get("InvalidInput"), Some(&50));
        assert_eq!(state.per_code.get("EntityAlreadyExists"), Some(&1));
    }

    #[test]
    fn the_first_failure_is_kept() {
        let outcome = Outcome::default();
        outcome.fail("first".into());
        outcome.fail("second".into());
        assert_eq!(outcome.failure().as_deref(), Some("first"));
    }
}

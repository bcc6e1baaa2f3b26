//! A closed standard output or error ends a command quietly, as it would end `cat` or
//! `grep`: `tableq gen … | head -1`, `tableq import … 2>&1 | head -1`.
//!
//! Rust ignores SIGPIPE, so a write to a closed pipe fails with `BrokenPipe`, and
//! `print!`/`eprint!` (and clap's help output) panic on it — exit 101 and a message on a
//! stream nobody reads. [`end_quietly_on_closed_pipes`] installs a panic hook that
//! recognises exactly that panic and exits at once with status 141 (128 + SIGPIPE, what a
//! shell reports for a process killed by SIGPIPE), printing nothing; every other panic goes
//! to the default hook unchanged. Writes that handle their errors (the `serve` banner,
//! which must not stop the server) are unaffected.

use std::process;

/// The exit status of a command whose output pipe was closed (128 + SIGPIPE).
pub const CLOSED_PIPE_STATUS: i32 = 141;

/// Installs the hook (see the module docs). Call once, first thing in `main`.
pub fn end_quietly_on_closed_pipes() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if is_closed_pipe(message) {
            process::exit(CLOSED_PIPE_STATUS);
        }
        default(info);
    }));
}

/// Whether a panic message is the standard library's (or clap's) failed write to a closed
/// stdout or stderr.
fn is_closed_pipe(message: &str) -> bool {
    let about_a_standard_stream = message.starts_with("failed printing to std")
        || message.starts_with("Error writing Error to std");
    let broken = message.contains("Broken pipe") || message.contains("os error 32");
    about_a_standard_stream && broken
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_closed_pipes_are_recognised() {
        assert!(is_closed_pipe(
            "failed printing to stdout: Broken pipe (os error 32)"
        ));
        assert!(is_closed_pipe(
            "failed printing to stderr: Broken pipe (os error 32)"
        ));
        assert!(is_closed_pipe(
            "Error writing Error to stdout: Os { code: 32, kind: BrokenPipe, message: \"Broken pipe\" }"
        ));
        assert!(!is_closed_pipe(
            "failed printing to stdout: No space left on device"
        ));
        assert!(!is_closed_pipe("index out of bounds: Broken pipe"));
    }
}

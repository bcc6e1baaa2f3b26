//! A progress bar on stderr for long reads: shown only when stderr is a terminal and only
//! once a read has taken more than a second (short runs print nothing extra); warnings are
//! printed around it, never through it.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// How long a read runs before the bar appears.
const DELAY: Duration = Duration::from_secs(1);

/// The progress of reading the input (bytes, of a known total for files).
pub struct Progress {
    bar: Option<ProgressBar>,
    shown: bool,
    started: Instant,
}

impl Progress {
    /// A bar for `total` bytes (`None`: unknown, e.g. standard input); inert unless stderr
    /// is a terminal.
    pub fn new(total: Option<u64>) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::with_draw_target(total, ProgressDrawTarget::hidden());
            let style = match total {
                Some(_) => ProgressStyle::with_template(
                    "{spinner} reading {bytes}/{total_bytes} ({bytes_per_sec}, {eta} left) {wide_bar}",
                ),
                None => ProgressStyle::with_template("{spinner} reading {bytes} ({bytes_per_sec})"),
            };
            if let Ok(style) = style {
                bar.set_style(style);
            }
            bar
        });
        Progress {
            bar,
            shown: false,
            started: Instant::now(),
        }
    }

    /// Sets the bytes read so far.
    pub fn set(&mut self, bytes: u64) {
        let Some(bar) = &self.bar else { return };
        bar.set_position(bytes);
        if !self.shown && self.started.elapsed() > DELAY {
            self.shown = true;
            bar.set_draw_target(ProgressDrawTarget::stderr());
            bar.enable_steady_tick(Duration::from_millis(200));
        }
    }

    /// Runs `f` (which prints to stderr) with the bar out of the way.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.bar {
            Some(bar) if self.shown => bar.suspend(f),
            _ => f(),
        }
    }

    /// Removes the bar (the read is done).
    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

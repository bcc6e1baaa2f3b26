//! The import's progress bar on stderr: bytes of input read and entities loaded/rejected,
//! shown only when stderr is a terminal and only once the run has taken more than a second.

use super::outcome::Outcome;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// How long a run goes before the bar appears.
const DELAY: Duration = Duration::from_secs(1);

/// The bar (inert when stderr is not a terminal).
pub struct Bar {
    bar: Option<ProgressBar>,
    shown: bool,
    started: Instant,
    last: Instant,
}

impl Bar {
    /// A bar for `total` bytes of input (`None`: unknown, e.g. standard input).
    pub fn new(total: Option<u64>) -> Bar {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::with_draw_target(total, ProgressDrawTarget::hidden());
            let template = match total {
                Some(_) => "{spinner} {bytes}/{total_bytes} {wide_bar} {eta} left, {msg}",
                None => "{spinner} {bytes} read ({bytes_per_sec}), {msg}",
            };
            if let Ok(style) = ProgressStyle::with_template(template) {
                bar.set_style(style);
            }
            bar
        });
        let now = Instant::now();
        Bar {
            bar,
            shown: false,
            started: now,
            last: now,
        }
    }

    /// Sets the bytes read so far and the counts (cheap: redrawn at most 10 times a second).
    pub fn update(&mut self, bytes: u64, outcome: &Outcome) {
        let Some(bar) = &self.bar else { return };
        let now = Instant::now();
        if now.duration_since(self.last) < Duration::from_millis(100) {
            return;
        }
        self.last = now;
        bar.set_position(bytes);
        let (loaded, rejected) = outcome.counts();
        bar.set_message(format!("{loaded} loaded, {rejected} rejected"));
        if !self.shown && now.duration_since(self.started) > DELAY {
            self.shown = true;
            bar.set_draw_target(ProgressDrawTarget::stderr());
            bar.enable_steady_tick(Duration::from_millis(200));
        }
    }

    /// Removes the bar.
    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.finish();
    }
}

//! What every request of one server shares beyond its account ([`Shared`]: the metrics,
//! the request-body budget, the body and request timeouts, the request log's format, the
//! rate limit of the refused-write warnings), and what the server's connections serve
//! requests with ([`Observed`]: that and the hosted accounts).
//!
//! Shared state: built once by the server, handed to each request's scope
//! ([`crate::state::scope`]), read by whatever needs a counter or a limit.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::state::accounts::Hosted;
use crate::state::budget::BodyBudget;
use crate::state::config::{LogFormat, ServerConfig};
use crate::state::metrics::Metrics;

/// What every request of one server shares beyond its account.
#[derive(Debug)]
pub(crate) struct Shared {
    /// The server's metrics.
    pub metrics: Arc<Metrics>,
    /// The budget of request-body bytes in memory.
    pub budget: BodyBudget,
    /// How long a request body may go without a byte arriving.
    pub body_timeout: Duration,
    /// How long a request's header and body may take to arrive (the deadline of each
    /// request is its [`RequestDeadline`](crate::state::scope::RequestDeadline); this is the duration, for messages).
    pub request_timeout: Duration,
    /// How requests are logged.
    pub log_format: LogFormat,
    /// The rate limit of the warnings about writes refused by a store (a full disk).
    pub refused_writes: LogLimiter,
}

impl Shared {
    /// The shared state for a server configured by `config` (its first account's).
    pub(crate) fn new(config: &ServerConfig) -> Shared {
        let metrics = Arc::new(Metrics::new());
        let budget = BodyBudget::new(config.body_budget_bytes, config.body_budget_wait);
        metrics.body_budget.set(budget.total() as i64);
        Shared {
            metrics,
            budget,
            body_timeout: config.connections.body_timeout,
            request_timeout: config.connections.request_timeout,
            log_format: config.log_format,
            refused_writes: LogLimiter::new(REFUSED_WRITES_LOG_EVERY),
        }
    }
}

/// How often, at most, writes refused by a store are logged (each line counts the writes
/// refused since the previous one).
pub(crate) const REFUSED_WRITES_LOG_EVERY: Duration = Duration::from_secs(10);

/// A rate limit for one kind of log line that could otherwise come once per request: at
/// most one line per period, each counting the events since the previous line.
#[derive(Debug)]
pub(crate) struct LogLimiter {
    every: Duration,
    /// When the last line was written, and the events since (this one not included).
    state: std::sync::Mutex<(Option<Instant>, u64)>,
}

impl LogLimiter {
    /// At most one line per `every`.
    pub(crate) fn new(every: Duration) -> LogLimiter {
        LogLimiter {
            every,
            state: std::sync::Mutex::new((None, 0)),
        }
    }

    /// The period.
    pub(crate) fn every(&self) -> Duration {
        self.every
    }

    /// Notes an event at `now`: `Some` when a line is due, with the events since the
    /// previous line (this one included: 1 for the first line) and how long ago that line
    /// was (`None` for the first); `None` when the line is held back (the event is counted
    /// for the next one).
    pub(crate) fn note(&self, now: Instant) -> Option<(u64, Option<Duration>)> {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        state.1 += 1;
        let since = state.0.map(|last| now.saturating_duration_since(last));
        if since.is_some_and(|since| since < self.every) {
            return None;
        }
        let count = state.1;
        *state = (Some(now), 0);
        Some((count, since))
    }
}

/// What the connections serve requests with (`crate::serve::observe::serve`): the server's shared state and its accounts.
#[derive(Clone)]
pub(crate) struct Observed {
    /// What every request shares.
    pub shared: Arc<Shared>,
    /// The accounts (for readiness and store metrics).
    pub hosted: Arc<Hosted>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limited_log_line_comes_at_most_once_a_period_with_a_count() {
        let limiter = LogLimiter::new(Duration::from_secs(10));
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        // The first event is logged at once.
        assert_eq!(limiter.note(at(0)), Some((1, None)));
        // 136 more within the period: held back, counted.
        for i in 1..=136 {
            assert_eq!(limiter.note(at(i * 50)), None, "event {i}");
        }
        // The first after the period: one line counting them all, this one included.
        let ten = Duration::from_secs(10);
        assert_eq!(limiter.note(at(10_000)), Some((137, Some(ten))));
        assert_eq!(limiter.note(at(10_001)), None);
        assert_eq!(limiter.note(at(19_999)), None);
        assert_eq!(limiter.note(at(20_000)), Some((3, Some(ten))));
        // After a quiet minute: the line says how long it has been.
        assert_eq!(
            limiter.note(at(80_000)),
            Some((1, Some(Duration::from_secs(60))))
        );
        // A clock read out of order (another thread's earlier instant) is no new period.
        assert_eq!(limiter.note(at(5_000)), None);
        assert_eq!(limiter.every(), Duration::from_secs(10));
    }
}

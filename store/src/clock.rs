//! [`Clock`]: the source of write Timestamps.
//!
//! The Table service sets an entity's Timestamp on every write, and the ETag is derived
//! from it, so Timestamps must **strictly increase per entity** — even for two writes in the
//! same 100 ns tick, and even when the system clock steps backwards (across a restart, say).
//! The clock hands out ticks that are at least the wall clock, strictly greater than any it
//! issued before, and strictly greater than a floor the caller gives (the Timestamps of the
//! entities a write replaces). All operations of one atomic write share one Timestamp.
//!
//! ```
//! use tableq_model::DateTime;
//! use tableq_store::Clock;
//! let clock = Clock::new();
//! let a = clock.next_after(None);
//! let b = clock.next_after(None);
//! assert!(b > a);
//! let far = DateTime::parse("9000-01-01T00:00:00Z").unwrap();
//! assert!(clock.next_after(Some(far)) > far);
//! ```

use std::sync::atomic::{AtomicI64, Ordering};
use tableq_model::DateTime;

/// Where the wall-clock time comes from (replaceable in tests).
type TimeSource = Box<dyn Fn() -> DateTime + Send + Sync>;

/// A strictly increasing source of Timestamps (see the module docs).
pub struct Clock {
    last: AtomicI64,
    now: TimeSource,
}

impl Clock {
    /// A clock on the system time.
    pub fn new() -> Clock {
        Clock::with_source(DateTime::now)
    }

    /// A clock reading the time from `now` (tests use a fixed or stepping source).
    pub fn with_source(now: impl Fn() -> DateTime + Send + Sync + 'static) -> Clock {
        Clock {
            last: AtomicI64::new(i64::MIN),
            now: Box::new(now),
        }
    }

    /// Makes every later Timestamp greater than `t` (a backend calls this on opening with
    /// the greatest Timestamp it stores, so that a clock that stepped back across a restart
    /// cannot reissue old ETags).
    pub fn observe(&self, t: DateTime) {
        self.last.fetch_max(t.ticks(), Ordering::AcqRel);
    }

    /// The next Timestamp: at least the current time, greater than every Timestamp issued
    /// or observed before, and greater than `floor` if given. Saturates at
    /// [`DateTime::MAX`] (year 9999).
    pub fn next_after(&self, floor: Option<DateTime>) -> DateTime {
        let now = (self.now)().ticks();
        let floor = floor.map_or(i64::MIN, |f| f.ticks().saturating_add(1));
        let mut issued = now;
        let _ = self
            .last
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |last| {
                issued = now.max(last.saturating_add(1)).max(floor);
                Some(issued)
            });
        DateTime::from_ticks(issued).unwrap_or(DateTime::MAX)
    }
}

impl Default for Clock {
    fn default() -> Clock {
        Clock::new()
    }
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Clock")
            .field("last", &self.last.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn fixed() -> DateTime {
        DateTime::parse("2026-01-01T00:00:00Z").unwrap()
    }

    #[test]
    fn strictly_increasing_within_one_tick() {
        let clock = Clock::with_source(fixed);
        let mut prev = clock.next_after(None);
        assert_eq!(prev, fixed());
        for _ in 0..1000 {
            let t = clock.next_after(None);
            assert!(t > prev);
            prev = t;
        }
    }

    #[test]
    fn floor_and_observe_survive_a_clock_stepping_back() {
        let clock = Clock::with_source(fixed);
        let later = DateTime::parse("2030-01-01T00:00:00Z").unwrap();
        assert!(clock.next_after(Some(later)) > later);
        let restarted = Clock::with_source(fixed);
        restarted.observe(later);
        assert!(restarted.next_after(None) > later);
    }

    #[test]
    fn concurrent_callers_never_share_a_timestamp() {
        let clock = Arc::new(Clock::with_source(fixed));
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let c = clock.clone();
                std::thread::spawn(move || {
                    (0..1000).map(|_| c.next_after(None)).collect::<Vec<_>>()
                })
            })
            .collect();
        let mut all: Vec<DateTime> = handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), 4000);
    }

    #[test]
    fn saturates_at_the_end_of_time() {
        let clock = Clock::with_source(|| DateTime::MAX);
        assert_eq!(clock.next_after(None), DateTime::MAX);
        assert_eq!(clock.next_after(Some(DateTime::MAX)), DateTime::MAX);
    }
}

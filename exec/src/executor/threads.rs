//! The threads a page runs on ([`Threads`]): the executor's rayon pool (or rayon's global
//! one), how many threads a page may use, and the *helpers* — the pool threads a wave
//! borrows to scan its chunks beside the calling thread, counted so that pages do not queue
//! helpers behind each other's.
//!
//! A wave asks for up to `threads − 1` helpers ([`HelperCount::reserve`]) and gets only
//! those not already lent to other waves of the same pool. When every helper is lent (the
//! pool is busy with other pages), the wave runs on the calling thread alone: it would
//! otherwise wait for a pool thread to pick its helper up just to learn that nothing is
//! left, and a busy pool gains nothing from more queued work. The count is a scheduling
//! hint only: results never depend on it.
//!
//! ```text
//! 1 page at a time, 2 threads:  each wave = calling thread + 1 helper
//! 8 pages at a time, 2 threads: one wave holds the helper, the others scan alone
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The threads of an executor: its pool, their number, and the helpers lent from the pool.
#[derive(Debug, Clone)]
pub(super) struct Threads {
    /// The executor's own pool (or one it was given); `None`: rayon's global pool.
    pub(super) pool: Option<Arc<rayon::ThreadPool>>,
    /// The pool's helpers lent to waves.
    pub(super) helpers: HelperCount,
    /// The number of threads a page may use (at least 1).
    pub(super) count: usize,
}

impl Threads {
    /// Rayon's global pool.
    pub(super) fn global() -> Threads {
        Threads {
            pool: None,
            helpers: HelperCount::Global,
            count: rayon::current_num_threads().max(1),
        }
    }

    /// A pool of the executor's own or one it was given (`None` with `count` 1: everything
    /// on the calling thread), with a helper count of its own.
    pub(super) fn of(pool: Option<Arc<rayon::ThreadPool>>, count: usize) -> Threads {
        Threads {
            pool,
            helpers: HelperCount::Own(Arc::default()),
            count,
        }
    }

    /// Runs `work` on the pool (its parallel iterators use the pool's threads).
    pub(super) fn install<R: Send>(&self, work: impl FnOnce() -> R + Send) -> R {
        match &self.pool {
            Some(pool) => pool.install(work),
            None => work(),
        }
    }
}

/// Helpers lent by rayon's global pool (shared by every executor on it).
static GLOBAL: AtomicUsize = AtomicUsize::new(0);

/// The count of helpers lent by one pool.
#[derive(Debug, Clone)]
pub(super) enum HelperCount {
    /// Rayon's global pool: the process-wide count.
    Global,
    /// A pool of the executor's own (or one it was given): its own count.
    Own(Arc<AtomicUsize>),
}

impl HelperCount {
    fn counter(&self) -> &AtomicUsize {
        match self {
            HelperCount::Global => &GLOBAL,
            HelperCount::Own(count) => count,
        }
    }

    /// Lends up to `want` of the pool's `limit` helpers; `None` when none is free (or none
    /// is wanted).
    pub(super) fn reserve(&self, want: usize, limit: usize) -> Option<Lent<'_>> {
        let counter = self.counter();
        let mut lent = counter.load(Ordering::Relaxed);
        loop {
            let n = want.min(limit.saturating_sub(lent));
            if n == 0 {
                return None;
            }
            match counter.compare_exchange_weak(
                lent,
                lent + n,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Some(Lent { counter, n }),
                Err(now) => lent = now,
            }
        }
    }
}

/// Helpers lent to one wave, given back when dropped.
pub(super) struct Lent<'a> {
    counter: &'a AtomicUsize,
    n: usize,
}

impl Lent<'_> {
    /// How many helpers.
    pub(super) fn count(&self) -> usize {
        self.n
    }
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        self.counter.fetch_sub(self.n, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers_are_lent_up_to_the_limit_and_given_back() {
        let count = HelperCount::Own(Arc::new(AtomicUsize::new(0)));
        let a = count.reserve(2, 3).map(|l| l.count());
        assert_eq!(a, Some(2));
        {
            let first = count.reserve(2, 3);
            assert_eq!(first.as_ref().map(Lent::count), Some(2));
            let second = count.reserve(2, 3);
            assert_eq!(second.as_ref().map(Lent::count), Some(1));
            assert!(count.reserve(1, 3).is_none());
        }
        assert_eq!(count.reserve(3, 3).map(|l| l.count()), Some(3));
        assert!(count.reserve(0, 3).is_none());
    }
}

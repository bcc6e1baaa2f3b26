//! [`BodyBudget`]: the server-wide budget of request-body bytes held in memory. Every
//! body's bytes are reserved before they are read and stay reserved until the request is
//! answered; when the budget is full a request waits a while for room, then is refused
//! (the body reader, `crate::protocol::body`, says how).

use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The server-wide budget of request-body bytes held in memory (see the module docs and `crate::protocol::body`).
#[derive(Debug)]
pub(crate) struct BodyBudget {
    permits: Arc<Semaphore>,
    total: usize,
    wait: Duration,
}

impl BodyBudget {
    /// A budget of `total` bytes; a request waits up to `wait` for room.
    pub(crate) fn new(total: usize, wait: Duration) -> BodyBudget {
        let total = total.clamp(1, Semaphore::MAX_PERMITS);
        BodyBudget {
            permits: Arc::new(Semaphore::new(total)),
            total,
            wait,
        }
    }

    /// The budget in bytes.
    pub(crate) fn total(&self) -> usize {
        self.total
    }

    /// Bytes reserved now.
    pub(crate) fn in_use(&self) -> usize {
        self.total - self.permits.available_permits()
    }

    /// Reserves `bytes` (at most the whole budget), waiting up to the budget's wait.
    pub(crate) async fn reserve(&self, bytes: u64) -> Option<OwnedSemaphorePermit> {
        let n = bytes.min(self.total as u64).min(u64::from(u32::MAX)) as u32;
        if n == 0 {
            return None;
        }
        let acquire = self.permits.clone().acquire_many_owned(n);
        match tokio::time::timeout(self.wait, acquire).await {
            Ok(Ok(permit)) => Some(permit),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_budget_waits_then_refuses() {
        let budget = BodyBudget::new(100, Duration::from_millis(50));
        let a = budget.reserve(60).await.expect("room");
        assert_eq!(budget.in_use(), 60);
        assert!(
            budget.reserve(60).await.is_none(),
            "no room within the wait"
        );
        drop(a);
        assert_eq!(budget.in_use(), 0);
        // More than the whole budget reserves the whole budget rather than never fitting.
        let all = budget.reserve(1_000).await.expect("the whole budget");
        assert_eq!(budget.in_use(), 100);
        drop(all);
        assert!(budget.reserve(0).await.is_none());
    }
}

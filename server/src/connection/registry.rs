//! The open connections of a server: what each is doing, the timeouts that close the
//! slow and the idle ones, and the cap on how many may be open.
//!
//! Every connection has a [`ConnState`], shared between its task (which updates it as
//! bytes and requests come and go) and the [`Registry`], whose sweeper task checks every
//! connection a few times per timeout period and asks the ones past a deadline to close:
//!
//! | state of the connection | deadline |
//! |---|---|
//! | no request in progress, no byte since the last response (idle keep-alive, or a fresh connection) | `idle_timeout` after the last response (or the accept) |
//! | the first bytes of a request header arrived, the header is not complete | `header_timeout` after that first byte |
//! | a response write has been blocked (the client takes no bytes) | `body_timeout` after it blocked |
//!
//! A request body's progress is the body reader's business (it answers 408 itself, see
//! `crate::body`); a request in a handler is bounded by the store's own timeouts.
//!
//! **The cap.** [`Registry::admit`] is called before each accept: below the cap it returns
//! at once; at the cap it closes the connection that has waited longest for a request (a
//! half-sent header first, then the longest-idle keep-alive connection) and waits for its
//! slot, or — when every connection is busy in a request — waits for any slot. Reaching
//! the cap is logged (a warning when it is first reached, then at most every 10 s).
//!
//! Time is kept as milliseconds since the registry's creation in atomics (`0` = unset), so
//! the per-request cost is a few relaxed stores.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

use crate::config::ConnectionLimits;
use crate::observe::Metrics;

/// File descriptors kept free for everything but client connections (the store's files,
/// database connections, the runtime's own descriptors), at least.
const MIN_FD_RESERVE: u64 = 64;

/// The cap on open connections when the open-file limit cannot be read or is unlimited.
const FALLBACK_CAP: usize = 16_384;

/// Why a connection was closed by the server (a label of the closed-connections metric).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CloseReason {
    /// Not closed by the server.
    None = 0,
    /// A request header took longer than `header_timeout`.
    HeaderTimeout = 1,
    /// A keep-alive connection stayed idle longer than `idle_timeout`.
    IdleTimeout = 2,
    /// The client took no byte of a response for `body_timeout`.
    WriteTimeout = 3,
    /// Closed to make room for a new connection at the cap.
    Evicted = 4,
    /// Still open when the shutdown grace period ended.
    Shutdown = 5,
}

impl CloseReason {
    fn from_u8(v: u8) -> CloseReason {
        match v {
            1 => CloseReason::HeaderTimeout,
            2 => CloseReason::IdleTimeout,
            3 => CloseReason::WriteTimeout,
            4 => CloseReason::Evicted,
            5 => CloseReason::Shutdown,
            _ => CloseReason::None,
        }
    }

    /// The metric label.
    pub(crate) fn label(self) -> &'static str {
        match self {
            CloseReason::None => "client_or_done",
            CloseReason::HeaderTimeout => "header_timeout",
            CloseReason::IdleTimeout => "idle_timeout",
            CloseReason::WriteTimeout => "write_timeout",
            CloseReason::Evicted => "evicted",
            CloseReason::Shutdown => "shutdown",
        }
    }
}

/// The timeouts and the cap in force (the cap resolved from the open-file limit).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Resolved {
    pub header_timeout: Duration,
    pub body_timeout: Duration,
    pub idle_timeout: Duration,
    pub cap: usize,
}

impl Resolved {
    pub(crate) fn new(limits: &ConnectionLimits) -> Resolved {
        Resolved {
            header_timeout: limits.header_timeout,
            body_timeout: limits.body_timeout,
            idle_timeout: limits.idle_timeout,
            cap: limits
                .max_connections
                .unwrap_or_else(cap_from_fd_limit)
                .max(1),
        }
    }
}

/// The connection cap for the process's open-file limit: the soft limit less a reserve of
/// an eighth of it (at least [`MIN_FD_RESERVE`]).
pub(crate) fn cap_from_fd_limit() -> usize {
    match open_file_limit() {
        Some(soft) => cap_for_limit(soft),
        None => FALLBACK_CAP,
    }
}

fn cap_for_limit(soft: u64) -> usize {
    let reserve = (soft / 8).max(MIN_FD_RESERVE);
    usize::try_from(soft.saturating_sub(reserve).max(1)).unwrap_or(FALLBACK_CAP)
}

#[cfg(unix)]
fn open_file_limit() -> Option<u64> {
    rustix::process::getrlimit(rustix::process::Resource::Nofile).current
}

#[cfg(not(unix))]
fn open_file_limit() -> Option<u64> {
    None
}

/// One connection's state (see the module docs).
#[derive(Debug)]
pub(crate) struct ConnState {
    /// Requests being handled (0 or 1 for HTTP/1.1).
    busy: AtomicU32,
    /// When the last response was handed over (or the connection accepted).
    idle_since: AtomicU64,
    /// When the first byte after `idle_since` arrived (0: none yet).
    header_started: AtomicU64,
    /// When a write first found the socket full (0: not blocked).
    write_blocked: AtomicU64,
    /// Why the server asked this connection to close.
    reason: AtomicU8,
    close: Notify,
    epoch: Instant,
}

impl ConnState {
    fn new(epoch: Instant) -> ConnState {
        ConnState {
            busy: AtomicU32::new(0),
            idle_since: AtomicU64::new(now_ms(epoch)),
            header_started: AtomicU64::new(0),
            write_blocked: AtomicU64::new(0),
            reason: AtomicU8::new(CloseReason::None as u8),
            close: Notify::new(),
            epoch,
        }
    }

    fn now(&self) -> u64 {
        now_ms(self.epoch)
    }

    /// Bytes were read from the client.
    #[inline]
    pub(crate) fn on_read(&self) {
        if self.busy.load(Ordering::Relaxed) == 0
            && self.header_started.load(Ordering::Relaxed) == 0
        {
            self.header_started.store(self.now(), Ordering::Relaxed);
        }
    }

    /// A write found the socket full (`blocked`) or went through.
    #[inline]
    pub(crate) fn on_write(&self, blocked: bool) {
        let current = self.write_blocked.load(Ordering::Relaxed);
        if blocked {
            if current == 0 {
                self.write_blocked.store(self.now(), Ordering::Relaxed);
            }
        } else if current != 0 {
            self.write_blocked.store(0, Ordering::Relaxed);
        }
    }

    /// A request's header is complete and its handler starts.
    #[inline]
    pub(crate) fn begin_request(&self) {
        self.busy.fetch_add(1, Ordering::Relaxed);
        self.header_started.store(0, Ordering::Relaxed);
    }

    /// A request's handler is done (its response is being written).
    #[inline]
    pub(crate) fn end_request(&self) {
        self.idle_since.store(self.now(), Ordering::Relaxed);
        self.header_started.store(0, Ordering::Relaxed);
        self.busy.fetch_sub(1, Ordering::Relaxed);
    }

    /// Whether a request is being handled.
    pub(crate) fn is_busy(&self) -> bool {
        self.busy.load(Ordering::Relaxed) > 0
    }

    /// Asks the connection's task to close it (the first reason wins).
    pub(crate) fn request_close(&self, reason: CloseReason) {
        if self
            .reason
            .compare_exchange(
                CloseReason::None as u8,
                reason as u8,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok()
        {
            self.close.notify_one();
        }
    }

    /// Completes when the server asks this connection to close.
    pub(crate) async fn close_requested(&self) -> CloseReason {
        self.close.notified().await;
        self.close_reason()
    }

    /// Why the server closed the connection ([`CloseReason::None`] if it did not).
    pub(crate) fn close_reason(&self) -> CloseReason {
        CloseReason::from_u8(self.reason.load(Ordering::Acquire))
    }

    /// The deadline this connection has passed at `now`, if any.
    fn expired(&self, now: u64, limits: &Resolved) -> Option<CloseReason> {
        let past = |since: u64, limit: Duration| {
            since != 0 && now.saturating_sub(since) > limit.as_millis() as u64
        };
        if past(
            self.write_blocked.load(Ordering::Relaxed),
            limits.body_timeout,
        ) {
            return Some(CloseReason::WriteTimeout);
        }
        if self.is_busy() {
            return None;
        }
        let header = self.header_started.load(Ordering::Relaxed);
        if header != 0 {
            return past(header, limits.header_timeout).then_some(CloseReason::HeaderTimeout);
        }
        past(self.idle_since.load(Ordering::Relaxed), limits.idle_timeout)
            .then_some(CloseReason::IdleTimeout)
    }

    /// How strongly this connection is a candidate for eviction (larger first): a
    /// half-sent header, then the longest idle; `None` when busy.
    fn eviction_rank(&self, now: u64) -> Option<(u8, u64)> {
        if self.is_busy() || self.write_blocked.load(Ordering::Relaxed) != 0 {
            return None;
        }
        let header = self.header_started.load(Ordering::Relaxed);
        if header != 0 {
            return Some((1, now.saturating_sub(header)));
        }
        Some((
            0,
            now.saturating_sub(self.idle_since.load(Ordering::Relaxed)),
        ))
    }
}

fn now_ms(epoch: Instant) -> u64 {
    // +1: 0 means "unset".
    epoch.elapsed().as_millis() as u64 + 1
}

/// The open connections of one server (see the module docs).
pub(crate) struct Registry {
    limits: Resolved,
    epoch: Instant,
    conns: Mutex<HashMap<u64, Arc<ConnState>>>,
    next_id: AtomicU64,
    freed: Notify,
    metrics: Arc<Metrics>,
    /// When the cap was last logged, and how often it was hit since.
    cap_log: Mutex<(Option<Instant>, u64)>,
}

/// A connection's place in the registry; dropping it removes the connection.
pub(crate) struct Slot {
    registry: Arc<Registry>,
    id: u64,
    pub(crate) state: Arc<ConnState>,
}

impl Slot {
    /// The timeouts and cap in force.
    pub(crate) fn limits(&self) -> &Resolved {
        self.registry.limits()
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.registry.remove(self.id, &self.state);
    }
}

impl Registry {
    pub(crate) fn new(limits: Resolved, metrics: Arc<Metrics>) -> Registry {
        metrics.connection_cap.set(limits.cap as i64);
        Registry {
            limits,
            epoch: Instant::now(),
            conns: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            freed: Notify::new(),
            metrics,
            cap_log: Mutex::new((None, 0)),
        }
    }

    /// The timeouts and cap in force.
    pub(crate) fn limits(&self) -> &Resolved {
        &self.limits
    }

    /// Open connections.
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<ConnState>>> {
        self.conns.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Returns once a new connection may be accepted: at once below the cap; at the cap,
    /// after closing the connection that has waited longest for a request, or after any
    /// connection closes when all are busy.
    pub(crate) async fn admit(&self) {
        loop {
            let freed = self.freed.notified();
            tokio::pin!(freed);
            // Register interest before looking, so that a removal in between is not missed.
            freed.as_mut().enable();
            let victim = {
                let conns = self.lock();
                if conns.len() < self.limits.cap {
                    return;
                }
                let now = now_ms(self.epoch);
                conns
                    .values()
                    .filter_map(|c| c.eviction_rank(now).map(|rank| (rank, c.clone())))
                    .max_by_key(|(rank, _)| *rank)
                    .map(|(_, c)| c)
            };
            self.note_cap_reached(victim.is_some());
            if let Some(victim) = &victim {
                victim.request_close(CloseReason::Evicted);
            }
            freed.await;
        }
    }

    fn note_cap_reached(&self, evicting: bool) {
        let mut log = self.cap_log.lock().unwrap_or_else(PoisonError::into_inner);
        log.1 += 1;
        let due = log.0.is_none_or(|t| t.elapsed() >= Duration::from_secs(10));
        if due {
            let first = log.0.is_none();
            tracing::warn!(
                target: "tableq_server",
                "connection cap reached: {} connections open (--max-connections); {}{}",
                self.limits.cap,
                if evicting {
                    "closing the connection that waited longest for a request to make room"
                } else {
                    "every connection is busy: new connections wait"
                },
                if first {
                    String::new()
                } else {
                    format!(" (cap reached {} times in the last period)", log.1)
                },
            );
            *log = (Some(Instant::now()), 0);
        }
    }

    /// Registers a newly accepted connection.
    pub(crate) fn insert(self: &Arc<Self>) -> Slot {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let state = Arc::new(ConnState::new(self.epoch));
        self.lock().insert(id, state.clone());
        self.metrics.connections_accepted.inc();
        self.metrics.connections_open.inc();
        Slot {
            registry: self.clone(),
            id,
            state,
        }
    }

    fn remove(&self, id: u64, state: &ConnState) {
        self.lock().remove(&id);
        self.metrics.connections_open.dec();
        self.metrics.closed(state.close_reason());
        self.freed.notify_waiters();
    }

    /// Completes once no connection is open.
    pub(crate) async fn drained(&self) {
        loop {
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            if self.len() == 0 {
                return;
            }
            freed.await;
        }
    }

    /// Asks every open connection to close now.
    pub(crate) fn close_all(&self, reason: CloseReason) {
        for c in self.lock().values() {
            c.request_close(reason);
        }
    }

    /// Closes every connection past its deadline; runs until the registry is dropped by
    /// everyone else (the server stopped).
    pub(crate) async fn sweep(self: Arc<Self>) {
        let shortest = [
            self.limits.header_timeout,
            self.limits.idle_timeout,
            self.limits.body_timeout,
        ]
        .into_iter()
        .min()
        .unwrap_or(Duration::from_secs(1));
        let period = (shortest / 4).clamp(Duration::from_millis(20), Duration::from_secs(1));
        let mut ticks = tokio::time::interval(period);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let weak = Arc::downgrade(&self);
        drop(self);
        loop {
            ticks.tick().await;
            let Some(registry) = weak.upgrade() else {
                return;
            };
            let now = now_ms(registry.epoch);
            for c in registry.lock().values() {
                if let Some(reason) = c.expired(now, &registry.limits) {
                    c.request_close(reason);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Resolved {
        Resolved {
            header_timeout: Duration::from_millis(100),
            body_timeout: Duration::from_millis(300),
            idle_timeout: Duration::from_millis(1000),
            cap: 10,
        }
    }

    #[test]
    fn caps_keep_a_reserve_below_the_open_file_limit() {
        assert_eq!(cap_for_limit(1024), 1024 - 128);
        assert_eq!(cap_for_limit(256), 256 - 64);
        assert_eq!(cap_for_limit(20_000), 20_000 - 2_500);
        assert_eq!(cap_for_limit(10), 1);
        assert!(cap_from_fd_limit() >= 1);
    }

    #[test]
    fn deadlines_follow_the_state_of_the_connection() {
        let epoch = Instant::now();
        let c = ConnState::new(epoch);
        let l = limits();
        let start = c.idle_since.load(Ordering::Relaxed);
        // Idle: only the idle timeout applies.
        assert_eq!(c.expired(start + 999, &l), None);
        assert_eq!(c.expired(start + 1001, &l), Some(CloseReason::IdleTimeout));
        // A header started: the header timeout from its first byte.
        c.header_started.store(start + 500, Ordering::Relaxed);
        assert_eq!(c.expired(start + 599, &l), None);
        assert_eq!(c.expired(start + 601, &l), Some(CloseReason::HeaderTimeout));
        // In a request: no header or idle deadline...
        c.begin_request();
        assert_eq!(c.header_started.load(Ordering::Relaxed), 0);
        assert_eq!(c.expired(start + 10_000, &l), None);
        // ...but a blocked write has one.
        c.write_blocked.store(start + 10_000, Ordering::Relaxed);
        assert_eq!(c.expired(start + 10_299, &l), None);
        assert_eq!(
            c.expired(start + 10_301, &l),
            Some(CloseReason::WriteTimeout)
        );
        c.on_write(false);
        assert_eq!(c.expired(start + 20_000, &l), None);
        c.end_request();
        assert!(!c.is_busy());
    }

    #[test]
    fn half_sent_headers_are_evicted_before_idle_connections() {
        let epoch = Instant::now();
        let idle = ConnState::new(epoch);
        let header = ConnState::new(epoch);
        let busy = ConnState::new(epoch);
        let now = idle.idle_since.load(Ordering::Relaxed) + 50_000;
        header.header_started.store(now - 5, Ordering::Relaxed);
        busy.begin_request();
        assert!(header.eviction_rank(now) > idle.eviction_rank(now));
        assert_eq!(busy.eviction_rank(now), None);
    }

    #[test]
    fn the_first_close_reason_wins() {
        let c = ConnState::new(Instant::now());
        c.request_close(CloseReason::HeaderTimeout);
        c.request_close(CloseReason::Evicted);
        assert_eq!(c.close_reason(), CloseReason::HeaderTimeout);
    }
}

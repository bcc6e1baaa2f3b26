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
//! | the first bytes of a request header arrived, the header is not complete | `header_timeout` (or `request_timeout`, if shorter) after that first byte |
//! | a response write has been blocked (the client takes no bytes) | `body_timeout` after it blocked |
//!
//! A request body's progress is the body reader's business (it answers 408 itself, see
//! `crate::protocol::body`): a byte at least every `body_timeout`, and the whole body by
//! `request_timeout` after the header's first byte — the deadline [`ConnState::begin_request`]
//! returns, which the connection's service hands to the request. A request in a handler
//! is bounded by the store's own timeouts.
//!
//! **The cap.** [`Registry::admit`] is called for each accepted connection before it is
//! served: below the cap it returns at once; at the cap it closes the connection that has
//! waited longest for a request (a half-sent header first, then the longest-idle
//! connection) and waits for its slot. A connection is a candidate only once it has been
//! idle, or sending its header, for [`Resolved::evict_after`] (1 s, or half the shortest of
//! the header and idle timeouts): a connection just accepted, or just answered, has its
//! request on the way or its response being written, and closing it would leave its
//! client without an answer. With no candidate — every connection busy in a request — the
//! new connection waits (and those behind it in the listen backlog), until a slot frees,
//! which happens within `request_timeout` plus the handling of a request. Reaching the cap
//! is logged (a warning when it is first reached, then at most every 10 s).
//!
//! Time is kept as milliseconds since the registry's creation in atomics (`0` = unset), so
//! the per-request cost is a few relaxed stores.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

use crate::state::config::ConnectionLimits;
use crate::state::metrics::{CloseReason, Metrics};

/// File descriptors kept free for everything but client connections (the store's files,
/// database connections, the runtime's own descriptors), at least.
const MIN_FD_RESERVE: u64 = 64;

/// The cap on open connections when the open-file limit cannot be read or is unlimited.
const FALLBACK_CAP: usize = 16_384;

/// How long a connection must have been idle, or sending its header, before it may be
/// closed to make room at the cap (at most; see [`Resolved::evict_after`]).
const EVICT_AFTER: Duration = Duration::from_secs(1);

/// The timeouts and the cap in force (the cap resolved from the open-file limit).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Resolved {
    pub header_timeout: Duration,
    pub body_timeout: Duration,
    pub idle_timeout: Duration,
    /// The longest a request's header and body may take to arrive, from its first byte.
    pub request_timeout: Duration,
    /// How long a connection must have been idle, or sending its header, before it may be
    /// closed to make room at the cap: [`EVICT_AFTER`], or half the header or idle timeout
    /// when shorter.
    pub evict_after: Duration,
    pub cap: usize,
}

impl Resolved {
    pub(crate) fn new(limits: &ConnectionLimits) -> Resolved {
        Resolved {
            header_timeout: limits.header_timeout,
            body_timeout: limits.body_timeout,
            idle_timeout: limits.idle_timeout,
            request_timeout: limits.request_timeout,
            evict_after: EVICT_AFTER
                .min(limits.header_timeout / 2)
                .min(limits.idle_timeout / 2),
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

    /// A request's header is complete and its handler starts. Returns when the request
    /// began to arrive (its header's first byte; now, if it was read with the previous
    /// request's bytes), from which its `request_timeout` counts.
    #[inline]
    pub(crate) fn begin_request(&self) -> Instant {
        self.busy.fetch_add(1, Ordering::Relaxed);
        let started = self.header_started.swap(0, Ordering::Relaxed);
        let ms = if started == 0 { self.now() } else { started };
        // `now_ms` counts from 1.
        self.epoch + Duration::from_millis(ms.saturating_sub(1))
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
            let limit = limits.header_timeout.min(limits.request_timeout);
            return past(header, limit).then_some(CloseReason::HeaderTimeout);
        }
        past(self.idle_since.load(Ordering::Relaxed), limits.idle_timeout)
            .then_some(CloseReason::IdleTimeout)
    }

    /// How strongly this connection is a candidate for eviction (larger first): a
    /// half-sent header, then the longest idle — each only once it has lasted `grace` ms.
    /// `Err(at)`: not a candidate now, but it becomes one at `at` if nothing happens;
    /// `Err(0)`: not a candidate (busy in a request, or writing a response).
    fn eviction_rank(&self, now: u64, grace: u64) -> Result<(u8, u64), u64> {
        if self.is_busy() || self.write_blocked.load(Ordering::Relaxed) != 0 {
            return Err(0);
        }
        let header = self.header_started.load(Ordering::Relaxed);
        let (rank, since) = if header != 0 {
            (1, header)
        } else {
            (0, self.idle_since.load(Ordering::Relaxed))
        };
        let waited = now.saturating_sub(since);
        if waited < grace {
            return Err(since + grace);
        }
        Ok((rank, waited))
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

    /// Returns once a connection just accepted may be served: at once below the cap; at
    /// the cap, after closing the connection that has waited longest for a request (see
    /// the module docs) and seeing its slot freed, or — when there is no such connection —
    /// after any connection closes or becomes one.
    pub(crate) async fn admit(&self) {
        let grace = self.limits.evict_after.as_millis() as u64;
        let mut noted = false;
        loop {
            let freed = self.freed.notified();
            tokio::pin!(freed);
            // Register interest before looking, so that a removal in between is not missed.
            freed.as_mut().enable();
            let now = now_ms(self.epoch);
            let (victim, next_candidate) = {
                let conns = self.lock();
                if conns.len() < self.limits.cap {
                    return;
                }
                let mut victim: Option<((u8, u64), &Arc<ConnState>)> = None;
                let mut next_candidate = u64::MAX;
                for c in conns.values() {
                    match c.eviction_rank(now, grace) {
                        Ok(rank) => {
                            if victim.as_ref().is_none_or(|(best, _)| rank > *best) {
                                victim = Some((rank, c));
                            }
                        }
                        Err(0) => {}
                        Err(at) => next_candidate = next_candidate.min(at),
                    }
                }
                (victim.map(|(_, c)| c.clone()), next_candidate)
            };
            if !noted {
                self.note_cap_reached(victim.is_some());
                noted = true;
            }
            if let Some(victim) = &victim {
                victim.request_close(CloseReason::Evicted);
                freed.await;
                continue;
            }
            // Every connection is busy or was just accepted or answered: wait for a slot,
            // or for one to become a candidate (a busy one that finishes is idle from then,
            // so look again after the grace at the latest).
            let wait = next_candidate.saturating_sub(now).clamp(1, grace.max(1));
            let _ = tokio::time::timeout(Duration::from_millis(wait), freed).await;
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
                    "every connection is busy (or was just accepted or answered): new \
                     connections wait until one closes"
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
            self.limits.request_timeout,
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
            request_timeout: Duration::from_millis(2000),
            evict_after: Duration::from_millis(50),
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
        header.header_started.store(now - 500, Ordering::Relaxed);
        let _ = busy.begin_request();
        assert!(header.eviction_rank(now, 100).unwrap() > idle.eviction_rank(now, 100).unwrap());
        assert_eq!(busy.eviction_rank(now, 100), Err(0));
    }

    #[test]
    fn connections_just_accepted_or_answered_are_not_evicted() {
        let epoch = Instant::now();
        let fresh = ConnState::new(epoch);
        let accepted = fresh.idle_since.load(Ordering::Relaxed);
        // Just accepted: its request is on the way; a candidate only after the grace.
        assert_eq!(fresh.eviction_rank(accepted + 10, 100), Err(accepted + 100));
        assert_eq!(fresh.eviction_rank(accepted + 100, 100), Ok((0, 100)));
        // Its header's first bytes arrived: the grace counts from them.
        fresh
            .header_started
            .store(accepted + 150, Ordering::Relaxed);
        assert_eq!(
            fresh.eviction_rank(accepted + 200, 100),
            Err(accepted + 250)
        );
        assert_eq!(fresh.eviction_rank(accepted + 260, 100), Ok((1, 110)));
        // Answered a moment ago (its response may still be on its way out): not yet.
        let _ = fresh.begin_request();
        fresh.end_request();
        let answered = fresh.idle_since.load(Ordering::Relaxed);
        assert_eq!(fresh.eviction_rank(answered, 100), Err(answered + 100));
    }

    #[test]
    fn a_request_starts_with_its_headers_first_byte() {
        let epoch = Instant::now();
        let c = ConnState::new(epoch);
        c.header_started.store(1 + 40, Ordering::Relaxed);
        assert_eq!(c.begin_request(), epoch + Duration::from_millis(40));
        c.end_request();
        // A request read along with the previous one starts when its handler does.
        let before = Instant::now();
        let started = c.begin_request();
        assert!(
            started + Duration::from_millis(2) >= before,
            "{started:?} {before:?}"
        );
    }

    #[test]
    fn a_header_is_bounded_by_the_request_timeout_when_shorter() {
        let c = ConnState::new(Instant::now());
        let l = Resolved {
            header_timeout: Duration::from_millis(500),
            request_timeout: Duration::from_millis(200),
            ..limits()
        };
        let start = c.idle_since.load(Ordering::Relaxed);
        c.header_started.store(start, Ordering::Relaxed);
        assert_eq!(c.expired(start + 199, &l), None);
        assert_eq!(c.expired(start + 201, &l), Some(CloseReason::HeaderTimeout));
    }

    #[tokio::test]
    async fn at_the_cap_a_fresh_connection_is_not_closed_for_a_newer_one() {
        let metrics = Arc::new(Metrics::new());
        let registry = Arc::new(Registry::new(
            Resolved {
                cap: 1,
                evict_after: Duration::from_millis(300),
                ..limits()
            },
            metrics,
        ));
        let first = registry.insert();
        // A second connection arrives at once: the first is not closed to make room; the
        // second waits.
        let waited = tokio::time::timeout(Duration::from_millis(100), registry.admit()).await;
        assert!(waited.is_err(), "admitted over the cap");
        assert_eq!(first.state.close_reason(), CloseReason::None);
        // Once the first has waited the grace for a request, it makes room.
        let admit = tokio::spawn({
            let registry = registry.clone();
            async move { registry.admit().await }
        });
        let until = Instant::now() + Duration::from_secs(5);
        while first.state.close_reason() != CloseReason::Evicted {
            assert!(
                Instant::now() < until,
                "the idle connection was never evicted"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        drop(first);
        tokio::time::timeout(Duration::from_secs(5), admit)
            .await
            .expect("admitted once the evicted connection is gone")
            .expect("the admitting task");
    }

    #[test]
    fn the_first_close_reason_wins() {
        let c = ConnState::new(Instant::now());
        c.request_close(CloseReason::HeaderTimeout);
        c.request_close(CloseReason::Evicted);
        assert_eq!(c.close_reason(), CloseReason::HeaderTimeout);
    }
}

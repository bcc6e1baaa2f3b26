//! One request's scope: a task-local that the wrapper around the router (the connection's
//! `crate::serve::observe::serve`) opens for each request and reads back once it is
//! answered, and that the pipeline below fills as it learns things — the operation and
//! table ([`note_request`]), rows examined and returned ([`note_rows`]), injected faults
//! and throttling ([`note_faults`], [`note_throttled`]), body-budget
//! reservations to release when the request is answered ([`hold`]), whether the connection
//! must close ([`close_connection`]) — or asks ([`shared`], [`request_deadline`]). Also the
//! request extensions a connection sets: [`RequestDeadline`] and [`Secure`].
//!
//! Shared state: a handler that needs a counter asks this scope, never the wrapper that
//! opened it. Outside a server (the in-process router) there is no scope, and every note is
//! a no-op.

use std::cell::RefCell;
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::OwnedSemaphorePermit;
use tokio::task::futures::TaskLocalFuture;

use crate::state::metrics::Operation;
use crate::state::shared::{LogLimiter, REFUSED_WRITES_LOG_EVERY, Shared};

/// The instant by which a request's header and body must have arrived (a request
/// extension set by the connection: `request_timeout` after the header's first byte).
#[derive(Debug, Clone, Copy)]
pub(crate) struct RequestDeadline(pub Instant);

/// The request extension of a request that came over HTTPS, set by the connection (bearer
/// tokens are accepted only there, and a SAS with `spr=https` is satisfied).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Secure;

tokio::task_local! {
    static REQUEST: RequestScope;
}

/// One request's scope (see the module docs).
pub(crate) struct RequestScope {
    shared: Arc<Shared>,
    deadline: Option<Instant>,
    record: RefCell<Record>,
}

impl RequestScope {
    /// What the pipeline noted.
    pub(crate) fn into_record(self) -> Record {
        self.record.into_inner()
    }
}

/// What the pipeline noted about one request, for its metrics and log line.
#[derive(Debug, Default)]
pub(crate) struct Record {
    /// The operation ([`note_request`], [`note_preflight`]).
    pub(crate) operation: Option<Operation>,
    /// The account (when the request log is on).
    pub(crate) account: Option<String>,
    /// The table (when the request log is on).
    pub(crate) table: Option<String>,
    /// Entities examined and returned ([`note_rows`]).
    pub(crate) rows: Option<(u64, u64)>,
    /// Whether the connection must close ([`close_connection`]).
    pub(crate) close: bool,
    /// Body-budget reservations, released when the request is answered ([`hold`]).
    pub(crate) held: Vec<OwnedSemaphorePermit>,
    /// The fault rules that fired on the request: rule name and kind ([`note_faults`]).
    pub(crate) faults: Vec<(String, &'static str)>,
    /// The limit that throttled the request: `partition` or `account` ([`note_throttled`]).
    pub(crate) throttled: Option<&'static str>,
}

/// Runs `request` (the router's future) inside a fresh scope sharing `shared`, with the
/// request's `deadline`; the returned future's `take_value` gives the scope back.
pub(crate) fn enter<F: Future>(
    shared: Arc<Shared>,
    deadline: Option<Instant>,
    request: F,
) -> TaskLocalFuture<RequestScope, F> {
    let scope = RequestScope {
        shared,
        deadline,
        record: RefCell::new(Record::default()),
    };
    REQUEST.scope(scope, request)
}

/// The server's shared state, when running inside a scope.
pub(crate) fn shared() -> Option<Arc<Shared>> {
    REQUEST.try_with(|scope| scope.shared.clone()).ok()
}

/// The instant by which the request must have arrived whole, when it came over a
/// connection (see [`RequestDeadline`]).
pub(crate) fn request_deadline() -> Option<Instant> {
    REQUEST.try_with(|scope| scope.deadline).ok().flatten()
}

/// Asks for `Connection: close` on the response (the request was not read whole).
pub(crate) fn close_connection() {
    let _ = REQUEST.try_with(|scope| scope.record.borrow_mut().close = true);
}

/// Keeps a body-budget reservation until the request is answered (outside a scope it is
/// released at once).
pub(crate) fn hold(permit: OwnedSemaphorePermit) {
    let _ = REQUEST.try_with(move |scope| scope.record.borrow_mut().held.push(permit));
}

/// Notes the operation a request names (called once its path is parsed): `operation`
/// names it; `names` gives its account and table, asked only when the request log is on.
/// Neither is called outside a scope.
pub(crate) fn note_request(
    operation: impl FnOnce() -> Operation,
    names: impl FnOnce() -> (String, Option<String>),
) {
    let _ = REQUEST.try_with(|scope| {
        let operation = operation();
        // The names are only for the log line.
        let names =
            tracing::enabled!(target: "tableq_server::request", tracing::Level::INFO).then(names);
        let mut record = scope.record.borrow_mut();
        record.operation = Some(operation);
        if let Some((account, table)) = names {
            record.account = Some(account);
            record.table = table;
        }
    });
}

/// Notes the fault rules that fired on the request (name and kind of each).
pub(crate) fn note_faults(fired: impl Iterator<Item = (String, &'static str)>) {
    let _ = REQUEST.try_with(|scope| scope.record.borrow_mut().faults.extend(fired));
}

/// Notes that the throttling emulation refused the request (`scope`: `partition` or
/// `account`).
pub(crate) fn note_throttled(limit: &'static str) {
    let _ = REQUEST.try_with(|scope| scope.record.borrow_mut().throttled = Some(limit));
}

/// Notes a CORS preflight (answered before its path is parsed).
pub(crate) fn note_preflight() {
    let _ =
        REQUEST.try_with(|scope| scope.record.borrow_mut().operation = Some(Operation::Preflight));
}

/// Notes how many entities a query examined and returned.
pub(crate) fn note_rows(examined: u64, returned: u64) {
    let _ = REQUEST.try_with(|scope| scope.record.borrow_mut().rows = Some((examined, returned)));
}

/// Logs a write a store refused (a full disk: every write is refused until space is
/// freed, possibly many a second) as a warning — at most one line per
/// [`REFUSED_WRITES_LOG_EVERY`] (the limit of the server in scope), counting the refusals since the previous line.
pub(crate) fn warn_refused_write(request_id: &str, error: &dyn std::fmt::Display) {
    static OUTSIDE: std::sync::OnceLock<LogLimiter> = std::sync::OnceLock::new();
    let shared = shared();
    let limiter = match &shared {
        Some(s) => &s.refused_writes,
        // Outside a server (the in-process router): one limit for the process.
        None => OUTSIDE.get_or_init(|| LogLimiter::new(REFUSED_WRITES_LOG_EVERY)),
    };
    match limiter.note(Instant::now()) {
        None => {}
        Some((_, None)) => tracing::warn!(
            target: "tableq_server::request",
            "request {request_id}: {error} (further refused writes are counted: one line at \
             most every {} s)",
            limiter.every().as_secs()
        ),
        Some((count, Some(since))) => tracing::warn!(
            target: "tableq_server::request",
            "{count} writes refused in the last {} s; the latest: request {request_id}: {error}",
            since.as_secs()
        ),
    }
}

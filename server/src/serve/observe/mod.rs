//! What an operator sees of a running server: the request log, the metrics
//! ([`metrics`]), and the health endpoints ([`health`]) — plus [`Shared`], what every
//! request of one server shares beyond its account (the metrics, the request-body budget,
//! the body and request timeouts, the rate limit of the refused-write warnings).
//!
//! [`serve`] runs every request of a connection (called by the connection's hyper
//! service, `crate::serve::connection`). It answers `GET /health`, `/health/ready` and `/metrics`
//! itself (before any account or authorization, so orchestrators and Prometheus need no
//! key; which is why no account may be named `health` or `metrics`) and the explorer's
//! files (`/_explorer…`, [`crate::ops::explorer`]; when it is on), and around every
//! other request, which goes to the router:
//!
//! * opens the request's scope (a task-local) that the pipeline fills as it learns things:
//!   the operation and table ([`note_request`], once the path is parsed), rows examined and
//!   returned ([`note_rows`], for queries), body-budget reservations to release when the
//!   request is answered ([`hold`]), and whether the connection must close
//!   ([`close_connection`]); it also carries the request's [`RequestDeadline`], which the
//!   body reader asks for ([`request_deadline`]);
//! * after the response: `Connection: close` if asked, the request metrics, and one log
//!   line (`text` or `json`, [`crate::state::config::LogFormat`]).
//!
//! It is no router middleware, so that a request pays for no boxed layer: the in-process
//! router ([`crate::router`]) serves the Table protocol alone, without the operator
//! endpoints, metrics, log or body budget.
//!
//! ```text
//! 2026-01-01T10:00:00.000000Z  INFO tableq_server::request: GET /devstoreaccount1/t() 200 0.4ms request_id=… operation=QueryEntities table=t rows=12/3
//! {"timestamp":"…","level":"INFO","fields":{"message":"request","method":"GET","path":"/devstoreaccount1/t()","status":200,"operation":"QueryEntities","account":"devstoreaccount1","table":"t","duration_ms":0.41,"rows_examined":12,"rows_returned":3,"request_id":"…"},"target":"tableq_server::request"}
//! ```

pub(crate) mod health;
pub(crate) mod metrics;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, Request, header};
use axum::response::Response;
use hyper::body::Incoming;
use std::cell::RefCell;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::OwnedSemaphorePermit;
use tower_service::Service;

use crate::auth::Hosted;
use crate::protocol::body::BodyBudget;
use crate::protocol::resource::{RequestTarget, Resource, Target};
use crate::state::config::{LogFormat, ServerConfig};
pub(crate) use metrics::Metrics;

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
    /// request is its [`RequestDeadline`]; this is the duration, for messages).
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

/// The instant by which a request's header and body must have arrived (a request
/// extension set by the connection: `request_timeout` after the header's first byte).
#[derive(Debug, Clone, Copy)]
pub(crate) struct RequestDeadline(pub Instant);

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

/// Logs a write a store refused (a full disk: every write is refused until space is
/// freed, possibly many a second) as a warning — at most one line per
/// [`REFUSED_WRITES_LOG_EVERY`], counting the refusals since the previous line.
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

tokio::task_local! {
    static REQUEST: RequestScope;
}

/// One request's scope (see the module docs).
struct RequestScope {
    shared: Arc<Shared>,
    deadline: Option<Instant>,
    record: RefCell<Record>,
}

/// The Table service's operations, as the metrics and the log name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operation {
    QueryTables,
    CreateTable,
    DeleteTable,
    EntityGroupTransaction,
    QueryEntities,
    InsertEntity,
    GetEntity,
    DeleteEntity,
    UpdateEntity,
    InsertOrReplaceEntity,
    MergeEntity,
    InsertOrMergeEntity,
    GetTableServiceProperties,
    SetTableServiceProperties,
    GetTableServiceStats,
    GetTableAcl,
    SetTableAcl,
    /// A CORS preflight (`OPTIONS`).
    Preflight,
    /// Anything else: an unknown path or method, a request refused before its operation
    /// was known.
    Other,
}

impl Operation {
    /// How many operations there are.
    pub(crate) const COUNT: usize = 19;

    /// The service's name of the operation.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Operation::QueryTables => "QueryTables",
            Operation::CreateTable => "CreateTable",
            Operation::DeleteTable => "DeleteTable",
            Operation::EntityGroupTransaction => "EntityGroupTransaction",
            Operation::QueryEntities => "QueryEntities",
            Operation::InsertEntity => "InsertEntity",
            Operation::GetEntity => "GetEntity",
            Operation::DeleteEntity => "DeleteEntity",
            Operation::UpdateEntity => "UpdateEntity",
            Operation::InsertOrReplaceEntity => "InsertOrReplaceEntity",
            Operation::MergeEntity => "MergeEntity",
            Operation::InsertOrMergeEntity => "InsertOrMergeEntity",
            Operation::GetTableServiceProperties => "GetTableServiceProperties",
            Operation::SetTableServiceProperties => "SetTableServiceProperties",
            Operation::GetTableServiceStats => "GetTableServiceStats",
            Operation::GetTableAcl => "GetTableAcl",
            Operation::SetTableAcl => "SetTableAcl",
            Operation::Preflight => "Preflight",
            Operation::Other => "Other",
        }
    }
}

#[derive(Debug, Default)]
struct Record {
    operation: Option<Operation>,
    account: Option<String>,
    table: Option<String>,
    rows: Option<(u64, u64)>,
    close: bool,
    held: Vec<OwnedSemaphorePermit>,
}

/// The server's shared state, when running inside [`serve`].
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

/// Keeps a body-budget reservation until the request is answered (outside [`serve`] it is
/// released at once).
pub(crate) fn hold(permit: OwnedSemaphorePermit) {
    let _ = REQUEST.try_with(move |scope| scope.record.borrow_mut().held.push(permit));
}

/// Notes the operation a request names (called once its path is parsed).
pub(crate) fn note_request(method: &Method, headers: &HeaderMap, path: &RequestTarget) {
    let _ = REQUEST.try_with(|scope| {
        let method = crate::protocol::negotiate::effective_method(method, headers)
            .unwrap_or_else(|_| method.clone());
        let operation = operation_of(&method, &path.target);
        // The names are only for the log line.
        let names =
            tracing::enabled!(target: "tableq_server::request", tracing::Level::INFO).then(|| {
                (
                    path.account.clone(),
                    table_of(&path.target).map(str::to_owned),
                )
            });
        let mut record = scope.record.borrow_mut();
        record.operation = Some(operation);
        if let Some((account, table)) = names {
            record.account = Some(account);
            record.table = table;
        }
    });
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

/// The Table service's name of the operation `method` on `resource` asks for (writes
/// without `If-Match`; [`layer`] turns a conditional `PUT` into `UpdateEntity` and an
/// unconditional merge into `InsertOrMergeEntity`).
fn operation_of(method: &Method, target: &Target) -> Operation {
    let resource = match (target, method.as_str()) {
        (Target::ServiceProperties, "GET") => return Operation::GetTableServiceProperties,
        (Target::ServiceProperties, "PUT") => return Operation::SetTableServiceProperties,
        (Target::ServiceStats, "GET") => return Operation::GetTableServiceStats,
        (Target::TableAcl { .. }, "GET" | "HEAD") => return Operation::GetTableAcl,
        (Target::TableAcl { .. }, "PUT") => return Operation::SetTableAcl,
        (Target::Resource(resource), _) => resource,
        _ => return Operation::Other,
    };
    #[allow(unreachable_patterns)]
    match (resource, method.as_str()) {
        (Resource::Tables { .. } | Resource::Table { .. }, "GET") => Operation::QueryTables,
        (Resource::Tables { .. }, "POST") => Operation::CreateTable,
        (Resource::Table { .. }, "DELETE") => Operation::DeleteTable,
        (Resource::Batch { .. }, "POST") => Operation::EntityGroupTransaction,
        (Resource::Entities { .. }, "GET") => Operation::QueryEntities,
        (Resource::Entities { .. }, "POST") => Operation::InsertEntity,
        (Resource::Entity { .. }, "GET") => Operation::GetEntity,
        (Resource::Entity { .. }, "DELETE") => Operation::DeleteEntity,
        (Resource::Entity { .. }, "PUT") => Operation::InsertOrReplaceEntity,
        (Resource::Entity { .. }, "MERGE" | "PATCH") => Operation::MergeEntity,
        _ => Operation::Other,
    }
}

fn table_of(target: &Target) -> Option<&str> {
    let resource = match target {
        Target::TableAcl { table } => return Some(table),
        Target::Resource(resource) => resource,
        _ => return None,
    };
    #[allow(unreachable_patterns)]
    match resource {
        Resource::Table { table }
        | Resource::Entities { table }
        | Resource::Entity { table, .. } => Some(&table.name),
        _ => None,
    }
}

/// Serves one request of a connection with `router` (see the module docs).
pub(crate) async fn serve(
    observed: &Observed,
    mut router: Router,
    request: Request<Incoming>,
) -> Response {
    let mut request = request.map(Body::new);
    let deadline = request
        .extensions_mut()
        .remove::<RequestDeadline>()
        .map(|d| d.0);
    if let Some(asked) = health::asked(&request) {
        return crate::app::with_server(health::answer(observed, asked).await);
    }
    if let Some(asked) = crate::ops::explorer::asked(&observed.hosted, &request) {
        return crate::app::with_server(crate::ops::explorer::answer(&observed.hosted, asked));
    }
    let started = Instant::now();
    let logged = tracing::enabled!(target: "tableq_server::request", tracing::Level::INFO);
    let method = request.method().clone();
    let path = if logged {
        request.uri().path().to_owned()
    } else {
        String::new()
    };
    let if_match = request.headers().contains_key(header::IF_MATCH);
    let scope = RequestScope {
        shared: observed.shared.clone(),
        deadline,
        record: RefCell::new(Record::default()),
    };
    let mut handled = std::pin::pin!(REQUEST.scope(scope, router.call(request)));
    let mut response = match (&mut handled).await {
        Ok(response) => response,
        Err(never) => match never {},
    };
    let record = handled
        .as_mut()
        .take_value()
        .map(|scope| scope.record.into_inner())
        .unwrap_or_default();
    let took = started.elapsed();
    if record.close {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    let operation = match record.operation {
        Some(Operation::InsertOrReplaceEntity) if if_match => Operation::UpdateEntity,
        Some(Operation::MergeEntity) if !if_match => Operation::InsertOrMergeEntity,
        Some(op) => op,
        None => Operation::Other,
    };
    let status = response.status().as_u16();
    observed.shared.metrics.request(operation, status, took);
    if logged {
        log_request(
            observed.shared.log_format,
            &method,
            &path,
            &response,
            operation.name(),
            &record,
            took,
        );
    }
    drop(record.held);
    response
}

/// `x-ms-request-id`.
const REQUEST_ID: HeaderName = HeaderName::from_static("x-ms-request-id");
/// `x-ms-error-code`.
const ERROR_CODE: HeaderName = HeaderName::from_static(crate::protocol::error::ERROR_CODE_HEADER);

/// What a request's log line says besides its [`Record`].
struct LogLine<'a> {
    method: &'a Method,
    path: &'a str,
    status: u16,
    /// The response's `x-ms-error-code`, or empty.
    error_code: &'a str,
    /// The time taken, in milliseconds.
    ms: f64,
    request_id: &'a str,
    operation: &'a str,
}

impl LogLine<'_> {
    /// Appends the message of the `text` format to `out`:
    /// `{method} {path} {status}[ {error code}] {ms:.1}ms request_id={id} operation={op}[ table={t}][ rows={examined}/{returned}]`.
    fn write_text(&self, record: &Record, out: &mut String) {
        use std::fmt::Write;
        out.push_str(self.method.as_str());
        out.push(' ');
        out.push_str(self.path);
        let _ = write!(out, " {}", self.status);
        if !self.error_code.is_empty() {
            out.push(' ');
            out.push_str(self.error_code);
        }
        let _ = write!(out, " {:.1}ms request_id=", self.ms);
        out.push_str(self.request_id);
        out.push_str(" operation=");
        out.push_str(self.operation);
        if let Some(t) = &record.table {
            out.push_str(" table=");
            out.push_str(t);
        }
        if let Some((examined, returned)) = record.rows {
            let _ = write!(out, " rows={examined}/{returned}");
        }
    }
}

fn log_request(
    format: LogFormat,
    method: &Method,
    path: &str,
    response: &Response,
    operation: &'static str,
    record: &Record,
    took: Duration,
) {
    let header = |name: &HeaderName| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    };
    let status = response.status().as_u16();
    let error_code = header(&ERROR_CODE);
    let request_id = header(&REQUEST_ID);
    let ms = took.as_secs_f64() * 1000.0;
    match format {
        LogFormat::Text => {
            thread_local! {
                /// The message being logged, reused from line to line on each thread.
                static LINE: RefCell<String> = const { RefCell::new(String::new()) };
            }
            let fields = LogLine {
                method,
                path,
                status,
                error_code,
                ms,
                request_id,
                operation,
            };
            LINE.with_borrow_mut(|line| {
                line.clear();
                fields.write_text(record, line);
                tracing::info!(target: "tableq_server::request", "{line}");
            });
        }
        LogFormat::Json => {
            tracing::info!(
                target: "tableq_server::request",
                method = %method,
                path,
                status,
                error_code = (!error_code.is_empty()).then_some(error_code),
                operation,
                account = record.account.as_deref(),
                table = record.table.as_deref(),
                duration_ms = (ms * 1000.0).round() / 1000.0,
                rows_examined = record.rows.map(|r| r.0),
                rows_returned = record.rows.map(|r| r.1),
                request_id,
                "request"
            );
        }
    }
}

/// What [`serve`] works with: the server's shared state and its accounts.
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
    use tableq_parser::resource::{KeyValue, TableName};

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

    #[test]
    fn text_lines_are_written_as_the_format_string_wrote_them() {
        // The line as first written, with one `format!` and a separate `extra` string.
        fn formatted(l: &LogLine<'_>, record: &Record) -> String {
            let (method, path, status, error_code, ms, request_id, operation) = (
                l.method,
                l.path,
                l.status,
                l.error_code,
                l.ms,
                l.request_id,
                l.operation,
            );
            let mut extra = format!(" operation={operation}");
            if let Some(t) = &record.table {
                extra.push_str(&format!(" table={t}"));
            }
            if let Some((examined, returned)) = record.rows {
                extra.push_str(&format!(" rows={examined}/{returned}"));
            }
            format!(
                "{method} {path} {status}{}{error_code} {ms:.1}ms request_id={request_id}{extra}",
                if error_code.is_empty() { "" } else { " " },
            )
        }
        let records = [
            Record::default(),
            Record {
                table: Some("t\u{1b}ü".into()),
                rows: Some((12, 3)),
                ..Record::default()
            },
            Record {
                rows: Some((0, 0)),
                ..Record::default()
            },
        ];
        let method = Method::from_bytes(b"MERGE").unwrap();
        let mut line = String::from("stale");
        for record in &records {
            for (status, error_code) in [(200, ""), (404, "ResourceNotFound")] {
                for ms in [0.0, 0.04999, 0.05, 0.25, 1.35, 12345.678, f64::MAX] {
                    let fields = LogLine {
                        method: &method,
                        path: "/a/t()",
                        status,
                        error_code,
                        ms,
                        request_id: "id",
                        operation: "GetEntity",
                    };
                    line.clear();
                    fields.write_text(record, &mut line);
                    assert_eq!(line, formatted(&fields, record));
                }
            }
        }
    }

    #[test]
    fn operations_are_named_as_the_service_names_them() {
        let t = || TableName::new("t");
        let entity = Resource::Entity {
            table: t(),
            partition_key: KeyValue::new("p"),
            row_key: KeyValue::new("r"),
        };
        let entities = Resource::Entities { table: t() };
        let cases = [
            (Method::GET, entity.clone(), "GetEntity"),
            (Method::DELETE, entity.clone(), "DeleteEntity"),
            (Method::PUT, entity.clone(), "InsertOrReplaceEntity"),
            (Method::PATCH, entity.clone(), "MergeEntity"),
            (Method::GET, entities.clone(), "QueryEntities"),
            (Method::POST, entities.clone(), "InsertEntity"),
            (Method::OPTIONS, entities, "Other"),
        ];
        for (method, resource, name) in cases {
            let target = Target::Resource(resource);
            assert_eq!(
                operation_of(&method, &target).name(),
                name,
                "{method} {target:?}"
            );
        }
        let admin = [
            (
                Method::GET,
                Target::ServiceProperties,
                "GetTableServiceProperties",
            ),
            (
                Method::PUT,
                Target::ServiceProperties,
                "SetTableServiceProperties",
            ),
            (Method::GET, Target::ServiceStats, "GetTableServiceStats"),
            (Method::PUT, Target::ServiceStats, "Other"),
            (
                Method::GET,
                Target::TableAcl { table: "t".into() },
                "GetTableAcl",
            ),
            (
                Method::PUT,
                Target::TableAcl { table: "t".into() },
                "SetTableAcl",
            ),
        ];
        for (method, target, name) in admin {
            assert_eq!(
                operation_of(&method, &target).name(),
                name,
                "{method} {target:?}"
            );
        }
        assert_eq!(table_of(&Target::Resource(entity)), Some("t"));
        assert_eq!(table_of(&Target::TableAcl { table: "t".into() }), Some("t"));
        assert_eq!(table_of(&Target::ServiceStats), None);
    }
}

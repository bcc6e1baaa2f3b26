//! What an operator sees of a running server: the request log, the metrics
//! ([`metrics`]), and the health endpoints ([`health`]) — plus [`Shared`], what every
//! request of one server shares beyond its account (the metrics, the request-body budget,
//! the body timeout).
//!
//! [`layer`] is the outermost middleware of the router. It answers `GET /health`,
//! `/health/ready` and `/metrics` itself (before any account or authorization, so
//! orchestrators and Prometheus need no key; which is why no account may be named `health`
//! or `metrics`), and around every other request:
//!
//! * opens the request's [`RequestScope`] (a task-local) that the pipeline fills as it
//!   learns things: the operation and table ([`note_request`], once the path is parsed),
//!   rows examined and returned ([`note_rows`], for queries), body-budget reservations to
//!   release when the request is answered, and whether the connection must close;
//! * after the response: `Connection: close` if asked, the request metrics, and one log
//!   line (`text` or `json`, [`crate::config::LogFormat`]).
//!
//! ```text
//! 2026-01-01T10:00:00.000000Z  INFO tableq_server::request: GET /devstoreaccount1/t() 200 0.4ms request_id=… operation=QueryEntities table=t rows=12/3
//! {"timestamp":"…","level":"INFO","fields":{"message":"request","method":"GET","path":"/devstoreaccount1/t()","status":200,"operation":"QueryEntities","account":"devstoreaccount1","table":"t","duration_ms":0.41,"rows_examined":12,"rows_returned":3,"request_id":"…"},"target":"tableq_server::request"}
//! ```

pub(crate) mod health;
pub(crate) mod metrics;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::Response;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tokio::sync::OwnedSemaphorePermit;

use crate::auth::Hosted;
use crate::body::BodyBudget;
use crate::config::{LogFormat, ServerConfig};
use crate::resource::{RequestPath, Resource};
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
    /// How requests are logged.
    pub log_format: LogFormat,
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
            log_format: config.log_format,
        }
    }
}

tokio::task_local! {
    static REQUEST: Arc<RequestScope>;
}

/// One request's scope (see the module docs).
#[derive(Debug)]
pub(crate) struct RequestScope {
    /// The server's shared state.
    pub shared: Arc<Shared>,
    record: Mutex<Record>,
}

#[derive(Debug, Default)]
struct Record {
    operation: Option<&'static str>,
    account: Option<String>,
    table: Option<String>,
    rows: Option<(u64, u64)>,
    close: bool,
    held: Vec<OwnedSemaphorePermit>,
}

impl RequestScope {
    fn record(&self) -> std::sync::MutexGuard<'_, Record> {
        self.record.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Asks for `Connection: close` on the response (the request was not read whole).
    pub(crate) fn close_connection(&self) {
        self.record().close = true;
    }

    /// Keeps a body-budget reservation until the request is answered.
    pub(crate) fn hold(&self, permit: OwnedSemaphorePermit) {
        self.record().held.push(permit);
    }
}

/// The current request's scope, when running inside [`layer`].
pub(crate) fn current() -> Option<Arc<RequestScope>> {
    REQUEST.try_with(Arc::clone).ok()
}

/// Notes the operation a request names (called once its path is parsed).
pub(crate) fn note_request(method: &Method, headers: &HeaderMap, path: &RequestPath) {
    let _ = REQUEST.try_with(|scope| {
        let method =
            crate::negotiate::effective_method(method, headers).unwrap_or_else(|_| method.clone());
        let mut record = scope.record();
        record.operation = Some(operation_name(&method, &path.resource));
        record.account = Some(path.account.clone());
        record.table = table_of(&path.resource).map(str::to_owned);
    });
}

/// Notes how many entities a query examined and returned, in the request `scope` (taken
/// with [`current`] before the query went to a worker thread, where the task-local is not
/// set).
pub(crate) fn note_rows(scope: &Option<Arc<RequestScope>>, examined: u64, returned: u64) {
    if let Some(scope) = scope {
        scope.record().rows = Some((examined, returned));
    }
}

/// The Table service's name of the operation `method` on `resource` asks for (writes
/// without `If-Match`; [`layer`] turns a conditional `PUT` into `UpdateEntity` and an
/// unconditional merge into `InsertOrMergeEntity`).
fn operation_name(method: &Method, resource: &Resource) -> &'static str {
    #[allow(unreachable_patterns)]
    match (resource, method.as_str()) {
        (Resource::Tables { .. } | Resource::Table { .. }, "GET") => "QueryTables",
        (Resource::Tables { .. }, "POST") => "CreateTable",
        (Resource::Table { .. }, "DELETE") => "DeleteTable",
        (Resource::Batch { .. }, "POST") => "EntityGroupTransaction",
        (Resource::Entities { .. }, "GET") => "QueryEntities",
        (Resource::Entities { .. }, "POST") => "InsertEntity",
        (Resource::Entity { .. }, "GET") => "GetEntity",
        (Resource::Entity { .. }, "DELETE") => "DeleteEntity",
        (Resource::Entity { .. }, "PUT") => "InsertOrReplaceEntity",
        (Resource::Entity { .. }, "MERGE" | "PATCH") => "MergeEntity",
        _ => "Other",
    }
}

fn table_of(resource: &Resource) -> Option<&str> {
    #[allow(unreachable_patterns)]
    match resource {
        Resource::Table { table }
        | Resource::Entities { table }
        | Resource::Entity { table, .. } => Some(&table.name),
        _ => None,
    }
}

/// The outermost middleware (see the module docs).
pub(crate) async fn layer(
    State(observed): State<Observed>,
    request: Request,
    next: Next,
) -> Response {
    if let Some(asked) = health::asked(&request) {
        return health::answer(&observed, asked).await;
    }
    let started = Instant::now();
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let if_match = request.headers().contains_key(header::IF_MATCH);
    let scope = Arc::new(RequestScope {
        shared: observed.shared.clone(),
        record: Mutex::new(Record::default()),
    });
    let mut response = REQUEST.scope(scope.clone(), next.run(request)).await;
    let record = std::mem::take(&mut *scope.record());
    let took = started.elapsed();
    if record.close {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    let operation = match record.operation {
        Some("InsertOrReplaceEntity") if if_match => "UpdateEntity",
        Some("MergeEntity") if !if_match => "InsertOrMergeEntity",
        Some(op) => op,
        None => "Other",
    };
    let status = response.status().as_u16();
    observed.shared.metrics.request(operation, status, took);
    log_request(
        observed.shared.log_format,
        &method,
        &path,
        &response,
        operation,
        &record,
        took,
    );
    drop(record.held);
    response
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
    if !tracing::enabled!(target: "tableq_server::request", tracing::Level::INFO) {
        return;
    }
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    };
    let status = response.status().as_u16();
    let error_code = header(crate::error::ERROR_CODE_HEADER);
    let request_id = header("x-ms-request-id");
    let ms = took.as_secs_f64() * 1000.0;
    match format {
        LogFormat::Text => {
            use std::fmt::Write;
            let mut extra = String::new();
            let _ = write!(extra, " operation={operation}");
            if let Some(t) = &record.table {
                let _ = write!(extra, " table={t}");
            }
            if let Some((examined, returned)) = record.rows {
                let _ = write!(extra, " rows={examined}/{returned}");
            }
            tracing::info!(
                target: "tableq_server::request",
                "{method} {path} {status}{}{error_code} {ms:.1}ms request_id={request_id}{extra}",
                if error_code.is_empty() { "" } else { " " },
            );
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

/// The state of [`layer`]: the server's shared state and its accounts.
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
            assert_eq!(
                operation_name(&method, &resource),
                name,
                "{method} {resource:?}"
            );
        }
        assert_eq!(table_of(&entity), Some("t"));
    }
}

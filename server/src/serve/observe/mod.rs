//! What an operator sees of a running server: the request log, the metrics
//! ([`crate::state::metrics`], counted by the layers below and encoded by [`health`]), and
//! the health endpoints ([`health`]).
//!
//! [`serve`] runs every request of a connection (called by the connection's hyper
//! service, `crate::serve::connection`). It answers `GET /health`, `/health/ready` and `/metrics`
//! itself (before any account or authorization, so orchestrators and Prometheus need no
//! key; which is why no account may be named `health` or `metrics`) and the explorer's
//! files (`/_explorer…`, [`crate::ops::explorer`]; when it is on), and around every
//! other request, which goes to the request pipeline (`crate::app::serve`, called
//! directly: no router or boxed layer between the connection and the pipeline):
//!
//! * opens the request's scope ([`crate::state::scope`], a task-local) that the pipeline
//!   fills as it learns things: the operation and table (once the path is parsed), rows
//!   examined and returned (for queries), body-budget reservations to release when the
//!   request is answered, and whether the connection must close; it also carries the
//!   request's [`RequestDeadline`], which the body reader asks for;
//! * after the response: `Connection: close` if asked or if the request's body was left
//!   unread ([`body_end`]), the request metrics, and one log line (`text` or `json`,
//!   [`crate::state::config::LogFormat`]).
//!
//! It is no router middleware, so that a request pays for no boxed layer: the in-process
//! router ([`crate::router`]) serves the Table protocol alone, without the operator
//! endpoints, metrics, log or body budget.
//!
//! ```text
//! 2026-01-01T10:00:00.000000Z  INFO tableq_server::request: GET /devstoreaccount1/t() 200 0.4ms request_id=… operation=QueryEntities table=t rows=12/3
//! {"timestamp":"…","level":"INFO","fields":{"message":"request","method":"GET","path":"/devstoreaccount1/t()","status":200,"operation":"QueryEntities","account":"devstoreaccount1","table":"t","duration_ms":0.41,"rows_examined":12,"rows_returned":3,"request_id":"…"},"target":"tableq_server::request"}
//! ```

mod body_end;
pub(crate) mod health;

use axum::http::{HeaderName, HeaderValue, Method, Request, header};
use axum::response::Response;
use hyper::body::Incoming;
use std::cell::RefCell;
use std::time::{Duration, Instant};

use crate::state::config::LogFormat;
use crate::state::metrics::Operation;
use crate::state::scope::{self, Record, RequestDeadline, RequestScope};
use crate::state::shared::Observed;

/// Serves one request of a connection (see the module docs); `deadline` is when its body
/// must have arrived whole.
pub(crate) async fn serve(
    observed: &Observed,
    request: Request<Incoming>,
    deadline: RequestDeadline,
) -> Response {
    let (parts, incoming) = request.into_parts();
    let (body, watched) = body_end::watch(incoming);
    let request = Request::from_parts(parts, body);
    if let Some(asked) = health::asked(&request) {
        drop(request);
        let response = crate::app::with_server(health::answer(observed, asked).await);
        return closing_unless(watched.read_to_end(), response);
    }
    if let Some(asked) = crate::ops::explorer::asked(&observed.hosted, &request) {
        drop(request);
        let response =
            crate::app::with_server(crate::ops::explorer::answer(&observed.hosted, asked));
        return closing_unless(watched.read_to_end(), response);
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
    let mut handled = std::pin::pin!(scope::enter(
        observed.shared.clone(),
        Some(deadline.0),
        crate::app::serve(&observed.hosted, request)
    ));
    let response = (&mut handled).await;
    let record = handled
        .as_mut()
        .take_value()
        .map(RequestScope::into_record)
        .unwrap_or_default();
    let took = started.elapsed();
    let response = closing_unless(!record.close && watched.read_to_end(), response);
    let operation = match record.operation {
        Some(Operation::InsertOrReplaceEntity) if if_match => Operation::UpdateEntity,
        Some(Operation::MergeEntity) if !if_match => Operation::InsertOrMergeEntity,
        Some(op) => op,
        None => Operation::Other,
    };
    let status = response.status().as_u16();
    observed.shared.metrics.request(operation, status, took);
    for (_, kind) in &record.faults {
        observed.shared.metrics.fault(kind);
    }
    if let Some(limit) = record.throttled {
        observed.shared.metrics.throttled(limit);
    }
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

/// The response, with `Connection: close` unless `keep` (a body left unread, or the
/// pipeline asked for it: see [`body_end`]).
fn closing_unless(keep: bool, mut response: Response) -> Response {
    if !keep {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
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
    /// `{method} {path} {status}[ {error code}] {ms:.1}ms request_id={id} operation={op}[ table={t}][ rows={examined}/{returned}][ fault={rule}:{kind}…][ throttled={limit}]`.
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
        for (rule, kind) in &record.faults {
            let _ = write!(out, " fault={rule}:{kind}");
        }
        if let Some(limit) = record.throttled {
            let _ = write!(out, " throttled={limit}");
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
                fault = fault_text(record).as_deref(),
                throttled = record.throttled,
                request_id,
                "request"
            );
        }
    }
}

/// The injected faults of a request for the JSON log: `rule:kind`, comma-separated.
fn fault_text(record: &Record) -> Option<String> {
    (!record.faults.is_empty()).then(|| {
        record
            .faults
            .iter()
            .map(|(rule, kind)| format!("{rule}:{kind}"))
            .collect::<Vec<_>>()
            .join(",")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn injected_faults_and_throttling_are_marked_in_the_line() {
        let method = Method::GET;
        let fields = LogLine {
            method: &method,
            path: "/a/t()",
            status: 503,
            error_code: "ServerBusy",
            ms: 1.0,
            request_id: "id",
            operation: "QueryEntities",
        };
        let record = Record {
            faults: vec![("slow".into(), "latency"), ("busy".into(), "error")],
            ..Record::default()
        };
        let mut line = String::new();
        fields.write_text(&record, &mut line);
        assert!(
            line.ends_with(" operation=QueryEntities fault=slow:latency fault=busy:error"),
            "{line}"
        );
        assert_eq!(
            fault_text(&record).as_deref(),
            Some("slow:latency,busy:error")
        );
        let record = Record {
            throttled: Some("partition"),
            ..Record::default()
        };
        line.clear();
        fields.write_text(&record, &mut line);
        assert!(line.ends_with(" throttled=partition"), "{line}");
        assert_eq!(fault_text(&record), None);
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
}

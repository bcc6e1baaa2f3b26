//! The operator endpoints, answered before any account or authorization:
//!
//! | request | answer |
//! |---|---|
//! | `GET /health` | liveness: `200 {"status":"ok"}` while the server serves requests |
//! | `GET /health/ready` | readiness: `200 {"ready":true,…}` when every account's store can take writes ([`Backend::ready`](tableq_store::Backend::ready)), else `503 {"ready":false,…}` with each failing store's reason |
//! | `GET /metrics` | the metrics in Prometheus' OpenMetrics text ([`crate::state::metrics`]) |
//!
//! `HEAD` is answered like `GET` without the body; other methods get 405 with `Allow`.
//! A store that does not answer its readiness check within [`READY_TIMEOUT`] counts as not
//! ready.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

use crate::state::metrics::CONTENT_TYPE;
use crate::state::shared::Observed;

/// The longest a store's readiness check may take.
pub(crate) const READY_TIMEOUT: Duration = Duration::from_secs(5);

/// The paths served here; a hosted account may not be named after their first segment.
pub(crate) const RESERVED_ACCOUNT_NAMES: [&str; 2] = ["health", "metrics"];

enum Endpoint {
    Live,
    Ready,
    Metrics,
}

fn endpoint(path: &str) -> Option<Endpoint> {
    match path.strip_suffix('/').unwrap_or(path) {
        "/health" => Some(Endpoint::Live),
        "/health/ready" => Some(Endpoint::Ready),
        "/metrics" => Some(Endpoint::Metrics),
        _ => None,
    }
}

/// One of the endpoints, as a request names it.
pub(crate) struct Asked {
    endpoint: Endpoint,
    method: Method,
}

/// Whether `request` is for one of the endpoints.
pub(crate) fn asked(request: &Request) -> Option<Asked> {
    Some(Asked {
        endpoint: endpoint(request.uri().path())?,
        method: request.method().clone(),
    })
}

/// The response to a request for one of the endpoints.
pub(crate) async fn answer(observed: &Observed, asked: Asked) -> Response {
    let Asked { endpoint, method } = asked;
    if method != Method::GET && method != Method::HEAD {
        let mut response = (
            StatusCode::METHOD_NOT_ALLOWED,
            format!("{method} is not supported here; use GET or HEAD\n"),
        )
            .into_response();
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    let mut response = match endpoint {
        Endpoint::Live => json_response(StatusCode::OK, json!({"status": "ok"})),
        Endpoint::Ready => readiness(observed).await,
        Endpoint::Metrics => metrics(observed).await,
    };
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if method == Method::HEAD {
        *response.body_mut() = Body::empty();
    }
    response
}

fn json_response(status: StatusCode, body: serde_json::Value) -> Response {
    let mut response = (status, body.to_string()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

async fn readiness(observed: &Observed) -> Response {
    let checks = observed.hosted.states().map(|state| {
        let state = Arc::clone(state);
        async move {
            let name = state.config.account.name.clone();
            let backend = state.backend.clone();
            let check = tokio::task::spawn_blocking(move || backend.ready());
            let outcome = match tokio::time::timeout(READY_TIMEOUT, check).await {
                Ok(Ok(Ok(()))) => Ok(()),
                Ok(Ok(Err(e))) => Err(e.to_string()),
                Ok(Err(e)) => Err(format!("the readiness check failed: {e}")),
                Err(_) => Err(format!(
                    "the store did not answer its readiness check within {} s",
                    READY_TIMEOUT.as_secs()
                )),
            };
            (name, outcome)
        }
    });
    let results = futures_util::future::join_all(checks).await;
    let ready = results.iter().all(|(_, r)| r.is_ok());
    let accounts: Vec<serde_json::Value> = results
        .into_iter()
        .map(|(account, outcome)| match outcome {
            Ok(()) => json!({"account": account, "ready": true}),
            Err(reason) => json!({"account": account, "ready": false, "reason": reason}),
        })
        .collect();
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    json_response(status, json!({"ready": ready, "accounts": accounts}))
}

async fn metrics(observed: &Observed) -> Response {
    let shared = observed.shared.clone();
    shared
        .metrics
        .body_in_flight
        .set(shared.budget.in_use() as i64);
    let hosted = observed.hosted.clone();
    let encoded = tokio::task::spawn_blocking(move || {
        let stores = hosted
            .states()
            .map(|s| (s.config.account.name.clone(), s.backend.metrics()))
            .collect();
        shared.metrics.encode(stores)
    })
    .await;
    match encoded {
        Ok(Ok(text)) => {
            let mut response = (StatusCode::OK, text).into_response();
            response
                .headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
            response
        }
        _ => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "the metrics could not be encoded\n",
        )
            .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_recognised_with_or_without_a_trailing_slash() {
        assert!(matches!(endpoint("/health"), Some(Endpoint::Live)));
        assert!(matches!(endpoint("/health/"), Some(Endpoint::Live)));
        assert!(matches!(endpoint("/health/ready"), Some(Endpoint::Ready)));
        assert!(matches!(endpoint("/metrics/"), Some(Endpoint::Metrics)));
        assert!(endpoint("/healthz").is_none());
        assert!(endpoint("/devstoreaccount1/Tables").is_none());
        assert!(endpoint("/health/other").is_none());
    }
}

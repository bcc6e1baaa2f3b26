//! tableq's own administrative operations, for test suites that reuse one server — not
//! the Table service's (query string `restype=tableq`):
//!
//! | request | operation | success |
//! |---|---|---|
//! | `PUT /acct/?restype=tableq&comp=faults` | replace the fault rules (body: their JSON, see [`crate::state::faults::FaultRules::from_json`]); the plan starts afresh from its seed | 204 |
//! | `GET /acct/?restype=tableq&comp=faults` | the rules, the seed, how often each rule fired, the throttle's limits | 200 JSON |
//! | `DELETE /acct/?restype=tableq&comp=faults` | no more faults | 204 |
//! | `POST /acct/?restype=tableq&comp=reset` | delete every table of the account (their entities and ACLs with them) and reset its service properties (CORS, logging, metrics) | 204 |
//!
//! They are authorized like any request of the account, with its key only: a SAS token or
//! a bearer token is refused (403 `AuthorizationPermissionMismatch`, by the pipeline,
//! `crate::app`). The fault rules are the server's (shared by its accounts; a rule names an
//! account to confine itself to one). A bad rule set → 400 `InvalidInput` naming the rule
//! and its problem, and changes nothing. Errors are XML, like the service's other
//! administrative operations.

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use tableq_model::ErrorCode;
use tableq_store::ServiceProperties;

use crate::protocol::context::{blocking, body_text, empty_response, read_bytes};
use crate::protocol::error::ApiError;
use crate::state::accounts::AppState;
use crate::state::faults::Faults;

/// `PUT ?restype=tableq&comp=faults`.
pub(crate) async fn set_faults(
    state: &Arc<AppState>,
    faults: &Faults,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let bytes = read_bytes(body, headers, state.config.max_body_bytes).await?;
    let text = body_text(bytes.to_vec())?;
    faults
        .set(&text)
        .map_err(|e| ApiError::new(ErrorCode::InvalidInput, e.to_string()))?;
    Ok(empty_response(StatusCode::NO_CONTENT))
}

/// `GET ?restype=tableq&comp=faults`: `{"rules": …, "seed": …, "fired": [{"rule", "count"}],
/// "throttle": {"partition", "account"} | null}`.
pub(crate) fn get_faults(faults: &Faults) -> Result<Response, ApiError> {
    let report = faults.report();
    let rules = match &report.rules {
        Some(text) => serde_json::from_str::<serde_json::Value>(text)
            .map_err(|e| ApiError::internal(format!("the armed rules are no JSON: {e}")))?,
        None => serde_json::Value::Null,
    };
    let body = serde_json::json!({
        "rules": rules,
        "seed": report.seed,
        "fired": report
            .fired
            .iter()
            .map(|(rule, count)| serde_json::json!({ "rule": rule, "count": count }))
            .collect::<Vec<_>>(),
        "throttle": report.throttle.map(|l| serde_json::json!({
            "partition": l.partition,
            "account": l.account,
        })),
    });
    let mut response = (StatusCode::OK, body.to_string()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Ok(response)
}

/// `DELETE ?restype=tableq&comp=faults`.
pub(crate) fn clear_faults(faults: &Faults) -> Result<Response, ApiError> {
    faults.clear();
    Ok(empty_response(StatusCode::NO_CONTENT))
}

/// `POST ?restype=tableq&comp=reset`.
pub(crate) async fn reset(state: &Arc<AppState>) -> Result<Response, ApiError> {
    let _serialised = state.settings.lock().await;
    let backend = state.backend.clone();
    blocking(move || {
        for table in backend.tables().map_err(ApiError::store)? {
            match backend.delete_table(&table.name) {
                // Deleted meanwhile by another request: gone either way.
                Ok(()) | Err(tableq_store::StoreError::TableNotFound(_)) => {}
                Err(e) => return Err(ApiError::store(e)),
            }
        }
        backend
            .set_service_properties(&ServiceProperties::default())
            .map_err(ApiError::store)
    })
    .await?;
    state.cors.set(Vec::new());
    Ok(empty_response(StatusCode::NO_CONTENT))
}

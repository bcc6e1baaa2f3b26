//! CORS, enforced from the account's rules (its service properties' `Cors`):
//!
//! * **Preflight** — `OPTIONS` on any path of an account, without authorization: the
//!   `Origin`, `Access-Control-Request-Method` and every header of
//!   `Access-Control-Request-Headers` are matched against the rules in order; the first rule
//!   that allows all three decides → 200 with `Access-Control-Allow-Origin` (the origin, or
//!   `*` for a rule that allows every origin), `-Allow-Methods`, `-Allow-Headers`,
//!   `-Max-Age` (and `-Allow-Credentials: true` for a named origin). No rule, no match, an
//!   unknown account or a missing `Origin` / `Access-Control-Request-Method` → 403
//!   `CorsPreflightFailure`.
//! * **Actual requests** with an `Origin` — whatever their outcome, errors included: the
//!   first rule that allows the origin and the method adds `Access-Control-Allow-Origin`,
//!   `-Expose-Headers` (the response's headers that the rule exposes),
//!   `-Allow-Credentials: true` (named origins) and `Vary: Origin`; without a match the
//!   response goes out unchanged.
//!
//! The rules are read from the store once per account and kept ([`CorsCache`](crate::state::accounts::CorsCache)); a Set
//! Service Properties through this server replaces the cached copy. A request without
//! `Origin` never looks at them. (Several servers sharing one PostgreSQL database each keep
//! their own copy: a rule set through one is seen by the others after their restart.)
//!
//! ```text
//! OPTIONS /acct/t()  Origin: http://app  Access-Control-Request-Method: GET
//!   → 200  Access-Control-Allow-Origin: http://app  Access-Control-Allow-Methods: GET …
//! GET /acct/t()  Origin: http://app  (signed)
//!   → 200  Access-Control-Allow-Origin: http://app  Vary: Origin  Access-Control-Expose-Headers: …
//! ```

use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::Response;
use std::sync::Arc;
use tableq_model::ErrorCode;
use tableq_store::CorsRule;

use crate::protocol::context::{empty_response, short_read};
use crate::protocol::error::ApiError;
use crate::state::accounts::AppState;

/// The account's rules: cached, or read from the store once.
pub(crate) async fn rules(state: &AppState) -> Result<Arc<Vec<CorsRule>>, ApiError> {
    if let Some(rules) = state.cors.cached() {
        return Ok(rules);
    }
    let backend = state.backend.clone();
    let properties = short_read(&*state.backend, move || {
        backend.service_properties().map_err(ApiError::store)
    })
    .await?;
    // A Set that stored rules meanwhile wins over what was read before it.
    Ok(state.cors.get_or_insert(Arc::new(properties.cors)))
}

fn header_text<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

fn failure(detail: impl Into<String>) -> ApiError {
    ApiError::new(ErrorCode::CorsPreflightFailure, detail)
}

fn set(response: &mut Response, name: &'static str, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        response
            .headers_mut()
            .insert(HeaderName::from_static(name), v);
    }
}

/// Answers a preflight for the account whose state is `state` (`None`: not hosted).
pub(crate) async fn preflight(
    state: Option<&Arc<AppState>>,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    let origin = header_text(headers, "origin")
        .ok_or_else(|| failure("a CORS preflight needs an Origin header"))?;
    let method = header_text(headers, "access-control-request-method")
        .ok_or_else(|| failure("a CORS preflight needs an Access-Control-Request-Method header"))?;
    let requested: Vec<&str> = header_text(headers, "access-control-request-headers")
        .map(|h| {
            h.split(',')
                .map(str::trim)
                .filter(|h| !h.is_empty())
                .collect()
        })
        .unwrap_or_default();
    let Some(state) = state else {
        return Err(failure("no CORS rule allows this request"));
    };
    let rules = rules(state).await?;
    let Some(rule) = rules.iter().find(|r| {
        r.allows_origin(origin)
            && r.allows_method(method)
            && requested.iter().all(|h| r.allows_header(h))
    }) else {
        return Err(failure(if rules.is_empty() {
            "CORS is not enabled for this account: set CORS rules with Set Service Properties"
                .to_owned()
        } else {
            format!(
                "no CORS rule allows origin `{origin}` with method {method} and headers [{}]",
                requested.join(", ")
            )
        }));
    };
    let mut response = empty_response(StatusCode::OK);
    let any = rule.allows_any_origin();
    set(
        &mut response,
        "access-control-allow-origin",
        if any { "*" } else { origin },
    );
    set(&mut response, "access-control-allow-methods", method);
    if !requested.is_empty() {
        set(
            &mut response,
            "access-control-allow-headers",
            &requested.join(","),
        );
    }
    set(
        &mut response,
        "access-control-max-age",
        &rule.max_age_in_seconds.to_string(),
    );
    if !any {
        set(&mut response, "access-control-allow-credentials", "true");
    }
    response
        .headers_mut()
        .insert(header::VARY, HeaderValue::from_static("Origin"));
    Ok(response)
}

/// Adds the CORS headers of the first rule that allows `origin` and `method` to the
/// response of an actual request (see the module docs).
pub(crate) fn decorate(response: &mut Response, rules: &[CorsRule], origin: &str, method: &str) {
    let Some(rule) = rules
        .iter()
        .find(|r| r.allows_origin(origin) && r.allows_method(method))
    else {
        return;
    };
    let exposed: Vec<String> = response
        .headers()
        .keys()
        .map(|k| k.as_str())
        .filter(|k| rule.exposes_header(k))
        .map(str::to_owned)
        .collect();
    let any = rule.allows_any_origin();
    set(
        response,
        "access-control-allow-origin",
        if any { "*" } else { origin },
    );
    if !exposed.is_empty() {
        set(
            response,
            "access-control-expose-headers",
            &exposed.join(","),
        );
    }
    if !any {
        set(response, "access-control-allow-credentials", "true");
    }
    response
        .headers_mut()
        .append(header::VARY, HeaderValue::from_static("Origin"));
}

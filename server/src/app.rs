//! The request pipeline: one axum fallback route, so that every request — whatever its
//! path — goes through the same steps, in this order:
//!
//! 1. **common headers** (middleware [`common`]): a request id, then on the way out
//!    `x-ms-request-id`, `x-ms-version`, `Date` and the echoed `x-ms-client-request-id`;
//! 2. **path** → account + [`Resource`] ([`crate::resource::parse_path`]);
//! 3. **authorization** ([`crate::auth`]): the account's store, the signature or SAS token —
//!    before any handler runs; once the method is known, what a SAS token allows;
//! 4. **protocol headers** (`x-ms-version`, `DataServiceVersion`, …), the **query string**,
//!    and the response's **metadata level** (`$format` / `Accept`);
//! 5. **method dispatch** per resource kind (`X-HTTP-Method` overrides `POST`); a method
//!    the resource does not support → 405 `MethodNotAllowed` with `Allow`;
//! 6. the handler ([`crate::tables`], [`crate::entities`], [`crate::batch`]). Entity writes
//!    are recognised once ([`WriteTarget::of`]) for single requests and batch operations
//!    alike.
//!
//! Every failure becomes an [`ApiError`] response carrying the request id.
//!
//! ```text
//! PUT /devstoreaccount1/t(PartitionKey='p',RowKey='r')   If-Match: *
//!   → path: account `devstoreaccount1`, Resource::Entity { t, p, r }
//!   → account authorized; headers, query and `Accept` checked
//!   → PUT on an entity with If-Match: entities::update(Replace)
//!   → 204, ETag, x-ms-request-id, x-ms-version, Date        (one log line)
//! ```

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, header, request::Parts};
use axum::middleware::{self, Next};
use axum::response::Response;
use futures_util::FutureExt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use crate::auth::{self, Hosted};
use crate::batch;
use crate::context::{AppState, Ctx};
use crate::encode::Links;
use crate::entities::{self, WriteTarget};
use crate::error::ApiError;
use crate::negotiate;
use crate::observe;
use crate::query::QueryParams;
use crate::resource::{Resource, describe, parse_path};
use crate::tables;

/// The request id of a request, set by [`common`].
#[derive(Debug, Clone)]
struct RequestId(String);

/// The router of a server (the connection layer around it — operator endpoints, metrics,
/// the request log — is [`observe::serve`]).
pub(crate) fn router(state: Arc<Hosted>) -> Router {
    Router::new()
        .fallback(dispatch)
        .layer(middleware::from_fn(common))
        .with_state(state)
}

/// Step 1: request id and common response headers (the request log line is
/// [`observe::serve`]'s).
async fn common(mut request: Request, next: Next) -> Response {
    let request_id = uuid::Uuid::new_v4().to_string();
    let client_request_id = request.headers().get("x-ms-client-request-id").cloned();
    let version = negotiate::response_version(request.headers());
    request
        .extensions_mut()
        .insert(RequestId(request_id.clone()));

    let mut response = next.run(request).await;

    let headers = response.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&request_id) {
        headers.insert("x-ms-request-id", v);
    }
    headers.insert("x-ms-version", version);
    if let Ok(v) = HeaderValue::from_str(&auth::sign::http_date_now()) {
        headers.insert(header::DATE, v);
    }
    if let Some(v) = client_request_id {
        headers.insert("x-ms-client-request-id", v);
    }
    response
}

/// Steps 2–6, with panics caught.
async fn dispatch(State(state): State<Arc<Hosted>>, request: Request) -> Response {
    let request_id = request
        .extensions()
        .get::<RequestId>()
        .map(|r| r.0.clone())
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    // A panic in the handler (a bug, never expected) becomes a 500 for this request instead
    // of a dropped connection. Nothing the handler shares is left half-updated by a panic:
    // the stores keep their own invariants behind locks that recover from poisoning.
    let outcome = AssertUnwindSafe(handle(&state, request))
        .catch_unwind()
        .await
        .unwrap_or_else(|panic| {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".into());
            Err(ApiError::internal(format!(
                "the request handler failed: {what}"
            )))
        });
    match outcome {
        Ok(response) => response,
        Err(error) => {
            if error.status() == axum::http::StatusCode::SERVICE_UNAVAILABLE {
                // Overload or a store that is down for a moment: expected under load, and
                // possibly many per second.
                tracing::warn!(target: "tableq_server::request", "request {request_id}: {error}");
            } else if error.status().is_server_error() {
                tracing::error!(target: "tableq_server::request", "request {request_id}: {error}");
            }
            error.into_response_for(&request_id)
        }
    }
}

/// `http://<Host>/<account>`: the base of `odata.metadata` and `odata.id`.
fn base_url(parts: &Parts, account: &str) -> String {
    let host = parts
        .headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| !h.is_empty() && h.is_ascii())
        .map(str::to_owned)
        .or_else(|| parts.uri.authority().map(|a| a.to_string()))
        .unwrap_or_else(|| "localhost".into());
    format!("http://{host}/{account}")
}

const ALLOW_TABLES: &str = "GET, POST";
const ALLOW_TABLE: &str = "GET, DELETE";
const ALLOW_BATCH: &str = "POST";
const ALLOW_ENTITIES: &str = "GET, POST";
const ALLOW_ENTITY: &str = "GET, PUT, MERGE, PATCH, DELETE";

async fn handle(hosted: &Hosted, request: Request) -> Result<Response, ApiError> {
    let (parts, body) = request.into_parts();
    let path = parse_path(parts.uri.path())?;
    observe::note_request(&parts.method, &parts.headers, &path);
    let (state, grant) = auth::authorize(hosted, &parts, &path.account)?;
    let state = &state;
    let request_id = parts
        .extensions
        .get::<RequestId>()
        .map(|r| r.0.clone())
        .unwrap_or_default();
    let links = Links {
        base: base_url(&parts, &path.account),
        account: path.account.clone(),
    };
    let mut ctx = request_context(links, parts.uri.query(), parts.headers, request_id)?;
    let method = negotiate::effective_method(&parts.method, &ctx.headers)?;
    let body = auth::admit(
        &grant,
        &method,
        &path.resource,
        &ctx.headers,
        &mut ctx.query,
        body,
        state.config.max_body_bytes,
    )
    .await?;
    ctx.sas = grant.sas();
    route(state, &ctx, method, path.resource, body).await
}

/// Step 4 for one request (a single request, or one operation of a `$batch`): protocol
/// headers, the query string and the response's metadata level.
pub(crate) fn request_context(
    links: Links,
    query: Option<&str>,
    headers: HeaderMap,
    request_id: String,
) -> Result<Ctx, ApiError> {
    negotiate::check_versions(&headers)?;
    let query = QueryParams::parse(query)?;
    let level = negotiate::response_level(headers.get(header::ACCEPT), query.format.as_deref())?;
    Ok(Ctx {
        links,
        level,
        query,
        headers,
        request_id,
        sas: None,
    })
}

/// Step 5: method dispatch.
async fn route(
    state: &Arc<AppState>,
    ctx: &Ctx,
    method: Method,
    resource: Resource,
    body: Body,
) -> Result<Response, ApiError> {
    let not_allowed = |resource: &Resource, allow| {
        Err(ApiError::method_not_allowed(
            method.as_str(),
            &describe(resource),
            allow,
        ))
    };
    if let Some(target) = WriteTarget::of(&method, &resource) {
        return entities::write(state, ctx, target, body).await;
    }
    match &resource {
        Resource::Tables { .. } => match method {
            Method::GET => tables::query(state, ctx).await,
            Method::POST => tables::create(state, ctx, body).await,
            _ => not_allowed(&resource, ALLOW_TABLES),
        },
        Resource::Table { table } => match method {
            Method::GET => tables::get(state, ctx, table.name.clone()).await,
            Method::DELETE => tables::delete(state, table.name.clone()).await,
            _ => not_allowed(&resource, ALLOW_TABLE),
        },
        Resource::Batch { .. } => match method {
            Method::POST => batch::execute(state, ctx, body).await,
            _ => not_allowed(&resource, ALLOW_BATCH),
        },
        // Writes were dispatched above.
        Resource::Entities { table } => match method {
            Method::GET => entities::query(state, ctx, table.name.clone()).await,
            _ => not_allowed(&resource, ALLOW_ENTITIES),
        },
        Resource::Entity {
            table,
            partition_key,
            row_key,
        } => match method {
            Method::GET => {
                let (table, pk, rk) = (
                    table.name.clone(),
                    partition_key.value.clone(),
                    row_key.value.clone(),
                );
                entities::get(state, ctx, table, pk, rk).await
            }
            _ => not_allowed(&resource, ALLOW_ENTITY),
        },
    }
}

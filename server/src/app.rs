//! The request pipeline: one function ([`serve`]), so that every request — whatever its
//! path — goes through the same steps, in this order (the connection layer calls it with
//! nothing between; the in-process [`router`] is one axum fallback route calling it):
//!
//! 1. **common headers** ([`common`]): a request id, then on the way out
//!    `Server` ([`SERVER`], on every response — the legacy Rust SDK fails any call
//!    without it; the operator endpoints and the explorer's files, answered before the
//!    router, get it from `crate::serve::observe::serve` through [`with_server`]), `x-ms-request-id`,
//!    `x-ms-version`, `Date`, the echoed `x-ms-client-request-id` and, for a request with
//!    `Origin`, the CORS headers (the request log line is `crate::serve::observe::serve`'s);
//! 2. **path** → account + [`Target`] ([`crate::protocol::resource::parse_target`]): a [`Resource`],
//!    or an administration operation the query string selects (service properties and
//!    stats, a table's ACL). `OPTIONS` is a CORS preflight ([`crate::ops::cors`]) on any path and
//!    skips every later step;
//! 3. **authorization** ([`crate::auth`]): the account's store, the signature or SAS token —
//!    before any handler runs; once the method is known, what a SAS token allows. The
//!    secondary endpoint (`{account}-secondary`) serves reads only (anything else → 403
//!    `AuthorizationFailure`);
//! 4. **protocol headers** (`x-ms-version`, `DataServiceVersion`, …), the **query string**,
//!    and the response's **metadata level** (`$format` / `Accept`);
//! 5. **method dispatch** per resource kind (`X-HTTP-Method` overrides `POST`); a method
//!    the resource does not support → 405 `MethodNotAllowed` with `Allow`;
//! 6. the handler ([`crate::ops::tables`], [`crate::ops::entities`], [`crate::ops::batch`],
//!    [`crate::ops::admin`], tableq's own [`crate::ops::tableq`] — the account key only, a
//!    SAS or bearer token → 403 `AuthorizationPermissionMismatch`). With throttling or
//!    fault rules on (`crate::state::faults`), a resource request first passes the
//!    throttle and the fault plan ([`gated`]). Entity writes are recognised once ([`WriteTarget::of`]) for single
//!    requests and batch operations alike.
//!
//! Every failure becomes an [`ApiError`] response carrying the request id: `odata.error`
//! JSON for the OData operations, XML (`<Error><Code>…`) for the administration operations,
//! and for a request whose authentication fails the front end's form — plain
//! `application/json`, or XML when the request sent no `Accept` ([`BodyFormat`]). On the way out,
//! a response to a request with `Origin` gets the CORS headers of the account's first
//! matching rule ([`crate::ops::cors::decorate`]); a request without `Origin` skips that step.
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
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, header, request::Parts};
use axum::response::Response;
use futures_util::FutureExt;
use std::cell::RefCell;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tableq_model::ErrorCode;

use crate::auth::{self, Grant, SasGrant};
use crate::ops::admin;
use crate::ops::batch;
use crate::ops::cors;
use crate::ops::entities::{self, WriteTarget};
use crate::ops::explorer::{explain, explain::ExplainMode};
use crate::ops::query;
use crate::ops::tableq;
use crate::ops::tables;
use crate::protocol::context::{Ctx, read_bytes, request_context};
use crate::protocol::encode::Links;
use crate::protocol::error::{ApiError, BodyFormat};
use crate::protocol::negotiate;
use crate::protocol::resource::{Resource, Target, describe, parse_target};
use crate::state::accounts::{AppState, BearerSetup, Hosted};
use crate::state::faults::{
    Busy, DropPoint, FaultPlan, Faults, Injection, Outcome, Target as FaultTarget,
};
use crate::state::metrics::Operation;
use crate::state::scope::{self, Secure, warn_refused_write};

/// The in-process router of a server: one fallback route running [`serve`] (the
/// connection layer calls [`serve`] itself, without axum's routing around it; the operator
/// endpoints, metrics and the request log are `crate::serve::observe::serve`'s).
pub(crate) fn router(state: Arc<Hosted>) -> Router {
    Router::new().fallback(move |request: Request| {
        let state = state.clone();
        async move { serve(&state, request).await }
    })
}

/// Runs one request through the pipeline (steps 1–6, see the module docs). What axum's
/// route would add is done here, so a request answers the same in-process and over a
/// connection: `Content-Length` from a body of known length, and no body for `HEAD`.
pub(crate) async fn serve(hosted: &Arc<Hosted>, request: Request) -> Response {
    let head = request.method() == Method::HEAD;
    let mut response = common(hosted, request).await;
    if !response.headers().contains_key(header::CONTENT_LENGTH)
        && let Some(length) = axum::body::HttpBody::size_hint(response.body()).exact()
    {
        response
            .headers_mut()
            .insert(header::CONTENT_LENGTH, HeaderValue::from(length));
    }
    if head {
        *response.body_mut() = Body::empty();
    }
    response
}

/// The account segment of a path (percent-encoding left as is: account names are plain).
fn account_segment(path: &str) -> &str {
    let rest = path.strip_prefix('/').unwrap_or(path);
    rest.split('/').next().unwrap_or("")
}

/// `x-ms-request-id`.
const REQUEST_ID: HeaderName = HeaderName::from_static("x-ms-request-id");
/// `x-ms-version`.
const VERSION: HeaderName = HeaderName::from_static("x-ms-version");
/// `x-ms-client-request-id`.
const CLIENT_REQUEST_ID: HeaderName = HeaderName::from_static("x-ms-client-request-id");

/// The `Server` header of every response: `tableq/<version>` (the service sends
/// `Windows-Azure-Table/1.0 Microsoft-HTTPAPI/2.0`, Azurite `Azurite-Table/<version>`).
pub(crate) const SERVER: &str = concat!("tableq/", env!("CARGO_PKG_VERSION"));

/// `response` with the [`SERVER`] header (for responses answered outside the router).
pub(crate) fn with_server(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(header::SERVER, HeaderValue::from_static(SERVER));
    response
}

/// The `Date` of a response sent now: the HTTP date of the current second, formatted once
/// per second on each worker thread (the value only changes from one second to the next).
fn date_now() -> Option<HeaderValue> {
    thread_local! {
        static DATE: RefCell<Option<(u64, HeaderValue)>> = const { RefCell::new(None) };
    }
    let now = SystemTime::now();
    let Ok(since_epoch) = now.duration_since(UNIX_EPOCH) else {
        // Before 1970: no second to remember it by.
        return HeaderValue::from_str(&auth::sign::http_date_now()).ok();
    };
    let second = since_epoch.as_secs();
    DATE.with_borrow_mut(|date| match date {
        Some((at, value)) if *at == second => Some(value.clone()),
        _ => {
            let time = chrono::DateTime::<chrono::Utc>::from(now);
            let value = HeaderValue::from_str(&auth::sign::http_date(time)).ok()?;
            *date = Some((second, value.clone()));
            Some(value)
        }
    })
}

/// Step 1: request id, common response headers, CORS headers (the request log line is
/// `crate::serve::observe::serve`'s).
async fn common(hosted: &Arc<Hosted>, request: Request) -> Response {
    // What the CORS headers on the way out need, only for a request with `Origin`.
    let cors_request = request
        .headers()
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .map(|origin| {
            (
                origin.to_owned(),
                request.method().clone(),
                request.uri().path().to_owned(),
            )
        });
    let mut id_text = uuid::Uuid::encode_buffer();
    let request_id = &*uuid::Uuid::new_v4().hyphenated().encode_lower(&mut id_text);
    let request_id_header = HeaderValue::from_str(request_id).ok();
    let client_request_id = request.headers().get(&CLIENT_REQUEST_ID).cloned();
    let version = negotiate::response_version(request.headers());

    let mut response = dispatch(hosted, request, request_id).await;

    let headers = response.headers_mut();
    headers.insert(header::SERVER, HeaderValue::from_static(SERVER));
    if let Some(v) = request_id_header {
        headers.insert(REQUEST_ID, v);
    }
    headers.insert(VERSION, version);
    if let Some(v) = date_now() {
        headers.insert(header::DATE, v);
    }
    if let Some(v) = client_request_id {
        headers.insert(CLIENT_REQUEST_ID, v);
    }
    if let Some((origin, method, path)) = cors_request
        && method != Method::OPTIONS
        && let Some(state) = hosted.state(account_segment(&path))
    {
        match cors::rules(state).await {
            Ok(rules) => cors::decorate(&mut response, &rules, &origin, method.as_str()),
            Err(e) => tracing::warn!(
                target: "tableq_server::request",
                "cannot read the CORS rules of `{}`: {e}",
                account_segment(&path)
            ),
        }
    }
    response
}

/// Steps 2–6, with panics caught.
async fn dispatch(state: &Hosted, request: Request, request_id: &str) -> Response {
    // A panic in the handler (a bug, never expected) becomes a 500 for this request instead
    // of a dropped connection. Nothing the handler shares is left half-updated by a panic:
    // the stores keep their own invariants behind locks that recover from poisoning.
    let outcome = AssertUnwindSafe(handle(state, request, request_id))
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
            if error.is_refused_write() {
                // A full disk refuses every write until space is freed: one line per period
                // with a count, not one per request.
                warn_refused_write(request_id, &error);
            } else if error.status() == axum::http::StatusCode::SERVICE_UNAVAILABLE {
                // Overload or a store that is down for a moment: expected under load, and
                // possibly many per second.
                tracing::warn!(target: "tableq_server::request", "request {request_id}: {error}");
            } else if error.status().is_server_error() {
                tracing::error!(target: "tableq_server::request", "request {request_id}: {error}");
            }
            error.into_response_for(request_id)
        }
    }
}

/// The host of `http://<Host>/<account>`, the base of `odata.metadata` and `odata.id`.
fn base_host(parts: &Parts) -> String {
    parts
        .headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| !h.is_empty() && h.is_ascii())
        .map(str::to_owned)
        .or_else(|| parts.uri.authority().map(|a| a.to_string()))
        .unwrap_or_else(|| "localhost".into())
}

const ALLOW_TABLES: &str = "GET, POST";
const ALLOW_TABLE: &str = "GET, DELETE";
const ALLOW_BATCH: &str = "POST";
const ALLOW_ENTITIES: &str = "GET, POST";
const ALLOW_ENTITY: &str = "GET, PUT, MERGE, PATCH, DELETE";

async fn handle(hosted: &Hosted, request: Request, request_id: &str) -> Result<Response, ApiError> {
    let (parts, body) = request.into_parts();
    if parts.method == Method::OPTIONS {
        scope::note_preflight();
        let state = hosted.state(account_segment(parts.uri.path()));
        return cors::preflight(state, &parts.headers).await;
    }
    if let Some(setup) = hosted.bearer()
        && setup.bearer.local.is_some()
        && let Some(route) = crate::state::token::issuer_route(parts.uri.path())
    {
        return issuer_request(setup, &parts, route, body).await;
    }
    let path = parse_target(parts.uri.path(), parts.uri.query())?;
    scope::note_request(
        || {
            let method = negotiate::effective_method(&parts.method, &parts.headers)
                .unwrap_or_else(|_| parts.method.clone());
            operation_of(&method, &path.target)
        },
        || {
            (
                path.account.clone(),
                table_of(&path.target).map(str::to_owned),
            )
        },
    );
    // The XML operations answer their errors in XML, as the service does.
    let xml = !matches!(path.target, Target::Resource(_));
    handle_target(hosted, parts, body, path, request_id)
        .await
        .map_err(|e| if xml { e.in_format(BodyFormat::Xml) } else { e })
}

/// The form of an authentication failure, which the service's front end answers before the
/// table service sees the request: plain `application/json` (no OData metadata level), or
/// XML when the request sent no `Accept`.
fn front_end(error: ApiError, headers: &HeaderMap) -> ApiError {
    if error.code() != tableq_model::ErrorCode::AuthenticationFailed.as_str() {
        return error;
    }
    let accepts = headers
        .get(header::ACCEPT)
        .is_some_and(|v| !v.as_bytes().trim_ascii().is_empty());
    error.in_format(if accepts {
        BodyFormat::PlainJson
    } else {
        BodyFormat::Xml
    })
}

/// Steps 3–6 of a request whose path is parsed.
async fn handle_target(
    hosted: &Hosted,
    parts: Parts,
    body: Body,
    path: crate::protocol::resource::RequestTarget,
    request_id: &str,
) -> Result<Response, ApiError> {
    let (state, secondary, grant) = auth::authorize(hosted, &parts, &path.account, &path.target)
        .await
        .map_err(|e| front_end(e, &parts.headers))?;
    if matches!(path.target, Target::Faults | Target::Reset) && !matches!(grant, Grant::Full) {
        return Err(ApiError::new(
            ErrorCode::AuthorizationPermissionMismatch,
            "tableq's administrative operations (restype=tableq) take the account key \
             (SharedKey or SharedKeyLite), never a SAS or bearer token",
        ));
    }
    let state = &state;
    let request_id = request_id.to_owned();
    let links = Links {
        host: base_host(&parts),
        account: path.account,
        select: None,
    };
    let admin = !matches!(path.target, Target::Resource(_));
    let batch = matches!(path.target, Target::Resource(Resource::Batch { .. }));
    let mut ctx = if admin || batch {
        // XML operations: the JSON metadata level does not apply (clients send
        // `Accept: application/xml`). `$batch`: the reply is multipart whatever the outer
        // `Accept` says (the legacy Node SDK sends `application/atom+xml,application/xml`);
        // each operation's level follows its own `Accept`.
        negotiate::check_versions(&parts.headers)?;
        Ctx {
            links,
            level: Default::default(),
            query: Default::default(),
            headers: parts.headers,
            request_id,
        }
    } else {
        request_context(links, parts.uri.query(), parts.headers, request_id)?
    };
    let method = negotiate::effective_method(&parts.method, &ctx.headers)?;
    if secondary && !matches!(method, Method::GET | Method::HEAD) {
        return Err(ApiError::new(
            tableq_model::ErrorCode::AuthorizationFailure,
            format!(
                "the secondary endpoint `{}` serves reads only; send {method} to `{}`",
                ctx.links.account, state.config.account.name
            ),
        ));
    }
    let body = auth::admit(
        &grant,
        &method,
        &path.target,
        &ctx.headers,
        &mut ctx.query,
        body,
        state.config.max_body_bytes,
    )
    .await?;
    let sas = grant.sas();
    let sas = sas.as_ref();
    match path.target {
        Target::Resource(resource) => {
            let routed = Routed {
                state,
                ctx: &ctx,
                sas,
                method,
                resource,
                body,
            };
            let faults = hosted.faults();
            let plan = faults.plan();
            if faults.throttle().is_none() && plan.is_none() {
                return routed.run().await;
            }
            // The `timeout` parameter is read only here: only throttling and injected delays
            // use it.
            gated(faults, plan, routed, timeout_parameter(parts.uri.query())).await
        }
        admin => route_admin(state, &ctx, hosted.faults(), secondary, method, admin, body).await,
    }
}

/// A request to a resource, ready for step 5.
struct Routed<'a> {
    state: &'a Arc<AppState>,
    ctx: &'a Ctx,
    sas: Option<&'a Arc<SasGrant>>,
    method: Method,
    resource: Resource,
    body: Body,
}

impl Routed<'_> {
    /// Step 5 and the handler.
    async fn run(self) -> Result<Response, ApiError> {
        route(
            self.state,
            self.ctx,
            self.sas,
            self.method,
            self.resource,
            self.body,
        )
        .await
    }
}

/// The `timeout` query parameter (whole seconds, as the service reads it; a value that is
/// no positive number is ignored).
fn timeout_parameter(query: Option<&str>) -> Option<Duration> {
    query?
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(name, _)| *name == "timeout")
        .and_then(|(_, value)| value.parse::<u64>().ok())
        .filter(|secs| *secs > 0)
        .map(Duration::from_secs)
}

/// Throttling and injected faults around step 5 (only when either is on; see
/// `crate::state::faults`). The request is described once: its operation as the request log
/// names it, its table, and its PartitionKey — an entity's from its path, an insert's from
/// its body, a batch's from its first operation (its entities: the operation count), a
/// query's when its `$filter` fixes one; any other request (a query over several
/// partitions, a table operation) has no single partition and counts against the account
/// only. Then:
///
/// 1. the throttle: over a limit → 503 `ServerBusy` with the limit's sentence;
/// 2. the fault plan: its delay is waited, then its outcome carried out — a service error,
///    a batch failing at an operation (nothing applied), or a connection closed without
///    an answer before the operation runs or after it ran.
async fn gated(
    faults: &Faults,
    plan: Option<Arc<FaultPlan>>,
    mut routed: Routed<'_>,
    timeout: Option<Duration>,
) -> Result<Response, ApiError> {
    let if_match = routed.ctx.headers.contains_key(header::IF_MATCH);
    let operation = operation_as_logged(
        resource_operation(&routed.resource, routed.method.as_str()),
        if_match,
    );
    let max_body = routed.state.config.max_body_bytes;
    let (partition, entities, is_batch) = match (&routed.resource, &routed.method) {
        (Resource::Entity { partition_key, .. }, _) => {
            (Some(partition_key.value.clone()), 1, false)
        }
        (Resource::Entities { .. }, &Method::POST) => {
            let bytes = read_bytes(routed.body, &routed.ctx.headers, max_body).await?;
            let partition = batch::body_partition_key(&bytes);
            routed.body = Body::from(bytes);
            (partition, 1, false)
        }
        (Resource::Batch { .. }, &Method::POST) => {
            let bytes = read_bytes(routed.body, &routed.ctx.headers, max_body).await?;
            let (partition, count) =
                batch::summary(&routed.ctx.headers, &bytes).unwrap_or((None, 1));
            routed.body = Body::from(bytes);
            (partition, count, true)
        }
        (Resource::Entities { .. }, &Method::GET) => {
            (query::single_partition(routed.state, routed.ctx), 1, false)
        }
        _ => (None, 1, false),
    };
    let account = routed.state.config.account.name.as_str();
    let target = FaultTarget {
        account,
        table: table_of_resource(&routed.resource),
        operation: operation.name(),
        partition_key: partition.as_deref(),
        entities,
        batch: is_batch,
    };
    if let Some(throttle) = faults.throttle()
        && let Err(busy) = throttle.admit(&target, Instant::now())
    {
        scope::note_throttled(match busy {
            Busy::Partition => "partition",
            Busy::Account => "account",
        });
        return Err(ApiError::bare(ErrorCode::ServerBusy).with_sentence(busy.message()));
    }
    let timeout = faults.throttle().and(timeout);
    let injection = match plan {
        Some(plan) => plan.decide(&target),
        None => Injection::none(),
    };
    scope::note_faults(injection.fired.iter().map(|f| (f.rule.clone(), f.kind)));
    let request_id = routed.ctx.request_id.clone();
    let injected = async move {
        if !injection.delay.is_zero() {
            tokio::time::sleep(injection.delay).await;
        }
        match injection.outcome {
            Outcome::Proceed => routed.run().await,
            Outcome::Fail(code) => Err(ApiError::bare(code)),
            Outcome::FailBatchAt(index, code) => {
                let last = usize::try_from(entities.saturating_sub(1)).unwrap_or(usize::MAX);
                batch::fail_at(index.min(last), ApiError::bare(code), &request_id).await
            }
            Outcome::Drop(DropPoint::BeforeWrite) => Ok(dropped()),
            Outcome::Drop(DropPoint::AfterWrite) => {
                // The operation's own answer is thrown away: the client sees a closed
                // connection whatever happened.
                let _ = routed.run().await;
                Ok(dropped())
            }
        }
    };
    // The `timeout` parameter bounds the injected delay too: the service's server timeout
    // counts all of the request's time on the server. Past it, 500 `OperationTimedOut` (a
    // write may have been applied meanwhile, as with the service).
    match timeout {
        None => injected.await,
        Some(limit) => tokio::time::timeout(limit, injected)
            .await
            .unwrap_or_else(|_| Err(ApiError::bare(ErrorCode::OperationTimedOut))),
    }
}

/// A response that never answers: its body fails before its first byte, and the
/// connection (hyper) closes without sending it.
fn dropped() -> Response {
    let failing = futures_util::stream::once(async {
        Err::<axum::body::Bytes, std::io::Error>(std::io::Error::other(
            "the connection was dropped by a fault rule",
        ))
    });
    Response::new(Body::from_stream(failing))
}

/// A request to the local token issuer's endpoints (module `crate::state::token`).
async fn issuer_request(
    setup: &BearerSetup,
    parts: &Parts,
    route: (&str, crate::state::token::IssuerRoute),
    body: Body,
) -> Result<Response, ApiError> {
    /// A token request is a short form; anything longer is refused unread.
    const MAX_FORM_BYTES: usize = 64 * 1024;
    let Some(local) = &setup.bearer.local else {
        return Err(ApiError::new(
            tableq_model::ErrorCode::ResourceNotFound,
            "this server runs no token issuer (tableq serve --local-issuer)",
        ));
    };
    let form = crate::protocol::context::read_bytes(body, &parts.headers, MAX_FORM_BYTES).await?;
    let secure = parts.extensions.get::<Secure>().is_some();
    Ok(crate::state::token::issuer_answer(
        local,
        &setup.bearer.assignments,
        &parts.method,
        route,
        setup.origin_for(parts),
        secure,
        &form,
    ))
}

/// Step 5 for the administration operations.
async fn route_admin(
    state: &Arc<AppState>,
    ctx: &Ctx,
    faults: &Faults,
    secondary: bool,
    method: Method,
    target: Target,
    body: Body,
) -> Result<Response, ApiError> {
    let not_allowed =
        |what: &str, allow| Err(ApiError::method_not_allowed(method.as_str(), what, allow));
    match target {
        Target::ServiceProperties => match method {
            Method::GET => admin::get_properties(state).await,
            Method::PUT => admin::set_properties(state, &ctx.headers, body).await,
            _ => not_allowed("the service properties", "GET, PUT"),
        },
        Target::ServiceStats => match method {
            Method::GET => admin::get_stats(secondary).await,
            _ => not_allowed("the service stats", "GET"),
        },
        Target::TableAcl { table } => match method {
            Method::GET => admin::get_acl(state, table).await,
            Method::PUT => admin::set_acl(state, &ctx.headers, table, body).await,
            _ => not_allowed("a table's ACL", "GET, PUT"),
        },
        Target::Faults => match method {
            Method::GET => tableq::get_faults(faults),
            Method::PUT => tableq::set_faults(state, faults, &ctx.headers, body).await,
            Method::DELETE => tableq::clear_faults(faults),
            _ => not_allowed("the fault rules", "GET, PUT, DELETE"),
        },
        Target::Reset => match method {
            Method::POST => tableq::reset(state).await,
            _ => not_allowed("the account's reset", "POST"),
        },
        // Routed by `handle_target` before this.
        Target::Resource(_) => Err(ApiError::internal(
            "a resource request reached the administration operations",
        )),
    }
}

/// The Table service's name of the operation `method` on `resource` asks for (writes
/// without `If-Match`; the request log, `crate::serve::observe::serve`, turns a conditional `PUT` into `UpdateEntity` and an
/// unconditional merge into `InsertOrMergeEntity`).
fn operation_of(method: &Method, target: &Target) -> Operation {
    match (target, method.as_str()) {
        (Target::ServiceProperties, "GET") => Operation::GetTableServiceProperties,
        (Target::ServiceProperties, "PUT") => Operation::SetTableServiceProperties,
        (Target::ServiceStats, "GET") => Operation::GetTableServiceStats,
        (Target::TableAcl { .. }, "GET" | "HEAD") => Operation::GetTableAcl,
        (Target::TableAcl { .. }, "PUT") => Operation::SetTableAcl,
        (Target::Resource(resource), method) => resource_operation(resource, method),
        _ => Operation::Other,
    }
}

/// The operation as the request log names it (`crate::serve::observe::serve`): a
/// conditional `PUT` is `UpdateEntity`, an unconditional merge `InsertOrMergeEntity`.
fn operation_as_logged(operation: Operation, if_match: bool) -> Operation {
    match operation {
        Operation::InsertOrReplaceEntity if if_match => Operation::UpdateEntity,
        Operation::MergeEntity if !if_match => Operation::InsertOrMergeEntity,
        other => other,
    }
}

/// The operation `method` on `resource` asks for (see [`operation_of`]).
fn resource_operation(resource: &Resource, method: &str) -> Operation {
    #[allow(unreachable_patterns)]
    match (resource, method) {
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
    match target {
        Target::TableAcl { table } => Some(table),
        Target::Resource(resource) => table_of_resource(resource),
        _ => None,
    }
}

fn table_of_resource(resource: &Resource) -> Option<&str> {
    #[allow(unreachable_patterns)]
    match resource {
        Resource::Table { table }
        | Resource::Entities { table }
        | Resource::Entity { table, .. } => Some(&table.name),
        _ => None,
    }
}

/// Step 5: method dispatch (`sas`: the SAS token the request was authorized with, if any).
async fn route(
    state: &Arc<AppState>,
    ctx: &Ctx,
    sas: Option<&Arc<SasGrant>>,
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
    // A read is never a write: only other methods are looked at as one.
    let read = matches!(method, Method::GET | Method::HEAD);
    if !read && let Some(target) = WriteTarget::of(&method, &resource) {
        return entities::write(state, ctx, target, body).await;
    }
    // The point get, with the names moved out of the parsed path rather than copied.
    if method == Method::GET
        && let Resource::Entity {
            table,
            partition_key,
            row_key,
        } = resource
    {
        return entities::get(state, ctx, table.name, partition_key.value, row_key.value).await;
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
            Method::POST => batch::execute(state, ctx, sas, body).await,
            _ => not_allowed(&resource, ALLOW_BATCH),
        },
        // Writes were dispatched above.
        Resource::Entities { table } => match method {
            Method::GET => match explain::mode(&ctx.headers)? {
                Some(ExplainMode::Plan) => {
                    explain::plan(state, ctx, sas.is_none(), table.name.clone()).await
                }
                stats => query::query(state, ctx, table.name.clone(), stats.is_some()).await,
            },
            _ => not_allowed(&resource, ALLOW_ENTITIES),
        },
        // GET was answered above.
        Resource::Entity { .. } => not_allowed(&resource, ALLOW_ENTITY),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tableq_parser::resource::{KeyValue, TableName};

    #[test]
    fn the_timeout_parameter_is_whole_positive_seconds() {
        assert_eq!(
            timeout_parameter(Some("$filter=x&timeout=5")),
            Some(Duration::from_secs(5))
        );
        assert_eq!(timeout_parameter(Some("timeout=0")), None);
        assert_eq!(timeout_parameter(Some("timeout=1.5")), None);
        assert_eq!(timeout_parameter(Some("timeouts=5")), None);
        assert_eq!(timeout_parameter(None), None);
    }

    #[test]
    fn fault_rules_see_the_operation_the_log_names() {
        use Operation::*;
        assert_eq!(
            operation_as_logged(InsertOrReplaceEntity, true),
            UpdateEntity
        );
        assert_eq!(
            operation_as_logged(InsertOrReplaceEntity, false),
            InsertOrReplaceEntity
        );
        assert_eq!(operation_as_logged(MergeEntity, false), InsertOrMergeEntity);
        assert_eq!(operation_as_logged(MergeEntity, true), MergeEntity);
        assert_eq!(operation_as_logged(GetEntity, true), GetEntity);
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

//! What every handler works with: the per-request context (request id,
//! links, metadata level, query parameters, headers), the request body under its size
//! limit (read by [`crate::protocol::body`]), response builders, and the bridge that runs blocking
//! work off the async workers.
//!
//! Handlers follow one shape: check what the request names, read the body (if any) with
//! [`read_body`], do every store call and every CPU-heavy step inside [`blocking`] (or
//! [`short_read`] for a point read, or [`Backend::submit_batch`] for a write to an engine
//! whose writes never block), then build the response:
//!
//! ```text
//! let text = read_body(body, &ctx.headers, state.config.max_body_bytes).await?;
//! let backend = state.backend.clone();
//! let written = blocking(move || { decode …; backend.write(…).map_err(ApiError::store) }).await?;
//! let mut response = empty_response(StatusCode::NO_CONTENT);
//! set_header(&mut response, "etag", &written.etag())?;
//! ```

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use tableq_model::json::MetadataLevel;
use tableq_model::{Entity, ErrorCode};
use tableq_store::Backend;

use crate::protocol::encode::Links;
use crate::protocol::error::ApiError;
use crate::protocol::negotiate;
use crate::protocol::query_options::QueryParams;

/// One request's context.
#[derive(Clone)]
pub(crate) struct Ctx {
    /// The links of this request's account.
    pub links: Links,
    /// The response's metadata level.
    pub level: MetadataLevel,
    /// The query parameters.
    pub query: QueryParams,
    /// The request headers.
    pub headers: HeaderMap,
    /// The request id (`x-ms-request-id`), repeated in error messages.
    pub request_id: String,
}

/// Runs blocking work (store calls, query execution) on tokio's blocking pool.
pub(crate) async fn blocking<T, F>(work: F) -> Result<T, ApiError>
where
    F: FnOnce() -> Result<T, ApiError> + Send + 'static,
    T: Send + 'static,
{
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ApiError::internal(format!("a worker task failed: {e}")))?
}

/// Most request-body bytes a write decodes on the event loop when the engine takes writes
/// without blocking ([`Backend::writes_never_block`]): such a write is then decoded and
/// submitted inline, saving the two thread wake-ups of [`blocking`]; larger bodies are
/// decoded on the blocking pool.
pub(crate) const INLINE_DECODE_BYTES: usize = 256 * 1024;

/// Most exact keys a query may name and still count as a short read (the Table service
/// allows 15 comparisons per filter, so every point query of its default limits does).
pub(crate) const SHORT_READ_POINTS: usize = 16;

/// Longest `$filter` the server parses and plans on the event loop (planning a longer one
/// runs on the blocking pool with the query itself).
pub(crate) const SHORT_FILTER_BYTES: usize = 2048;

/// Runs a short read — a point get, or a query of at most [`SHORT_READ_POINTS`] exact keys
/// — inline on the event loop when the engine answers point reads locally
/// ([`Backend::point_reads_are_local`]: memory, redb), which saves the two thread wake-ups
/// of [`blocking`]; otherwise (PostgreSQL) on the blocking pool like any store call.
pub(crate) async fn short_read<T, F>(backend: &dyn Backend, work: F) -> Result<T, ApiError>
where
    F: FnOnce() -> Result<T, ApiError> + Send + 'static,
    T: Send + 'static,
{
    if backend.point_reads_are_local() {
        work()
    } else {
        blocking(work).await
    }
}

/// A point get: inline on the event loop when the engine answers point reads locally (see
/// [`short_read`]); else without a blocking thread when the engine can
/// ([`Backend::get_nonblocking`]: PostgreSQL, whose get is one network round trip), and on
/// the blocking pool when it declines.
pub(crate) async fn point_get(
    backend: &Arc<dyn Backend>,
    table: &str,
    partition_key: &str,
    row_key: &str,
) -> Result<Option<Entity>, ApiError> {
    if backend.point_reads_are_local() {
        return backend
            .get(table, partition_key, row_key)
            .map_err(ApiError::store);
    }
    if let Some(answer) = backend.get_nonblocking(table, partition_key, row_key).await {
        return answer.map_err(ApiError::store);
    }
    let backend = backend.clone();
    let (table, partition_key, row_key) = (
        table.to_owned(),
        partition_key.to_owned(),
        row_key.to_owned(),
    );
    blocking(move || {
        backend
            .get(&table, &partition_key, &row_key)
            .map_err(ApiError::store)
    })
    .await
}

/// Reads a JSON request body as text: its `Content-Type` must be JSON (or absent), its size
/// at most `limit` bytes (else 413 `RequestBodyTooLarge`), its bytes UTF-8. The body is read
/// under the server's body budget and body timeout ([`crate::protocol::body`]).
pub(crate) async fn read_body(
    body: Body,
    headers: &HeaderMap,
    limit: usize,
) -> Result<String, ApiError> {
    negotiate::check_body_content_type(headers)?;
    body_text(
        crate::protocol::body::read(body, headers, limit)
            .await?
            .into_vec(),
    )
}

/// Reads a request body of at most `limit` bytes (else 413 `RequestBodyTooLarge`), under
/// the server's body budget and body timeout ([`crate::protocol::body`]).
pub(crate) async fn read_bytes(
    body: Body,
    headers: &HeaderMap,
    limit: usize,
) -> Result<Bytes, ApiError> {
    Ok(crate::protocol::body::read(body, headers, limit)
        .await?
        .into_bytes())
}

/// A request body as text: 400 `InvalidInput` naming the first byte that is not UTF-8.
pub(crate) fn body_text(bytes: Vec<u8>) -> Result<String, ApiError> {
    String::from_utf8(bytes).map_err(|e| {
        ApiError::new(
            ErrorCode::InvalidInput,
            format!(
                "the request body is not UTF-8 (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

/// A JSON response at a metadata level.
pub(crate) fn json_response(status: StatusCode, level: MetadataLevel, body: Vec<u8>) -> Response {
    let mut response = (status, body).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, negotiate::content_type(level));
    response
}

/// A response without a body.
pub(crate) fn empty_response(status: StatusCode) -> Response {
    status.into_response()
}

/// Sets a header from text (which must be a valid header value: the server only sends
/// ASCII it built itself). `name` is one of the server's header-name constants: a valid,
/// lower-case header name.
pub(crate) fn set_header(
    response: &mut Response,
    name: &'static str,
    value: &str,
) -> Result<(), ApiError> {
    let bad = || ApiError::internal(format!("cannot send header {name}: {value:?}"));
    // The names are the server's own constants (valid, lower-case): `from_static` borrows
    // them instead of copying them into a new allocation per header.
    let name = HeaderName::from_static(name);
    let value = HeaderValue::from_str(value).map_err(|_| bad())?;
    response.headers_mut().insert(name, value);
    Ok(())
}

/// The context of one request — a single request, or one operation of a `$batch` (step 4
/// of the pipeline, `crate::app`): protocol headers, the query string and the response's
/// metadata level.
pub(crate) fn request_context(
    mut links: Links,
    query: Option<&str>,
    headers: HeaderMap,
    request_id: String,
) -> Result<Ctx, ApiError> {
    negotiate::check_versions(&headers)?;
    let query = QueryParams::parse(query)?;
    links.select = query.select_given.clone();
    let level = negotiate::response_level(headers.get(header::ACCEPT), query.format.as_deref())?;
    Ok(Ctx {
        links,
        level,
        query,
        headers,
        request_id,
    })
}

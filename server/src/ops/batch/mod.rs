//! `POST /{account}/$batch`: entity group transactions.
//!
//! A batch body is `multipart/mixed; boundary=batch_…` holding exactly one part, either
//!
//! * a **changeset** (`multipart/mixed; boundary=changeset_…`) of 1 to 100 entity writes —
//!   insert, update (replace), merge, insert-or-replace, insert-or-merge, delete — on one
//!   table and one PartitionKey, applied atomically by one
//!   [`Backend::write_batch`](tableq_store::Backend::write_batch): one storage transaction,
//!   one shared Timestamp, all or nothing; or
//! * one **query** operation (`GET` of an entity or of an entity set), answered as the same
//!   request alone would be.
//!
//! Each operation is an `application/http` part carrying a whole HTTP request
//! ([`operation`]). It goes through the same steps as a single request: the resource-path
//! parser ([`crate::protocol::resource::parse_path`]), the protocol headers, query string and
//! metadata level ([`crate::protocol::context::request_context`]), `X-HTTP-Method`, the write dispatch
//! ([`WriteTarget::of`]), the header checks and body decoding of
//! [`crate::ops::entities::WriteRequest`], and the response of
//! [`WriteReply::render`](crate::ops::entities::WriteReply::render). Operations are not
//! authorized one by one: the outer request is. Each must name the outer request's account,
//! or be a host-relative path without it (`POST /t HTTP/1.1`, the legacy Python SDKs), which
//! is resolved against that account. The outer request's `Accept` is not negotiated (the
//! legacy Node SDK sends `application/atom+xml,application/xml`): the reply is multipart
//! whatever it says, and each operation's metadata level follows its own `Accept`.
//!
//! # Answers
//!
//! | case | answer |
//! |---|---|
//! | body over the size limit (4 MiB) | 413 `RequestBodyTooLarge` |
//! | not `multipart/mixed` with a boundary, broken framing, a part that holds no HTTP request | 400 `InvalidBatchRequest` naming the part |
//! | an empty changeset | 202 with an empty changeset response (as the service answers) |
//! | more than one part, or a write outside a changeset | 400 `InvalidBatchRequest` |
//! | success | 202, one part per operation, in order (insert → 201 with the entity, or 204 with `Prefer: return-no-content`; others 204 + `ETag`) |
//! | operation *i* fails | 202 with a single part: *i*'s status and an `odata.error` whose message starts with `i:`; nothing applied |
//!
//! Failures of operation *i* include: more than 100 operations (*i* = 100, 400
//! `InvalidInput`, "The batch request operation exceeds the maximum 100 changes per change
//! set", as the service words it); a request that is not an entity write, names another
//! account or another table (400 `InvalidInput`); a PartitionKey other than operation 0's
//! (400 `CommandsInBatchActOnDifferentPartitions`); the same entity twice (400
//! `InvalidDuplicateRow`, at the second); every error a single request would get (bad
//! URL, JSON, `If-Match`, 404, 409, 412, …). A missing table fails at index 0 (404
//! `TableNotFound`). A storage failure is a 5xx for the whole request.
//!
//! # Why no multipart crate
//!
//! The framing is done here ([`multipart`]) with `mime` (the media type and its boundary)
//! and `httparse` (header blocks and the embedded request heads, tolerant of CRLF and bare
//! LF). `multer`, the maintained multipart crate of the axum ecosystem, was considered:
//! it is built for streamed `multipart/form-data`, accepts CRLF framing only (the brief asks
//! for bare-LF bodies too), and gives no access to an embedded HTTP request; a nested
//! changeset would need a second streaming pass over bytes already in memory. The body is
//! at most 4 MiB and read whole, so a ~150-line delimiter scanner over `memchr` is simpler
//! and stricter (a truncated body is refused, not shortened).
//!
//! ```text
//! POST /devstoreaccount1/$batch   Content-Type: multipart/mixed; boundary=batch_1
//! --batch_1
//! Content-Type: multipart/mixed; boundary=changeset_1
//!
//! --changeset_1
//! Content-Type: application/http
//! Content-Transfer-Encoding: binary
//!
//! POST http://127.0.0.1:10002/devstoreaccount1/t HTTP/1.1
//! Content-Type: application/json
//!
//! {"PartitionKey":"p","RowKey":"r"}
//! --changeset_1--
//! --batch_1--
//!   → 202 multipart/mixed; boundary=batchresponse_…  (one part: HTTP/1.1 201 Created …)
//! ```

mod multipart;
mod operation;
mod reply;

use axum::body::Body;
use axum::http::{Method, header};
use axum::response::Response;
use std::sync::Arc;
use tableq_model::ErrorCode;
use tableq_store::{BatchError, WriteOp, Written};

use crate::auth::{self, SasGrant};
use crate::ops::entities::{self, WriteReply, WriteRequest, WriteTarget};
use crate::ops::query;
use crate::protocol::context::{
    Ctx, INLINE_DECODE_BYTES, blocking, body_text, read_bytes, request_context,
};
use crate::protocol::error::ApiError;
use crate::protocol::negotiate;
use crate::protocol::resource::{Resource, parse_path};
use crate::state::accounts::AppState;
use multipart::{FramingError, Part};
use operation::Operation;
use reply::{Answer, Reply};

/// The most operations one changeset may hold (the service's limit).
pub(crate) const MAX_OPERATIONS: usize = 100;

/// What a batch body holds.
enum Request {
    /// A changeset's operations, in order.
    Changeset(Vec<Operation>),
    /// One query operation.
    Query(Operation),
}

fn invalid_batch(detail: impl Into<String>) -> ApiError {
    ApiError::new(ErrorCode::InvalidBatchRequest, detail)
}

fn framing(error: FramingError) -> ApiError {
    invalid_batch(error.to_string())
}

/// `POST /{account}/$batch` (see the module docs).
///
/// `sas`: the SAS token the outer request was authorized with, if any; each operation is
/// checked against it (the outer request only says "a batch").
pub(crate) async fn execute(
    state: &Arc<AppState>,
    ctx: &Ctx,
    sas: Option<&Arc<SasGrant>>,
    body: Body,
) -> Result<Response, ApiError> {
    let content_type = ctx
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let boundary = multipart::boundary(content_type).map_err(framing)?;
    let bytes = read_bytes(body, &ctx.headers, state.config.max_body_bytes).await?;
    let reply = match parse(&bytes, &boundary)? {
        Request::Changeset(operations) => changeset(state, ctx, sas, operations).await?,
        Request::Query(operation) => Reply::Query(query(state, ctx, sas, operation).await),
    };
    reply.into_response()
}

/// What throttling and fault rules see of a batch (`bytes`: its body): the PartitionKey
/// its changeset writes (operation 0's: from its path, or an insert's body) and how many
/// operations it holds; a query batch is one entity of no single partition. `None` when
/// the body does not frame (the batch then answers its framing error).
pub(crate) fn summary(
    headers: &axum::http::HeaderMap,
    bytes: &[u8],
) -> Option<(Option<String>, u32)> {
    let content_type = headers.get(header::CONTENT_TYPE)?.to_str().ok()?;
    let boundary = multipart::boundary(content_type).ok()?;
    match parse(bytes, &boundary).ok()? {
        Request::Query(_) => Some((None, 1)),
        Request::Changeset(operations) => {
            let count = u32::try_from(operations.len()).unwrap_or(u32::MAX);
            let partition = operations.first().and_then(|op| {
                if op.method == Method::POST {
                    return body_partition_key(&op.body);
                }
                let path = parse_path(&op.path)
                    .or_else(|_| parse_path(&format!("/account{}", op.path)))
                    .ok()?;
                match path.resource {
                    Resource::Entity { partition_key, .. } => Some(partition_key.value),
                    _ => None,
                }
            });
            Some((partition, count))
        }
    }
}

/// The `PartitionKey` of an entity body (JSON), if it has a string one.
pub(crate) fn body_partition_key(bytes: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Keys {
        #[serde(rename = "PartitionKey")]
        partition_key: Option<String>,
    }
    serde_json::from_slice::<Keys>(bytes).ok()?.partition_key
}

/// The answer of a batch whose operation `index` failed with `error` (an injected fault:
/// nothing is applied), as a failing changeset answers.
pub(crate) async fn fail_at(
    index: usize,
    error: ApiError,
    request_id: &str,
) -> Result<Response, ApiError> {
    failure(index, error, request_id).await.into_response()
}

/// Frames the body: one part, a changeset of operations or one query operation.
fn parse(body: &[u8], boundary: &str) -> Result<Request, ApiError> {
    let parts = multipart::parts(body, boundary).map_err(framing)?;
    let [part] = parts.as_slice() else {
        return Err(invalid_batch(format!(
            "the batch holds {} parts; it must hold exactly one: a changeset \
             (multipart/mixed; boundary=changeset_<id>) or one query (application/http)",
            parts.len()
        )));
    };
    let content_type = part.header("content-type").unwrap_or("");
    if content_type
        .trim_start()
        .to_ascii_lowercase()
        .starts_with("multipart/")
    {
        let boundary = multipart::boundary(content_type)
            .map_err(|e| invalid_batch(format!("the changeset part: {e}")))?;
        let inner = multipart::parts(part.content, &boundary)
            .map_err(|e| invalid_batch(format!("the changeset: {e}")))?;
        let operations = inner
            .iter()
            .enumerate()
            .map(|(i, p)| {
                http_part(p).map_err(|why| invalid_batch(format!("changeset part {i}: {why}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        // An empty changeset is answered with an empty changeset response, as the service
        // does.
        return Ok(Request::Changeset(operations));
    }
    let operation =
        http_part(part).map_err(|why| invalid_batch(format!("the batch part: {why}")))?;
    if operation.method != Method::GET {
        return Err(invalid_batch(format!(
            "a {} outside a changeset: writes go in a changeset (multipart/mixed; \
             boundary=changeset_<id>), only a query (GET) may stand alone",
            operation.method
        )));
    }
    Ok(Request::Query(operation))
}

/// An `application/http` part as an operation.
fn http_part(part: &Part<'_>) -> Result<Operation, String> {
    if let Some(t) = part.header("content-type") {
        let essence = t.split(';').next().unwrap_or("").trim();
        if !essence.eq_ignore_ascii_case("application/http") {
            return Err(format!(
                "its Content-Type is `{t}`; an operation is application/http"
            ));
        }
    }
    operation::parse(part)
}

/// One operation's context: its path (the outer request's account), headers, query.
/// The operation's resource, context and effective method. Its headers move into the
/// context (the operation keeps an empty map).
/// A request line's path is account-relative (`/acct/t(…)`) or, as the legacy Python SDKs
/// write it on path-style endpoints, host-relative without the account (`/t(…)`): a path
/// that does not name the outer request's account is resolved against that account when it
/// then names a resource.
fn operation_context(outer: &Ctx, op: &mut Operation) -> Result<(Resource, Ctx, Method), ApiError> {
    let account = &outer.links.account;
    let path = match parse_path(&op.path) {
        Ok(path) if path.account == *account => path,
        first => match parse_path(&format!("/{account}{}", op.path)) {
            Ok(path) => path,
            Err(_) => {
                return Err(match first {
                    Ok(other) => ApiError::new(
                        ErrorCode::InvalidInput,
                        format!(
                            "the operation names the account `{}`, the batch was sent to \
                             `{account}`",
                            other.account
                        ),
                    ),
                    Err(e) => e,
                });
            }
        },
    };
    let ctx = request_context(
        outer.links.clone(),
        op.query.as_deref(),
        std::mem::take(&mut op.headers),
        outer.request_id.clone(),
    )?;
    let method = negotiate::effective_method(&op.method, &ctx.headers)?;
    Ok((path.resource, ctx, method))
}

/// A changeset operation checked and decoded.
struct Prepared {
    table: String,
    op: WriteOp,
    reply: WriteReply,
    content_id: Option<String>,
}

/// Checks and decodes operation `op` of a changeset.
fn prepare(
    outer: &Ctx,
    sas: Option<&Arc<SasGrant>>,
    mut op: Operation,
) -> Result<Prepared, ApiError> {
    let (resource, mut ctx, method) = operation_context(outer, &mut op)?;
    if let Some(sas) = sas {
        auth::admit_operation(sas, &method, &resource, &ctx.headers, &mut ctx.query, None)?;
    }
    let Some(target) = WriteTarget::of(&method, &resource) else {
        return Err(ApiError::new(
            ErrorCode::InvalidInput,
            format!(
                "{method} {} is not an entity write: a changeset holds inserts (POST /{{table}}) \
                 and PUT, MERGE, PATCH or DELETE of entities",
                op.path
            ),
        ));
    };
    let request = WriteRequest::new(target, &ctx)?;
    let table = request.table().to_owned();
    let text = if request.reads_body() {
        body_text(op.body)?
    } else {
        String::new()
    };
    let (write, reply) = request.decode(&text)?;
    if let Some(sas) = sas {
        // The key range, on the keys the operation writes (an insert's come from its body).
        let keys = write.keys();
        auth::admit_operation(
            sas,
            &method,
            &resource,
            &ctx.headers,
            &mut ctx.query,
            Some(keys),
        )?;
    }
    Ok(Prepared {
        table,
        op: write,
        reply,
        content_id: op.content_id,
    })
}

/// The single answer of a changeset whose operation `index` failed.
async fn failure(index: usize, error: ApiError, request_id: &str) -> Reply {
    let response = error.into_operation_response_for(index, request_id);
    Reply::Changeset(vec![Answer::of(response, None).await])
}

/// Runs a changeset: every operation prepared, then one atomic write.
async fn changeset(
    state: &Arc<AppState>,
    outer: &Ctx,
    sas: Option<&Arc<SasGrant>>,
    operations: Vec<Operation>,
) -> Result<Reply, ApiError> {
    let request_id = outer.request_id.clone();
    if operations.is_empty() {
        return Ok(Reply::Changeset(Vec::new()));
    }
    if operations.len() > MAX_OPERATIONS {
        let error = ApiError::new(
            ErrorCode::InvalidInput,
            format!(
                "The batch request operation exceeds the maximum {MAX_OPERATIONS} changes per \
                 change set (this one holds {}).",
                operations.len()
            ),
        );
        return Ok(failure(MAX_OPERATIONS, error, &request_id).await);
    }
    let backend = state.backend.clone();
    let body_bytes: usize = operations.iter().map(|op| op.body.len()).sum();
    // Decoding (JSON) and the write: on the event loop when the engine takes writes
    // without blocking and the bodies are small, else on the blocking pool.
    let outcome = if backend.writes_never_block() && body_bytes <= INLINE_DECODE_BYTES {
        match prepare_changeset(outer, sas, operations)? {
            Err(failed) => Err(failed),
            Ok((table, ops, replies)) => {
                changeset_outcome(backend.submit_batch(&table, ops).await, replies)?
            }
        }
    } else {
        let outer_ctx = outer.clone();
        let sas = sas.cloned();
        blocking(
            move || match prepare_changeset(&outer_ctx, sas.as_ref(), operations)? {
                Err(failed) => Ok(Err(failed)),
                Ok((table, ops, replies)) => {
                    changeset_outcome(backend.write_batch(&table, ops), replies)
                }
            },
        )
        .await?
    };
    match outcome {
        Err((index, error)) => Ok(failure(index, error, &request_id).await),
        Ok((replies, written)) => {
            let mut answers = Vec::with_capacity(written.len());
            for ((reply, content_id), written) in replies.into_iter().zip(&written) {
                let response = reply.render(written, &outer.links)?;
                answers.push(Answer::of(response, content_id).await);
            }
            Ok(Reply::Changeset(answers))
        }
    }
}

/// What a changeset's write answers: each operation's reply, or the failing operation.
type ChangesetOutcome =
    Result<(Vec<(WriteReply, Option<String>)>, Vec<Written>), (usize, ApiError)>;

/// Checks and decodes every operation of a changeset: the table, the store operations and
/// their replies, or the first operation that fails (its index and error).
#[allow(clippy::type_complexity)]
fn prepare_changeset(
    outer: &Ctx,
    sas: Option<&Arc<SasGrant>>,
    operations: Vec<Operation>,
) -> Result<
    Result<(String, Vec<WriteOp>, Vec<(WriteReply, Option<String>)>), (usize, ApiError)>,
    ApiError,
> {
    let mut prepared: Vec<Prepared> = Vec::with_capacity(operations.len());
    for (i, op) in operations.into_iter().enumerate() {
        let p = match prepare(outer, sas, op) {
            Ok(p) => p,
            Err(e) => return Ok(Err((i, e))),
        };
        if let Some(first) = prepared.first() {
            if !p.table.eq_ignore_ascii_case(&first.table) {
                let e = ApiError::new(
                    ErrorCode::InvalidInput,
                    format!(
                        "the operation writes table `{}`, operation 0 table `{}`: a \
                         changeset writes one table",
                        p.table, first.table
                    ),
                );
                return Ok(Err((i, e)));
            }
            let (pk, _) = p.op.keys();
            let (first_pk, _) = first.op.keys();
            if pk != first_pk {
                let e = ApiError::new(
                    ErrorCode::CommandsInBatchActOnDifferentPartitions,
                    format!(
                        "the operation's PartitionKey is {pk:?}, operation 0's is \
                         {first_pk:?}: a changeset writes one partition"
                    ),
                );
                return Ok(Err((i, e)));
            }
        }
        prepared.push(p);
    }
    let table = prepared
        .first()
        .map(|p| p.table.clone())
        .ok_or_else(|| ApiError::internal("an empty changeset got past its check"))?;
    let (ops, replies): (Vec<WriteOp>, Vec<_>) = prepared
        .into_iter()
        .map(|p| (p.op, (p.reply, p.content_id)))
        .unzip();
    Ok(Ok((table, ops, replies)))
}

/// The outcome of a changeset's write: the replies with what each operation wrote, the
/// failing operation, or (`Err`) a failure of the whole request.
fn changeset_outcome(
    written: Result<Vec<Written>, BatchError>,
    replies: Vec<(WriteReply, Option<String>)>,
) -> Result<ChangesetOutcome, ApiError> {
    match written {
        Ok(written) => Ok(Ok((replies, written))),
        Err(BatchError { index, error }) => {
            let error = ApiError::store(error);
            match index {
                Some(i) => Ok(Err((i, error))),
                // Not one operation's failure: a missing table is the service's
                // `0:TableNotFound`; a storage failure fails the whole request.
                None if error.status().is_client_error() => Ok(Err((0, error))),
                None => Err(error),
            }
        }
    }
}

/// Runs a query operation as the same request alone; its failure is its answer.
async fn query(
    state: &Arc<AppState>,
    outer: &Ctx,
    sas: Option<&Arc<SasGrant>>,
    mut op: Operation,
) -> Answer {
    let content_id = op.content_id.clone();
    let admitted = operation_context(outer, &mut op).and_then(|(resource, mut ctx, method)| {
        if let Some(sas) = sas {
            auth::admit_operation(sas, &method, &resource, &ctx.headers, &mut ctx.query, None)?;
        }
        Ok((resource, ctx, method))
    });
    let response = match admitted {
        // `parse` let only GETs through. (Not via `app::route`: it leads here.)
        Ok((
            Resource::Entity {
                table,
                partition_key,
                row_key,
            },
            ctx,
            _,
        )) => entities::get(state, &ctx, table.name, partition_key.value, row_key.value).await,
        Ok((Resource::Entities { table }, ctx, _)) => {
            query::query(state, &ctx, table.name, false).await
        }
        Ok(_) => Err(ApiError::new(
            ErrorCode::InvalidInput,
            format!(
                "a batch query reads entities (GET /{{table}}() or an entity), not `{}`",
                op.path
            ),
        )),
        Err(e) => Err(e),
    };
    let response = response.unwrap_or_else(|error| error.into_response_for(&outer.request_id));
    Answer::of(response, content_id).await
}

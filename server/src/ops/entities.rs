//! The entity operations but the query (Query Entities is [`crate::ops::query`]).
//!
//! | request | operation | success |
//! |---|---|---|
//! | `POST /t` | insert | 201 + entity (`Prefer: return-no-content` → 204); `ETag`, `Location`, `DataServiceId` |
//! | `GET /t(PartitionKey='p',RowKey='r')?$select=` | get | 200 + entity, `ETag` |
//! | `PUT …` with `If-Match` | replace | 204 + `ETag` |
//! | `PUT …` without `If-Match` | insert or replace | 204 + `ETag` |
//! | `MERGE`/`PATCH`/`POST`+`X-HTTP-Method: MERGE` with `If-Match` | merge | 204 + `ETag` |
//! | the same without `If-Match` | insert or merge | 204 + `ETag` |
//! | `DELETE …` with `If-Match` | delete | 204 |
//!
//! Payloads are decoded by `tableq_model::json` with the service's rules: a payload
//! `Timestamp`, `odata.*` members and unknown annotations are ignored, values are
//! normalised as stored (DateTime offsets to UTC, Guids lowercase). On update and merge the
//! keys come from the URL; a body that names other keys is 400 `InvalidInput` (decided).
//! `If-Match` is `*` or an ETag of this server (anything else → 400 `InvalidInput`); a
//! delete needs one (decided: its absence is 400 `InvalidInput`).
//!
//! Point gets on a local engine run inline on the event loop, on PostgreSQL on the event
//! loop's own connections (see [`point_get`]); queries, their pages and continuation are
//! [`crate::ops::query`]'s.
//!
//! ```text
//! POST  /acct/t  {"PartitionKey":"p","RowKey":"r","Age":3}   → 201 + entity, ETag: W/"datetime'…'"
//! MERGE /acct/t(PartitionKey='p',RowKey='r')  If-Match: W/"datetime'<stale>'"
//!                                                            → 412 UpdateConditionNotSatisfied
//! ```

use axum::body::Body;
use axum::http::{Method, StatusCode};
use axum::response::Response;
use std::sync::Arc;
use tableq_exec::{EntityRef, SourceRow};
use tableq_model::json::{DecodeOptions, MetadataLevel, decode_entity, decode_payload};
use tableq_model::{Entity, ErrorCode};
use tableq_planner::{Query, QueryText};
use tableq_store::{IfMatch, WriteOp, Written};

use crate::ops::tables::check_name;
use crate::protocol::context::{
    Ctx, INLINE_DECODE_BYTES, blocking, empty_response, json_response, point_get, read_body,
    set_header,
};
use crate::protocol::encode::{Links, entity_body, entity_reply};
use crate::protocol::error::ApiError;
use crate::protocol::negotiate::{self, Prefer};
use crate::protocol::resource::{Resource, entity_link};
use crate::state::accounts::AppState;

/// An entity write as a request names it (method and resource), before any header or body
/// is read. Single requests and the operations of a `$batch` changeset both start here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WriteTarget {
    /// `POST /t`.
    Insert {
        /// The table.
        table: String,
    },
    /// `PUT`/`MERGE`/`PATCH` on one entity.
    Update {
        /// The table.
        table: String,
        /// The PartitionKey of the URL.
        partition_key: String,
        /// The RowKey of the URL.
        row_key: String,
        /// Replace or merge.
        kind: Update,
    },
    /// `DELETE` of one entity.
    Delete {
        /// The table.
        table: String,
        /// The PartitionKey of the URL.
        partition_key: String,
        /// The RowKey of the URL.
        row_key: String,
    },
}

impl WriteTarget {
    /// The write that `method` (after `X-HTTP-Method`) on `resource` asks for: `POST` on
    /// an entity set, `PUT`/`MERGE`/`PATCH`/`DELETE` on an entity; `None` for anything else.
    pub(crate) fn of(method: &Method, resource: &Resource) -> Option<WriteTarget> {
        match resource {
            Resource::Entities { table } if method == Method::POST => Some(WriteTarget::Insert {
                table: table.name.clone(),
            }),
            Resource::Entity {
                table,
                partition_key,
                row_key,
            } => {
                let (table, partition_key, row_key) = (
                    table.name.clone(),
                    partition_key.value.clone(),
                    row_key.value.clone(),
                );
                let update = |kind| WriteTarget::Update {
                    table: table.clone(),
                    partition_key: partition_key.clone(),
                    row_key: row_key.clone(),
                    kind,
                };
                match method.as_str() {
                    "PUT" => Some(update(Update::Replace)),
                    "MERGE" | "PATCH" => Some(update(Update::Merge)),
                    "DELETE" => Some(WriteTarget::Delete {
                        table,
                        partition_key,
                        row_key,
                    }),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// The table written.
    pub(crate) fn table(&self) -> &str {
        match self {
            WriteTarget::Insert { table }
            | WriteTarget::Update { table, .. }
            | WriteTarget::Delete { table, .. } => table,
        }
    }
}

/// A write whose request headers are checked (table name, `If-Match`, `Prefer`, the body's
/// `Content-Type`); what remains is to decode its body ([`WriteRequest::decode`]).
#[derive(Debug)]
pub(crate) struct WriteRequest {
    target: WriteTarget,
    condition: Option<IfMatch>,
    prefer: Option<Prefer>,
    level: MetadataLevel,
}

impl WriteRequest {
    /// Checks what the request's headers say about the write `target`.
    pub(crate) fn new(target: WriteTarget, ctx: &Ctx) -> Result<WriteRequest, ApiError> {
        check_name(target.table())?;
        let condition = if_match(ctx)?;
        if let WriteTarget::Delete { .. } = target {
            if condition.is_none() {
                return Err(ApiError::new(
                    ErrorCode::InvalidInput,
                    "Delete Entity needs an If-Match header: `*` for any version, or the \
                     entity's ETag",
                ));
            }
        } else {
            negotiate::check_body_content_type(&ctx.headers)?;
        }
        Ok(WriteRequest {
            target,
            condition,
            prefer: negotiate::prefer(&ctx.headers),
            level: ctx.level,
        })
    }

    /// Whether the write has a body to read (every write but a delete).
    pub(crate) fn reads_body(&self) -> bool {
        !matches!(self.target, WriteTarget::Delete { .. })
    }

    /// The table written.
    pub(crate) fn table(&self) -> &str {
        self.target.table()
    }

    /// Decodes the body (JSON: CPU work, run it on the blocking pool) into the store
    /// operation, and what to answer once the store has written it.
    pub(crate) fn decode(self, body: &str) -> Result<(WriteOp, WriteReply), ApiError> {
        let WriteRequest {
            target,
            condition,
            prefer,
            level,
        } = self;
        let (op, outcome, table) = match target {
            WriteTarget::Insert { table } => {
                let entity =
                    decode_entity(body, &DecodeOptions::SERVICE).map_err(ApiError::model)?;
                let echo = prefer != Some(Prefer::ReturnNoContent);
                let kept = if echo {
                    entity.clone()
                } else {
                    Entity::new(entity.partition_key(), entity.row_key())
                };
                (
                    WriteOp::Insert { entity },
                    Outcome::Created { entity: kept, echo },
                    table,
                )
            }
            WriteTarget::Update {
                table,
                partition_key,
                row_key,
                kind,
            } => {
                let payload =
                    decode_payload(body, &DecodeOptions::SERVICE).map_err(ApiError::model)?;
                for (which, given, url) in [
                    ("PartitionKey", &payload.partition_key, &partition_key),
                    ("RowKey", &payload.row_key, &row_key),
                ] {
                    if let Some(given) = given
                        && given != url
                    {
                        return Err(ApiError::new(
                            ErrorCode::InvalidInput,
                            format!(
                                "the body's {which} {given:?} differs from the URL's {url:?}: the \
                                 keys of an entity cannot change"
                            ),
                        ));
                    }
                }
                let entity =
                    Entity::with_properties(partition_key, row_key, None, payload.properties);
                let op = match (kind, condition) {
                    (Update::Replace, Some(if_match)) => WriteOp::Replace { entity, if_match },
                    (Update::Replace, None) => WriteOp::InsertOrReplace { entity },
                    (Update::Merge, Some(if_match)) => WriteOp::Merge { entity, if_match },
                    (Update::Merge, None) => WriteOp::InsertOrMerge { entity },
                };
                (op, Outcome::Updated, table)
            }
            WriteTarget::Delete {
                table,
                partition_key,
                row_key,
            } => {
                let Some(if_match) = condition else {
                    return Err(ApiError::internal(
                        "a delete without If-Match got past its check",
                    ));
                };
                let op = WriteOp::Delete {
                    partition_key,
                    row_key,
                    if_match,
                };
                (op, Outcome::Deleted, table)
            }
        };
        Ok((
            op,
            WriteReply {
                table,
                outcome,
                prefer,
                level,
            },
        ))
    }
}

/// What a write answers once the store has written it ([`WriteReply::render`]).
#[derive(Debug)]
pub(crate) struct WriteReply {
    table: String,
    outcome: Outcome,
    prefer: Option<Prefer>,
    level: MetadataLevel,
}

#[derive(Debug)]
enum Outcome {
    /// An insert: 201 with the entity (`echo`), else 204; `entity` holds at least the keys.
    Created { entity: Entity, echo: bool },
    /// An update, merge or upsert: 204 + `ETag`.
    Updated,
    /// A delete: 204.
    Deleted,
}

impl WriteReply {
    /// The response of the written operation.
    pub(crate) fn render(self, written: &Written, links: &Links) -> Result<Response, ApiError> {
        let WriteReply {
            table,
            outcome,
            prefer,
            level,
        } = self;
        match outcome {
            Outcome::Created { mut entity, echo } => {
                entity.set_timestamp(Some(written.timestamp));
                let link = links.absolute(&entity_link(
                    &table,
                    entity.partition_key(),
                    entity.row_key(),
                ));
                let mut response = if echo {
                    let body = entity_body(links, &table, &entity, None, level);
                    json_response(StatusCode::CREATED, level, body)
                } else {
                    empty_response(StatusCode::NO_CONTENT)
                };
                set_header(&mut response, "etag", &written.etag())?;
                set_header(&mut response, "location", &link)?;
                set_header(&mut response, "dataserviceid", &link)?;
                if let Some(p) = prefer {
                    set_header(&mut response, "preference-applied", p.as_str())?;
                }
                Ok(response)
            }
            Outcome::Updated => {
                let mut response = empty_response(StatusCode::NO_CONTENT);
                set_header(&mut response, "etag", &written.etag())?;
                Ok(response)
            }
            Outcome::Deleted => Ok(empty_response(StatusCode::NO_CONTENT)),
        }
    }
}

/// One entity write (`POST /t`, or `PUT`/`MERGE`/`PATCH`/`DELETE` on an entity): headers
/// checked, body read and decoded, one store write, the response.
pub(crate) async fn write(
    state: &Arc<AppState>,
    ctx: &Ctx,
    target: WriteTarget,
    body: Body,
) -> Result<Response, ApiError> {
    let request = WriteRequest::new(target, ctx)?;
    let text = if request.reads_body() {
        read_body(body, &ctx.headers, state.config.max_body_bytes).await?
    } else {
        String::new()
    };
    let backend = state.backend.clone();
    if backend.writes_never_block() && text.len() <= INLINE_DECODE_BYTES {
        // Decoded and written on the event loop: no thread hand-off.
        let table = request.table().to_owned();
        let (op, reply) = request.decode(&text)?;
        let written = backend
            .submit_batch(&table, vec![op])
            .await
            .map_err(|e| ApiError::store(e.error))?
            .pop()
            .ok_or_else(|| ApiError::internal("a write returned no outcome"))?;
        return reply.render(&written, &ctx.links);
    }
    let (reply, written) = blocking(move || {
        let table = request.table().to_owned();
        let (op, reply) = request.decode(&text)?;
        let written = backend.write(&table, op).map_err(ApiError::store)?;
        Ok((reply, written))
    })
    .await?;
    reply.render(&written, &ctx.links)
}

/// The `If-Match` header: `None` when absent.
fn if_match(ctx: &Ctx) -> Result<Option<IfMatch>, ApiError> {
    let Some(value) = ctx.headers.get("if-match") else {
        return Ok(None);
    };
    let text = value
        .to_str()
        .map_err(|_| ApiError::new(ErrorCode::InvalidInput, "If-Match is not ASCII text"))?;
    IfMatch::parse(text).map(Some).map_err(ApiError::model)
}

/// How an update writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Update {
    /// `PUT`: replace (with `If-Match`) or insert-or-replace.
    Replace,
    /// `MERGE`/`PATCH`: merge (with `If-Match`) or insert-or-merge.
    Merge,
}

/// `GET /t(PartitionKey='p',RowKey='r')`.
pub(crate) async fn get(
    state: &Arc<AppState>,
    ctx: &Ctx,
    table: String,
    partition_key: String,
    row_key: String,
) -> Result<Response, ApiError> {
    check_name(&table)?;
    let select = Query::parse(
        QueryText {
            select: ctx.query.select.as_deref(),
            ..QueryText::default()
        },
        &state.config.filter_options,
    )
    .map_err(|e| ApiError::invalid_query(&e))?
    .projection();
    let render =
        |row: &dyn SourceRow| entity_reply(&ctx.links, &table, row, select.as_deref(), ctx.level);
    let reply = if state.backend.point_reads_are_local() {
        // Printed from the engine's row in place: no owned copy of the entity.
        let mut reply = None;
        state
            .backend
            .get_row(&table, &partition_key, &row_key, &mut |row| {
                reply = Some(render(row));
            })
            .map_err(ApiError::store)?;
        reply
    } else {
        point_get(&state.backend, &table, &partition_key, &row_key)
            .await?
            .map(|entity| render(&EntityRef(&entity)))
    };
    let (body, etag) = reply.ok_or_else(|| {
        ApiError::new(
            ErrorCode::ResourceNotFound,
            format!(
                "no entity with PartitionKey {partition_key:?} and RowKey {row_key:?} in \
                 table `{table}`"
            ),
        )
    })?;
    let mut response = json_response(StatusCode::OK, ctx.level, body);
    if let Some(etag) = etag {
        set_header(&mut response, "etag", &etag)?;
    }
    Ok(response)
}

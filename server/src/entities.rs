//! The entity operations.
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
//! | `GET /t()?$filter=&$select=&$top=&NextPartitionKey=&NextRowKey=` | query | 200 + `{"value":[…]}` + continuation headers |
//!
//! Payloads are decoded by `tableq_model::json` with the service's rules: a payload
//! `Timestamp`, `odata.*` members and unknown annotations are ignored, values are
//! normalised as stored (DateTime offsets to UTC, Guids lowercase). On update and merge the
//! keys come from the URL; a body that names other keys is 400 `InvalidInput` (decided).
//! `If-Match` is `*` or an ETag of this server (anything else → 400 `InvalidInput`); a
//! delete needs one (decided: its absence is 400 `InvalidInput`).
//!
//! Query pages run on the blocking pool with the configured work budget (5 s): a page ends
//! after `$top` (default 1000) entities or when the budget runs out, and then carries the
//! continuation headers. Resuming yields every entity present for the whole paging exactly
//! once, in key order, whatever is written between pages (the store's continuation
//! protocol).
//!
//! ```text
//! POST  /acct/t  {"PartitionKey":"p","RowKey":"r","Age":3}   → 201 + entity, ETag: W/"datetime'…'"
//! MERGE /acct/t(PartitionKey='p',RowKey='r')  If-Match: W/"datetime'<stale>'"
//!                                                            → 412 UpdateConditionNotSatisfied
//! GET   /acct/t()?$filter=Age gt 2&$top=1                    → 200 {"value":[…]} + x-ms-continuation-Next*
//! ```

use axum::body::Body;
use axum::http::StatusCode;
use axum::response::Response;
use std::sync::Arc;
use std::time::Instant;
use tableq_exec::PageOptions;
use tableq_model::json::{DecodeOptions, decode_entity, decode_payload};
use tableq_model::{Entity, ErrorCode};
use tableq_parser::{parse_filter, parse_select, parse_top};
use tableq_store::{IfMatch, WriteOp};

use crate::context::{
    AppState, Ctx, blocking, empty_response, json_response, read_body, set_header,
};
use crate::continuation::{
    NEXT_PARTITION_KEY_HEADER, NEXT_ROW_KEY_HEADER, encode_token, entity_continuation,
};
use crate::encode::{PageWriter, entity_body};
use crate::error::ApiError;
use crate::negotiate::{self, Prefer};
use crate::resource::entity_link;
use crate::tables::check_name;

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

/// `POST /t`.
pub(crate) async fn insert(
    state: &Arc<AppState>,
    ctx: &Ctx,
    table: String,
    body: Body,
) -> Result<Response, ApiError> {
    check_name(&table)?;
    let text = read_body(body, &ctx.headers, state.config.max_body_bytes).await?;
    let prefer = negotiate::prefer(&ctx.headers);
    let echo = prefer != Some(Prefer::ReturnNoContent);
    let backend = state.backend.clone();
    let name = table.clone();
    let (mut entity, written) = blocking(move || {
        let entity = decode_entity(&text, &DecodeOptions::SERVICE).map_err(ApiError::model)?;
        let (kept, op) = if echo {
            (entity.clone(), WriteOp::Insert { entity })
        } else {
            let keys = Entity::new(entity.partition_key(), entity.row_key());
            (keys, WriteOp::Insert { entity })
        };
        let written = backend.write(&name, op).map_err(ApiError::store)?;
        Ok((kept, written))
    })
    .await?;
    entity.set_timestamp(Some(written.timestamp));

    let link = ctx.links.absolute(&entity_link(
        &table,
        entity.partition_key(),
        entity.row_key(),
    ));
    let mut response = if echo {
        let body = entity_body(&ctx.links, &table, &entity, None, ctx.level);
        json_response(StatusCode::CREATED, ctx.level, body)
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

/// `GET /t(PartitionKey='p',RowKey='r')`.
pub(crate) async fn get(
    state: &Arc<AppState>,
    ctx: &Ctx,
    table: String,
    partition_key: String,
    row_key: String,
) -> Result<Response, ApiError> {
    check_name(&table)?;
    let select = match &ctx.query.select {
        Some(s) => {
            let parsed = parse_select(s).map_err(|e| ApiError::query("$select", &e))?;
            tableq_planner::projection(Some(&parsed))
        }
        None => None,
    };
    let backend = state.backend.clone();
    let name = table.clone();
    let entity = blocking(move || {
        match backend
            .get(&name, &partition_key, &row_key)
            .map_err(ApiError::store)?
        {
            Some(e) => Ok(e),
            None => Err(ApiError::new(
                ErrorCode::ResourceNotFound,
                format!(
                    "no entity with PartitionKey {partition_key:?} and RowKey {row_key:?} in \
                     table `{name}`"
                ),
            )),
        }
    })
    .await?;
    let body = entity_body(&ctx.links, &table, &entity, select.as_deref(), ctx.level);
    let mut response = json_response(StatusCode::OK, ctx.level, body);
    if let Some(t) = entity.timestamp() {
        set_header(&mut response, "etag", &tableq_model::json::etag(t))?;
    }
    Ok(response)
}

/// How an update writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Update {
    /// `PUT`: replace (with `If-Match`) or insert-or-replace.
    Replace,
    /// `MERGE`/`PATCH`: merge (with `If-Match`) or insert-or-merge.
    Merge,
}

/// `PUT`/`MERGE`/`PATCH` on one entity.
pub(crate) async fn update(
    state: &Arc<AppState>,
    ctx: &Ctx,
    table: String,
    partition_key: String,
    row_key: String,
    kind: Update,
    body: Body,
) -> Result<Response, ApiError> {
    check_name(&table)?;
    let condition = if_match(ctx)?;
    let text = read_body(body, &ctx.headers, state.config.max_body_bytes).await?;
    let backend = state.backend.clone();
    let written = blocking(move || {
        let payload = decode_payload(&text, &DecodeOptions::SERVICE).map_err(ApiError::model)?;
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
                        "the body's {which} {given:?} differs from the URL's {url:?}: the keys \
                         of an entity cannot change"
                    ),
                ));
            }
        }
        let entity = Entity::with_properties(partition_key, row_key, None, payload.properties);
        let op = match (kind, condition) {
            (Update::Replace, Some(if_match)) => WriteOp::Replace { entity, if_match },
            (Update::Replace, None) => WriteOp::InsertOrReplace { entity },
            (Update::Merge, Some(if_match)) => WriteOp::Merge { entity, if_match },
            (Update::Merge, None) => WriteOp::InsertOrMerge { entity },
        };
        backend.write(&table, op).map_err(ApiError::store)
    })
    .await?;
    let mut response = empty_response(StatusCode::NO_CONTENT);
    set_header(&mut response, "etag", &written.etag())?;
    Ok(response)
}

/// `DELETE` of one entity.
pub(crate) async fn delete(
    state: &Arc<AppState>,
    ctx: &Ctx,
    table: String,
    partition_key: String,
    row_key: String,
) -> Result<Response, ApiError> {
    check_name(&table)?;
    let Some(if_match) = if_match(ctx)? else {
        return Err(ApiError::new(
            ErrorCode::InvalidInput,
            "Delete Entity needs an If-Match header: `*` for any version, or the entity's ETag",
        ));
    };
    let backend = state.backend.clone();
    blocking(move || {
        backend
            .write(
                &table,
                WriteOp::Delete {
                    partition_key,
                    row_key,
                    if_match,
                },
            )
            .map_err(ApiError::store)
    })
    .await?;
    Ok(empty_response(StatusCode::NO_CONTENT))
}

/// `GET /t()`: one page of a query.
pub(crate) async fn query(
    state: &Arc<AppState>,
    ctx: &Ctx,
    table: String,
) -> Result<Response, ApiError> {
    check_name(&table)?;
    let continuation = entity_continuation(
        ctx.query.next_partition_key.as_deref(),
        ctx.query.next_row_key.as_deref(),
    )?;
    let filter_text = ctx.query.filter.clone().unwrap_or_default();
    let select_text = ctx.query.select.clone();
    let top_text = ctx.query.top.clone();
    let filter_options = state.config.filter_options;
    let budget = state.config.page_budget;
    let backend = state.backend.clone();
    let links = ctx.links.clone();
    let level = ctx.level;
    let (body, next) = blocking(move || {
        let filter = parse_filter(&filter_text, &filter_options)
            .map_err(|e| ApiError::query("$filter", &e))?;
        let select = select_text
            .as_deref()
            .map(parse_select)
            .transpose()
            .map_err(|e| ApiError::query("$select", &e))?;
        let top = top_text
            .as_deref()
            .map(parse_top)
            .transpose()
            .map_err(|e| ApiError::query("$top", &e))?;
        let plan = tableq_planner::plan(&filter, select.as_ref(), top.as_ref());
        let options = PageOptions::default().with_deadline(Instant::now() + budget);
        let mut writer = PageWriter::begin(&links, &table, level, plan.select.as_deref());
        let page = backend
            .query(&table, &plan, continuation.as_ref(), &options, &mut |row| {
                writer.row(row)
            })
            .map_err(ApiError::store)?;
        Ok((writer.finish(), page.continuation))
    })
    .await?;
    let mut response = json_response(StatusCode::OK, ctx.level, body);
    if let Some(next) = next {
        set_header(
            &mut response,
            NEXT_PARTITION_KEY_HEADER,
            &encode_token(&next.partition_key),
        )?;
        set_header(
            &mut response,
            NEXT_ROW_KEY_HEADER,
            &encode_token(&next.row_key),
        )?;
    }
    Ok(response)
}

//! The table operations: create (`POST /Tables`), delete (`DELETE /Tables('t')`), read
//! one (`GET /Tables('t')`) and query (`GET /Tables?$filter=&$top=&NextTableName=`).
//!
//! * **Create**: the body is `{"TableName":"t"}` (other members such as `odata.*` are
//!   ignored). 201 with the table (`#Tables/@Element`) or, with
//!   `Prefer: return-no-content`, 204; `Location` and `DataServiceId` name
//!   `<base>/Tables('t')`; `Preference-Applied` repeats an honoured `Prefer`.
//! * **Query**: tables in the order of their case-insensitive key. `$filter` is evaluated
//!   by tableq's own parser and AST evaluator on a row whose only property is
//!   `TableName` (a String, case-sensitive comparisons as for any string); `$top` is the
//!   page size (default 1000); when more matching tables follow, the page ends with
//!   `x-ms-continuation-NextTableName` (see [`crate::protocol::continuation`]). `$select` is parsed
//!   (errors are reported) but every result holds exactly `TableName`.
//! * Names in URLs are validated like names on creation (400 `InvalidResourceName` /
//!   `OutOfRangeInput` with the service's sentences), before the table is looked up.
//!
//! ```text
//! POST /acct/Tables  {"TableName":"People"}            → 201 {"odata.metadata":"…#Tables/@Element","TableName":"People"}
//! GET  /acct/Tables?$filter=TableName ge 'P'&$top=2    → 200 {"value":[…]}  x-ms-continuation-NextTableName: 1!…
//! DELETE /acct/Tables('people')                        → 204
//! ```

use axum::body::Body;
use axum::http::StatusCode;
use axum::response::Response;
use std::sync::Arc;
use tableq_exec::DEFAULT_PAGE_SIZE;
use tableq_model::{DateTime, EntityView, ErrorCode, ValueRef, validate};
use tableq_planner::{Query, QueryText};
use tableq_store::StoreError;

use crate::protocol::context::{
    Ctx, blocking, empty_response, json_response, read_body, set_header,
};
use crate::protocol::continuation::{NEXT_TABLE_NAME_HEADER, decode_token, encode_token};
use crate::protocol::encode::{table_members, tables_body};
use crate::protocol::error::ApiError;
use crate::protocol::negotiate::{self, Prefer};
use crate::protocol::resource::table_link;
use crate::state::accounts::AppState;

/// Validates a table name from a URL or a body.
pub(crate) fn check_name(name: &str) -> Result<(), ApiError> {
    validate::table_name(name).map_err(ApiError::table_name)
}

/// The `TableName` of a create-table body.
fn table_name_of(text: &str) -> Result<String, ApiError> {
    let json: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        ApiError::new(
            ErrorCode::InvalidInput,
            format!("the body is not valid JSON: {e}"),
        )
    })?;
    match json.get("TableName") {
        Some(serde_json::Value::String(name)) => Ok(name.clone()),
        Some(_) => Err(ApiError::new(
            ErrorCode::InvalidInput,
            "`TableName` must be a JSON string",
        )),
        None => Err(ApiError::new(
            ErrorCode::InvalidInput,
            r#"the body must be a JSON object {"TableName": "<name>"}"#,
        )),
    }
}

/// `POST /Tables`.
pub(crate) async fn create(
    state: &Arc<AppState>,
    ctx: &Ctx,
    body: Body,
) -> Result<Response, ApiError> {
    let text = read_body(body, &ctx.headers, state.config.max_body_bytes).await?;
    let backend = state.backend.clone();
    let created = blocking(move || {
        let name = table_name_of(&text)?;
        check_name(&name)?;
        backend.create_table(&name).map_err(ApiError::store)
    })
    .await?;

    let link = ctx.links.absolute(&table_link(&created.name));
    let prefer = negotiate::prefer(&ctx.headers);
    let mut response = if prefer == Some(Prefer::ReturnNoContent) {
        empty_response(StatusCode::NO_CONTENT)
    } else {
        let body = table_members(&ctx.links, &created.name, ctx.level, true);
        json_response(
            StatusCode::CREATED,
            ctx.level,
            body.to_json_string().into_bytes(),
        )
    };
    set_header(&mut response, "location", &link)?;
    set_header(&mut response, "dataserviceid", &link)?;
    if let Some(p) = prefer {
        set_header(&mut response, "preference-applied", p.as_str())?;
    }
    Ok(response)
}

/// `DELETE /Tables('t')`.
pub(crate) async fn delete(state: &Arc<AppState>, name: String) -> Result<Response, ApiError> {
    check_name(&name)?;
    let backend = state.backend.clone();
    blocking(move || backend.delete_table(&name).map_err(ApiError::store)).await?;
    Ok(empty_response(StatusCode::NO_CONTENT))
}

/// `GET /Tables('t')`: one table (`ResourceNotFound` if it does not exist).
pub(crate) async fn get(
    state: &Arc<AppState>,
    ctx: &Ctx,
    name: String,
) -> Result<Response, ApiError> {
    check_name(&name)?;
    let backend = state.backend.clone();
    let info = blocking(move || match backend.table(&name) {
        Ok(info) => Ok(info),
        Err(StoreError::TableNotFound(n)) => Err(ApiError::new(
            ErrorCode::ResourceNotFound,
            format!("table `{n}` does not exist"),
        )),
        Err(e) => Err(ApiError::store(e)),
    })
    .await?;
    let body = table_members(&ctx.links, &info.name, ctx.level, true);
    Ok(json_response(
        StatusCode::OK,
        ctx.level,
        body.to_json_string().into_bytes(),
    ))
}

/// A table as the row `$filter` sees: one String property `TableName`.
struct TableRow<'a>(&'a str);

impl EntityView for TableRow<'_> {
    fn partition_key(&self) -> &str {
        ""
    }
    fn row_key(&self) -> &str {
        ""
    }
    fn timestamp(&self) -> Option<DateTime> {
        None
    }
    fn custom(&self, name: &str) -> Option<ValueRef<'_>> {
        (name == "TableName").then_some(ValueRef::String(self.0))
    }
}

/// `GET /Tables`.
pub(crate) async fn query(state: &Arc<AppState>, ctx: &Ctx) -> Result<Response, ApiError> {
    let params = ctx.query.clone();
    let from = match ctx.query.next_table_name.as_deref() {
        Some(t) if !t.is_empty() => Some(decode_token("NextTableName", t)?),
        _ => None,
    };
    let options = state.config.filter_options;
    let backend = state.backend.clone();
    let (names, next) = blocking(move || {
        let text = QueryText {
            filter: params.filter.as_deref(),
            select: params.select.as_deref(),
            top: params.top.as_deref(),
        };
        let query = Query::parse(text, &options).map_err(|e| ApiError::invalid_query(&e))?;
        let top = query.top().map_or(DEFAULT_PAGE_SIZE, |t| t.value as usize);
        let tables = backend.tables().map_err(ApiError::store)?;
        let mut matching = tables
            .into_iter()
            .filter(|t| {
                from.as_deref()
                    .is_none_or(|f| validate::table_key(&t.name).as_str() >= f)
            })
            .filter(|t| tableq_planner::ast_eval::matches(query.filter(), &TableRow(&t.name)));
        let names: Vec<String> = matching.by_ref().take(top).map(|t| t.name).collect();
        let next = matching.next().map(|t| validate::table_key(&t.name));
        Ok((names, next))
    })
    .await?;

    let body = tables_body(&ctx.links, &names, ctx.level);
    let mut response = json_response(StatusCode::OK, ctx.level, body);
    if let Some(next) = next {
        set_header(&mut response, NEXT_TABLE_NAME_HEADER, &encode_token(&next))?;
    }
    Ok(response)
}

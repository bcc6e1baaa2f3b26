//! The administration operations, all XML (module [`crate::protocol::xml`]):
//!
//! | request | operation | success |
//! |---|---|---|
//! | `GET /acct/?restype=service&comp=properties` | get service properties | 200 `StorageServiceProperties` |
//! | `PUT /acct/?restype=service&comp=properties` | set service properties | 202, empty |
//! | `GET /acct-secondary/?restype=service&comp=stats` | get service stats | 200 `StorageServiceStats` |
//! | `GET /acct/t?comp=acl` | get table ACL | 200 `SignedIdentifiers` |
//! | `PUT /acct/t?comp=acl` | set table ACL | 204, empty |
//!
//! Service properties and ACLs are stored by the account's backend
//! ([`tableq_store::Backend::service_properties`], [`tableq_store::Backend::table_acl`]). A
//! Set of service properties replaces the top-level elements it names and keeps the others;
//! Sets are serialised per account (a read-modify-write), and the CORS rules they store
//! replace the account's cached copy ([`crate::ops::cors`]). Stats are served on the secondary
//! endpoint only (on the primary → 400 `InvalidQueryParameterValue`): replication is always
//! `live` and the last synchronisation is now (the secondary is the primary's own store).
//! The ACL of a missing table is 404 `ResourceNotFound`, as the service answers it. Errors
//! are XML (`<Error><Code>…`; the pipeline, `crate::app`, sets their form).

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use tableq_model::ErrorCode;
use tableq_store::StoreError;

use crate::ops::tables::check_name;
use crate::protocol::context::{blocking, body_text, empty_response, read_bytes, short_read};
use crate::protocol::error::ApiError;
use crate::protocol::xml;
use crate::state::accounts::AppState;

fn xml_response(status: StatusCode, body: String) -> Response {
    let mut response = (status, body).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/xml"),
    );
    response
}

/// `GET ?restype=service&comp=properties`.
pub(crate) async fn get_properties(state: &Arc<AppState>) -> Result<Response, ApiError> {
    let backend = state.backend.clone();
    let properties = short_read(&*state.backend, move || {
        backend.service_properties().map_err(ApiError::store)
    })
    .await?;
    Ok(xml_response(
        StatusCode::OK,
        xml::write_properties(&properties)?,
    ))
}

/// `PUT ?restype=service&comp=properties`.
pub(crate) async fn set_properties(
    state: &Arc<AppState>,
    headers: &axum::http::HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let bytes = read_bytes(body, headers, state.config.max_body_bytes).await?;
    let text = body_text(bytes.to_vec())?;
    let update = xml::parse_properties(&text)?;
    let _serialised = state.settings.lock().await;
    let backend = state.backend.clone();
    let stored = blocking(move || {
        let next = update.apply(backend.service_properties().map_err(ApiError::store)?);
        backend
            .set_service_properties(&next)
            .map_err(ApiError::store)?;
        Ok(next)
    })
    .await?;
    state.cors.set(stored.cors);
    Ok(empty_response(StatusCode::ACCEPTED))
}

/// `GET ?restype=service&comp=stats` (`secondary`: the path named `{account}-secondary`).
pub(crate) async fn get_stats(secondary: bool) -> Result<Response, ApiError> {
    if !secondary {
        return Err(ApiError::new(
            ErrorCode::InvalidQueryParameterValue,
            "service stats are served on the secondary endpoint: \
             /{account}-secondary/?restype=service&comp=stats",
        ));
    }
    let now = crate::auth::sign::http_date_now();
    Ok(xml_response(StatusCode::OK, xml::write_stats(&now)?))
}

/// A store error of an ACL operation: a missing table is the service's `ResourceNotFound`
/// there (not `TableNotFound`, the code of the OData operations).
fn acl_error(error: StoreError) -> ApiError {
    match error {
        StoreError::TableNotFound(table) => ApiError::new(
            ErrorCode::ResourceNotFound,
            format!("table `{table}` does not exist"),
        ),
        other => ApiError::store(other),
    }
}

/// `GET /t?comp=acl`.
pub(crate) async fn get_acl(state: &Arc<AppState>, table: String) -> Result<Response, ApiError> {
    check_name(&table)?;
    let backend = state.backend.clone();
    let acl = short_read(&*state.backend, move || {
        backend.table_acl(&table).map_err(acl_error)
    })
    .await?;
    Ok(xml_response(StatusCode::OK, xml::write_acl(&acl)?))
}

/// `PUT /t?comp=acl`.
pub(crate) async fn set_acl(
    state: &Arc<AppState>,
    headers: &axum::http::HeaderMap,
    table: String,
    body: Body,
) -> Result<Response, ApiError> {
    check_name(&table)?;
    let bytes = read_bytes(body, headers, state.config.max_body_bytes).await?;
    let acl = xml::parse_acl(&body_text(bytes.to_vec())?)?;
    let backend = state.backend.clone();
    blocking(move || backend.set_table_acl(&table, &acl).map_err(acl_error)).await?;
    Ok(empty_response(StatusCode::NO_CONTENT))
}

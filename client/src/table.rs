//! [`TableClient`]: the entities of one table — insert, get, update (replace or merge) with
//! ETags, upserts, delete, and queries page by page ([`Query`], [`QueryPage`]) or whole.
//!
//! Entities travel in the service's JSON form (`tableq_model::json`): writes send
//! [`Entity`] values with type annotations where JSON cannot show the type (Int64,
//! DateTime, Guid, Binary, non-finite Doubles); reads decode the answer with the same
//! decoder the emulator judges writes with, so every Edm type round-trips. An ETag is the
//! text the service sent (`W/"datetime'…'"`); send it back in [`IfMatch::ETag`].
//!
//! ```no_run
//! # async fn demo() -> Result<(), tableq_client::ClientError> {
//! use tableq_client::{IfMatch, Query, TableServiceClient, UpdateMode};
//! use tableq_model::{Entity, Value};
//!
//! let service = TableServiceClient::from_connection_string("UseDevelopmentStorage=true")?;
//! let table = service.table("People");
//! let mut ann = Entity::new("staff", "ann");
//! ann.set("Age", Value::Int32(42));
//! let etag = table.insert(&ann).await?;
//! ann.set("Age", Value::Int32(43));
//! // Replace only if nobody wrote in between; a stale ETag is UpdateConditionNotSatisfied.
//! table.update(&ann, UpdateMode::Replace, &IfMatch::ETag(etag)).await?;
//! let adults = table.query_all(&Query::filter("Age ge 18")).await?;
//! assert_eq!(adults.len(), 1);
//! # Ok(()) }
//! ```

use crate::error::ClientError;
use crate::path;
use crate::service::TableServiceClient;
use reqwest::header::{CONTENT_TYPE, ETAG, IF_MATCH};
use reqwest::{Method, RequestBuilder, Response, StatusCode};
use serde::Deserialize;
use serde_json::value::RawValue;
use tableq_model::Entity;
use tableq_model::json::{
    DecodeOptions, EncodeOptions, MetadataLevel, Payload, decode_payload, encode_entity_to_string,
};

/// The condition of an update or delete (`If-Match`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IfMatch {
    /// `*`: whatever the entity's current version.
    Any,
    /// Only if the entity's ETag is still this one (else 412 `UpdateConditionNotSatisfied`).
    ETag(String),
}

impl IfMatch {
    /// The header value.
    pub fn as_header(&self) -> &str {
        match self {
            IfMatch::Any => "*",
            IfMatch::ETag(e) => e,
        }
    }
}

/// How an update treats the properties the request does not mention.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateMode {
    /// The entity becomes exactly the request's (`PUT`).
    Replace,
    /// The request's properties are set, the others kept (`MERGE`).
    Merge,
}

impl UpdateMode {
    /// The HTTP method of this mode.
    pub fn method(self) -> Method {
        match self {
            UpdateMode::Replace => Method::PUT,
            // MERGE is a valid method token: this cannot fail.
            UpdateMode::Merge => Method::from_bytes(b"MERGE").unwrap_or(Method::PATCH),
        }
    }
}

/// An entity read with [`TableClient::get`], and its ETag.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// The entity, its Timestamp set.
    pub entity: Entity,
    /// The ETag the service sent.
    pub etag: String,
}

/// One row of a query answer. Under `$select` a row holds only the selected properties,
/// perhaps not even the keys, so it is a [`Payload`] (keys optional); without `$select`,
/// [`Row::into_entity`] gives the whole entity.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The row's keys (when present), Timestamp (when present) and properties; a selected
    /// property the entity lacks (`"Name": null`) is left out.
    pub payload: Payload,
    /// The row's ETag (`odata.etag`), when the answer had one.
    pub etag: Option<String>,
}

impl Row {
    /// The row as an entity; `PropertiesNeedValue` when `$select` left a key out.
    pub fn into_entity(self) -> Result<Entity, tableq_model::ModelError> {
        self.payload.into_entity()
    }
}

/// A query's text parts, as the service's query options.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    /// `$filter` (OData), or `None` for every entity.
    pub filter: Option<String>,
    /// `$select` (comma-separated names), or `None` for every property.
    pub select: Option<String>,
    /// `$top`: at most this many entities per page (1–1000).
    pub top: Option<u32>,
}

impl Query {
    /// A query with this `$filter`.
    pub fn filter(filter: impl Into<String>) -> Query {
        Query {
            filter: Some(filter.into()),
            ..Query::default()
        }
    }

    /// The same query with `$select`.
    pub fn select(mut self, select: impl Into<String>) -> Query {
        self.select = Some(select.into());
        self
    }

    /// The same query with `$top`.
    pub fn top(mut self, top: u32) -> Query {
        self.top = Some(top);
        self
    }
}

/// Where the next page of a query starts: the `x-ms-continuation-NextPartitionKey` and
/// `-NextRowKey` tokens of the last answer, as sent (opaque: send them back unchanged).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Continuation {
    /// The `NextPartitionKey` token.
    pub next_partition_key: String,
    /// The `NextRowKey` token, if the answer had one.
    pub next_row_key: Option<String>,
}

/// One page of a query.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryPage {
    /// The rows, in key order.
    pub rows: Vec<Row>,
    /// Where the next page starts; `None` when the query is complete.
    pub continuation: Option<Continuation>,
}

/// The entities of one table.
#[derive(Debug, Clone)]
pub struct TableClient {
    service: TableServiceClient,
    name: String,
}

impl TableServiceClient {
    /// The client of one table's entities.
    pub fn table(&self, name: &str) -> TableClient {
        TableClient {
            service: self.clone(),
            name: name.to_owned(),
        }
    }
}

impl TableClient {
    /// The table's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The account's client.
    pub fn service(&self) -> &TableServiceClient {
        &self.service
    }

    /// The request of an insert (`POST t`, `Prefer: return-no-content`) of `body` (one
    /// entity as JSON).
    pub fn insert_request(&self, body: String) -> RequestBuilder {
        self.service
            .request(Method::POST, &path::entity_set_link(&self.name))
            .header(CONTENT_TYPE, "application/json")
            .header("Prefer", "return-no-content")
            .body(body)
    }

    /// Inserts an entity; its keys must be new (else 409 `EntityAlreadyExists`). Returns the
    /// new ETag.
    pub async fn insert(&self, entity: &Entity) -> Result<String, ClientError> {
        let response = self
            .service
            .send_ok(self.insert_request(encode(entity)))
            .await?;
        self.etag_of(response).await
    }

    /// The entity with these keys and its ETag, or `None` (404 `ResourceNotFound`).
    pub async fn get(
        &self,
        partition_key: &str,
        row_key: &str,
    ) -> Result<Option<Record>, ClientError> {
        let link = path::entity_link(&self.name, partition_key, row_key);
        let response = self
            .service
            .send(self.service.request(Method::GET, &link))
            .await?;
        if response.status() == StatusCode::NOT_FOUND {
            let error = self.service.refusal(response).await;
            return match error.code() {
                Some(tableq_model::ErrorCode::ResourceNotFound) => Ok(None),
                _ => Err(error),
            };
        }
        if !response.status().is_success() {
            return Err(self.service.refusal(response).await);
        }
        let etag = header(&response, ETAG);
        let body = self.service.body(response).await?;
        let text = std::str::from_utf8(&body)
            .map_err(|_| ClientError::Protocol("an entity that is not UTF-8".into()))?;
        let entity = decode_payload(text, &DecodeOptions::STORED)
            .and_then(Payload::into_entity)
            .map_err(|e| ClientError::Protocol(format!("an entity that does not decode: {e}")))?;
        let etag = etag
            .or_else(|| entity.timestamp().map(tableq_model::json::etag))
            .unwrap_or_default();
        Ok(Some(Record { entity, etag }))
    }

    /// Updates an existing entity (missing: 404 `ResourceNotFound`; `if_match` not met: 412
    /// `UpdateConditionNotSatisfied`). Returns the new ETag.
    pub async fn update(
        &self,
        entity: &Entity,
        mode: UpdateMode,
        if_match: &IfMatch,
    ) -> Result<String, ClientError> {
        let request = self
            .entity_request(mode.method(), entity)
            .header(IF_MATCH, if_match.as_header());
        let response = self.service.send_ok(request).await?;
        self.etag_of(response).await
    }

    /// Inserts the entity, or updates it when its keys exist (Insert Or Replace / Insert Or
    /// Merge: an update without `If-Match`). Returns the new ETag.
    pub async fn upsert(&self, entity: &Entity, mode: UpdateMode) -> Result<String, ClientError> {
        let response = self
            .service
            .send_ok(self.entity_request(mode.method(), entity))
            .await?;
        self.etag_of(response).await
    }

    /// Deletes the entity (missing: 404 `ResourceNotFound`; `if_match` not met: 412).
    pub async fn delete(
        &self,
        partition_key: &str,
        row_key: &str,
        if_match: &IfMatch,
    ) -> Result<(), ClientError> {
        let link = path::entity_link(&self.name, partition_key, row_key);
        let request = self
            .service
            .request(Method::DELETE, &link)
            .header(IF_MATCH, if_match.as_header());
        let response = self.service.send_ok(request).await?;
        self.service.body(response).await?;
        Ok(())
    }

    /// The request of one query page (`GET t()?$filter=…&$select=…&$top=…`), from
    /// `continuation` when given.
    pub fn query_request(
        &self,
        query: &Query,
        continuation: Option<&Continuation>,
    ) -> RequestBuilder {
        let mut params: Vec<(&str, &str)> = Vec::new();
        if let Some(f) = &query.filter {
            params.push(("$filter", f));
        }
        if let Some(s) = &query.select {
            params.push(("$select", s));
        }
        let top = query.top.map(|t| t.to_string());
        if let Some(t) = &top {
            params.push(("$top", t));
        }
        if let Some(c) = continuation {
            params.push(("NextPartitionKey", &c.next_partition_key));
            if let Some(rk) = &c.next_row_key {
                params.push(("NextRowKey", rk));
            }
        }
        let request = self
            .service
            .request(Method::GET, &path::query_link(&self.name));
        if params.is_empty() {
            request
        } else {
            request.query(&params)
        }
    }

    /// One page of a query, from `continuation` (`None`: the first page).
    pub async fn query_page(
        &self,
        query: &Query,
        continuation: Option<&Continuation>,
    ) -> Result<QueryPage, ClientError> {
        let response = self
            .service
            .send_ok(self.query_request(query, continuation))
            .await?;
        let continuation =
            header(&response, "x-ms-continuation-nextpartitionkey").map(|next_partition_key| {
                Continuation {
                    next_partition_key,
                    next_row_key: header(&response, "x-ms-continuation-nextrowkey"),
                }
            });
        let body = self.service.body(response).await?;
        Ok(QueryPage {
            rows: rows(&body)?,
            continuation,
        })
    }

    /// Every row of a query, following continuations (`$top` is then the page size).
    pub async fn query_all(&self, query: &Query) -> Result<Vec<Row>, ClientError> {
        let mut out = Vec::new();
        let mut next: Option<Continuation> = None;
        loop {
            let page = self.query_page(query, next.as_ref()).await?;
            out.extend(page.rows);
            match page.continuation {
                Some(c) => next = Some(c),
                None => return Ok(out),
            }
        }
    }

    /// A `PUT`/`MERGE` of `entity` at its own address.
    fn entity_request(&self, method: Method, entity: &Entity) -> RequestBuilder {
        let link = path::entity_link(&self.name, entity.partition_key(), entity.row_key());
        self.service
            .request(method, &link)
            .header(CONTENT_TYPE, "application/json")
            .body(encode(entity))
    }

    /// The `ETag` of a write's answer (its body is read so that the connection is reused).
    async fn etag_of(&self, response: Response) -> Result<String, ClientError> {
        let etag = header(&response, ETAG);
        self.service.body(response).await?;
        etag.ok_or_else(|| ClientError::Protocol("a write answered without an ETag".into()))
    }
}

/// An entity as a request body (types annotated where JSON cannot show them).
pub(crate) fn encode(entity: &Entity) -> String {
    encode_entity_to_string(
        entity,
        &EncodeOptions::level(MetadataLevel::MinimalMetadata),
    )
}

fn header(response: &Response, name: impl reqwest::header::AsHeaderName) -> Option<String> {
    response
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
}

/// The rows of a query answer (`{"value":[…]}`).
fn rows(body: &[u8]) -> Result<Vec<Row>, ClientError> {
    #[derive(Deserialize)]
    struct Collection<'a> {
        #[serde(borrow)]
        value: Vec<&'a RawValue>,
    }
    #[derive(Deserialize)]
    struct Meta {
        #[serde(rename = "odata.etag")]
        etag: Option<String>,
    }
    let collection: Collection<'_> = serde_json::from_slice(body)
        .map_err(|e| ClientError::Protocol(format!("a query answer is not a collection: {e}")))?;
    collection
        .value
        .into_iter()
        .map(|raw| {
            let payload = decode_payload(raw.get(), &DecodeOptions::STORED)
                .map_err(|e| ClientError::Protocol(format!("a query row does not decode: {e}")))?;
            let etag = serde_json::from_str::<Meta>(raw.get())
                .ok()
                .and_then(|m| m.etag);
            Ok(Row { payload, etag })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tableq_model::Value;

    #[test]
    fn query_rows_keep_types_etags_and_projections() {
        let body = br#"{"odata.metadata":"m","value":[
            {"odata.etag":"W/\"datetime'2021-06-09T01%3A17%3A08.3795894Z'\"","PartitionKey":"p","RowKey":"r",
             "Timestamp@odata.type":"Edm.DateTime","Timestamp":"2021-06-09T01:17:08.3795894Z",
             "Big@odata.type":"Edm.Int64","Big":"5","Name":"n"},
            {"Name":null,"RowKey":"s"}]}"#;
        let rows = rows(body).unwrap();
        assert_eq!(rows.len(), 2);
        assert!(
            rows[0]
                .etag
                .as_deref()
                .unwrap()
                .starts_with("W/\"datetime'2021")
        );
        let e = rows[0].clone().into_entity().unwrap();
        assert_eq!(e.custom("Big"), Some(&Value::Int64(5)));
        assert!(e.timestamp().is_some());
        assert_eq!(rows[1].payload.partition_key, None);
        assert_eq!(rows[1].payload.row_key.as_deref(), Some("s"));
        assert!(rows[1].payload.properties.is_empty());
        assert!(rows[1].clone().into_entity().is_err());
        assert!(matches!(super::rows(b"{}"), Err(ClientError::Protocol(_))));
    }

    #[test]
    fn merge_is_its_own_method() {
        assert_eq!(UpdateMode::Merge.method().as_str(), "MERGE");
        assert_eq!(UpdateMode::Replace.method(), Method::PUT);
        assert_eq!(IfMatch::Any.as_header(), "*");
    }
}

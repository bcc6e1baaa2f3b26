//! [`HttpBackend`]: the store's [`Backend`] contract spoken over HTTP — every call is a
//! Table REST request made with `tableq-client` to a `tableq serve` child process — so that
//! the one contract suite (`store/tests/suite`) also runs against the emulator's HTTP
//! write and read semantics (`tests/store_suite_http.rs`).
//!
//! How each call travels:
//!
//! * tables: `POST Tables`, `DELETE Tables('t')`, `GET Tables('t')`, `GET Tables` (paged);
//! * `get`: `GET t(PartitionKey=…,RowKey=…)`;
//! * `write_batch` of one operation: the entity endpoints (`POST`, `PUT`/`MERGE` with or
//!   without `If-Match`, `DELETE`); of several operations on one PartitionKey (at most
//!   100): one `$batch` changeset; of anything else (several partitions, more than 100
//!   operations — what the suite writes to set up data): one request per operation, in
//!   order (HTTP has no atomic write across partitions);
//! * `query`: `GET t()` with the plan as `$filter` — its key ranges as key comparisons and
//!   its residual in canonical OData (the plan is equivalent to the filter it came from) —,
//!   `$select`, `$top`, and the continuation as `NextPartitionKey`/`NextRowKey` tokens;
//! * service properties: `GET`/`PUT ?restype=service&comp=properties`; a table's stored
//!   access policies: `GET`/`PUT t?comp=acl` — XML written and read with the server's own
//!   `tableq_server::xml` (a Set names every element, so it replaces the whole value).
//!
//! Errors come back as the service's codes and are mapped to the [`StoreError`] variant
//! with that code. A delete's [`Written`] timestamp, which HTTP does not return, is the
//! batch's shared one when the changeset has another operation, else the client's clock.
#![allow(dead_code)]

use crate::serve_support::Serve;
use std::ops::Bound;
use std::sync::Mutex;
use tableq_client::sign::AccountKey;
use tableq_client::{
    BatchKind, BatchOperation, ClientError, Credential, IfMatch as HttpIfMatch, Query,
    TableServiceClient, UpdateMode,
};
use tableq_exec::{Key, PageOptions, RowView};
use tableq_model::{CmpOp, DateTime, Entity, ErrorCode, ModelError, Value};
use tableq_planner::plan::{KeyInterval, Plan};
use tableq_planner::predicate::Predicate;
use tableq_server::continuation::{decode_token, encode_token};
use tableq_server::xml;
use tableq_store::{
    Backend, BatchError, IfMatch, QueryPage, ServiceProperties, SignedIdentifier, StoreError,
    TableInfo, WriteOp, Written,
};

/// A [`Backend`] over HTTP to a `tableq serve` it started (see the module docs).
pub struct HttpBackend {
    serve: Mutex<Serve>,
    service: TableServiceClient,
    runtime: tokio::runtime::Runtime,
}

impl HttpBackend {
    /// Starts `tableq serve <args>` on a free port and speaks to it, signing with the
    /// development account's key.
    pub fn start(args: &[&str]) -> HttpBackend {
        let serve = Serve::start(args);
        let service = TableServiceClient::new(
            &serve.endpoint,
            Credential::SharedKey(AccountKey::development()),
        )
        .expect("a client");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        HttpBackend {
            serve: Mutex::new(serve),
            service,
            runtime,
        }
    }

    fn block<T>(&self, f: impl std::future::Future<Output = T>) -> T {
        self.runtime.block_on(f)
    }

    /// `GET` of an XML resource (`path` relative to the account) as text.
    fn xml_get(&self, path: &str, table: &str) -> Result<String, StoreError> {
        self.block(async {
            let request = self.service.request(reqwest::Method::GET, path);
            let response = self.service.send_ok(request).await?;
            response
                .text()
                .await
                .map_err(|e| ClientError::Request(e.to_string()))
        })
        .map_err(|e| xml_error(e, table))
    }

    /// `PUT` of an XML body.
    fn xml_put(&self, path: &str, table: &str, body: String) -> Result<(), StoreError> {
        self.block(async {
            let request = self
                .service
                .request(reqwest::Method::PUT, path)
                .header("Content-Type", "application/xml")
                .body(body);
            self.service.send_ok(request).await.map(|_| ())
        })
        .map_err(|e| xml_error(e, table))
    }

    /// One operation through the entity endpoints.
    fn write_one(&self, table: &str, op: &WriteOp) -> Result<Written, StoreError> {
        let t = self.service.table(table);
        let (pk, rk) = keys_of(op);
        let etag = self.block(async {
            match op {
                WriteOp::Insert { entity } => t.insert(entity).await.map(Some),
                WriteOp::Replace { entity, if_match } => t
                    .update(entity, UpdateMode::Replace, &http_if_match(if_match))
                    .await
                    .map(Some),
                WriteOp::Merge { entity, if_match } => t
                    .update(entity, UpdateMode::Merge, &http_if_match(if_match))
                    .await
                    .map(Some),
                WriteOp::InsertOrReplace { entity } => {
                    t.upsert(entity, UpdateMode::Replace).await.map(Some)
                }
                WriteOp::InsertOrMerge { entity } => {
                    t.upsert(entity, UpdateMode::Merge).await.map(Some)
                }
                WriteOp::Delete {
                    partition_key,
                    row_key,
                    if_match,
                } => t
                    .delete(partition_key, row_key, &http_if_match(if_match))
                    .await
                    .map(|()| None),
            }
        });
        let etag = etag.map_err(|e| store_error(e, table, pk, rk))?;
        Ok(Written {
            timestamp: timestamp_of(etag.as_deref(), None)?,
        })
    }

    /// Operations on one PartitionKey as one `$batch` changeset.
    fn write_changeset(&self, table: &str, ops: &[WriteOp]) -> Result<Vec<Written>, BatchError> {
        let operations: Vec<BatchOperation<'_>> = ops.iter().map(batch_operation).collect();
        let result = self.block(self.service.table(table).submit_batch(&operations));
        match result {
            Ok(etags) => {
                let shared = etags.iter().flatten().next().cloned();
                etags
                    .iter()
                    .map(|etag| {
                        Ok(Written {
                            timestamp: timestamp_of(etag.as_deref(), shared.as_deref())?,
                        })
                    })
                    .collect::<Result<Vec<_>, StoreError>>()
                    .map_err(BatchError::from)
            }
            Err(e) => {
                let index = e.service().and_then(|s| s.index);
                let (pk, rk) = index
                    .and_then(|i| ops.get(i))
                    .map(keys_of)
                    .unwrap_or(("", ""));
                let error = store_error(e, table, pk, rk);
                Err(batch_error(index, error))
            }
        }
    }
}

/// A failure of operation `index` (`None`: of the whole write); a missing table is never
/// one operation's failure.
fn batch_error(index: Option<usize>, error: StoreError) -> BatchError {
    match (index, &error) {
        (_, StoreError::TableNotFound(_)) | (None, _) => BatchError::from(error),
        (Some(i), _) => BatchError::at(i, error),
    }
}

fn keys_of(op: &WriteOp) -> (&str, &str) {
    match op {
        WriteOp::Insert { entity }
        | WriteOp::Replace { entity, .. }
        | WriteOp::Merge { entity, .. }
        | WriteOp::InsertOrReplace { entity }
        | WriteOp::InsertOrMerge { entity } => (entity.partition_key(), entity.row_key()),
        WriteOp::Delete {
            partition_key,
            row_key,
            ..
        } => (partition_key, row_key),
    }
}

fn http_if_match(m: &IfMatch) -> HttpIfMatch {
    match m {
        IfMatch::Any => HttpIfMatch::Any,
        IfMatch::Timestamp(t) => HttpIfMatch::ETag(tableq_model::json::etag(*t)),
        // A well-formed weak ETag that names no version: the server answers 412, as the
        // store does.
        IfMatch::Unmatched => HttpIfMatch::ETag(r#"W/"unmatched""#.to_owned()),
    }
}

fn batch_operation(op: &WriteOp) -> BatchOperation<'_> {
    match op {
        WriteOp::Insert { entity } => BatchOperation::insert(entity),
        WriteOp::Replace { entity, if_match } => BatchOperation::new(
            BatchKind::Update(UpdateMode::Replace, http_if_match(if_match)),
            entity,
        ),
        WriteOp::Merge { entity, if_match } => BatchOperation::new(
            BatchKind::Update(UpdateMode::Merge, http_if_match(if_match)),
            entity,
        ),
        WriteOp::InsertOrReplace { entity } => {
            BatchOperation::new(BatchKind::Upsert(UpdateMode::Replace), entity)
        }
        WriteOp::InsertOrMerge { entity } => {
            BatchOperation::new(BatchKind::Upsert(UpdateMode::Merge), entity)
        }
        WriteOp::Delete {
            partition_key,
            row_key,
            if_match,
        } => BatchOperation::delete(partition_key, row_key, http_if_match(if_match)),
    }
}

/// The Timestamp of an answer's ETag; a delete's (no ETag) is `shared` or now.
fn timestamp_of(etag: Option<&str>, shared: Option<&str>) -> Result<DateTime, StoreError> {
    match etag.or(shared) {
        Some(e) => tableq_model::json::parse_etag(e).map_err(StoreError::storage),
        None => Ok(DateTime::now()),
    }
}

/// The store's error with the service's code (see the module docs).
/// A failure of an XML operation: the ACL of a missing table is `ResourceNotFound` there,
/// as the service answers it.
fn xml_error(e: ClientError, table: &str) -> StoreError {
    if e.service()
        .is_some_and(|s| s.error_code() == Some(ErrorCode::ResourceNotFound))
    {
        return StoreError::TableNotFound(table.to_owned());
    }
    store_error(e, table, "", "")
}

fn store_error(e: ClientError, table: &str, pk: &str, rk: &str) -> StoreError {
    let Some(service) = e.service() else {
        return StoreError::storage(e);
    };
    let keys = || (pk.to_owned(), rk.to_owned());
    match service.error_code() {
        Some(ErrorCode::TableNotFound) => StoreError::TableNotFound(table.to_owned()),
        Some(ErrorCode::ResourceNotFound) => {
            let (partition_key, row_key) = keys();
            StoreError::EntityNotFound {
                partition_key,
                row_key,
            }
        }
        Some(ErrorCode::EntityAlreadyExists) => {
            let (partition_key, row_key) = keys();
            StoreError::EntityAlreadyExists {
                partition_key,
                row_key,
            }
        }
        Some(ErrorCode::UpdateConditionNotSatisfied) => {
            let (partition_key, row_key) = keys();
            StoreError::ConditionNotSatisfied {
                partition_key,
                row_key,
            }
        }
        Some(ErrorCode::InvalidDuplicateRow) => {
            let (partition_key, row_key) = keys();
            StoreError::DuplicateRow {
                partition_key,
                row_key,
            }
        }
        Some(ErrorCode::ServerBusy) => StoreError::Unavailable(Box::new(e)),
        Some(ErrorCode::OperationTimedOut) => StoreError::Timeout(Box::new(e)),
        Some(code) if service.status < 500 => {
            StoreError::Invalid(ModelError::new(code, service.message.clone()))
        }
        _ => StoreError::storage(e),
    }
}

/// A plan as `$filter` text: `(key ranges) and (residual)`, `None` for every entity.
pub fn filter_of(plan: &Plan) -> Option<String> {
    let ranges = if plan.ranges.is_full() {
        Predicate::TRUE
    } else {
        Predicate::or(plan.ranges.ranges().iter().map(|r| {
            Predicate::and([
                interval("PartitionKey", &r.partition_key),
                interval("RowKey", &r.row_key),
            ])
        }))
    };
    let whole = Predicate::and([ranges, plan.residual.clone()]);
    if whole.is_true() {
        None
    } else if whole.is_false() {
        // Nothing can match; the table must still exist.
        Some("PartitionKey lt ''".to_owned())
    } else {
        Some(whole.to_string())
    }
}

fn interval(property: &str, i: &KeyInterval) -> Predicate {
    if let Some(point) = i.as_point() {
        return Predicate::compare(property, CmpOp::Eq, Value::String(point.to_owned()));
    }
    let bound = |b: &Bound<String>, inclusive: CmpOp, exclusive: CmpOp| match b {
        Bound::Unbounded => Predicate::TRUE,
        Bound::Included(k) => Predicate::compare(property, inclusive, Value::String(k.clone())),
        Bound::Excluded(k) => Predicate::compare(property, exclusive, Value::String(k.clone())),
    };
    Predicate::and([
        bound(&i.lower, CmpOp::Ge, CmpOp::Gt),
        bound(&i.upper, CmpOp::Le, CmpOp::Lt),
    ])
}

impl Backend for HttpBackend {
    fn describe(&self) -> String {
        format!("http: tableq serve at {}", self.service.endpoint())
    }

    fn create_table(&self, name: &str) -> Result<TableInfo, StoreError> {
        match self.block(self.service.create_table(name)) {
            Ok(()) => Ok(TableInfo {
                name: name.to_owned(),
            }),
            Err(e) if e.code() == Some(ErrorCode::TableAlreadyExists) => {
                // The REST answer does not carry the existing name: look it up. A delete may
                // have removed the table since; the conflict still happened, under the name
                // as asked.
                let existing = match self.table(name) {
                    Ok(info) => info.name,
                    Err(StoreError::TableNotFound(_)) => name.to_owned(),
                    Err(other) => return Err(other),
                };
                Err(StoreError::TableAlreadyExists { existing })
            }
            Err(e) => Err(store_error(e, name, "", "")),
        }
    }

    fn delete_table(&self, name: &str) -> Result<(), StoreError> {
        self.block(self.service.delete_table(name))
            .map_err(|e| match e.code() {
                Some(ErrorCode::ResourceNotFound) => {
                    StoreError::TableToDeleteNotFound(name.to_owned())
                }
                _ => store_error(e, name, "", ""),
            })
    }

    fn table(&self, name: &str) -> Result<TableInfo, StoreError> {
        self.block(self.service.get_table(name))
            .map(|name| TableInfo { name })
            .map_err(|e| match e.code() {
                Some(ErrorCode::ResourceNotFound) => StoreError::TableNotFound(name.to_owned()),
                _ => store_error(e, name, "", ""),
            })
    }

    fn tables(&self) -> Result<Vec<TableInfo>, StoreError> {
        self.block(self.service.list_tables())
            .map(|names| names.into_iter().map(|name| TableInfo { name }).collect())
            .map_err(StoreError::storage)
    }

    fn get(&self, table: &str, pk: &str, rk: &str) -> Result<Option<Entity>, StoreError> {
        self.block(self.service.table(table).get(pk, rk))
            .map(|r| r.map(|r| r.entity))
            .map_err(|e| store_error(e, table, pk, rk))
    }

    fn query(
        &self,
        table: &str,
        plan: &Plan,
        continuation: Option<&Key>,
        _options: &PageOptions,
        visit: &mut dyn FnMut(RowView<'_>),
    ) -> Result<QueryPage, StoreError> {
        let query = Query {
            filter: filter_of(plan),
            select: plan.select.as_ref().map(|s| s.join(",")),
            top: plan.top,
        };
        let from = continuation.map(|k| tableq_client::Continuation {
            next_partition_key: encode_token(&k.partition_key),
            next_row_key: Some(encode_token(&k.row_key)),
        });
        let page = self
            .block(self.service.table(table).query_page(&query, from.as_ref()))
            .map_err(|e| store_error(e, table, "", ""))?;
        for row in page.rows {
            let p = row.payload;
            let entity = Entity::with_properties(
                p.partition_key.unwrap_or_default(),
                p.row_key.unwrap_or_default(),
                p.timestamp,
                p.properties,
            );
            visit(RowView::new(&entity, plan.select.as_deref()));
        }
        let continuation = match page.continuation {
            None => None,
            Some(c) => {
                let decode = |name: &str, token: &str| {
                    decode_token(name, token).map_err(|e| StoreError::storage(e.to_string()))
                };
                Some(Key {
                    partition_key: decode("NextPartitionKey", &c.next_partition_key)?,
                    row_key: match &c.next_row_key {
                        Some(t) => decode("NextRowKey", t)?,
                        None => String::new(),
                    },
                })
            }
        };
        Ok(QueryPage {
            continuation,
            stats: Default::default(),
        })
    }

    fn write_batch(&self, table: &str, ops: Vec<WriteOp>) -> Result<Vec<Written>, BatchError> {
        match ops.as_slice() {
            [] => Ok(Vec::new()),
            [op] => self.write_one(table, op).map(|w| vec![w]).map_err(|e| {
                let index = (!matches!(e, StoreError::TableNotFound(_))).then_some(0);
                batch_error(index, e)
            }),
            [first, ..]
                if ops.len() <= tableq_client::batch::MAX_OPERATIONS
                    && ops.iter().all(|o| keys_of(o).0 == keys_of(first).0) =>
            {
                self.write_changeset(table, &ops)
            }
            _ => ops
                .iter()
                .enumerate()
                .map(|(i, op)| {
                    self.write_one(table, op).map_err(|e| {
                        let index = (!matches!(e, StoreError::TableNotFound(_))).then_some(i);
                        batch_error(index, e)
                    })
                })
                .collect(),
        }
    }

    fn service_properties(&self) -> Result<ServiceProperties, StoreError> {
        let text = self.xml_get("?restype=service&comp=properties", "")?;
        let update = xml::parse_properties(&text).map_err(StoreError::storage)?;
        Ok(update.apply(ServiceProperties::default()))
    }

    fn set_service_properties(&self, properties: &ServiceProperties) -> Result<(), StoreError> {
        let body = xml::write_properties(properties).map_err(StoreError::storage)?;
        self.xml_put("?restype=service&comp=properties", "", body)
    }

    fn table_acl(&self, table: &str) -> Result<Vec<SignedIdentifier>, StoreError> {
        let text = self.xml_get(&format!("{table}?comp=acl"), table)?;
        xml::parse_acl(&text).map_err(StoreError::storage)
    }

    fn set_table_acl(&self, table: &str, acl: &[SignedIdentifier]) -> Result<(), StoreError> {
        let body = xml::write_acl(acl).map_err(StoreError::storage)?;
        self.xml_put(&format!("{table}?comp=acl"), table, body)
    }

    fn close(&self) -> Result<(), StoreError> {
        if let Ok(mut serve) = self.serve.lock() {
            serve.stop();
        }
        Ok(())
    }
}

//! The Rust `azure_data_tables` 0.21 crate (with `azure_storage` 0.21) against `tableq serve`.
//!
//! Every operation the crate offers: tables (create, list with a filter, `$top` and paging,
//! delete), entities of all eight EDM types (insert with and without the entity returned,
//! get with a projection, update and merge with ETags, insert-or-replace, insert-or-merge,
//! delete), queries with filters, projection and paging, transactions (every operation, a
//! failing one, an empty one), and the account SAS it generates (its only SAS kind; it offers
//! no service properties or ACLs) — with the exact error codes of the failures it can provoke.
//! The crate reads every entity in full metadata, so the annotations are checked as the
//! service writes them.
//!
//! Run by `scripts/compat-tests.sh` with `TABLEQ_COMPAT_ENDPOINT=http://127.0.0.1:PORT/devstoreaccount1`;
//! prints one line per test and a closing `N passed, N failed`; exits 1 when a test failed.

use azure_core::error::ErrorKind;
use azure_core::Etag;
use azure_data_tables::clients::TableServiceClientBuilder;
use azure_data_tables::operations::InsertEntityResponse;
use azure_data_tables::prelude::*;
use azure_storage::prelude::*;
use azure_storage::shared_access_signature::account_sas::{
    AccountSasPermissions, AccountSasResource, AccountSasResourceType, AccountSharedAccessSignature,
};
use azure_storage::shared_access_signature::SasToken;
use azure_storage::CloudLocation;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::future::Future;
use std::pin::Pin;
use std::time::Instant;
use time::OffsetDateTime;

const ACCOUNT: &str = "devstoreaccount1";
const KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
const ETAG_PREFIX: &str = "W/\"datetime'";

type Outcome = Result<(), String>;
type TestFn = fn(Ctx) -> Pin<Box<dyn Future<Output = Outcome>>>;

#[derive(Clone)]
struct Ctx {
    endpoint: String,
    service: TableServiceClient,
}

fn service_with(endpoint: &str, credentials: StorageCredentials) -> TableServiceClient {
    TableServiceClientBuilder::with_location(
        CloudLocation::Custom {
            account: ACCOUNT.to_owned(),
            uri: endpoint.to_owned(),
        },
        credentials,
    )
    .retry(azure_core::RetryOptions::none())
    .build()
}

fn unique(tag: &str) -> String {
    format!(
        "rs{tag}{}",
        &uuid::Uuid::new_v4().simple().to_string()[..10]
    )
}

/// `Err` with the message unless `cond`.
fn check(cond: bool, msg: impl FnOnce() -> String) -> Outcome {
    if cond {
        Ok(())
    } else {
        Err(msg())
    }
}

fn eq<T: PartialEq + std::fmt::Debug>(got: T, want: T, what: &str) -> Outcome {
    check(got == want, || {
        format!("{what}: got {got:?}, want {want:?}")
    })
}

fn err<E: std::fmt::Display>(what: &str) -> impl FnOnce(E) -> String + '_ {
    move |e| format!("{what}: {e}")
}

/// Checks that `result` failed with HTTP `status` and `x-ms-error-code` `code`.
fn expect_error<T: std::fmt::Debug>(
    result: azure_core::Result<T>,
    status: u16,
    code: &str,
    what: &str,
) -> Outcome {
    match result {
        Ok(value) => Err(format!(
            "{what}: succeeded ({value:?}), expected {status} {code}"
        )),
        Err(e) => match e.kind() {
            ErrorKind::HttpResponse {
                status: got,
                error_code,
            } => {
                eq(*got as u16, status, &format!("{what}: status"))?;
                eq(
                    error_code.as_deref(),
                    Some(code),
                    &format!("{what}: error code"),
                )
            }
            other => Err(format!("{what}: not an HTTP error: {other:?}: {e}")),
        },
    }
}

fn all_types(pk: &str, rk: &str) -> Value {
    json!({
        "PartitionKey": pk,
        "RowKey": rk,
        "Str": "héllo 'quoted' é",
        "I32": -2147483648i64,
        "I64": "9223372036854775807", "I64@odata.type": "Edm.Int64",
        "Dbl": 3.25,
        "Flag": true,
        "When": "2021-06-09T01:17:08.3795894Z", "When@odata.type": "Edm.DateTime",
        "Id": "c9da6455-213d-42c9-9a79-3e9149a57833", "Id@odata.type": "Edm.Guid",
        "Bytes": "AAH+/w==", "Bytes@odata.type": "Edm.Binary",
    })
}

/// The values and the full-metadata annotations of `all_types`, as the service writes them:
/// Int64, DateTime, Guid and Binary annotated; String, Int32, Boolean and a finite Double not
/// (the service's recorded replies carry `"ratio": 3.1` and `"double": 5.0` bare).
fn check_all_types(e: &Map<String, Value>, pk: &str, rk: &str) -> Outcome {
    eq(e.get("PartitionKey"), Some(&json!(pk)), "PartitionKey")?;
    eq(e.get("RowKey"), Some(&json!(rk)), "RowKey")?;
    eq(e.get("Str"), Some(&json!("héllo 'quoted' é")), "Str")?;
    eq(e.get("I32"), Some(&json!(-2147483648i64)), "I32")?;
    eq(e.get("I64"), Some(&json!("9223372036854775807")), "I64")?;
    eq(
        e.get("I64@odata.type"),
        Some(&json!("Edm.Int64")),
        "I64 type",
    )?;
    eq(e.get("Dbl").and_then(Value::as_f64), Some(3.25), "Dbl")?;
    eq(e.get("Dbl@odata.type"), None, "Dbl type")?;
    eq(e.get("Flag"), Some(&json!(true)), "Flag")?;
    eq(
        e.get("When"),
        Some(&json!("2021-06-09T01:17:08.3795894Z")),
        "When",
    )?;
    eq(
        e.get("When@odata.type"),
        Some(&json!("Edm.DateTime")),
        "When type",
    )?;
    eq(
        e.get("Id"),
        Some(&json!("c9da6455-213d-42c9-9a79-3e9149a57833")),
        "Id",
    )?;
    eq(e.get("Id@odata.type"), Some(&json!("Edm.Guid")), "Id type")?;
    eq(e.get("Bytes"), Some(&json!("AAH+/w==")), "Bytes")?;
    eq(
        e.get("Bytes@odata.type"),
        Some(&json!("Edm.Binary")),
        "Bytes type",
    )?;
    eq(
        e.get("Timestamp@odata.type"),
        Some(&json!("Edm.DateTime")),
        "Timestamp type",
    )?;
    for bare in ["Str", "I32", "Flag", "PartitionKey", "RowKey"] {
        let key = format!("{bare}@odata.type");
        check(!e.contains_key(&key), || {
            format!("{key} is annotated: {:?}", e.get(&key))
        })?;
    }
    let etag = e
        .get("odata.etag")
        .and_then(Value::as_str)
        .unwrap_or_default();
    check(etag.starts_with(ETAG_PREFIX), || {
        format!("odata.etag {etag:?}")
    })
}

/// A typed entity, as users of the crate write them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Typed {
    #[serde(rename = "PartitionKey")]
    pk: String,
    #[serde(rename = "RowKey")]
    rk: String,
    name: String,
    count: i32,
    ratio: f64,
    active: bool,
    #[serde(with = "time::serde::rfc3339")]
    #[serde(rename = "Timestamp", skip_serializing, default = "epoch")]
    timestamp: OffsetDateTime,
}

fn epoch() -> OffsetDateTime {
    OffsetDateTime::UNIX_EPOCH
}

async fn new_table(ctx: &Ctx) -> Result<TableClient, String> {
    let table = ctx.service.table_client(unique("t"));
    table.create().await.map_err(err("create table"))?;
    Ok(table)
}

async fn list_names(
    service: &TableServiceClient,
    filter: Option<String>,
    top: Option<u32>,
) -> Result<(Vec<String>, usize), String> {
    let mut builder = service.list();
    if let Some(filter) = filter {
        builder = builder.filter(filter);
    }
    if let Some(top) = top {
        builder = builder.top(top);
    }
    let mut stream = builder.into_stream();
    let (mut names, mut pages) = (Vec::new(), 0);
    while let Some(page) = stream.next().await {
        let page = page.map_err(err("list tables"))?;
        names.extend(page.tables.into_iter().map(|t| t.name));
        pages += 1;
    }
    Ok((names, pages))
}

async fn tables(ctx: Ctx) -> Outcome {
    let prefix = unique("list");
    let names: Vec<String> = (0..3).map(|i| format!("{prefix}{i}")).collect();
    for name in &names {
        ctx.service
            .table_client(name)
            .create()
            .await
            .map_err(err("create"))?;
    }
    expect_error(
        ctx.service.table_client(&names[0]).create().await,
        409,
        "TableAlreadyExists",
        "create twice",
    )?;
    let filter = format!("TableName ge '{prefix}' and TableName lt '{prefix}~'");
    let (listed, pages) = list_names(&ctx.service, Some(filter.clone()), Some(2)).await?;
    eq(listed.clone(), names.clone(), "tables listed by filter")?;
    eq(pages, 2, "pages of 2 tables")?;
    let (all, _) = list_names(&ctx.service, None, None).await?;
    check(names.iter().all(|n| all.contains(n)), || {
        "unfiltered list misses a table".into()
    })?;
    for name in &names {
        ctx.service
            .table_client(name)
            .delete()
            .await
            .map_err(err("delete"))?;
    }
    expect_error(
        ctx.service.table_client(&names[0]).delete().await,
        404,
        "ResourceNotFound",
        "delete twice",
    )?;
    let (after, _) = list_names(&ctx.service, Some(filter), None).await?;
    eq(after, Vec::<String>::new(), "tables after delete")?;
    expect_error(
        ctx.service.table_client("ab").create().await,
        400,
        "OutOfRangeInput",
        "short name",
    )?;
    expect_error(
        ctx.service.table_client("1abc").create().await,
        400,
        "InvalidResourceName",
        "bad name",
    )
}

async fn entities_all_types(ctx: Ctx) -> Outcome {
    let table = new_table(&ctx).await?;
    let plain: InsertEntityResponse<Map<String, Value>> = table
        .insert(all_types("p", "r1"))
        .map_err(err("insert"))?
        .await
        .map_err(err("insert"))?;
    check(plain.etag.as_ref().starts_with(ETAG_PREFIX), || {
        format!("insert etag {:?}", plain.etag)
    })?;
    check(plain.entity_with_metadata.is_none(), || {
        "entity returned without return_entity".into()
    })?;
    let echoed: InsertEntityResponse<Map<String, Value>> = table
        .insert(all_types("p", "r2"))
        .map_err(err("insert"))?
        .return_entity(true)
        .await
        .map_err(err("insert returning the entity"))?;
    let with_meta = echoed.entity_with_metadata.ok_or("no entity returned")?;
    check_all_types(&with_meta.entity, "p", "r2")?;
    eq(
        with_meta.metadata.odata_type.as_str(),
        &format!("{ACCOUNT}.{}", table.table_name()),
        "odata.type",
    )?;
    eq(
        Etag::from(with_meta.metadata.etag.clone()),
        echoed.etag.clone(),
        "echoed etag",
    )?;
    let got = table
        .partition_key_client("p")
        .entity_client("r1")
        .get::<Map<String, Value>>()
        .await
        .map_err(err("get"))?;
    check_all_types(&got.entity, "p", "r1")?;
    eq(got.etag.clone(), plain.etag.clone(), "get etag")?;
    let selected = table
        .partition_key_client("p")
        .entity_client("r1")
        .get::<Map<String, Value>>()
        .select("Str,I64")
        .await
        .map_err(err("get $select"))?;
    eq(
        selected.entity.get("I64"),
        Some(&json!("9223372036854775807")),
        "selected I64",
    )?;
    check(!selected.entity.contains_key("Dbl"), || {
        "Dbl not selected but returned".into()
    })?;
    let mut stream = table
        .query()
        .filter("Flag eq true and I64 gt 5L")
        .into_stream::<Map<String, Value>>();
    let mut rows = Vec::new();
    while let Some(page) = stream.next().await {
        rows.extend(page.map_err(err("query"))?.entities);
    }
    eq(rows.len(), 2, "rows matching a typed filter")?;
    check_all_types(&rows[0], "p", "r1")?;
    // Typed entities as users write them (Timestamp read back as a date).
    let typed = Typed {
        pk: "t".into(),
        rk: "1".into(),
        name: "n".into(),
        count: 7,
        ratio: 0.5,
        active: true,
        timestamp: epoch(),
    };
    let _: InsertEntityResponse<Typed> = table
        .insert(&typed)
        .map_err(err("insert typed"))?
        .await
        .map_err(err("insert typed"))?;
    let back = table
        .partition_key_client("t")
        .entity_client("1")
        .get::<Typed>()
        .await
        .map_err(err("get typed"))?;
    eq(
        (
            &back.entity.name,
            back.entity.count,
            back.entity.ratio,
            back.entity.active,
        ),
        (&typed.name, 7, 0.5, true),
        "typed",
    )?;
    check(back.entity.timestamp.year() >= 2024, || {
        format!("Timestamp {}", back.entity.timestamp)
    })?;
    table.delete().await.map_err(err("delete table"))?;
    Ok(())
}

async fn updates_with_etags(ctx: Ctx) -> Outcome {
    let table = new_table(&ctx).await?;
    let inserted: InsertEntityResponse<Value> = table
        .insert(json!({"PartitionKey": "p", "RowKey": "r", "A": "a"}))
        .map_err(err("insert"))?
        .await
        .map_err(err("insert"))?;
    let entity = table.partition_key_client("p").entity_client("r");
    let replaced = entity
        .update(
            json!({"PartitionKey": "p", "RowKey": "r", "C": "c"}),
            inserted.etag.clone().into(),
        )
        .map_err(err("update"))?
        .await
        .map_err(err("update with the ETag"))?;
    check(replaced.etag != inserted.etag, || {
        "ETag unchanged by update".into()
    })?;
    let got = entity
        .get::<Map<String, Value>>()
        .await
        .map_err(err("get"))?;
    eq(got.entity.get("C"), Some(&json!("c")), "C after replace")?;
    check(!got.entity.contains_key("A"), || "A kept by replace".into())?;
    expect_error(
        entity
            .update(json!({"X": 1}), inserted.etag.clone().into())
            .map_err(err("update"))?
            .await,
        412,
        "UpdateConditionNotSatisfied",
        "update with a stale ETag",
    )?;
    let merged = entity
        .merge(json!({"D": 2.5}), replaced.etag.clone().into())
        .map_err(err("merge"))?
        .await
        .map_err(err("merge with the ETag"))?;
    let got = entity
        .get::<Map<String, Value>>()
        .await
        .map_err(err("get"))?;
    eq(got.entity.get("C"), Some(&json!("c")), "C after merge")?;
    eq(
        got.entity.get("D").and_then(Value::as_f64),
        Some(2.5),
        "D after merge",
    )?;
    eq(got.etag.clone(), merged.etag.clone(), "etag after merge")?;
    expect_error(
        entity
            .merge(json!({"X": 1}), replaced.etag.clone().into())
            .map_err(err("merge"))?
            .await,
        412,
        "UpdateConditionNotSatisfied",
        "merge with a stale ETag",
    )?;
    entity
        .merge(json!({"E": false}), IfMatchCondition::Any)
        .map_err(err("merge *"))?
        .await
        .map_err(err("merge *"))?;
    let other = table.partition_key_client("p").entity_client("x");
    other
        .insert_or_replace(json!({"A": "a"}))
        .map_err(err("upsert"))?
        .await
        .map_err(err("insert_or_replace"))?;
    other
        .insert_or_merge(json!({"B": 5}))
        .map_err(err("upsert"))?
        .await
        .map_err(err("insert_or_merge"))?;
    let got = other
        .get::<Map<String, Value>>()
        .await
        .map_err(err("get"))?;
    eq(
        (got.entity.get("A"), got.entity.get("B")),
        (Some(&json!("a")), Some(&json!(5))),
        "after upserts",
    )?;
    other
        .insert_or_replace(json!({"Z": 1}))
        .map_err(err("upsert"))?
        .await
        .map_err(err("insert_or_replace"))?;
    let got = other
        .get::<Map<String, Value>>()
        .await
        .map_err(err("get"))?;
    check(!got.entity.contains_key("A"), || {
        "A kept by insert_or_replace".into()
    })?;
    other.delete().await.map_err(err("delete"))?;
    expect_error(
        other.get::<Value>().await,
        404,
        "ResourceNotFound",
        "get deleted",
    )?;
    expect_error(
        other.delete().await,
        404,
        "ResourceNotFound",
        "delete deleted",
    )?;
    table.delete().await.map_err(err("delete table"))?;
    Ok(())
}

async fn entity_errors(ctx: Ctx) -> Outcome {
    let table = new_table(&ctx).await?;
    let key = json!({"PartitionKey": "p", "RowKey": "r"});
    let _: InsertEntityResponse<Value> = table
        .insert(&key)
        .map_err(err("insert"))?
        .await
        .map_err(err("insert"))?;
    let again: azure_core::Result<InsertEntityResponse<Value>> =
        table.insert(&key).map_err(err("insert"))?.await;
    expect_error(again, 409, "EntityAlreadyExists", "insert twice")?;
    let missing = table.partition_key_client("p").entity_client("missing");
    expect_error(
        missing.get::<Value>().await,
        404,
        "ResourceNotFound",
        "get missing",
    )?;
    expect_error(
        missing
            .update(json!({}), IfMatchCondition::Any)
            .map_err(err("u"))?
            .await,
        404,
        "ResourceNotFound",
        "update missing",
    )?;
    expect_error(
        missing
            .merge(json!({}), IfMatchCondition::Any)
            .map_err(err("m"))?
            .await,
        404,
        "ResourceNotFound",
        "merge missing",
    )?;
    let gone = ctx.service.table_client(unique("gone"));
    let on_gone: azure_core::Result<InsertEntityResponse<Value>> =
        gone.insert(&key).map_err(err("insert"))?.await;
    expect_error(on_gone, 404, "TableNotFound", "insert into a missing table")?;
    let bad_name: azure_core::Result<InsertEntityResponse<Value>> = table
        .insert(json!({"PartitionKey": "p", "RowKey": "x", "bad name": 1}))
        .map_err(err("insert"))?
        .await;
    expect_error(bad_name, 400, "PropertyNameInvalid", "bad property name")?;
    let mut stream = table
        .query()
        .filter("PartitionKey eq")
        .into_stream::<Value>();
    let first = stream.next().await.ok_or("no page")?;
    expect_error(first.map(|p| p.entities), 400, "InvalidInput", "bad filter")?;
    let wrong = service_with(
        &ctx.endpoint,
        StorageCredentials::access_key(ACCOUNT, "A".repeat(86) + "=="),
    );
    expect_error(
        wrong
            .table_client(table.table_name())
            .partition_key_client("p")
            .entity_client("r")
            .get::<Value>()
            .await,
        403,
        "AuthenticationFailed",
        "wrong key",
    )?;
    table.delete().await.map_err(err("delete table"))?;
    Ok(())
}

async fn query_paging(ctx: Ctx) -> Outcome {
    let table = new_table(&ctx).await?;
    for i in 0..25 {
        let _: InsertEntityResponse<Value> = table
            .insert(json!({"PartitionKey": "p", "RowKey": format!("r{i:03}"), "N": i}))
            .map_err(err("insert"))?
            .await
            .map_err(err("insert"))?;
    }
    let mut stream = table
        .query()
        .filter("N ge 3")
        .top(4)
        .into_stream::<Map<String, Value>>();
    let (mut seen, mut pages) = (Vec::new(), 0);
    while let Some(page) = stream.next().await {
        let page = page.map_err(err("query page"))?;
        check(page.entities.len() <= 4, || {
            format!("page of {}", page.entities.len())
        })?;
        seen.extend(
            page.entities
                .iter()
                .filter_map(|e| e.get("N").and_then(Value::as_i64)),
        );
        pages += 1;
    }
    eq(seen, (3..25).collect::<Vec<i64>>(), "paged N values")?;
    check(pages >= 6, || format!("{pages} pages"))?;
    let mut stream = table
        .query()
        .select("RowKey")
        .top(1000)
        .into_stream::<Map<String, Value>>();
    let page = stream
        .next()
        .await
        .ok_or("no page")?
        .map_err(err("query"))?;
    eq(page.entities.len(), 25, "one page of 25")?;
    check(!page.entities[0].contains_key("N"), || {
        "N not selected but returned".into()
    })?;
    table.delete().await.map_err(err("delete table"))?;
    Ok(())
}

async fn transactions(ctx: Ctx) -> Outcome {
    let table = new_table(&ctx).await?;
    for (rk, v) in [("upd", "old"), ("mrg", "old"), ("del", "")] {
        let _: InsertEntityResponse<Value> = table
            .insert(json!({"PartitionKey": "b", "RowKey": rk, "V": v}))
            .map_err(err("insert"))?
            .await
            .map_err(err("insert"))?;
    }
    let pk = table.partition_key_client("b");
    let etag = pk
        .entity_client("upd")
        .get::<Value>()
        .await
        .map_err(err("get"))?
        .etag;
    let resp = pk
        .transaction()
        .insert(all_types("b", "ins"))
        .and_then(|t| {
            t.update(
                "upd",
                json!({"PartitionKey": "b", "RowKey": "upd", "V": "new"}),
                Some(etag.into()),
            )
        })
        .and_then(|t| {
            t.merge(
                "mrg",
                json!({"PartitionKey": "b", "RowKey": "mrg", "W": "w"}),
                None,
            )
        })
        .and_then(|t| t.delete("del", None))
        .and_then(|t| {
            t.insert_or_replace(
                "ior",
                json!({"PartitionKey": "b", "RowKey": "ior", "V": 1.5}),
            )
        })
        .and_then(|t| {
            t.insert_or_merge(
                "iom",
                json!({"PartitionKey": "b", "RowKey": "iom", "V": false}),
            )
        })
        .map_err(err("build transaction"))?
        .await
        .map_err(err("transaction"))?;
    let statuses: Vec<u16> = resp
        .operation_responses
        .iter()
        .map(|r| r.status_code as u16)
        .collect();
    eq(
        statuses,
        vec![201, 204, 204, 204, 204, 204],
        "transaction statuses",
    )?;
    let mut stream = table
        .query()
        .filter("PartitionKey eq 'b'")
        .into_stream::<Map<String, Value>>();
    let page = stream
        .next()
        .await
        .ok_or("no page")?
        .map_err(err("query"))?;
    let keys: Vec<&str> = page
        .entities
        .iter()
        .filter_map(|e| e.get("RowKey").and_then(Value::as_str))
        .collect();
    eq(
        keys,
        vec!["ins", "iom", "ior", "mrg", "upd"],
        "rows after the transaction",
    )?;
    // One Timestamp for every entity the transaction wrote (mrg was merged, upd replaced).
    let stamps: std::collections::BTreeSet<&str> = page
        .entities
        .iter()
        .filter_map(|e| e.get("Timestamp").and_then(Value::as_str))
        .collect();
    eq(stamps.len(), 1, "distinct Timestamps of one transaction")?;
    let by_key = |rk: &str| {
        page.entities
            .iter()
            .find(|e| e.get("RowKey") == Some(&json!(rk)))
            .cloned()
            .unwrap_or_default()
    };
    eq(by_key("upd").get("V"), Some(&json!("new")), "upd")?;
    eq(
        (by_key("mrg").get("V"), by_key("mrg").get("W")),
        (Some(&json!("old")), Some(&json!("w"))),
        "mrg",
    )?;
    check_all_types(&by_key("ins"), "b", "ins")?;
    // A failing transaction: one part, the failing operation's own status; nothing applied.
    let failing = pk
        .transaction()
        .insert(json!({"PartitionKey": "b", "RowKey": "new1"}))
        .and_then(|t| t.insert(json!({"PartitionKey": "b", "RowKey": "ins"})))
        .map_err(err("build"))?
        .await
        .map_err(err("failing transaction"))?;
    let statuses: Vec<u16> = failing
        .operation_responses
        .iter()
        .map(|r| r.status_code as u16)
        .collect();
    eq(statuses, vec![409], "failing transaction statuses")?;
    expect_error(
        pk.entity_client("new1").get::<Value>().await,
        404,
        "ResourceNotFound",
        "rolled back",
    )?;
    // An empty transaction: an empty changeset, answered 202 with no operation.
    let empty = pk.transaction().await.map_err(err("empty transaction"))?;
    eq(
        empty.operation_responses.len(),
        0,
        "empty transaction responses",
    )?;
    table.delete().await.map_err(err("delete table"))?;
    Ok(())
}

fn account_sas(
    resource_type: AccountSasResourceType,
    permissions: AccountSasPermissions,
    hours: i64,
) -> Result<String, String> {
    AccountSharedAccessSignature::new(
        ACCOUNT.to_owned(),
        azure_core::auth::Secret::new(KEY.to_owned()),
        AccountSasResource::Table,
        resource_type,
        OffsetDateTime::now_utc() + time::Duration::hours(hours),
        permissions,
    )
    .token()
    .map_err(err("sign account SAS"))
}

async fn sas(ctx: Ctx) -> Outcome {
    let table = new_table(&ctx).await?;
    let _: InsertEntityResponse<Value> = table
        .insert(json!({"PartitionKey": "p", "RowKey": "r", "V": 1}))
        .map_err(err("insert"))?
        .await
        .map_err(err("insert"))?;
    let sas_service = |token: String| -> Result<TableServiceClient, String> {
        Ok(service_with(
            &ctx.endpoint,
            StorageCredentials::sas_token(token).map_err(err("parse SAS"))?,
        ))
    };
    let rw = AccountSasPermissions {
        read: true,
        add: true,
        update: true,
        delete: true,
        list: true,
        ..Default::default()
    };
    let objects = sas_service(account_sas(AccountSasResourceType::Object, rw, 1)?)?;
    let entity = objects
        .table_client(table.table_name())
        .partition_key_client("p")
        .entity_client("r");
    let got = entity
        .get::<Map<String, Value>>()
        .await
        .map_err(err("get with an object SAS"))?;
    eq(got.entity.get("V"), Some(&json!(1)), "V through SAS")?;
    entity
        .merge(json!({"W": 2}), IfMatchCondition::Any)
        .map_err(err("m"))?
        .await
        .map_err(err("merge with an object SAS"))?;
    let mut stream = objects
        .table_client(table.table_name())
        .query()
        .into_stream::<Value>();
    eq(
        stream
            .next()
            .await
            .ok_or("no page")?
            .map_err(err("query with SAS"))?
            .entities
            .len(),
        1,
        "rows through SAS",
    )?;
    expect_error(
        objects.table_client(unique("no")).create().await,
        403,
        "AuthorizationResourceTypeMismatch",
        "create with an object SAS",
    )?;
    let read_only = sas_service(account_sas(
        AccountSasResourceType::Object,
        AccountSasPermissions {
            read: true,
            ..Default::default()
        },
        1,
    )?)?;
    let ro_entity = read_only
        .table_client(table.table_name())
        .partition_key_client("p")
        .entity_client("r");
    ro_entity
        .get::<Value>()
        .await
        .map_err(err("get with a read SAS"))?;
    expect_error(
        ro_entity
            .merge(json!({"X": 1}), IfMatchCondition::Any)
            .map_err(err("m"))?
            .await,
        403,
        "AuthorizationPermissionMismatch",
        "merge with a read SAS",
    )?;
    let containers = sas_service(account_sas(
        AccountSasResourceType::Container,
        AccountSasPermissions {
            create: true,
            delete: true,
            list: true,
            read: true,
            ..Default::default()
        },
        1,
    )?)?;
    let made = containers.table_client(unique("sas"));
    made.create()
        .await
        .map_err(err("create with a container SAS"))?;
    made.delete()
        .await
        .map_err(err("delete with a container SAS"))?;
    let expired = sas_service(account_sas(AccountSasResourceType::Object, rw, -1)?)?;
    expect_error(
        expired
            .table_client(table.table_name())
            .partition_key_client("p")
            .entity_client("r")
            .get::<Value>()
            .await,
        403,
        "AuthenticationFailed",
        "expired SAS",
    )?;
    table.delete().await.map_err(err("delete table"))?;
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let endpoint = match std::env::var("TABLEQ_COMPAT_ENDPOINT") {
        Ok(value) if !value.is_empty() => value.trim_end_matches('/').to_owned(),
        _ => {
            eprintln!("TABLEQ_COMPAT_ENDPOINT is not set: run scripts/compat-tests.sh");
            std::process::exit(2);
        }
    };
    let service = service_with(
        &endpoint,
        StorageCredentials::access_key(ACCOUNT, KEY.to_owned()),
    );
    let ctx = Ctx { endpoint, service };
    let tests: [(&str, TestFn); 7] = [
        ("tables", |c| Box::pin(tables(c))),
        ("entities_all_types", |c| Box::pin(entities_all_types(c))),
        ("updates_with_etags", |c| Box::pin(updates_with_etags(c))),
        ("entity_errors", |c| Box::pin(entity_errors(c))),
        ("query_paging", |c| Box::pin(query_paging(c))),
        ("transactions", |c| Box::pin(transactions(c))),
        ("sas", |c| Box::pin(sas(c))),
    ];
    let filter = std::env::args().nth(1);
    let (mut passed, mut failed) = (0, 0);
    for (name, test) in tests {
        if filter.as_deref().is_some_and(|f| !name.contains(f)) {
            continue;
        }
        let started = Instant::now();
        match test(ctx.clone()).await {
            Ok(()) => {
                passed += 1;
                println!("ok {name} ({:.2} s)", started.elapsed().as_secs_f64());
            }
            Err(message) => {
                failed += 1;
                println!("FAILED {name}: {message}");
            }
        }
    }
    println!("rust: {passed} passed, {failed} failed");
    if failed > 0 || passed == 0 {
        std::process::exit(1);
    }
}

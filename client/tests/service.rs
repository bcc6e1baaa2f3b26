//! `tableq-client` against `tableq-server` (in this process, on a free loopback port, over an
//! in-memory store): tables, entity CRUD with ETags, every Edm type, paged queries,
//! `$batch`, SAS and SharedKeyLite, typed errors with the service's codes, the bulk loader
//! and raw connections.

mod support;

use std::sync::{Arc, Mutex};
use support::Serve;
use tableq_client::conn::Connection;
use tableq_client::load::{BulkLoader, LoadItem, LoadMode, LoadReport};
use tableq_client::sign::{AccountKey, SasBuilder};
use tableq_client::{
    BatchKind, BatchOperation, ClientError, Credential, IfMatch, Query, TableServiceClient,
    UpdateMode,
};
use tableq_model::{DateTime, Entity, ErrorCode, Value};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn client(serve: &Serve) -> TableServiceClient {
    TableServiceClient::new(
        &serve.endpoint,
        Credential::SharedKey(AccountKey::development()),
    )
    .unwrap()
}

fn code(e: &ClientError) -> ErrorCode {
    e.code()
        .unwrap_or_else(|| panic!("no service error code: {e}"))
}

#[test]
fn tables_are_created_listed_paged_and_deleted() {
    let serve = Serve::start();
    let service = client(&serve);
    runtime().block_on(async {
        for name in ["Beta", "alpha", "Gamma"] {
            service.create_table(name).await.unwrap();
        }
        let again = service.create_table("BETA").await.unwrap_err();
        assert_eq!(
            (code(&again), again.status()),
            (ErrorCode::TableAlreadyExists, Some(409))
        );
        assert!(!service.create_table_if_missing("beta").await.unwrap());
        assert_eq!(service.get_table("gamma").await.unwrap(), "Gamma");
        let page = service.query_tables(None, Some(2), None).await.unwrap();
        assert_eq!(page.names, ["alpha", "Beta"]);
        let next = page.next.expect("a continuation");
        let rest = service
            .query_tables(None, Some(2), Some(&next))
            .await
            .unwrap();
        assert_eq!(
            (rest.names.as_slice(), rest.next),
            (&["Gamma".to_owned()][..], None)
        );
        service.delete_table("ALPHA").await.unwrap();
        assert_eq!(service.list_tables().await.unwrap(), ["Beta", "Gamma"]);
        let gone = service.delete_table("alpha").await.unwrap_err();
        assert_eq!(code(&gone), ErrorCode::ResourceNotFound);
        let bad = service.create_table("no_underscores").await.unwrap_err();
        assert_eq!(code(&bad), ErrorCode::InvalidResourceName);
    });
}

#[test]
fn entities_round_trip_every_type_and_honour_etags() {
    let serve = Serve::start();
    let service = client(&serve);
    let table = service.table("People");
    runtime().block_on(async {
        service.create_table("People").await.unwrap();
        let mut e = Entity::new("p 1 'q'", "r%+&😀");
        e.set("I32", Value::Int32(-7));
        e.set("I64", Value::Int64(i64::MIN));
        e.set("D", Value::Double(f64::NAN));
        e.set("Neg", Value::Double(-0.0));
        e.set("Shared", Value::String("it's \u{FFFD}".into()));
        e.set("Batches", Value::Boolean(true));
        e.set(
            "When",
            Value::DateTime(DateTime::parse("2008-07-10T00:00:00.1234567Z").unwrap()),
        );
        e.set(
            "G",
            Value::Guid("c9da6455-213d-42c9-9a79-3e9149a57833".parse().unwrap()),
        );
        e.set("Bin", Value::Binary(vec![0, 255, 10]));
        let etag = table.insert(&e).await.unwrap();
        let got = table
            .get(e.partition_key(), e.row_key())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(got.etag, etag);
        assert_eq!(got.entity.properties().len(), e.properties().len());
        for p in e.properties() {
            let stored = got.entity.custom(&p.name).unwrap();
            match (stored, &p.value) {
                (Value::Double(a), Value::Double(b)) => assert_eq!(a.to_bits(), b.to_bits()),
                (a, b) => assert_eq!(a, b, "{}", p.name),
            }
        }
        assert_eq!(
            tableq_model::json::parse_etag(&etag).ok(),
            got.entity.timestamp()
        );

        let dup = table.insert(&e).await.unwrap_err();
        assert_eq!(
            (code(&dup), dup.status()),
            (ErrorCode::EntityAlreadyExists, Some(409))
        );

        let mut changed = Entity::new(e.partition_key(), e.row_key());
        changed.set("Only", Value::Int32(1));
        let etag2 = table
            .update(&changed, UpdateMode::Replace, &IfMatch::ETag(etag.clone()))
            .await
            .unwrap();
        assert_ne!(etag2, etag);
        let stale = table
            .update(&changed, UpdateMode::Merge, &IfMatch::ETag(etag))
            .await
            .unwrap_err();
        assert_eq!(
            (code(&stale), stale.status()),
            (ErrorCode::UpdateConditionNotSatisfied, Some(412))
        );
        let mut more = Entity::new(e.partition_key(), e.row_key());
        more.set("More", Value::Int32(2));
        table
            .update(&more, UpdateMode::Merge, &IfMatch::Any)
            .await
            .unwrap();
        let merged = table
            .get(e.partition_key(), e.row_key())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(merged.entity.properties().len(), 2, "{:?}", merged.entity);

        // Upserts: insert, then replace / merge.
        let mut u = Entity::new("u", "1");
        u.set("A", Value::Int32(1));
        table.upsert(&u, UpdateMode::Merge).await.unwrap();
        let mut u2 = Entity::new("u", "1");
        u2.set("Batches", Value::Int32(2));
        table.upsert(&u2, UpdateMode::Merge).await.unwrap();
        assert_eq!(
            table
                .get("u", "1")
                .await
                .unwrap()
                .unwrap()
                .entity
                .properties()
                .len(),
            2
        );
        table.upsert(&u2, UpdateMode::Replace).await.unwrap();
        assert_eq!(
            table
                .get("u", "1")
                .await
                .unwrap()
                .unwrap()
                .entity
                .properties()
                .len(),
            1
        );

        let missing = table
            .update(
                &Entity::new("u", "none"),
                UpdateMode::Replace,
                &IfMatch::Any,
            )
            .await
            .unwrap_err();
        assert_eq!(code(&missing), ErrorCode::ResourceNotFound);
        table.delete("u", "1", &IfMatch::Any).await.unwrap();
        assert!(table.get("u", "1").await.unwrap().is_none());
        let again = table.delete("u", "1", &IfMatch::Any).await.unwrap_err();
        assert_eq!(code(&again), ErrorCode::ResourceNotFound);

        let no_table = service.table("Nope").insert(&u).await.unwrap_err();
        assert_eq!(code(&no_table), ErrorCode::TableNotFound);
        let mut bad = Entity::new("p", "r");
        bad.set("Shared", Value::String("x".repeat(40_000)));
        let too_large = table.insert(&bad).await.unwrap_err();
        assert_eq!(code(&too_large), ErrorCode::PropertyValueTooLarge);
    });
}

#[test]
fn queries_page_with_continuations_and_project() {
    let serve = Serve::start();
    let service = client(&serve);
    let table = service.table("Queries");
    runtime().block_on(async {
        service.create_table("Queries").await.unwrap();
        for i in 0..25 {
            let mut e = Entity::new(format!("p{}", i % 2), format!("r{i:02}"));
            e.set("N", Value::Int32(i));
            table.insert(&e).await.unwrap();
        }
        let query = Query::filter("N ge 3").top(10);
        let first = table.query_page(&query, None).await.unwrap();
        assert_eq!(first.rows.len(), 10);
        assert!(first.rows.iter().all(|r| r.etag.is_some()));
        let next = first.continuation.clone().expect("more pages");
        let second = table.query_page(&query, Some(&next)).await.unwrap();
        assert_eq!(second.rows.len(), 10);
        let all = table.query_all(&query).await.unwrap();
        let keys: Vec<(String, String)> = all
            .into_iter()
            .map(|r| {
                let e = r.into_entity().unwrap();
                (e.partition_key().to_owned(), e.row_key().to_owned())
            })
            .collect();
        assert_eq!(keys.len(), 22);
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted, "key order");

        let projected = table
            .query_all(&Query::filter("RowKey eq 'r07'").select("N,Missing"))
            .await
            .unwrap();
        assert_eq!(projected.len(), 1);
        let row = &projected[0].payload;
        assert_eq!(
            (row.partition_key.as_deref(), row.row_key.as_deref()),
            (None, None)
        );
        assert_eq!(row.properties.len(), 1);
        assert_eq!(row.properties[0].value, Value::Int32(7));

        let bad = table
            .query_page(&Query::filter("N EQ 1"), None)
            .await
            .unwrap_err();
        assert_eq!(
            (code(&bad), bad.status()),
            (ErrorCode::InvalidInput, Some(400))
        );
        assert!(bad.to_string().contains("InvalidInput"), "{bad}");
    });
}

#[test]
fn batches_are_atomic_and_name_the_failed_operation() {
    let serve = Serve::start();
    let service = client(&serve);
    let table = service.table("Batches");
    runtime().block_on(async {
        service.create_table("Batches").await.unwrap();
        let etag = table.insert(&Entity::new("p", "old")).await.unwrap();
        let mut a = Entity::new("p", "a");
        a.set("X", Value::Int64(5));
        let etags = table
            .submit_batch(&[
                BatchOperation::insert(&a),
                BatchOperation::new(BatchKind::Upsert(UpdateMode::Merge), &Entity::new("p", "b")),
                BatchOperation::delete("p", "old", IfMatch::ETag(etag)),
            ])
            .await
            .unwrap();
        assert_eq!(etags.len(), 3);
        assert!(
            etags[0].is_some() && etags[0] == etags[1],
            "one Timestamp: {etags:?}"
        );
        assert!(table.get("p", "old").await.unwrap().is_none());
        assert_eq!(
            table
                .get("p", "a")
                .await
                .unwrap()
                .unwrap()
                .entity
                .custom("X"),
            Some(&Value::Int64(5))
        );

        let failed = table
            .submit_batch(&[
                BatchOperation::insert(&Entity::new("p", "c")),
                BatchOperation::insert(&a),
            ])
            .await
            .unwrap_err();
        let service_error = failed.service().expect("a service error");
        assert_eq!(service_error.index, Some(1));
        assert_eq!(
            service_error.error_code(),
            Some(ErrorCode::EntityAlreadyExists)
        );
        assert!(
            table.get("p", "c").await.unwrap().is_none(),
            "nothing was written"
        );

        let mixed = table
            .submit_batch(&[
                BatchOperation::insert(&Entity::new("p", "d")),
                BatchOperation::insert(&Entity::new("q", "d")),
            ])
            .await
            .unwrap_err();
        assert_eq!(
            code(&mixed),
            ErrorCode::CommandsInBatchActOnDifferentPartitions
        );
    });
}

#[test]
fn sas_tokens_shared_key_lite_and_wrong_keys() {
    let serve = Serve::start();
    let service = client(&serve);
    runtime().block_on(async {
        service.create_table("Shared").await.unwrap();
        service
            .table("Shared")
            .insert(&Entity::new("p1", "r"))
            .await
            .unwrap();
        service
            .table("Shared")
            .insert(&Entity::new("p2", "r"))
            .await
            .unwrap();

        let lite = TableServiceClient::new(
            &serve.endpoint,
            Credential::SharedKeyLite(AccountKey::development()),
        )
        .unwrap();
        assert_eq!(lite.list_tables().await.unwrap(), ["Shared"]);

        let token = SasBuilder::table("Shared")
            .permissions("r")
            .window_from_now(None, 3600)
            .start_key("p1", None)
            .end_key("p1", None)
            .sign(&AccountKey::development());
        let sas = TableServiceClient::new(&serve.endpoint, Credential::Sas(token)).unwrap();
        let rows = sas
            .table("Shared")
            .query_all(&Query::default())
            .await
            .unwrap();
        assert_eq!(rows.len(), 1, "the key range limits the query");
        let refused = sas
            .table("Shared")
            .insert(&Entity::new("p1", "x"))
            .await
            .unwrap_err();
        // A valid token without the permission: the service's own code for it.
        assert_eq!(
            (code(&refused), refused.status()),
            (ErrorCode::AuthorizationPermissionMismatch, Some(403))
        );

        let wrong = TableServiceClient::new(
            &serve.endpoint,
            Credential::SharedKey(AccountKey::new("devstoreaccount1", "d3Jvbmcga2V5").unwrap()),
        )
        .unwrap();
        let e = wrong.list_tables().await.unwrap_err();
        assert_eq!(code(&e), ErrorCode::AuthenticationFailed);

        // A connection string of the form `tableq serve`'s banner prints works as it is
        // (the banner itself: tests/client.rs at the workspace root, which runs the binary).
        let line = tableq_client::connection_string(
            &serve.endpoint,
            tableq_client::DEV_ACCOUNT,
            tableq_client::DEV_ACCOUNT_KEY,
        );
        let from_banner = TableServiceClient::from_connection_string(&line).unwrap();
        assert_eq!(from_banner.list_tables().await.unwrap(), ["Shared"]);
    });
}

#[test]
fn unreachable_servers_are_transport_errors() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let service = TableServiceClient::new(
        &format!("http://127.0.0.1:{port}/devstoreaccount1"),
        Credential::SharedKey(AccountKey::development()),
    )
    .unwrap();
    let e = runtime().block_on(service.list_tables()).unwrap_err();
    assert!(matches!(e, ClientError::Unreachable { .. }), "{e:?}");
    assert!(
        e.to_string()
            .starts_with(&format!("cannot reach http://127.0.0.1:{port}/")),
        "{e}"
    );
    assert_eq!(e.code(), None);
}

#[derive(Default)]
struct Tally {
    loaded: Mutex<u64>,
    rejected: Mutex<Vec<(u64, ErrorCode)>>,
}

impl LoadReport for Tally {
    fn loaded(&self, count: u64) {
        *self.loaded.lock().unwrap() += count;
    }
    fn rejected(&self, tag: u64, code: ErrorCode, _message: String) {
        self.rejected.lock().unwrap().push((tag, code));
    }
}

#[test]
fn the_bulk_loader_loads_rejects_and_keeps_partition_order() {
    let serve = Serve::start();
    let service = client(&serve);
    let tally = Arc::new(Tally::default());
    runtime().block_on(async {
        service.create_table("Loaded").await.unwrap();
        let mut loader =
            BulkLoader::start(service.table("Loaded"), LoadMode::Insert, 3, tally.clone()).unwrap();
        let mut tag = 0;
        for i in 0..450u32 {
            tag += 1;
            let (pk, rk) = (format!("p{}", i % 4), format!("r{i:04}"));
            let body = format!(r#"{{"PartitionKey":"{pk}","RowKey":"{rk}","N":{i}}}"#);
            loader
                .push(LoadItem {
                    tag,
                    partition_key: pk,
                    row_key: rk,
                    body,
                })
                .await
                .unwrap();
        }
        // The same keys again (rejected, in a later changeset) and a bad entity.
        for (pk, rk, body) in [
            (
                "p1",
                "r0001",
                r#"{"PartitionKey":"p1","RowKey":"r0001","N":-1}"#.to_owned(),
            ),
            (
                "p2",
                "bad",
                format!(
                    r#"{{"PartitionKey":"p2","RowKey":"bad","Shared":"{}"}}"#,
                    "x".repeat(40_000)
                ),
            ),
        ] {
            tag += 1;
            loader
                .push(LoadItem {
                    tag,
                    partition_key: pk.into(),
                    row_key: rk.into(),
                    body,
                })
                .await
                .unwrap();
        }
        loader.finish().await.unwrap();
        let rows = service
            .table("Loaded")
            .query_all(&Query::default())
            .await
            .unwrap();
        assert_eq!(rows.len(), 450);
        let first = service
            .table("Loaded")
            .get("p1", "r0001")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            first.entity.custom("N"),
            Some(&Value::Int32(1)),
            "the first line wins"
        );
    });
    assert_eq!(*tally.loaded.lock().unwrap(), 450);
    let mut rejected = tally.rejected.lock().unwrap().clone();
    rejected.sort_by_key(|r| r.0);
    assert_eq!(
        rejected,
        [
            (451, ErrorCode::EntityAlreadyExists),
            (452, ErrorCode::PropertyValueTooLarge)
        ]
    );

    // A run-wide refusal stops the loader with the service's error.
    let tally = Arc::new(Tally::default());
    let e = runtime().block_on(async {
        let mut loader =
            BulkLoader::start(service.table("Missing"), LoadMode::Upsert, 2, tally.clone())
                .unwrap();
        let body = r#"{"PartitionKey":"p","RowKey":"r"}"#.to_owned();
        let item = LoadItem {
            tag: 1,
            partition_key: "p".into(),
            row_key: "r".into(),
            body,
        };
        loader.push(item).await.unwrap();
        loader.finish().await.unwrap_err()
    });
    assert_eq!(code(&e), ErrorCode::TableNotFound);
    assert!(
        BulkLoader::start(service.table("Loaded"), LoadMode::Insert, 1, tally).is_err(),
        "outside a runtime"
    );
}

#[test]
fn raw_connections_send_prepared_requests() {
    let serve = Serve::start();
    let service = client(&serve);
    runtime().block_on(async {
        service.create_table("Raw").await.unwrap();
        let table = service.table("Raw");
        let mut connection = Connection::open(&service.authority()).await.unwrap();
        for i in 0..3 {
            let body = format!(r#"{{"PartitionKey":"p","RowKey":"{i}"}}"#);
            let request = service.prepare(table.insert_request(body)).unwrap();
            let (status, _) = connection.send(request).await.unwrap();
            assert_eq!(status.as_u16(), 204);
        }
        let request = service
            .prepare(table.query_request(&Query::default(), None))
            .unwrap();
        let (status, body) = connection.send(request).await.unwrap();
        assert_eq!(status.as_u16(), 200);
        let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(json["value"].as_array().map(Vec::len), Some(3));
    });
}

//! The backend suite (every contract case, and the durable cases: close and reopen on the
//! same database) on the PostgreSQL engine with one server, plus the engine's own tests:
//! pushdown, transfer, errors. See `pg/mod.rs` for how the server is started and stopped.

use crate::pg;
use crate::suite;

use std::sync::Arc;
use tableq_exec::PageOptions;
use tableq_model::{DateTime, Entity, Value};
use tableq_store::metrics::SampleValue;
use tableq_store::postgres::{PostgresBackend, PostgresConfig, PostgresError};
use tableq_store::{Backend, StoreError, WriteOp};

fn fixture(test: &str) -> Option<suite::Fixture> {
    let cluster = pg::single(test)?;
    let (backend, url) = pg::open_single(cluster);
    Some(suite::Fixture::reopenable(
        Arc::new(backend),
        move || Arc::new(PostgresBackend::open(&url).expect("reopen")) as Arc<dyn Backend>,
        (),
    ))
}

backend_suite!(optional fixture);
durable_suite!(optional fixture);

// ---------------------------------------------------------------------------------------
// The engine's own tests.

fn entity(pk: &str, rk: &str, props: &[(&str, Value)]) -> Entity {
    let mut e = Entity::new(pk, rk);
    for (n, v) in props {
        e.set(*n, v.clone());
    }
    e
}

#[test]
fn unreachable_servers_and_bad_urls_are_typed_errors() {
    // A port nothing listens on (connection refused, no waiting).
    let err = PostgresBackend::open("postgres://postgres@127.0.0.1:1/tableq?connect_timeout=2")
        .unwrap_err();
    assert!(matches!(err, PostgresError::Connect { .. }), "{err}");
    assert!(err.to_string().contains("127.0.0.1:1"), "{err}");
    let err = PostgresBackend::open("postgres://u@h/db?pool_size=zero").unwrap_err();
    assert!(matches!(err, PostgresError::InvalidUrl(_)), "{err}");
    // The store's error for it is a 500.
    let store: StoreError = err.into();
    assert_eq!(store.code(), tableq_model::ErrorCode::InternalError);
}

#[test]
fn two_processes_create_the_schema_once() {
    let Some(cluster) = pg::single("two_processes_create_the_schema_once") else {
        return;
    };
    let url = pg::url_with_schema(&cluster.url, &pg::fresh_schema());
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let url = url.clone();
            std::thread::spawn(move || PostgresBackend::open(&url).map(|_| ()))
        })
        .collect();
    for h in handles {
        h.join().unwrap().expect("concurrent open");
    }
    let b = PostgresBackend::open(&url).unwrap();
    assert!(b.describe().contains("one table"), "{}", b.describe());
}

#[test]
fn a_foreign_schema_is_refused() {
    let Some(cluster) = pg::single("a_foreign_schema_is_refused") else {
        return;
    };
    let schema = pg::fresh_schema();
    let mut client = PostgresConfig::from_url(&cluster.url)
        .map(|_| ())
        .and_then(|_| {
            postgres::Client::connect(&cluster.url, postgres::NoTls).map_err(PostgresError::from)
        })
        .unwrap();
    client
        .batch_execute(&format!(
            "CREATE SCHEMA {schema}; CREATE TABLE {schema}.entities (id int)"
        ))
        .unwrap();
    let err = PostgresBackend::open(&pg::url_with_schema(&cluster.url, &schema)).unwrap_err();
    assert!(matches!(err, PostgresError::Schema { .. }), "{err}");
}

#[test]
fn selective_scans_transfer_only_matching_rows() {
    let Some(cluster) = pg::single("selective_scans_transfer_only_matching_rows") else {
        return;
    };
    let (b, _) = pg::open_single(cluster);
    b.create_table("scan").unwrap();
    for p in 0..10 {
        let ops = (0..200)
            .map(|i| WriteOp::Insert {
                entity: entity(
                    &format!("p{p}"),
                    &format!("r{i:04}"),
                    &[
                        ("N", Value::Int32(p * 1000 + i)),
                        ("S", Value::from(format!("s{i}"))),
                    ],
                ),
            })
            .collect();
        b.write_batch("scan", ops).unwrap();
    }
    let before = b.rows_fetched();
    let hits = suite::query_all(
        &b,
        "scan",
        &suite::plan("N ge 9190 or S eq 's7'", None, None),
    );
    assert_eq!(hits.len(), 10 + 10);
    let fetched = b.rows_fetched() - before;
    assert!(
        fetched < 2 * hits.len() as u64,
        "fetched {fetched} for {} matches",
        hits.len()
    );
    // $top: one statement with LIMIT top+1 per page.
    let before = b.rows_fetched();
    let mut next = None;
    let mut seen = 0;
    let plan = suite::plan("PartitionKey eq 'p3'", None, Some("50"));
    loop {
        let page = b
            .query(
                "scan",
                &plan,
                next.as_ref(),
                &PageOptions::default(),
                &mut |_| seen += 1,
            )
            .unwrap();
        match page.continuation {
            Some(k) => next = Some(k),
            None => break,
        }
    }
    assert_eq!(seen, 200);
    let fetched = b.rows_fetched() - before;
    assert!(
        fetched <= 200 + 4,
        "fetched {fetched} rows for 4 pages of 50"
    );
}

#[test]
fn explain_shows_sql_pushdown_and_the_postgres_plan() {
    let Some(cluster) = pg::single("explain_shows_sql_pushdown_and_the_postgres_plan") else {
        return;
    };
    let (b, _) = pg::open_single(cluster);
    b.create_table("explained").unwrap();
    let plan = suite::plan(
        "PartitionKey eq 'p' and RowKey ge 'a' and (Age gt 30 or Name eq 'x')",
        None,
        Some("5"),
    );
    let ex = b.explain("explained", &plan).unwrap();
    let text = ex.details.join("\n");
    assert_eq!(ex.engine, "postgres");
    assert!(
        text.contains("residual pushed down: exact — Age gt 30 or Name eq 'x'"),
        "{text}"
    );
    assert!(text.contains("executor evaluates: nothing more"), "{text}");
    assert!(text.contains("(pk = 'p') AND (rk >= 'a')"), "{text}");
    assert!(text.contains("props @@ '"), "{text}");
    assert!(text.contains("LIMIT 6"), "{text}");
    assert!(text.contains("PostgreSQL plan:"), "{text}");
    assert!(text.contains("Index Scan"), "{text}");
}

#[test]
fn a_selective_page_walks_the_key_index_from_its_start() {
    let Some(cluster) = pg::single("a_selective_page_walks_the_key_index_from_its_start") else {
        return;
    };
    let (b, _) = pg::open_single(cluster);
    b.create_table("walked").unwrap();
    for p in 0..10 {
        let ops = (0..200)
            .map(|i| WriteOp::Insert {
                entity: entity(
                    &format!("p{p}"),
                    &format!("r{i:04}"),
                    &[("N", Value::Int32(p * 1000 + i))],
                ),
            })
            .collect();
        b.write_batch("walked", ops).unwrap();
    }
    // A residual PostgreSQL guesses to match few rows: the page must still be read in key
    // order from its start (the primary key's index, the residual as a filter, stopping at
    // the page's end), never as a scan of the whole table and a sort, which every page
    // would repeat.
    let ex = b
        .explain(
            "walked",
            &suite::plan("N eq 5123 or N eq 7007", None, Some("1")),
        )
        .unwrap();
    let nodes: Vec<String> = ex
        .details
        .iter()
        .skip_while(|l| !l.starts_with("PostgreSQL plan:"))
        .skip(1)
        .map(|l| l.trim().trim_start_matches("->").trim().to_owned())
        .filter(|l| !l.contains(':'))
        .collect();
    assert!(
        nodes
            .iter()
            .any(|n| n.starts_with("Index Scan using entities_pkey")),
        "{:#?}",
        ex.details
    );
    assert!(
        !nodes
            .iter()
            .any(|n| n.contains("Sort") || n.contains("Seq Scan") || n.starts_with("Gather")),
        "{:#?}",
        ex.details
    );
    let hits = suite::query_all(
        &b,
        "walked",
        &suite::plan("N eq 5123 or N eq 7007", None, Some("1")),
    );
    let keys: Vec<(&str, &str)> = hits
        .iter()
        .map(|e| (e.partition_key(), e.row_key()))
        .collect();
    assert_eq!(keys, [("p5", "r0123"), ("p7", "r0007")]);
}

#[test]
fn timestamps_continue_after_the_newest_stored_one() {
    let Some(cluster) = pg::single("timestamps_continue_after_the_newest_stored_one") else {
        return;
    };
    let (b, url) = pg::open_single(cluster);
    b.create_table("future").unwrap();
    b.write(
        "future",
        WriteOp::Insert {
            entity: entity("p", "r", &[]),
        },
    )
    .unwrap();
    // A Timestamp far in the future, as a clock that stepped back would see it.
    let far = DateTime::parse("9000-01-01T00:00:00Z").unwrap();
    let mut client = postgres::Client::connect(&cluster.url, postgres::NoTls).unwrap();
    let schema = schema_of(&url);
    client
        .execute(
            &format!("UPDATE {schema}.entities SET ts = $1"),
            &[&far.ticks()],
        )
        .unwrap();
    let reopened = PostgresBackend::open(&url).unwrap();
    reopened.create_table("other").unwrap();
    let t = reopened
        .write(
            "other",
            WriteOp::Insert {
                entity: entity("p", "r", &[]),
            },
        )
        .unwrap()
        .timestamp;
    assert!(t > far);
}

/// The schema a fixture's URL names (`…?schema=NAME&…`).
fn schema_of(url: &str) -> &str {
    url.split("schema=")
        .nth(1)
        .and_then(|rest| rest.split('&').next())
        .expect("the URL names a schema")
}

#[test]
fn closed_engines_refuse_work() {
    let Some(cluster) = pg::single("closed_engines_refuse_work") else {
        return;
    };
    let (b, _) = pg::open_single(cluster);
    b.create_table("t1x").unwrap();
    b.close().unwrap();
    b.close().unwrap();
    assert!(matches!(b.table("t1x"), Err(StoreError::Closed)));
    assert!(matches!(
        b.write(
            "t1x",
            WriteOp::Insert {
                entity: entity("p", "r", &[])
            }
        ),
        Err(StoreError::Closed)
    ));
}

#[test]
fn point_gets_notice_tables_recreated_by_another_process() {
    let Some(cluster) = pg::single("point_gets_notice_tables_recreated_by_another_process") else {
        return;
    };
    let (a, url) = pg::open_single(cluster);
    let b = PostgresBackend::open(&url).unwrap();
    a.create_table("shared").unwrap();
    a.write(
        "shared",
        WriteOp::Insert {
            entity: entity("p", "r", &[("V", Value::Int32(1))]),
        },
    )
    .unwrap();
    // `a` remembers the table's id.
    assert!(a.get("shared", "p", "r").unwrap().is_some());
    b.delete_table("shared").unwrap();
    assert!(matches!(
        a.get("shared", "p", "r"),
        Err(StoreError::TableNotFound(_))
    ));
    b.create_table("Shared").unwrap();
    b.write(
        "shared",
        WriteOp::Insert {
            entity: entity("p", "r", &[("V", Value::Int32(2))]),
        },
    )
    .unwrap();
    let got = a.get("SHARED", "p", "r").unwrap().unwrap();
    assert_eq!(got.custom("V"), Some(&Value::Int32(2)));
    b.delete_table("shared").unwrap();
    b.create_table("shared").unwrap();
    assert!(a.get("shared", "p", "r").unwrap().is_none());
}

#[test]
fn a_failed_conditional_write_leaves_no_row_locked() {
    let Some(cluster) = pg::single("a_failed_conditional_write_leaves_no_row_locked") else {
        return;
    };
    let (b, url) = pg::open_single(cluster);
    b.create_table("locks").unwrap();
    b.write(
        "locks",
        WriteOp::Insert {
            entity: entity("p", "r", &[]),
        },
    )
    .unwrap();
    // A Replace whose If-Match no longer holds: the entity was read and row-locked (`SELECT
    // … FOR UPDATE`), then the write failed.
    let stale = WriteOp::Replace {
        entity: entity("p", "r", &[("N", Value::Int32(1))]),
        if_match: tableq_store::IfMatch::Timestamp(
            DateTime::parse("2000-01-01T00:00:00Z").unwrap(),
        ),
    };
    let err = b.write("locks", stale).unwrap_err();
    assert_eq!(
        err.code(),
        tableq_model::ErrorCode::UpdateConditionNotSatisfied
    );
    // Its transaction was rolled back then, not when the pooled connection is next used:
    // another session locks the row at once.
    let schema = schema_of(&url);
    let mut client = postgres::Client::connect(&cluster.url, postgres::NoTls).unwrap();
    let mut tx = client.transaction().unwrap();
    tx.batch_execute("SET LOCAL lock_timeout = '2s'").unwrap();
    let locked = tx.query(&format!("SELECT 1 FROM {schema}.entities FOR UPDATE"), &[]);
    assert_eq!(
        locked
            .expect("the row is not held by the failed write")
            .len(),
        1
    );
    tx.rollback().unwrap();
}

/// A table another engine created is left to `get` until one get has looked its id up;
/// then its gets go on the event loop's connections too.
#[test]
fn nonblocking_gets_of_another_engines_table_wait_for_its_id() {
    let Some(cluster) = pg::single("nonblocking_gets_of_another_engines_table_wait_for_its_id")
    else {
        return;
    };
    let (b, url) = pg::open_single(cluster);
    b.create_table("fresh").unwrap();
    let e = entity("p", "r", &[("N", Value::Int32(7))]);
    b.write("fresh", WriteOp::Insert { entity: e }).unwrap();
    let rt = pg::runtime();
    let other = PostgresBackend::open(&url).unwrap();
    assert!(
        rt.block_on(other.get_nonblocking("fresh", "p", "r"))
            .is_none()
    );
    let got = other.get("fresh", "p", "r").unwrap().expect("the row");
    assert_eq!(got.custom("N"), Some(&Value::Int32(7)));
    let again = rt.block_on(other.get_nonblocking("fresh", "p", "r"));
    assert_eq!(again.unwrap().unwrap(), Some(got));
    assert_eq!(other.nonblocking_gets(), 1);
}

/// Point gets issued together on one thread are pipelined on one connection (PostgreSQL
/// reads several statements a wake-up): each gets its own row; a connection the server
/// closed leaves the pool, its gets are left to `get`, and the next ones open another.
#[test]
fn nonblocking_gets_issued_together_share_one_connection() {
    let Some(cluster) = pg::single("nonblocking_gets_issued_together_share_one_connection") else {
        return;
    };
    let (b, url) = pg::open_single(cluster);
    let b = Arc::new(b);
    b.create_table("pipelined").unwrap();
    let keys: Vec<String> = (0..12).map(|i| format!("r{i:02}")).collect();
    for (i, rk) in (0..).zip(&keys) {
        let e = entity("p", rk, &[("N", Value::Int32(i))]);
        b.write("pipelined", WriteOp::Insert { entity: e }).unwrap();
    }
    let expected: Vec<Entity> = keys
        .iter()
        .map(|rk| b.get("pipelined", "p", rk).unwrap().unwrap())
        .collect();
    let rt = pg::runtime();
    // Every get spawned before any is answered: each leases before the first is sent.
    let together = |rt: &tokio::runtime::Runtime| {
        rt.block_on(async {
            let tasks: Vec<_> = keys
                .iter()
                .map(|rk| {
                    let (b, rk) = (b.clone(), rk.clone());
                    tokio::spawn(async move { b.get_nonblocking("pipelined", "p", &rk).await })
                })
                .collect();
            let mut answers = Vec::new();
            for task in tasks {
                answers.push(task.await.unwrap());
            }
            answers
        })
    };
    // (connections opened since the start, connections open)
    let connections = || {
        let metrics = b.metrics();
        let metric = |name: &str| {
            metrics
                .samples()
                .iter()
                .find(|s| s.name == name)
                .map(|s| s.value.clone())
                .unwrap_or_else(|| panic!("no {name}"))
        };
        (
            metric("pg_nonblocking_connections_opened_total"),
            metric("pg_nonblocking_connections_open"),
        )
    };
    for (answer, want) in together(&rt).into_iter().zip(&expected) {
        assert_eq!(answer.unwrap().unwrap().as_ref(), Some(want));
    }
    assert_eq!(
        connections(),
        (SampleValue::Counter(1), SampleValue::Gauge(1.0))
    );

    // The server closes the engine's connections: the gets sent on the closed one fail
    // over to `get` (never a wrong row, never an error), and the next ones open another.
    let schema = PostgresConfig::from_url(&url)
        .unwrap()
        .schema_name()
        .to_owned();
    let mut admin = postgres::Client::connect(&cluster.url, postgres::NoTls).unwrap();
    let closed = admin
        .query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE pid <> pg_backend_pid() AND strpos(query, $1) > 0",
            &[&format!("\"{schema}\".entities")],
        )
        .unwrap();
    assert!(!closed.is_empty());
    for (answer, want) in together(&rt).into_iter().zip(&expected) {
        if let Some(answer) = answer {
            assert_eq!(answer.unwrap().as_ref(), Some(want));
        }
    }
    for (answer, want) in together(&rt).into_iter().zip(&expected) {
        assert_eq!(answer.unwrap().unwrap().as_ref(), Some(want));
    }
    assert_eq!(
        connections(),
        (SampleValue::Counter(2), SampleValue::Gauge(1.0))
    );
}

/// Point gets without a blocking thread (`Backend::get_nonblocking`, what the HTTP server
/// calls): `get`'s answers on connections driven by the caller's runtime, and the get left
/// to `get` when they cannot settle it (the table's id not known yet, or stale).
#[test]
fn nonblocking_gets_answer_as_get_does_and_leave_the_rest_to_it() {
    let Some(cluster) = pg::single("nonblocking_gets_answer_as_get_does") else {
        return;
    };
    let (b, url) = pg::open_single(cluster);
    b.create_table("nonblocking").unwrap();
    let e = entity("p", "r", &[("N", Value::Int32(7))]);
    b.write("nonblocking", WriteOp::Insert { entity: e })
        .unwrap();
    let nb = |rt: &tokio::runtime::Runtime, pk: &str, rk: &str| {
        rt.block_on(b.get_nonblocking("nonblocking", pk, rk))
    };
    let rt = pg::runtime();
    // This engine created the table, so it knows the id: the first get answers here.
    let got = b.get("nonblocking", "p", "r").unwrap();
    assert!(got.is_some());
    assert_eq!(nb(&rt, "p", "r").unwrap().unwrap(), got);
    assert_eq!(nb(&rt, "p", "absent").unwrap().unwrap(), None);
    assert_eq!(b.nonblocking_gets(), 2);
    // The connection's driver ended with its runtime: it is not lent again, and a get on
    // another runtime opens one of its own.
    drop(rt);
    let rt = pg::runtime();
    assert_eq!(nb(&rt, "p", "r").unwrap().unwrap(), got);
    assert_eq!(b.nonblocking_gets(), 3);
    // The table deleted by another process: the remembered id finds no table, and `get`
    // tells what happened.
    PostgresBackend::open(&url)
        .unwrap()
        .delete_table("nonblocking")
        .unwrap();
    assert!(nb(&rt, "p", "r").is_none());
    assert!(matches!(
        b.get("nonblocking", "p", "r"),
        Err(StoreError::TableNotFound(_))
    ));
    assert!(nb(&rt, "p", "r").is_none());
    // A closed engine answers as `get` does.
    b.close().unwrap();
    assert!(matches!(nb(&rt, "p", "r"), Some(Err(StoreError::Closed))));
}

/// A URL whose host is a directory (percent-encoded) reaches the server through its Unix
/// socket there — writes, `get`, the event loop's gets and a scan — and names the
/// directory in what it reports; a directory without the server's socket is a typed
/// connect error naming it.
#[test]
fn a_unix_socket_directory_as_the_host_reaches_the_server() {
    let Some(cluster) = pg::single("a_unix_socket_directory_as_the_host_reaches_the_server") else {
        return;
    };
    assert!(
        cluster.socket_url.contains("@%2F"),
        "{}",
        cluster.socket_url
    );
    let url = pg::url_with_schema(&cluster.socket_url, &pg::fresh_schema());
    let b = PostgresBackend::open(&url).expect("open through the socket");
    assert!(
        b.config()
            .target()
            .starts_with(&format!("postgres@{}:", cluster.dir)),
        "{}",
        b.config().target()
    );
    b.create_table("bysocket").unwrap();
    for rk in ["a", "b", "c"] {
        let e = entity("p", rk, &[("N", Value::Int32(1))]);
        b.write("bysocket", WriteOp::Insert { entity: e }).unwrap();
    }
    let got = b.get("bysocket", "p", "b").unwrap().expect("the row");
    let rt = pg::runtime();
    let nb = rt.block_on(b.get_nonblocking("bysocket", "p", "b"));
    assert_eq!(nb.unwrap().unwrap(), Some(got));
    assert_eq!(b.nonblocking_gets(), 1);
    let hits = suite::query_all(&b, "bysocket", &suite::plan("N eq 1", None, None));
    assert_eq!(hits.len(), 3);

    // The same URL with a directory that holds no socket: refused at once, by path.
    let missing = format!("{}/none", cluster.dir).replace('/', "%2F");
    let port = cluster.url.rsplit(':').next().unwrap();
    let err = PostgresBackend::open(&format!(
        "postgres://postgres@{missing}:{port}?connect_timeout=2"
    ))
    .unwrap_err();
    assert!(matches!(err, PostgresError::Connect { .. }), "{err}");
    assert!(
        err.to_string().contains(&format!("{}/none", cluster.dir)),
        "{err}"
    );
}

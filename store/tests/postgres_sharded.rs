//! The backend suite on the partitioned layout: a coordinator whose entity table is
//! hash-partitioned on PartitionKey into three foreign tables (postgres_fdw) on three other
//! servers, each test in its own provisioned schema; plus the checks that a partition query
//! touches one shard and that the script's own layout opens. See `pg/mod.rs` for how the
//! servers are started and stopped.

use crate::pg;
use crate::suite;

use std::sync::Arc;
use tableq_model::{Entity, Value};
use tableq_store::postgres::{Layout, PostgresBackend};
use tableq_store::{Backend, WriteOp};

fn fixture(test: &str) -> Option<suite::Fixture> {
    let cluster = pg::sharded(test)?;
    let (backend, url) = pg::open_sharded(cluster);
    Some(suite::Fixture::reopenable(
        Arc::new(backend),
        move || Arc::new(PostgresBackend::open(&url).expect("reopen")) as Arc<dyn Backend>,
        (),
    ))
}

backend_suite!(optional fixture);
durable_suite!(optional fixture);

fn loaded(test: &str) -> Option<PostgresBackend> {
    let cluster = pg::sharded(test)?;
    let (b, _) = pg::open_sharded(cluster);
    assert_eq!(
        b.layout(),
        &Layout::Partitioned {
            partitions: 3,
            foreign: 3
        }
    );
    b.create_table("spread").unwrap();
    for p in 0..12 {
        let ops = (0..20)
            .map(|i| {
                let mut e = Entity::new(format!("p{p:02}"), format!("r{i:02}"));
                e.set("N", Value::Int32(p * 100 + i));
                WriteOp::Insert { entity: e }
            })
            .collect();
        b.write_batch("spread", ops).unwrap();
    }
    Some(b)
}

/// The foreign scans of a plan in the PostgreSQL plan `explain` shows.
fn foreign_scans(b: &PostgresBackend, filter: &str) -> Vec<String> {
    let ex = b
        .explain("spread", &suite::plan(filter, None, None))
        .unwrap();
    ex.details
        .iter()
        .filter(|l| l.contains("Foreign Scan on"))
        .cloned()
        .collect()
}

#[test]
fn a_partition_query_touches_one_shard() {
    let Some(b) = loaded("a_partition_query_touches_one_shard") else {
        return;
    };
    let one = foreign_scans(&b, "PartitionKey eq 'p07' and N gt 705");
    assert_eq!(one.len(), 1, "{one:?}");
    let point = foreign_scans(&b, "PartitionKey eq 'p07' and RowKey eq 'r03'");
    assert_eq!(point.len(), 1, "{point:?}");
    let all = foreign_scans(&b, "N gt 705");
    assert_eq!(all.len(), 3, "{all:?}");
    // And the remote statement carries the pushed-down residual.
    let ex = b
        .explain(
            "spread",
            &suite::plan("PartitionKey eq 'p07' and N gt 705", None, None),
        )
        .unwrap();
    let remote: Vec<&String> = ex
        .details
        .iter()
        .filter(|l| l.contains("Remote SQL"))
        .collect();
    assert_eq!(remote.len(), 1, "{:#?}", ex.details);
    assert!(
        remote[0].contains("props @@") && remote[0].contains("pk = 'p07'"),
        "{remote:?}"
    );
    assert_eq!(
        suite::query_all(
            &b,
            "spread",
            &suite::plan("PartitionKey eq 'p07' and N gt 705", None, None)
        )
        .len(),
        14
    );
}

#[test]
fn entities_spread_over_every_shard() {
    let Some(cluster) = pg::sharded("entities_spread_over_every_shard") else {
        return;
    };
    let Some(b) = loaded("entities_spread_over_every_shard") else {
        return;
    };
    let schema = b.config().schema_name().to_owned();
    let mut counts = Vec::new();
    for url in &cluster.shards {
        let mut c = postgres::Client::connect(url, postgres::NoTls).unwrap();
        let n: i64 = c
            .query_one(&format!("SELECT count(*) FROM {schema}.entities"), &[])
            .unwrap()
            .get(0);
        counts.push(n);
    }
    assert_eq!(counts.iter().sum::<i64>(), 240);
    assert!(counts.iter().all(|&n| n > 0 && n % 20 == 0), "{counts:?}");
}

#[test]
fn the_scripts_layout_opens_and_works() {
    let Some(cluster) = pg::sharded("the_scripts_layout_opens_and_works") else {
        return;
    };
    // The script provisioned the default schema `tableq` with psql.
    let b = PostgresBackend::open(&cluster.url).unwrap();
    assert!(
        b.describe().contains("3 partitions (3 foreign)"),
        "{}",
        b.describe()
    );
    assert_eq!(b.routed_shards(), 3, "point gets go straight to the shards");
    b.create_table("ScriptLayout").unwrap();
    let ops = (0..30)
        .map(|i| WriteOp::Insert {
            entity: Entity::new(format!("p{}", i % 5), format!("r{i}")),
        })
        .collect();
    b.write_batch("scriptlayout", ops).unwrap();
    assert_eq!(
        suite::query_all(
            &b,
            "ScriptLayout",
            &suite::plan("PartitionKey eq 'p3'", None, None)
        )
        .len(),
        6
    );
}

/// The nodes of the PostgreSQL plan `explain` shows (`Limit`, `Merge Append`, …), one per
/// plan line that starts a node.
fn plan_nodes(details: &[String]) -> Vec<String> {
    details
        .iter()
        .skip_while(|l| !l.starts_with("PostgreSQL plan:"))
        .skip(1)
        .map(|l| l.trim().trim_start_matches("->").trim().to_owned())
        .filter(|l| !l.contains(':'))
        .collect()
}

#[test]
fn a_page_over_every_shard_merges_their_ordered_scans() {
    let Some(b) = loaded("a_page_over_every_shard_merges_their_ordered_scans") else {
        return;
    };
    let ex = b
        .explain("spread", &suite::plan("N gt 705", None, Some("10")))
        .unwrap();
    let nodes = plan_nodes(&ex.details);
    // Limit → Merge Append of the three foreign scans: no local sort of whole partitions.
    assert!(
        nodes.iter().any(|n| n.starts_with("Merge Append")),
        "{:#?}",
        ex.details
    );
    assert!(
        !nodes
            .iter()
            .any(|n| n.starts_with("Sort") || n.starts_with("Incremental Sort")),
        "{:#?}",
        ex.details
    );
    let remote: Vec<&String> = ex
        .details
        .iter()
        .filter(|l| l.contains("Remote SQL"))
        .collect();
    assert_eq!(remote.len(), 3, "{:#?}", ex.details);
    for r in remote {
        // Each shard walks its primary key in key order, with the residual.
        assert!(
            r.contains("ORDER BY pk ASC NULLS LAST, rk ASC NULLS LAST") && r.contains("props @@"),
            "{r}"
        );
    }
}

#[test]
fn shards_are_read_in_small_fetches() {
    let Some(cluster) = pg::sharded("shards_are_read_in_small_fetches") else {
        return;
    };
    // Both ways of provisioning: tableq's (`provision_sharded`) and the script's.
    let (b, _) = pg::open_sharded(cluster);
    let schema = b.config().schema_name().to_owned();
    let mut c = postgres::Client::connect(&cluster.url, postgres::NoTls).unwrap();
    for pattern in [format!("{schema}_shard%"), "shard%".to_owned()] {
        let rows = c
            .query(
                "SELECT srvname::text, array_to_string(srvoptions, ',') FROM pg_foreign_server \
                 WHERE srvname LIKE $1",
                &[&pattern],
            )
            .unwrap();
        assert_eq!(rows.len(), 3, "{pattern}");
        for row in rows {
            let (name, options): (String, String) = (row.get(0), row.get(1));
            let fetch: usize = options
                .split(',')
                .find_map(|o| o.strip_prefix("fetch_size="))
                .unwrap_or_else(|| panic!("{name}: no fetch_size in {options}"))
                .parse()
                .unwrap();
            // A page's Merge Append pulls rows from each shard as it needs them, one FETCH
            // at a time: a shard never reads far past its share of the page.
            assert!(fetch <= 100, "{name}: {options}");
        }
    }
}

#[test]
fn paging_over_three_shards_is_exact_and_complete() {
    let Some(b) = loaded("paging_over_three_shards_is_exact_and_complete") else {
        return;
    };
    // What `loaded` wrote: p00…p11 × r00…r19, N = p * 100 + i.
    type Row = (String, String, i32);
    type Case = (&'static str, fn(&Row) -> bool);
    let all: Vec<Row> = (0..12)
        .flat_map(|p| (0..20).map(move |i| (format!("p{p:02}"), format!("r{i:02}"), p * 100 + i)))
        .collect();
    let cases: [Case; 4] = [
        ("N ge 0", |_| true),
        ("N gt 305 and N lt 1013", |e| e.2 > 305 && e.2 < 1013),
        ("RowKey ge 'r05' and RowKey lt 'r08'", |e| {
            e.1.as_str() >= "r05" && e.1.as_str() < "r08"
        }),
        (
            "PartitionKey ge 'p03' and PartitionKey lt 'p05' and N ne 410",
            |e| e.0.as_str() >= "p03" && e.0.as_str() < "p05" && e.2 != 410,
        ),
    ];
    for (filter, keep) in cases {
        let expected: Vec<(String, String)> = all
            .iter()
            .filter(|e| keep(e))
            .map(|e| (e.0.clone(), e.1.clone()))
            .collect();
        for top in ["1", "7", "50"] {
            let size: usize = top.parse().unwrap();
            let plan = suite::plan(filter, None, Some(top));
            let mut got = Vec::new();
            let mut next = None;
            let mut pages = 0;
            loop {
                let mut page = Vec::new();
                let out = b
                    .query(
                        "spread",
                        &plan,
                        next.as_ref(),
                        &tableq_exec::PageOptions::default(),
                        &mut |row| {
                            let e = row.to_result_row().entity;
                            page.push((e.partition_key().to_owned(), e.row_key().to_owned()));
                        },
                    )
                    .unwrap();
                pages += 1;
                assert!(
                    page.len() <= size,
                    "{filter} top {top}: page of {}",
                    page.len()
                );
                got.extend(page);
                match out.continuation {
                    Some(k) => next = Some(k),
                    None => break,
                }
                assert!(
                    pages <= expected.len() + 1,
                    "{filter} top {top}: endless paging"
                );
            }
            assert_eq!(got, expected, "{filter} top {top}");
        }
    }
}

/// Point gets go straight to the shard that holds the PartitionKey (the engine hashes it
/// as PostgreSQL does): every stored entity, whatever its key's length or characters, is
/// answered by its shard. A miss goes through the coordinator, which tells a missing
/// entity from a missing table, also after the table was deleted and created again.
#[test]
fn point_gets_go_straight_to_the_shard() {
    let Some(cluster) = pg::sharded("point_gets_go_straight_to_the_shard") else {
        return;
    };
    let (b, _) = pg::open_sharded(cluster);
    assert_eq!(b.routed_shards(), 3);
    b.create_table("routed").unwrap();
    // Keys of every length of a hash round's tail and beyond, and non-ASCII ones.
    let keys: Vec<String> = (0..40)
        .map(|n| "k".repeat(n))
        .chain(["p000", "ключ", "鍵", "\u{10000}x", "a'b", "\u{E000}z"].map(String::from))
        .collect();
    let ops = keys
        .iter()
        .enumerate()
        .map(|(i, pk)| {
            let mut e = Entity::new(pk.as_str(), "r");
            e.set("N", Value::Int32(i as i32));
            WriteOp::Insert { entity: e }
        })
        .collect::<Vec<_>>();
    for op in ops {
        b.write("routed", op).unwrap();
    }
    // The first get learns the table's id through the coordinator.
    assert!(b.get("routed", "absent", "r").unwrap().is_none());
    let before = b.routed_gets();
    for (i, pk) in keys.iter().enumerate() {
        let e = b.get("routed", pk, "r").unwrap().expect(pk);
        assert_eq!(
            e.get("N").map(|v| v.to_owned()),
            Some(Value::Int32(i as i32)),
            "{pk:?}"
        );
    }
    assert_eq!(b.routed_gets() - before, keys.len() as u64);
    // The same without a blocking thread (what the HTTP server calls): every entity from
    // its shard, on connections driven by the caller's runtime.
    let rt = pg::runtime();
    for (i, pk) in keys.iter().enumerate() {
        let e = rt
            .block_on(b.get_nonblocking("routed", pk, "r"))
            .expect("answered")
            .unwrap()
            .expect(pk);
        assert_eq!(
            e.get("N").map(|v| v.to_owned()),
            Some(Value::Int32(i as i32)),
            "{pk:?}"
        );
    }
    assert_eq!(b.routed_gets() - before, 2 * keys.len() as u64);
    assert_eq!(b.nonblocking_gets(), keys.len() as u64);
    // A miss: the coordinator's statement tells a missing entity of an existing table.
    let miss = rt.block_on(b.get_nonblocking("routed", "k", "other"));
    assert_eq!(miss.expect("answered").unwrap(), None);
    let before = b.routed_gets();
    // Misses: through the coordinator, with its answers.
    assert!(b.get("routed", "k", "other").unwrap().is_none());
    b.delete_table("routed").unwrap();
    assert!(matches!(
        b.get("routed", "p000", "r"),
        Err(tableq_store::StoreError::TableNotFound(_))
    ));
    b.create_table("routed").unwrap();
    assert!(b.get("routed", "p000", "r").unwrap().is_none());
    b.write(
        "routed",
        WriteOp::Insert {
            entity: Entity::new("p000", "r"),
        },
    )
    .unwrap();
    let e = b.get("routed", "p000", "r").unwrap().unwrap();
    assert!(e.get("N").is_none());
    assert_eq!(b.routed_gets() - before, 1);
}

//! The backend suite on the partitioned layout: a coordinator whose entity table is
//! hash-partitioned on PartitionKey into three foreign tables (postgres_fdw) on three other
//! servers, each test in its own provisioned schema; plus the checks that a partition query
//! touches one shard and that the script's own layout opens. See `pg/mod.rs` for how the
//! servers are started and stopped.

mod pg;
mod suite;

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

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

pg_cases!(fixture;
    tables_keep_creation_case_and_ignore_case_on_lookup,
    table_names_are_validated,
    tables_are_listed_in_lowercase_order,
    deleting_a_table_deletes_its_entities,
    missing_tables_are_reported,
    insert_get_and_timestamps,
    insert_of_an_existing_entity_conflicts,
    replace_needs_an_existing_entity_and_a_matching_etag,
    merge_keeps_unmentioned_properties,
    upserts_insert_or_update,
    delete_honours_if_match,
    timestamps_strictly_increase_per_entity,
    payload_timestamps_are_ignored,
    entities_are_validated_with_the_services_codes,
    merge_past_the_limits_is_rejected,
    batches_are_atomic_and_share_one_timestamp,
    batches_reject_duplicate_rows,
    batch_operations_see_earlier_ones,
    every_edm_type_round_trips,
    key_order_is_utf16_ordinal,
    queries_equal_naive_evaluation,
    paging_resumes_exactly_across_writes,
    select_projects_and_nulls_missing_names,
    point_partition_and_range_plans,
    concurrent_if_match_increments_lose_no_update,
    concurrent_inserts_are_all_kept,
    service_properties_start_default_and_round_trip,
    service_properties_are_validated,
    table_acls_round_trip_and_go_with_their_table,
    create_table_racing_delete_table_never_reports_not_found,
    // durable_suite!
    data_survives_reopen,
    timestamps_keep_increasing_after_reopen,
    deleted_tables_stay_deleted_after_reopen,
    settings_survive_reopen,
);

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

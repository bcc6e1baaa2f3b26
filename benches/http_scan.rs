//! Criterion benchmark `http_scan`: a selective full scan in process and through the HTTP
//! server, on the same data and the same engine (issue 17 §2: the HTTP scan within 1.5× of
//! the in-process executor).
//!
//! 100 000 entities of `tableq::datagen` (100 partitions, seed 0) are loaded into an engine
//! (`memory`, and `durable` in a temporary directory with its default `--fsync
//! interval=1000`; measured once the load is flushed from its memtables into redb's
//! blocks, as it is within a second of the last write). For each engine:
//!
//! * `in_process/<engine>` — `Backend::query` of the plan the server would build
//!   (`Age eq 42 and Score lt 500.0`, ≈ 500 matches, one page), every row visited;
//! * `in_process_json/<engine>` — the same, every result row written as JSON the way the
//!   server writes it at `nometadata` (what serialisation alone costs);
//! * `http/<engine>` — the same query as `GET /devstoreaccount1/bench()?$filter=…` on one
//!   keep-alive connection to a `tableq_server::Server` over that backend (signed with
//!   SharedKey, `nometadata` JSON), the whole body read. The answer must hold every match
//!   in one page (checked before measuring).
//!
//! Run: `cargo bench --bench http_scan -- --warm-up-time 1 --measurement-time 3`.
//! Results: `benches/README.md`, section `http-scan`.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use std::sync::Arc;
use tableq::datagen::{GenOptions, Generator};
use tableq::exec::PageOptions;
use tableq::model::json::{EntityWriter, EnvelopeRef, MetadataLevel};
use tableq::planner::plan::Plan;
use tableq::planner::{Query, QueryText};
use tableq_client::TableServiceClient;
use tableq_client::conn::Connection;
use tableq_parser::FilterOptions;
use tableq_server::{Server, ServerConfig};
use tableq_store::{Backend, DurableBackend, MemoryBackend, WriteOp};

const ENTITIES: u64 = 100_000;
const FILTER: &str = "Age eq 42 and Score lt 500.0";
const TABLE: &str = "bench";

fn load(backend: &dyn Backend) {
    backend.create_table(TABLE).expect("create the table");
    let generator = Generator::new(GenOptions {
        entities: ENTITIES,
        partitions: 100,
        seed: 0,
        timestamps: false,
    });
    // `gen` emits key order: consecutive entities of one partition share a batch.
    let mut ops: Vec<WriteOp> = Vec::new();
    let mut partition = String::new();
    for entity in generator {
        if entity.partition_key() != partition || ops.len() == 100 {
            if !ops.is_empty() {
                backend
                    .write_batch(TABLE, std::mem::take(&mut ops))
                    .expect("load a batch");
            }
            partition = entity.partition_key().to_owned();
        }
        ops.push(WriteOp::Insert { entity });
    }
    if !ops.is_empty() {
        backend.write_batch(TABLE, ops).expect("load a batch");
    }
}

fn plan() -> Plan {
    Query::parse(
        QueryText {
            filter: Some(FILTER),
            ..QueryText::default()
        },
        &FilterOptions::default(),
    )
    .expect("the filter parses")
    .plan()
}

fn in_process(backend: &dyn Backend, plan: &Plan) -> usize {
    let mut rows = 0usize;
    let page = backend
        .query(TABLE, plan, None, &PageOptions::default(), &mut |row| {
            black_box(&row);
            rows += 1;
        })
        .expect("the query runs");
    assert!(page.continuation.is_none(), "one page holds every match");
    rows
}

/// The same page with every result row written as the server writes it at `nometadata`
/// (`EntityWriter` into one reused buffer): the in-process half of what the HTTP path adds.
fn in_process_json(backend: &dyn Backend, plan: &Plan, out: &mut Vec<u8>) -> usize {
    let writer = EntityWriter::new(MetadataLevel::NoMetadata);
    out.clear();
    let mut rows = 0usize;
    let page = backend
        .query(TABLE, plan, None, &PageOptions::default(), &mut |row| {
            writer.write(out, row.row(), EnvelopeRef::default());
            out.push(b',');
            rows += 1;
        })
        .expect("the query runs");
    assert!(page.continuation.is_none(), "one page holds every match");
    black_box(&out);
    rows
}

fn scan(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("tableq-http-scan-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let durable = Arc::new(DurableBackend::open(&dir).expect("open the durable store"));
    let engines: Vec<(&str, Arc<dyn Backend>)> = vec![
        ("memory", Arc::new(MemoryBackend::new())),
        ("durable", durable.clone()),
    ];
    let server_runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("the server's runtime");
    let client_runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("the client's runtime");
    let plan = plan();
    let mut group = c.benchmark_group("http_scan");
    group.throughput(Throughput::Elements(ENTITIES));
    for (name, backend) in engines {
        load(&*backend);
        if name == "durable" {
            // Measure the steady state: the rows in redb's blocks, as the engine has them
            // within its flush interval (1 s) of the last write.
            let waited = std::time::Instant::now();
            while durable.write_log_stats().memtable_bytes > 0 {
                assert!(waited.elapsed().as_secs() < 60, "the load was not flushed");
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
        let matches = in_process(&*backend, &plan);
        eprintln!("{name}: {ENTITIES} entities, `{FILTER}` matches {matches}");
        group.bench_function(format!("in_process/{name}"), |b| {
            b.iter(|| in_process(&*backend, &plan))
        });
        let mut out = Vec::new();
        group.bench_function(format!("in_process_json/{name}"), |b| {
            b.iter(|| in_process_json(&*backend, &plan, &mut out))
        });

        let server = server_runtime
            .block_on(Server::bind(
                "127.0.0.1:0".parse().expect("an address"),
                backend.clone(),
                ServerConfig::default(),
            ))
            .expect("bind the server");
        let endpoint = server.table_endpoint();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let running = server_runtime.spawn(server.run_until(async move {
            let _ = stopped.await;
        }));
        let service = TableServiceClient::from_connection_string(&format!(
            "DefaultEndpointsProtocol=http;AccountName={};AccountKey={};TableEndpoint={endpoint}",
            tableq_server::DEV_ACCOUNT,
            tableq_server::DEV_ACCOUNT_KEY,
        ))
        .expect("the connection string");
        let mut connection = client_runtime
            .block_on(Connection::open(&service.authority()))
            .expect("connect");
        let request = || {
            service
                .prepare(
                    service
                        .request(reqwest::Method::GET, &format!("{TABLE}()"))
                        .query(&[("$filter", FILTER)])
                        .header("Accept", "application/json;odata=nometadata"),
                )
                .expect("a request")
        };
        let (status, body) = client_runtime
            .block_on(connection.send(request()))
            .expect("the query over HTTP");
        assert!(status.is_success(), "{status}: {body:?}");
        let value: serde_json::Value = serde_json::from_slice(&body).expect("a JSON page");
        let rows = value["value"].as_array().map_or(0, Vec::len);
        assert_eq!(rows, matches, "the HTTP page holds every match");
        group.bench_function(format!("http/{name}"), |b| {
            b.iter_batched(
                request,
                |r| {
                    let (status, body) = client_runtime
                        .block_on(connection.send(r))
                        .expect("the query over HTTP");
                    assert!(status.is_success());
                    body
                },
                criterion::BatchSize::SmallInput,
            )
        });
        let _ = stop.send(());
        server_runtime
            .block_on(running)
            .expect("the server task")
            .expect("the server stops");
    }
    group.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, scan);
criterion_main!(benches);

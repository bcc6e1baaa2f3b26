//! `tableq bench-http`: an HTTP load benchmark of the emulator with a real client, on one
//! client thread: requests are built and signed by `tableq-client` (as `tableq import`
//! sends them), the load goes through its bulk loader, and the measured scenarios send on
//! keep-alive connections of hyper's HTTP/1.1 connection API
//! (`tableq_client::conn::Connection`, one per concurrent client: reqwest's own layers
//! would take CPU from the server on a small machine).
//!
//! The command is split by concern: [`process`] starts and stops its own server,
//! [`load`] loads the data set, [`runner`] runs a scenario and the full scan, [`report`]
//! summarises figures, prints the Markdown table and reads `/proc`; this module holds the
//! arguments and the scenarios.
//!
//! ```text
//! tableq bench-http --data DIR [--entities N]        # starts `tableq serve --data DIR` itself
//! tableq bench-http --endpoint URL [--server-pid PID] [--entities N]
//! ```
//!
//! 1. **Load**: unless the table (`--table`, default `bench`) already holds the data set,
//!    creates it and inserts `N` entities of `tableq gen` (seed 0, `N / 1000` partitions, so
//!    that every partition holds 1 000 entities) as `$batch` changesets of 100 entities
//!    of one partition, `--load-clients` at a time, and reports the load rate.
//! 2. **Scenarios**, each run for `--seconds` after a short warm-up, with `C` concurrent
//!    clients on one client thread; every request is checked (status, and the row count of
//!    the first answer of each query scenario):
//!    point get; the same point as `$filter`; a partition query (1 000 rows, one page); a
//!    RowKey range (100 rows); a full-scan selective filter (`Age eq 7 and Score lt 10.0`,
//!    all pages); an OR of 5 points; single inserts with 1 and 8 clients; batch inserts
//!    (100-entity changesets, each in a new partition, 4 clients; also printed as
//!    entities/s). `--only TEXT` (repeatable) runs just the scenarios whose name contains
//!    TEXT (case-insensitive; a TEXT that names no scenario is an error).
//!
//! Every request is signed with SharedKey (the development account, or `--account
//! NAME:KEY`); `--no-auth` starts the server without authorization, to compare.
//! 3. **Server memory**: `VmHWM` (peak) and `VmRSS` of the server from
//!    `/proc/<pid>/status` (Linux; `--server-pid` with `--endpoint`).
//!
//! Latencies are client-side (request sent → body read), p50/p99 over every request of the
//! scenario; req/s is requests over the scenario's wall time. The output is a Markdown table.
//! **Exit code**: `0` every scenario ran and every answer was right; `1` the run failed (the
//! endpoint unreachable or refusing the signature, an answer wrong), with the reason on
//! stderr; `2` the arguments or the benchmark's own server did not allow a start.
//!
//! A server started by the benchmark logs at `warn` (`--server-log` to change it) and is
//! stopped with SIGTERM at the end.

mod load;
mod process;
mod report;
mod runner;

use report::{load_average, memory};
use reqwest::Method;
use std::path::PathBuf;
use std::process::ExitCode;
use std::rc::Rc;
use std::time::Duration;
use tableq::datagen::{GenOptions, Generator};
use tableq::model::json::MetadataLevel;
use tableq_client::batch::MAX_OPERATIONS;
use tableq_client::path::entity_link;
use tableq_client::{BatchKind, BatchOperation, Query};

/// Arguments of `tableq bench-http`.
#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("server").required(true).args(["data", "endpoint"])))]
pub struct Args {
    /// Start `tableq serve --data DIR --port 0` (this binary) and benchmark it.
    #[arg(long, value_name = "DIR")]
    data: Option<PathBuf>,
    /// Benchmark a running server: its table endpoint.
    #[arg(long, value_name = "URL")]
    endpoint: Option<String>,
    /// The running server's process id, for its memory figures (with --endpoint).
    #[arg(long, value_name = "PID", requires = "endpoint")]
    server_pid: Option<u32>,
    /// Entities in the data set.
    #[arg(long, value_name = "N", default_value_t = 100_000,
          value_parser = clap::value_parser!(u64).range(1000..))]
    entities: u64,
    /// The table.
    #[arg(long, default_value = "bench")]
    table: String,
    /// Seconds each scenario runs.
    #[arg(long, value_name = "S", default_value_t = 3.0)]
    seconds: f64,
    /// Concurrent requests while loading.
    #[arg(long, value_name = "N", default_value_t = 16)]
    load_clients: usize,
    /// Concurrent clients of the throughput runs of the read scenarios.
    #[arg(long, value_name = "N", default_value_t = 4)]
    clients: usize,
    /// Sign requests (SharedKey) with this account's key (default: the development account
    /// and its well-known key). NAME must be the endpoint's account.
    #[arg(long, value_name = "NAME:BASE64KEY")]
    account: Option<String>,
    /// Start the server with `--no-auth` (with --data), to measure what signing costs.
    #[arg(long, requires = "data")]
    no_auth: bool,
    /// Run only the scenarios whose name contains TEXT (case-insensitive; repeatable), e.g.
    /// `--only 'point get'` (the load step always runs).
    #[arg(long, value_name = "TEXT")]
    only: Vec<String>,
    /// `RUST_LOG` of a server started by the benchmark.
    #[arg(long, value_name = "FILTER", default_value = "warn")]
    server_log: String,
}

// The scenarios' names (the rows of the result table).
const POINT_GET: &str = "point get";
const POINT_FILTER: &str = "point as $filter";
const PARTITION: &str = "partition query (1 000 rows)";
const RANGE: &str = "RowKey range (100 rows)";
const OR_POINTS: &str = "OR of 5 points";
const FULL_SCAN: &str = "full scan, selective filter";
const INSERT: &str = "single insert (durable)";
const BATCH: &str = "batch insert, 100-entity batches (durable)";

/// Every scenario's name, in the order they run (what `--only` matches against).
const SCENARIOS: [&str; 8] = [
    POINT_GET,
    POINT_FILTER,
    PARTITION,
    RANGE,
    OR_POINTS,
    FULL_SCAN,
    INSERT,
    BATCH,
];

impl Args {
    /// An `--only` TEXT that names no scenario, as a message for people.
    fn unknown_only(&self) -> Option<String> {
        let unknown = self.only.iter().find(|o| {
            let o = o.to_lowercase();
            !SCENARIOS
                .iter()
                .any(|name| name.to_lowercase().contains(&o))
        })?;
        Some(format!(
            "--only {unknown:?} matches no scenario; the scenarios are: {}",
            SCENARIOS.join("; ")
        ))
    }

    /// Whether the scenario called `name` runs (`--only`).
    fn selects(&self, name: &str) -> bool {
        let name = name.to_lowercase();
        self.only.is_empty() || self.only.iter().any(|o| name.contains(&o.to_lowercase()))
    }
}

/// Runs the benchmark.
pub fn run(args: Args) -> ExitCode {
    if let Some(why) = args.unknown_only() {
        eprintln!("error: {why}");
        return ExitCode::from(2);
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let mut spawned = None;
    let (url, pid) = match (&args.data, &args.endpoint) {
        (Some(dir), _) => match process::start_server(dir, &args.server_log, args.no_auth) {
            Ok((child, url)) => {
                let pid = child.id();
                spawned = Some(child);
                (url, Some(pid))
            }
            Err(why) => {
                eprintln!("error: {why}");
                return ExitCode::from(2);
            }
        },
        (None, Some(url)) => (url.clone(), args.server_pid),
        (None, None) => {
            eprintln!("error: give --data DIR or --endpoint URL");
            return ExitCode::from(2);
        }
    };
    let result = runtime.block_on(bench(&args, &url, pid));
    if let Some(child) = spawned {
        process::stop_server(child);
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("error: {why}");
            ExitCode::from(1)
        }
    }
}

/// Concurrent clients of the batch insert scenario.
const BATCH_CLIENTS: usize = 4;
/// Operations in one changeset of the batch insert scenario.
const OPS: u64 = MAX_OPERATIONS as u64;

/// The `$filter` of request `i` of a scenario.
type FilterOf = Box<dyn Fn(u64) -> String>;

async fn bench(args: &Args, url: &str, pid: Option<u32>) -> Result<(), String> {
    let key = super::import::http::signing_key(args.account.as_deref())?;
    // Answers without metadata: the scenarios count rows and never read types back.
    let service =
        super::import::http::endpoint_client(url, key)?.with_metadata(MetadataLevel::NoMetadata);
    let bench_table = service.table(&args.table);
    let partitions = (args.entities / 1000).max(1);
    let generator = Generator::new(GenOptions {
        entities: args.entities,
        partitions: partitions as u32,
        ..Default::default()
    });
    let table = args.table.as_str();
    println!(
        "# tableq bench-http: {} entities in {partitions} partitions, table {table}, {url}\n",
        args.entities
    );
    println!("load average before: {}", load_average());
    load::load(&bench_table, &generator, args.load_clients).await?;
    if let Some(pid) = pid {
        println!("server memory after the load: {}", memory(pid));
    }
    println!("load average: {}\n", load_average());

    let seconds = Duration::from_secs_f64(args.seconds.max(0.1));
    let n = generator.total();
    // Positions visited in a scattered but repeatable order.
    let position = move |i: u64| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11) % n;
    let key = {
        let g = generator.clone();
        move |i: u64| {
            let p = position(i);
            g.entity_at(p)
                .map(|e| (e.partition_key().to_owned(), e.row_key().to_owned()))
                .unwrap_or_default()
        }
    };
    let key = Rc::new(key);
    let pk = {
        let g = generator.clone();
        Rc::new(move |i: u64| g.partition_key(position(i) % partitions))
    };
    let rk = {
        let g = generator.clone();
        Rc::new(move |r: u64| g.row_key(r))
    };

    let mut all = Vec::new();
    for clients in [1, args.clients] {
        if !args.selects(POINT_GET) {
            break;
        }
        let k = key.clone();
        let s = service.clone();
        all.push(
            runner::scenario(&service, POINT_GET, clients, seconds, None, move |i| {
                let (p, r) = k(i);
                s.request(Method::GET, &entity_link(table, &p, &r))
            })
            .await?,
        );
    }
    let filter_scenarios: Vec<(&str, Option<usize>, FilterOf)> = vec![
        (
            POINT_FILTER,
            Some(1),
            Box::new({
                let k = key.clone();
                move |i| {
                    let (p, r) = k(i);
                    format!("PartitionKey eq '{p}' and RowKey eq '{r}'")
                }
            }),
        ),
        (
            PARTITION,
            Some(1000),
            Box::new({
                let pk = pk.clone();
                move |i| format!("PartitionKey eq '{}'", pk(i))
            }),
        ),
        (
            RANGE,
            Some(100),
            Box::new({
                let (pk, rk) = (pk.clone(), rk.clone());
                move |i| {
                    let from = (i * 37) % 900;
                    format!(
                        "PartitionKey eq '{}' and RowKey ge '{}' and RowKey lt '{}'",
                        pk(i),
                        rk(from),
                        rk(from + 100)
                    )
                }
            }),
        ),
        (
            OR_POINTS,
            Some(5),
            Box::new({
                let k = key.clone();
                move |i| {
                    (0..5)
                        .map(|j| {
                            let (p, r) = k(i * 5 + j);
                            format!("(PartitionKey eq '{p}' and RowKey eq '{r}')")
                        })
                        .collect::<Vec<_>>()
                        .join(" or ")
                }
            }),
        ),
    ];
    for (name, rows, filter) in filter_scenarios {
        if !args.selects(name) {
            continue;
        }
        let filter = Rc::new(filter);
        for clients in [1, args.clients] {
            let (t, f) = (bench_table.clone(), filter.clone());
            all.push(
                runner::scenario(&service, name, clients, seconds, rows, move |i| {
                    t.query_request(&Query::filter(f(i)), None)
                })
                .await?,
            );
        }
    }
    if args.selects(FULL_SCAN) {
        all.push(
            runner::full_scan(
                &bench_table,
                FULL_SCAN,
                "Age eq 7 and Score lt 10.0",
                seconds,
            )
            .await?,
        );
    }
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    for clients in [1, 8] {
        if !args.selects(INSERT) {
            break;
        }
        let t = bench_table.clone();
        all.push(
            runner::scenario(&service, INSERT, clients, seconds, None, move |i| {
                let body = format!(
                    "{{\"PartitionKey\":\"insert-{nonce}\",\"RowKey\":\"c{clients}-{i:09}\",\
                     \"Age\":{},\"Name\":\"bench\"}}",
                    i % 100
                );
                t.insert_request(body)
            })
            .await?,
        );
    }
    if args.selects(BATCH) {
        let t = bench_table.clone();
        let body = |pk: &str, r: u64| {
            format!(
                "{{\"PartitionKey\":\"{pk}\",\"RowKey\":\"{r:03}\",\"Age\":{},\
                 \"Name\":\"bench\"}}",
                r % 100
            )
        };
        let make = move |i: u64| {
            let pk = format!("batch-{nonce}-{i:09}");
            let bodies: Vec<String> = (0..OPS).map(|r| body(&pk, r)).collect();
            let rows: Vec<String> = (0..OPS).map(|r| format!("{r:03}")).collect();
            let operations: Vec<BatchOperation<'_>> = bodies
                .iter()
                .zip(&rows)
                .map(|(body, rk)| BatchOperation::json(BatchKind::Insert, &pk, rk, body))
                .collect();
            t.batch_request(&operations)
        };
        let mut figures =
            runner::scenario(&service, BATCH, BATCH_CLIENTS, seconds, None, make).await?;
        figures.rows = Some(MAX_OPERATIONS);
        println!(
            "batch insert: {BATCH_CLIENTS} clients, {:.0} entities/s ({:.0} batches/s)",
            figures.rate * MAX_OPERATIONS as f64,
            figures.rate
        );
        all.push(figures);
    }
    print!("{}", report::table(&all));
    if let Some(pid) = pid {
        println!("\nserver memory at the end: {}", memory(pid));
    }
    println!("load average after: {}", load_average());
    Ok(())
}

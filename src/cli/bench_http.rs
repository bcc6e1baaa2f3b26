//! `tableq bench-http`: an HTTP load benchmark of the emulator with a real client, on one
//! client thread: requests are built and signed with reqwest (as `tableq import` sends
//! them), loads go through reqwest, and the measured scenarios send on keep-alive
//! connections of hyper's HTTP/1.1 connection API (one per concurrent client; see
//! [`Wire`]).
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

use super::import::Mode;
use super::import::http::{BATCH_OPS, BatchAnswer, BatchWrite, Endpoint, signing_key};
use http_body_util::{BodyExt, Full};
use hyper::StatusCode;
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use reqwest::Method;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, ExitCode, Stdio};
use std::rc::Rc;
use std::time::{Duration, Instant};
use tableq::datagen::{GenOptions, Generator};
use tableq::model::ErrorCode;
use tableq::model::json::{EntityWriter, EnvelopeRef, MetadataLevel};
use tableq_server::resource::entity_link;

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
        (Some(dir), _) => match start_server(dir, &args.server_log, args.no_auth) {
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
        stop_server(child);
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("error: {why}");
            ExitCode::from(1)
        }
    }
}

/// Starts `tableq serve --data DIR --port 0`; returns it and its table endpoint.
fn start_server(
    dir: &std::path::Path,
    log: &str,
    no_auth: bool,
) -> Result<(Child, String), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let mut command = Command::new(exe);
    command.args(["serve", "--port", "0", "--data"]).arg(dir);
    if no_auth {
        command.arg("--no-auth");
    }
    let mut child = command
        .env("RUST_LOG", log)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot start tableq serve: {e}"))?;
    let Some(stdout) = child.stdout.take() else {
        return Err("tableq serve has no stdout".into());
    };
    let mut lines = BufReader::new(stdout).lines();
    let first = lines.next().and_then(Result::ok).unwrap_or_default();
    // Keep reading the rest of the banner on a thread so that the pipe never fills.
    std::thread::spawn(move || lines.for_each(drop));
    match first.split_once(" on ") {
        Some((_, url)) if url.starts_with("http://") => Ok((child, url.trim().to_owned())),
        _ => {
            stop_server(child);
            Err(format!(
                "tableq serve did not start (its first line: {first:?})"
            ))
        }
    }
}

/// SIGTERM (a clean shutdown: the store is closed), then wait.
fn stop_server(mut child: Child) {
    let terminated = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .is_ok_and(|s| s.success());
    if !terminated {
        let _ = child.kill();
    }
    let _ = child.wait();
}

/// Concurrent clients of the batch insert scenario.
const BATCH_CLIENTS: usize = 4;

/// The `$filter` of request `i` of a scenario.
type FilterOf = Box<dyn Fn(u64) -> String>;

/// One scenario's figures.
struct Figures {
    name: String,
    clients: usize,
    requests: usize,
    rate: f64,
    p50: Duration,
    p99: Duration,
    /// Rows per request (queries), for the table.
    rows: Option<usize>,
}

async fn bench(args: &Args, url: &str, pid: Option<u32>) -> Result<(), String> {
    let endpoint = Endpoint::new(url, signing_key(args.account.as_deref())?)?;
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
    load(&endpoint, table, &generator, args.load_clients).await?;
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
        let e = endpoint.clone();
        let t = table.to_owned();
        all.push(
            scenario(&endpoint, POINT_GET, clients, seconds, None, move |i| {
                let (p, r) = k(i);
                e.request(Method::GET, &entity_link(&t, &p, &r))
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
            let (e, t, f) = (endpoint.clone(), table.to_owned(), filter.clone());
            all.push(
                scenario(&endpoint, name, clients, seconds, rows, move |i| {
                    e.request(Method::GET, &format!("{t}()"))
                        .query(&[("$filter", f(i))])
                })
                .await?,
            );
        }
    }
    if args.selects(FULL_SCAN) {
        let (e, t) = (endpoint.clone(), table.to_owned());
        all.push(
            full_scan(&e, &t, "Age eq 7 and Score lt 10.0", seconds)
                .await
                .map(|mut f| {
                    f.name = FULL_SCAN.into();
                    f
                })?,
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
        let (e, t) = (endpoint.clone(), table.to_owned());
        all.push(
            scenario(&endpoint, INSERT, clients, seconds, None, move |i| {
                let body = format!(
                    "{{\"PartitionKey\":\"insert-{nonce}\",\"RowKey\":\"c{clients}-{i:09}\",\
                     \"Age\":{},\"Name\":\"bench\"}}",
                    i % 100
                );
                e.request(Method::POST, &t)
                    .header("Content-Type", "application/json")
                    .header("Prefer", "return-no-content")
                    .body(body)
            })
            .await?,
        );
    }
    if args.selects(BATCH) {
        let (e, t) = (endpoint.clone(), table.to_owned());
        let body = |pk: &str, r: u64| {
            format!(
                "{{\"PartitionKey\":\"{pk}\",\"RowKey\":\"{r:03}\",\"Age\":{},\
                 \"Name\":\"bench\"}}",
                r % 100
            )
        };
        let mut figures = scenario(&endpoint, BATCH, BATCH_CLIENTS, seconds, None, move |i| {
            let pk = format!("batch-{nonce}-{i:09}");
            let bodies: Vec<String> = (0..BATCH_OPS as u64).map(|r| body(&pk, r)).collect();
            let rows: Vec<String> = (0..BATCH_OPS).map(|r| format!("{r:03}")).collect();
            let writes: Vec<BatchWrite<'_>> = bodies
                .iter()
                .zip(&rows)
                .map(|(body, rk)| BatchWrite {
                    partition_key: &pk,
                    row_key: rk,
                    body,
                })
                .collect();
            e.batch_request(&t, Mode::Insert, &writes)
        })
        .await?;
        figures.rows = Some(BATCH_OPS);
        println!(
            "batch insert: {BATCH_CLIENTS} clients, {:.0} entities/s ({:.0} batches/s)",
            figures.rate * BATCH_OPS as f64,
            figures.rate
        );
        all.push(figures);
    }
    print_table(&all);
    if let Some(pid) = pid {
        println!("\nserver memory at the end: {}", memory(pid));
    }
    println!("load average after: {}", load_average());
    Ok(())
}

/// Inserts the data set unless its last entity is there already: changesets of up to
/// [`BATCH_OPS`] entities of one partition, `clients` at a time.
async fn load(
    endpoint: &Endpoint,
    table: &str,
    generator: &Generator,
    clients: usize,
) -> Result<(), String> {
    let total = generator.total();
    if let Some(last) = generator.entity_at(total - 1) {
        let path = entity_link(table, last.partition_key(), last.row_key());
        let found = endpoint.send(endpoint.request(Method::GET, &path)).await?;
        if found.status().is_success() {
            println!("table {table} already holds the data set: not loaded again");
            return Ok(());
        }
    }
    endpoint.create_table(table).await?;
    let started = Instant::now();
    let chunks: Vec<std::ops::Range<u64>> = (0..generator.partitions())
        .flat_map(|p| {
            let positions = generator.partition_positions(p);
            (positions.start..positions.end)
                .step_by(BATCH_OPS)
                .map(move |from| from..(from + BATCH_OPS as u64).min(positions.end))
        })
        .collect();
    let next = Rc::new(std::cell::Cell::new(0usize));
    let writer = EntityWriter::new(MetadataLevel::MinimalMetadata);
    let tasks = (0..clients.max(1)).map(|_| {
        let next = next.clone();
        let (generator, chunks, writer) = (generator.clone(), &chunks, &writer);
        async move {
            let mut existing = 0u64;
            let mut buf = Vec::with_capacity(512);
            loop {
                let Some(chunk) = chunks.get(next.get()).cloned() else {
                    return Ok::<u64, String>(existing);
                };
                next.set(next.get() + 1);
                let mut rows: Vec<(String, String, String)> = chunk
                    .filter_map(|position| generator.entity_at(position))
                    .map(|entity| {
                        buf.clear();
                        writer.write(&mut buf, &entity, EnvelopeRef::default());
                        (
                            entity.partition_key().to_owned(),
                            entity.row_key().to_owned(),
                            String::from_utf8_lossy(&buf).into_owned(),
                        )
                    })
                    .collect();
                while !rows.is_empty() {
                    let writes: Vec<BatchWrite<'_>> = rows
                        .iter()
                        .map(|(pk, rk, body)| BatchWrite {
                            partition_key: pk,
                            row_key: rk,
                            body,
                        })
                        .collect();
                    match endpoint.write_batch(table, Mode::Insert, &writes).await? {
                        BatchAnswer::Written => break,
                        BatchAnswer::Rejected(i, ErrorCode::EntityAlreadyExists, _) => {
                            rows.remove(i);
                            existing += 1;
                        }
                        BatchAnswer::Rejected(_, code, message) => {
                            return Err(format!("loading failed: {code}: {message}"));
                        }
                    }
                }
            }
        }
    });
    let results = futures_join_all(tasks).await;
    let mut existing = 0;
    for r in results {
        existing += r?;
    }
    let elapsed = started.elapsed();
    println!(
        "loaded {} entities in {BATCH_OPS}-entity batches ($batch, {clients} concurrent) in \
         {:.1} s: {:.0} entities/s{}",
        total - existing,
        elapsed.as_secs_f64(),
        (total - existing) as f64 / elapsed.as_secs_f64(),
        if existing > 0 {
            format!(" ({existing} were there already)")
        } else {
            String::new()
        }
    );
    Ok(())
}

/// Runs futures concurrently on this thread and returns their outputs in order (a tiny
/// `join_all`: every future is polled on each wake-up, fine for a few dozen).
async fn futures_join_all<F: std::future::Future>(
    futures: impl Iterator<Item = F>,
) -> Vec<F::Output> {
    let mut pending: Vec<_> = futures.map(|f| Some(Box::pin(f))).collect();
    let mut results: Vec<Option<F::Output>> = (0..pending.len()).map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut all_done = true;
        for (slot, result) in pending.iter_mut().zip(results.iter_mut()) {
            if let Some(f) = slot {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => {
                        *result = Some(v);
                        *slot = None;
                    }
                    std::task::Poll::Pending => all_done = false,
                }
            }
        }
        if all_done {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await;
    results.into_iter().flatten().collect()
}

/// Runs `make`'s requests with `clients` concurrent clients for `duration` (after a
/// warm-up), checking every answer.
async fn scenario(
    endpoint: &Endpoint,
    name: &str,
    clients: usize,
    duration: Duration,
    rows: Option<usize>,
    make: impl Fn(u64) -> reqwest::RequestBuilder,
) -> Result<Figures, String> {
    let counter = std::cell::Cell::new(0u64);
    let authority = endpoint.authority();
    let run = |until: Instant, check_rows: bool| {
        let make = &make;
        let counter = &counter;
        let authority = &authority;
        let tasks = (0..clients).map(move |c| async move {
            let mut latencies = Vec::new();
            let mut checked = !check_rows || c > 0;
            let mut wire = Wire::connect(authority)
                .await
                .map_err(|e| format!("{name}: {e}"))?;
            while Instant::now() < until {
                let i = counter.get();
                counter.set(i + 1);
                let request = make(i);
                let started = Instant::now();
                let request = endpoint
                    .signed(request)
                    .map_err(|e| format!("{name}: {e}"))?;
                let (status, body) = wire
                    .send(request, authority)
                    .await
                    .map_err(|e| format!("{name}: {e}"))?;
                latencies.push(started.elapsed());
                if !status.is_success() {
                    return Err(format!(
                        "{name}: the server answered {status}: {}",
                        String::from_utf8_lossy(&body)
                    ));
                }
                if body.starts_with(b"--batchresponse") && failed_operation(&body) {
                    return Err(format!(
                        "{name}: a batch operation failed: {}",
                        String::from_utf8_lossy(&body)
                    ));
                }
                if !checked {
                    checked = true;
                    if let Some(want) = rows {
                        let got = count_rows(&body);
                        if got != Some(want) {
                            return Err(format!("{name}: {got:?} rows, expected {want}"));
                        }
                    }
                }
            }
            Ok::<_, String>(latencies)
        });
        futures_join_all(tasks)
    };
    let warm = Instant::now() + duration.min(Duration::from_millis(500));
    for r in run(warm, true).await {
        r?;
    }
    let started = Instant::now();
    let mut latencies = Vec::new();
    for r in run(started + duration, false).await {
        latencies.extend(r?);
    }
    let wall = started.elapsed();
    let figures = summarize(name, clients, rows, latencies, wall);
    eprintln!(
        "{name}, {clients} clients: {:.0} req/s, p50 {}",
        figures.rate,
        micros(figures.p50)
    );
    Ok(figures)
}

/// One keep-alive HTTP/1.1 connection on hyper's connection API, the way load generators
/// (`oha`, `rewrk`) drive a server: requests are built and signed like every request of
/// [`Endpoint`] (reqwest), but sent without reqwest's pool, redirect and proxy layers, which
/// re-parse every request's URL twice and cost more CPU per request than the server's whole
/// point get — CPU that, on a 2-core machine, the client would take from the server.
struct Wire {
    sender: SendRequest<Full<Bytes>>,
}

impl Wire {
    /// Connects to `authority` (`host:port`) with `TCP_NODELAY`, as reqwest does.
    async fn connect(authority: &str) -> Result<Wire, String> {
        let stream = tokio::net::TcpStream::connect(authority)
            .await
            .map_err(|e| format!("cannot connect to {authority}: {e}"))?;
        stream
            .set_nodelay(true)
            .map_err(|e| format!("cannot set TCP_NODELAY: {e}"))?;
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| format!("HTTP handshake with {authority} failed: {e}"))?;
        // Ends when the connection closes (the sender is dropped or the server hangs up).
        tokio::spawn(connection);
        Ok(Wire { sender })
    }

    /// Sends a built and signed request; returns the status and the whole body.
    async fn send(
        &mut self,
        request: reqwest::Request,
        authority: &str,
    ) -> Result<(StatusCode, Bytes), String> {
        let url = request.url();
        let target = match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_owned(),
        };
        let body = request
            .body()
            .and_then(reqwest::Body::as_bytes)
            .map(Bytes::copy_from_slice)
            .unwrap_or_default();
        let host = hyper::header::HeaderValue::from_str(authority)
            .map_err(|e| format!("cannot send to {authority}: {e}"))?;
        let mut outgoing = hyper::Request::builder()
            .method(request.method().clone())
            .uri(target)
            .body(Full::new(body))
            .map_err(|e| format!("cannot build a request: {e}"))?;
        // reqwest and hyper share the `http` types: the signed headers carry over as they are.
        *outgoing.headers_mut() = request.headers().clone();
        outgoing.headers_mut().insert(hyper::header::HOST, host);
        self.sender
            .ready()
            .await
            .map_err(|e| format!("the connection closed: {e}"))?;
        let response = self
            .sender
            .send_request(outgoing)
            .await
            .map_err(|e| format!("the request failed: {e}"))?;
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("cannot read the response: {e}"))?
            .to_bytes();
        Ok((status, body))
    }
}

/// A whole query (every page), repeatedly, one client.
async fn full_scan(
    endpoint: &Endpoint,
    table: &str,
    filter: &str,
    duration: Duration,
) -> Result<Figures, String> {
    let started = Instant::now();
    let mut latencies = Vec::new();
    let mut rows = 0;
    while latencies.is_empty() || started.elapsed() < duration {
        let one = Instant::now();
        let mut next: Option<(String, Option<String>)> = None;
        rows = 0;
        loop {
            let mut query = vec![("$filter".to_owned(), filter.to_owned())];
            if let Some((pk, rk)) = &next {
                query.push(("NextPartitionKey".into(), pk.clone()));
                if let Some(rk) = rk {
                    query.push(("NextRowKey".into(), rk.clone()));
                }
            }
            let request = endpoint
                .request(Method::GET, &format!("{table}()"))
                .query(&query);
            let response = endpoint
                .send(request)
                .await
                .map_err(|e| format!("full scan: {e}"))?;
            let header = |name: &str| {
                response
                    .headers()
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned)
            };
            next = header("x-ms-continuation-nextpartitionkey")
                .map(|pk| (pk, header("x-ms-continuation-nextrowkey")));
            let status = response.status();
            let body = response
                .bytes()
                .await
                .map_err(|e| format!("full scan: {e}"))?;
            if !status.is_success() {
                return Err(format!(
                    "full scan: {status}: {}",
                    String::from_utf8_lossy(&body)
                ));
            }
            rows += count_rows(&body).unwrap_or(0);
            if next.is_none() {
                break;
            }
        }
        latencies.push(one.elapsed());
    }
    let wall = started.elapsed();
    Ok(summarize("full scan", 1, Some(rows), latencies, wall))
}

/// Whether a `$batch` reply holds an operation's error status.
fn failed_operation(body: &[u8]) -> bool {
    let text = String::from_utf8_lossy(body);
    text.contains("HTTP/1.1 4") || text.contains("HTTP/1.1 5")
}

/// Rows in a query answer's `value`.
fn count_rows(body: &[u8]) -> Option<usize> {
    let json: serde_json::Value = serde_json::from_slice(body).ok()?;
    match json.get("value") {
        Some(serde_json::Value::Array(rows)) => Some(rows.len()),
        // A single entity (point get).
        _ => json.get("RowKey").map(|_| 1),
    }
}

fn summarize(
    name: &str,
    clients: usize,
    rows: Option<usize>,
    mut latencies: Vec<Duration>,
    wall: Duration,
) -> Figures {
    latencies.sort_unstable();
    let at = |q: f64| {
        latencies
            .get(((latencies.len() as f64 * q) as usize).min(latencies.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    };
    Figures {
        name: name.to_owned(),
        clients,
        requests: latencies.len(),
        rate: latencies.len() as f64 / wall.as_secs_f64().max(1e-9),
        p50: at(0.50),
        p99: at(0.99),
        rows,
    }
}

fn micros(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us >= 10_000.0 {
        format!("{:.1} ms", us / 1000.0)
    } else {
        format!("{us:.0} µs")
    }
}

fn print_table(all: &[Figures]) {
    println!("\n| scenario | rows | clients | requests | req/s | p50 | p99 |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for f in all {
        println!(
            "| {} | {} | {} | {} | {:.0} | {} | {} |",
            f.name,
            f.rows.map_or("–".to_owned(), |r| r.to_string()),
            f.clients,
            f.requests,
            f.rate,
            micros(f.p50),
            micros(f.p99)
        );
    }
}

/// `VmHWM` and `VmRSS` of a process (Linux).
fn memory(pid: u32) -> String {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return format!("unknown (no /proc/{pid}/status)");
    };
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim().to_owned())
            .unwrap_or_else(|| "?".into())
    };
    format!(
        "peak RSS (VmHWM) {}, RSS (VmRSS) {}",
        field("VmHWM:"),
        field("VmRSS:")
    )
}

/// `/proc/loadavg`'s first three fields.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

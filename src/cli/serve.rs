//! `tableq serve`: the Table service emulator (spec: rest.md).
//!
//! ```text
//! tableq serve [--host 127.0.0.1] [--port 10002] [--data DIR | --in-memory | --store URL]
//!              [--fsync always|interval=MS] [--accept-log-loss] [--cache-size SIZE] [--block-size SIZE]
//!              [--memtable-size SIZE] [--flush-interval D] [--flush-slice D]
//!              [--checkpoint-interval D] [--checkpoint-log-size SIZE]
//!              [--account NAME:BASE64KEY]... [--no-auth] [--no-explorer]
//!              [--header-timeout D] [--body-timeout D] [--request-timeout D] [--idle-timeout D]
//!              [--max-connections N] [--workers N] [--body-budget SIZE] [--body-budget-wait D]
//!              [--log-format text|json]
//!              [--tls self-signed | --tls-cert PEM --tls-key PEM] [--https-port PORT]
//!              [--keys DIR] [--local-issuer] [--trust-issuer URL|JWKS-FILE]...
//!              [--role-assignments FILE] [--public-url https://HOST[:PORT]]
//! ```
//!
//! `--fsync` sets when the durable store's write-ahead log is `fsync`ed: `interval=MS`
//! (default `interval=1000`: an acknowledged write survives `kill -9`; a machine crash may
//! lose the last MS of writes) or `always` (every reply after `fsync`, group-committed).
//! The banner's `storage:` line states which. A data directory whose write-ahead log does
//! not reach as far as its data file says (deleted, cut, another directory's) is refused;
//! `--accept-log-loss` starts anyway and logs what was lost (docs/durability.md).
//!
//! The connection and body limits (docs/operations.md) take durations such as
//! `10s`, `500ms` or `2min` (humantime) and sizes such as `128MiB`, `64K` or `1048576`
//! (bytes; `K`/`M`/`G` are binary multiples). `--request-timeout` (default 30 s, the Table
//! service's server timeout) bounds the arrival of a whole request — header and body —
//! from its first byte, so a client trickling a byte just often enough for
//! `--body-timeout` gets 408 `RequestTimeout` and frees its connection; at
//! `--max-connections`, a new connection waits in the listen backlog until one frees, and
//! is never closed unanswered to make room for a newer one.
//!
//! HTTPS and bearer tokens are module `serve_tls`'s (docs/https-and-tokens.md). For test
//! suites: `--port 0` takes a free port (the banner shows it), `--ready-file PATH` and
//! `--ready-json` describe the running server in JSON (module `serve_ready`), `--seed PATH`
//! loads tables from JSON lines before the port opens (module `serve_seed`), `--throttle`
//! emulates the service's scalability targets and `--faults FILE` / `--fault-seed N` arm
//! reproducible fault rules (module `serve_faults`).
//!
//! Requests must be signed (SharedKey, SharedKeyLite or SAS) with the key of the account in
//! their URL: the development account `devstoreaccount1` with its well-known key, and every
//! `--account NAME:KEY`. Each account has its own store: in memory, a fresh one each; with
//! `--data DIR`, the development account in `DIR` itself and account NAME in
//! `DIR/accounts/NAME`; on PostgreSQL, the development account in the URL's schema
//! (default `tableq`) and account NAME in schema `<schema>_NAME`. `--no-auth` turns
//! signature checking off (the banner says so loudly). The table explorer (a browser UI,
//! `tableq_server`'s explorer module) is served under `/_explorer/` and printed in the
//! banner; `--no-explorer` turns it off.
//!
//! Wires the flags to `tableq-store` (the engine: durable in `--data DIR`, default
//! `./tableq-data`; in memory; or PostgreSQL with `--store postgres://…`) and
//! `tableq-server` (HTTP): prints the
//! endpoint, the connection string and the storage location on start-up, logs one line
//! per request on stderr (tracing; `RUST_LOG` is honoured, default `info`), and stops
//! cleanly on Ctrl-C or SIGTERM (in-flight requests finish, the store is closed).
//!
//! Exit codes: 0 after a clean shutdown; 2 when the server cannot start (the address
//! cannot be bound — e.g. the port is taken —, the storage cannot be opened — e.g. the data
//! directory is unusable or locked by another server); 1 when
//! serving or closing the store failed.

use super::args::{parse_block_size, parse_size};
use clap::Args as ClapArgs;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tableq_client::sign::AccountKey;
use tableq_server::{
    Account, AuthMode, ConnectionLimits, DEFAULT_PORT, LogFormat, Reserved, Server, ServerConfig,
};
use tableq_store::postgres::{PostgresBackend, PostgresConfig};
use tableq_store::{Backend, DurableBackend, DurableOptions, FsyncPolicy, MemoryBackend};

/// Arguments of `tableq serve`.
#[derive(Debug, Clone, ClapArgs)]
pub struct Args {
    /// The address to listen on (an IP address or a host name such as `localhost`).
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// The port (10002 is the development storage table port the SDKs assume).
    #[arg(long, default_value_t = DEFAULT_PORT)]
    port: u16,
    /// The data directory of the durable store.
    #[arg(
        long,
        value_name = "DIR",
        default_value = "./tableq-data",
        conflicts_with = "in_memory"
    )]
    data: PathBuf,
    /// Keep everything in memory (nothing survives the process).
    #[arg(long)]
    in_memory: bool,
    /// When the durable store's write-ahead log is fsynced: `interval=MS` (an acknowledged
    /// write survives a crash of the process; a machine crash may lose the last MS of
    /// writes) or `always` (replies wait for the fsync; writers share it).
    #[arg(
        long,
        value_name = "always|interval=MS",
        default_value = "interval=1000",
        value_parser = FsyncPolicy::parse,
        conflicts_with_all = ["in_memory", "store"]
    )]
    fsync: FsyncPolicy,
    /// Start even if the durable store's write-ahead log is missing, cut or another
    /// directory's (acknowledged writes are lost; each loss is logged as a warning).
    /// Without it such a data directory is refused.
    #[arg(long, conflicts_with_all = ["in_memory", "store"])]
    accept_log_loss: bool,
    /// Memory for the durable store's page cache (per account): pages read from the data
    /// file are kept up to this size, and half as much again for verified copies of the
    /// blocks that queries read repeatedly. More makes repeated reads of a large table cheaper;
    /// the operating system's file cache serves the rest.
    #[arg(
        long,
        value_name = "SIZE",
        default_value = "64MiB",
        value_parser = parse_size,
        conflicts_with_all = ["in_memory", "store"]
    )]
    cache_size: usize,
    /// The durable store's block size: rows are written into blocks of up to this size
    /// (and at most 256 rows; an entity larger than it takes a block alone). Every
    /// point get that misses the page cache reads its whole block from the file, so a
    /// smaller size makes random point gets in a table much larger than the cache cheaper;
    /// a larger one makes scans cheaper, and blocks of fewer than 32 rows keep no columns
    /// for filtered scans. Applies to the blocks this server writes: blocks already in
    /// the data file keep their size until a write rewrites them. 4KiB to 1MiB.
    #[arg(
        long,
        value_name = "SIZE",
        default_value = "32KiB",
        value_parser = parse_block_size,
        conflicts_with_all = ["in_memory", "store"]
    )]
    block_size: usize,
    /// Memory for the rows written since the last flush (per account): the durable store
    /// folds them into its blocks when they hold this much, or every --flush-interval,
    /// whichever comes first. A flush rewrites every block its rows fall into, so writes
    /// spread over a table much larger than this cost less with more of it (and a longer
    /// interval), for more memory.
    #[arg(
        long,
        value_name = "SIZE",
        default_value = "16MiB",
        value_parser = parse_size,
        conflicts_with_all = ["in_memory", "store"]
    )]
    memtable_size: usize,
    /// The longest the durable store keeps written rows in memory before it folds them
    /// into its blocks (scans read blocks faster than rows in memory; a longer interval
    /// gathers more writes into each block's rewrite). The write-ahead log has them either
    /// way, and a checkpoint (every 30 s while writes arrive) folds them too.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "1s",
        value_parser = parse_flush_interval,
        conflicts_with_all = ["in_memory", "store"]
    )]
    flush_interval: Duration,
    /// The longest the durable store's flush holds its writer at a time: a flush folds the
    /// rows into the blocks in slices of this length, and writes that arrive meanwhile are
    /// committed between two slices instead of waiting for the whole flush (0: one block a
    /// slice). Shorter slices shorten the longest wait of a write during a flush and cost
    /// more commits of the data file.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "10ms",
        value_parser = parse_flush_slice,
        conflicts_with_all = ["in_memory", "store"]
    )]
    flush_slice: Duration,
    /// How often the durable store checkpoints while writes arrive: a durable commit of
    /// its data file, made beside the writes, after which the write-ahead log drops what
    /// the data file holds. A longer interval means a longer log to replay after a crash
    /// and fewer `fsync`s of the data file.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "30s",
        value_parser = parse_checkpoint_interval,
        conflicts_with_all = ["in_memory", "store"]
    )]
    checkpoint_interval: Duration,
    /// The write-ahead log's size at which the durable store checkpoints before its
    /// interval (at twice this size, writes wait for a checkpoint).
    #[arg(
        long,
        value_name = "SIZE",
        default_value = "64MiB",
        value_parser = parse_size,
        conflicts_with_all = ["in_memory", "store"]
    )]
    checkpoint_log_size: usize,
    /// Threads that serve connections [default: one per CPU core], each with its own
    /// event loop: a connection stays on the thread that accepted it. Queries and large
    /// writes run on a separate pool.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    workers: Option<u16>,
    /// Keep the data in PostgreSQL: `postgres://user[:password]@host[:port]/database`, with
    /// libpq-style parameters and tableq's `schema=NAME`, `pool_size=N` (docs/scaling-out.md).
    #[arg(long, value_name = "URL", conflicts_with_all = ["in_memory", "data"])]
    store: Option<String>,
    /// Host one more account, NAME (3–24 lower-case letters and digits) with its base64 key;
    /// repeatable. The development account is always hosted.
    #[arg(long = "account", value_name = "NAME:BASE64KEY")]
    accounts: Vec<String>,
    /// Do not check signatures (for experiments only: anyone who can reach the port can read
    /// and write everything).
    #[arg(long)]
    no_auth: bool,
    /// Do not serve the table explorer (the browser UI under /_explorer/).
    #[arg(long)]
    no_explorer: bool,
    #[command(flatten)]
    limits: LimitArgs,
    #[command(flatten)]
    tls: super::serve_tls::TlsArgs,
    #[command(flatten)]
    seed: super::serve_seed::SeedArgs,
    #[command(flatten)]
    faults: super::serve_faults::FaultArgs,
    #[command(flatten)]
    ready: super::serve_ready::ReadyArgs,
    /// How each request is logged on stderr: `text` (one readable line) or `json` (one JSON
    /// object per line with method, path, status, operation, table, duration, rows examined
    /// and returned, request id).
    #[arg(long, value_name = "FORMAT", default_value = "text")]
    log_format: LogFormatArg,
}

/// The connection and request-body limits of `tableq serve`.
#[derive(Debug, Clone, ClapArgs)]
struct LimitArgs {
    /// Close a connection whose request header is not complete this long after its first
    /// byte.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    header_timeout: Duration,
    /// Fail a request (408) whose body goes this long without a byte arriving, and close a
    /// connection whose client takes no byte of a response for as long.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    body_timeout: Duration,
    /// Fail a request (408) whose body has not all arrived this long after the request's
    /// first byte, however steadily it trickles in (a header still incomplete then is cut
    /// off, without a response).
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    request_timeout: Duration,
    /// Close a keep-alive connection idle this long between requests.
    #[arg(long, value_name = "DURATION", default_value = "2min", value_parser = parse_duration)]
    idle_timeout: Duration,
    /// The most connections open at once [default: the open-file limit (`ulimit -n`) less
    /// an eighth of it, at least 64, kept for the store]. At the cap a new connection waits
    /// until one frees (a connection idle for a second is closed to make room).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_connections: Option<u32>,
    /// The most request-body bytes held in memory at once, over all requests; beyond it a
    /// request waits (--body-budget-wait), then gets 503 ServerBusy.
    #[arg(long, value_name = "SIZE", default_value = "128MiB", value_parser = parse_size)]
    body_budget: usize,
    /// How long a request waits for room in the body budget.
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = parse_duration)]
    body_budget_wait: Duration,
}

/// `--log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum LogFormatArg {
    /// One readable line per request.
    Text,
    /// One JSON object per line.
    Json,
}

/// A duration such as `10s`, `500ms`, `2min` (not zero).
fn parse_duration(text: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(text.trim())
        .map_err(|e| format!("{e} (want a duration such as 10s, 500ms or 2min)"))?;
    if d.is_zero() {
        return Err("a duration of zero would close everything at once".into());
    }
    Ok(d)
}

/// `--flush-interval`: a duration (as the timeouts take them), not zero.
fn parse_flush_interval(text: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(text.trim())
        .map_err(|e| format!("{e} (want a duration such as 1s, 500ms or 1min)"))?;
    if d.is_zero() {
        return Err(
            "a flush interval of zero would fold every write into the blocks at once \
                    (want at least 1ms)"
                .into(),
        );
    }
    Ok(d)
}

/// `--checkpoint-interval`: a duration from 1 ms to a day.
fn parse_checkpoint_interval(text: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(text.trim())
        .map_err(|e| format!("{e} (want a duration such as 30s, 500ms or 5min)"))?;
    if d.is_zero() {
        return Err(
            "a checkpoint interval of zero would checkpoint without pause (want at least 1ms)"
                .into(),
        );
    }
    if d > Duration::from_secs(24 * 3600) {
        return Err(
            "a checkpoint interval over a day would keep a day of writes to replay after \
             a crash (want at most 24h)"
                .into(),
        );
    }
    Ok(d)
}

/// `--flush-slice`: a duration (zero allowed: one block a slice), at most a minute.
fn parse_flush_slice(text: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(text.trim())
        .map_err(|e| format!("{e} (want a duration such as 10ms or 100ms)"))?;
    if d > Duration::from_secs(60) {
        return Err(
            "a flush slice of more than a minute would keep writes waiting that long \
                    (want at most 1min)"
                .into(),
        );
    }
    Ok(d)
}

/// `NAME:BASE64KEY` → an account (name and key checked).
fn parse_account(text: &str) -> Result<Account, String> {
    let (name, key) = text
        .split_once(':')
        .ok_or_else(|| format!("--account {text}: want NAME:BASE64KEY"))?;
    AccountKey::new(name, key).map_err(|e| format!("--account: {e}"))?;
    Ok(Account {
        name: name.to_owned(),
        key: key.to_owned(),
    })
}

/// The accounts asked for: the development account first, then every `--account`.
fn accounts(args: &Args) -> Result<Vec<Account>, String> {
    let mut out = vec![Account::default()];
    for text in &args.accounts {
        let account = parse_account(text)?;
        if out.iter().any(|a| a.name == account.name) {
            return Err(format!(
                "--account {}: account {:?} is given twice (the development account \
                 devstoreaccount1 is always hosted)",
                account.name, account.name
            ));
        }
        out.push(account);
    }
    Ok(out)
}

/// Runs the server until Ctrl-C / SIGTERM.
pub fn run(args: Args) -> ExitCode {
    // Dropped last: what the log buffered is written out before the process exits.
    let _log = init_logging(args.log_format);
    // This thread serves connections on a single-threaded runtime; `--workers N` adds
    // N - 1 threads like it (`ServerConfig::threads`): thread per core, as nginx runs a
    // worker process per core, with no work-stealing or wake-ups between threads.
    let mut builder = tokio::runtime::Builder::new_current_thread();
    builder.enable_all().thread_name("tableq-serve");
    let runtime = match builder.build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    runtime.block_on(serve(args))
}

/// The threads that serve connections: `--workers`, else one per core.
fn serving_threads(workers: Option<u16>) -> usize {
    workers.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        usize::from,
    )
}

/// Logs to stderr, buffered (`serve_log.rs`); the guard writes out the buffer when dropped.
fn init_logging(format: LogFormatArg) -> super::serve_log::FlushGuard {
    use tracing_subscriber::EnvFilter;
    let (stderr, guard) = super::serve_log::buffered_stderr();
    let filter = match EnvFilter::try_from_default_env() {
        Ok(f) => f,
        Err(e) => {
            if std::env::var_os("RUST_LOG").is_some() {
                eprintln!("warning: RUST_LOG is not a valid filter ({e}); logging at info");
            }
            EnvFilter::new("info")
        }
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(stderr);
    let _ = match format {
        LogFormatArg::Text => builder
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .event_format(super::serve_log::text_format())
            .try_init(),
        LogFormatArg::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .try_init(),
    };
    guard
}

/// The store of one account the flags ask for (blocking: connects to a database server,
/// opens files). `first` is the development account, which keeps the plain layout.
fn open_store(args: &Args, account: &str, first: bool) -> Result<Arc<dyn Backend>, String> {
    if let Some(url) = &args.store {
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return Err(format!(
                "--store {url}: only PostgreSQL URLs (postgres://user@host:port/database) are \
                 supported"
            ));
        }
        let mut config = PostgresConfig::from_url(url).map_err(|e| format!("--store: {e}"))?;
        if !first {
            let schema = format!("{}_{account}", config.schema_name());
            config = config
                .with_schema(schema)
                .map_err(|e| format!("--store, account {account}: {e}"))?;
        }
        let backend = PostgresBackend::open_with(config).map_err(|e| format!("--store: {e}"))?;
        return Ok(Arc::new(backend));
    }
    if args.in_memory {
        return Ok(Arc::new(MemoryBackend::new()));
    }
    let dir = if first {
        args.data.clone()
    } else {
        args.data.join("accounts").join(account)
    };
    let options = DurableOptions::default()
        .with_cache_bytes(args.cache_size)
        .with_block_bytes(args.block_size)
        .with_memtable_bytes(args.memtable_size)
        .with_flush_interval(args.flush_interval)
        .with_flush_slice(args.flush_slice)
        .with_checkpoints(args.checkpoint_log_size as u64, args.checkpoint_interval)
        .with_fsync(args.fsync)
        .with_accept_log_loss(args.accept_log_loss);
    let backend = DurableBackend::open_with(&dir, options).map_err(|e| format!("--data: {e}"))?;
    Ok(Arc::new(backend))
}

/// Every account's store, in the order of `accounts`.
fn open_stores(args: &Args, accounts: &[Account]) -> Result<Vec<Arc<dyn Backend>>, String> {
    let mut stores = Vec::with_capacity(accounts.len());
    for (i, account) in accounts.iter().enumerate() {
        stores.push(open_store(args, &account.name, i == 0)?);
    }
    Ok(stores)
}

async fn resolve(host: &str, port: u16) -> Result<SocketAddr, String> {
    let mut addrs = tokio::net::lookup_host((host, port))
        .await
        .map_err(|e| format!("cannot resolve --host {host}: {e}"))?;
    addrs
        .next()
        .ok_or_else(|| format!("--host {host} resolves to no address"))
}

async fn serve(mut args: Args) -> ExitCode {
    // A ready file left by an earlier run would announce this one before it is ready.
    super::serve_ready::withdraw(&args.ready);
    let addr = match resolve(&args.host, args.port).await {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    // The port is claimed before anything is made: a taken port leaves no data directory
    // behind. It opens (listens) only once the store and the keys are ready.
    let reserved = match Reserved::claim(addr) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    // The banner names the data directory absolutely: a start from another directory is
    // then visibly another store.
    if let Ok(absolute) = std::path::absolute(&args.data) {
        args.data = absolute;
    }
    let accounts = match accounts(&args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let opened = {
        let (args, accounts) = (args.clone(), accounts.clone());
        tokio::task::spawn_blocking(move || -> Result<_, String> {
            let stores = open_stores(&args, &accounts)?;
            for line in super::serve_seed::load(&args.seed, &*stores[0])? {
                tracing::info!(target: "tableq_server", "{line}");
            }
            Ok(stores)
        })
        .await
    };
    let stores = match opened {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!("error: opening the store failed: {e}");
            return ExitCode::from(2);
        }
    };
    let auth = if args.no_auth {
        AuthMode::Off
    } else {
        AuthMode::Required
    };
    // Engines may own blocking resources (a database client's runtime) that must not be
    // dropped on an async worker: the last references are released on the blocking pool.
    let keep = stores.clone();
    let code = run_server(reserved, accounts, stores, auth, &args).await;
    let _ = tokio::task::spawn_blocking(move || drop(keep)).await;
    code
}

async fn run_server(
    reserved: Reserved,
    accounts: Vec<Account>,
    stores: Vec<Arc<dyn Backend>>,
    auth: AuthMode,
    args: &Args,
) -> ExitCode {
    let names: Vec<String> = accounts.iter().map(|a| a.name.clone()).collect();
    let mut pairs = accounts.into_iter().zip(stores);
    let Some((first, first_store)) = pairs.next() else {
        eprintln!("error: no account to serve");
        return ExitCode::from(2);
    };
    let mut hosted = vec![(first.name.clone(), first.key.clone())];
    let faults = match args.faults.resolve() {
        Ok(faults) => faults,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let limits = &args.limits;
    let config = ServerConfig {
        account: first,
        auth,
        explorer: !args.no_explorer,
        connections: ConnectionLimits {
            header_timeout: limits.header_timeout,
            body_timeout: limits.body_timeout,
            request_timeout: limits.request_timeout,
            idle_timeout: limits.idle_timeout,
            max_connections: limits.max_connections.map(|n| n as usize),
        },
        body_budget_bytes: limits.body_budget,
        body_budget_wait: limits.body_budget_wait,
        log_format: match args.log_format {
            LogFormatArg::Text => LogFormat::Text,
            LogFormatArg::Json => LogFormat::Json,
        },
        throttle: faults.throttle,
        faults: faults.rules.clone(),
        fault_seed: Some(faults.seed),
        threads: serving_threads(args.workers),
        ..ServerConfig::default()
    };
    // HTTPS material, the signing key and the issuer's client exist before the port opens.
    let tls = match super::serve_tls::prepare(&args.tls, &args.data, &args.host, &names).await {
        Ok(prepared) => prepared,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let mut server = match Server::listen_on(reserved, first_store, config) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let mut others = Vec::new();
    for (account, store) in pairs {
        others.push((account.name.clone(), account.key.clone()));
        if let Err(e) = server.add_account(account, store) {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    }
    let bind_ip = server.local_addr().ip();
    let https_lines = match tls {
        None => String::new(),
        Some(prepared) => match prepared.apply(&mut server, bind_ip).await {
            Ok(lines) => lines,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        },
    };
    // Signal handlers first, so that a SIGTERM right after the banner stops cleanly; a
    // failed readiness announcement stops the server too.
    let signal = tableq_server::shutdown_signal();
    let (give_up, gave_up) = tokio::sync::oneshot::channel::<()>();
    let shutdown = async move {
        tokio::select! {
            () = signal => {}
            _ = gave_up => {}
        }
    };
    // The banner goes to stdout; a closed stdout (`tableq serve | head -1`) must not stop
    // the server, so write errors are ignored (println! would panic).
    let auth_line = match auth {
        AuthMode::Required => {
            "authorization: on (SharedKey, SharedKeyLite or SAS with the account's key)\n"
                .to_owned()
        }
        AuthMode::Off => {
            let warning = "!!! WARNING: --no-auth: requests are NOT authenticated; anyone who \
                           can reach this port can read and write every account !!!";
            eprintln!("{warning}");
            format!("{warning}\n")
        }
    };
    // A ready connection string for every hosted account: the first one's line is the
    // development account's (tools read it), then one per `--account`.
    let endpoint = server.table_endpoint();
    let origin = endpoint
        .strip_suffix(&format!("/{}", tableq_server::DEV_ACCOUNT))
        .unwrap_or(&endpoint);
    let more: String = others
        .iter()
        .map(|(name, key)| {
            format!(
                "connection string ({name}): {}\n",
                tableq_client::connection_string(&format!("{origin}/{name}"), name, key)
            )
        })
        .collect();
    let explorer_line = if !args.no_explorer {
        format!("explorer: {origin}/_explorer/ (browse, query and edit in a browser)\n")
    } else {
        String::new()
    };
    let fault_lines = super::serve_faults::banner_lines(&args.faults, &faults);
    let banner = format!(
        "tableq serve: Table service emulator on {endpoint}\nstorage: {}\nconnection string: {}\n\
         {more}(UseDevelopmentStorage=true works on the default port; stop with Ctrl-C)\n\
         accounts: {}\n{auth_line}{https_lines}{explorer_line}{fault_lines}",
        server.store_description(),
        server.connection_string(),
        names.join(", "),
    );
    {
        use std::io::Write;
        // With --ready-json stdout holds the ready line alone: the banner goes to stderr.
        let mut out: Box<dyn Write> = if args.ready.ready_json {
            Box::new(std::io::stderr().lock())
        } else {
            Box::new(std::io::stdout().lock())
        };
        let _ = out.write_all(banner.as_bytes()).and_then(|()| out.flush());
    }
    tracing::info!(
        target: "tableq_server",
        "limits: at most {} connections; header {:?}, body {:?}, request {:?}, idle {:?}; \
         request bodies in memory at most {} bytes",
        server.max_connections(),
        limits.header_timeout,
        limits.body_timeout,
        limits.request_timeout,
        limits.idle_timeout,
        limits.body_budget,
    );
    hosted.extend(others);
    let http = server.serves_http().then(|| server.local_addr());
    let https = server.https_addr();
    let ready = super::serve_ready::Ready::new(
        http,
        https,
        &hosted,
        if args.store.is_some() {
            "postgres".to_owned()
        } else if args.in_memory {
            "in-memory".to_owned()
        } else {
            args.data.display().to_string()
        },
        server.store_description(),
    );
    let running = tokio::spawn(server.run_until(shutdown));
    let mut failed = false;
    if args.ready.ready_file.is_some() || args.ready.ready_json {
        let announced = match super::serve_ready::wait_until_answering(http, https).await {
            Ok(()) => super::serve_ready::announce(&args.ready, &ready),
            Err(e) => Err(e),
        };
        if let Err(e) = announced {
            eprintln!("error: {e}");
            failed = true;
            let _ = give_up.send(());
        }
    }
    let served = running.await;
    super::serve_ready::withdraw(&args.ready);
    match served {
        Ok(Ok(())) if failed => ExitCode::from(2),
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(e)) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("error: the server task failed: {e}");
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2min"), Ok(Duration::from_secs(120)));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("soon").is_err());
    }
}

//! `tableq serve`: the Table service emulator (spec: rest.md).
//!
//! ```text
//! tableq serve [--host 127.0.0.1] [--port 10002] [--data DIR | --in-memory | --store URL]
//! ```
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

use clap::Args as ClapArgs;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use tableq_server::{DEFAULT_PORT, Server, ServerConfig};
use tableq_store::postgres::PostgresBackend;
use tableq_store::{Backend, DurableBackend, MemoryBackend};

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
    /// Keep the data in PostgreSQL: `postgres://user[:password]@host[:port]/database`, with
    /// libpq-style parameters and tableq's `schema=NAME`, `pool_size=N` (README, "Scaling out").
    #[arg(long, value_name = "URL", conflicts_with_all = ["in_memory", "data"])]
    store: Option<String>,
}

/// Runs the server until Ctrl-C / SIGTERM.
pub fn run(args: Args) -> ExitCode {
    init_logging();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("tableq-serve")
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    runtime.block_on(serve(args))
}

fn init_logging() {
    use tracing_subscriber::EnvFilter;
    let filter = match EnvFilter::try_from_default_env() {
        Ok(f) => f,
        Err(e) => {
            if std::env::var_os("RUST_LOG").is_some() {
                eprintln!("warning: RUST_LOG is not a valid filter ({e}); logging at info");
            }
            EnvFilter::new("info")
        }
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

/// The store the flags ask for (blocking: connects to a database server, opens files).
fn open_store(args: &Args) -> Result<Arc<dyn Backend>, String> {
    if let Some(url) = &args.store {
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return Err(format!(
                "--store {url}: only PostgreSQL URLs (postgres://user@host:port/database) are \
                 supported"
            ));
        }
        let backend = PostgresBackend::open(url).map_err(|e| format!("--store: {e}"))?;
        return Ok(Arc::new(backend));
    }
    if args.in_memory {
        return Ok(Arc::new(MemoryBackend::new()));
    }
    let backend = DurableBackend::open(&args.data).map_err(|e| format!("--data: {e}"))?;
    Ok(Arc::new(backend))
}

async fn resolve(host: &str, port: u16) -> Result<SocketAddr, String> {
    let mut addrs = tokio::net::lookup_host((host, port))
        .await
        .map_err(|e| format!("cannot resolve --host {host}: {e}"))?;
    addrs
        .next()
        .ok_or_else(|| format!("--host {host} resolves to no address"))
}

async fn serve(args: Args) -> ExitCode {
    let addr = match resolve(&args.host, args.port).await {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let opened = {
        let args = args.clone();
        tokio::task::spawn_blocking(move || open_store(&args)).await
    };
    let store = match opened {
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
    // Engines may own blocking resources (a database client's runtime) that must not be
    // dropped on an async worker: the last reference is released on the blocking pool.
    let keep = store.clone();
    let code = run_server(addr, store).await;
    let _ = tokio::task::spawn_blocking(move || drop(keep)).await;
    code
}

async fn run_server(addr: SocketAddr, store: Arc<dyn Backend>) -> ExitCode {
    let server = match Server::bind(addr, store, ServerConfig::default()).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    // Signal handlers first, so that a SIGTERM right after the banner stops cleanly.
    let shutdown = tableq_server::shutdown_signal();
    // The banner goes to stdout; a closed stdout (`tableq serve | head -1`) must not stop
    // the server, so write errors are ignored (println! would panic).
    let banner = format!(
        "tableq serve: Table service emulator on {}\nstorage: {}\nconnection string: {}\n\
         (UseDevelopmentStorage=true works on the default port; stop with Ctrl-C)\n",
        server.table_endpoint(),
        server.store_description(),
        server.connection_string()
    );
    {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(banner.as_bytes()).and_then(|()| out.flush());
    }
    match server.run_until(shutdown).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

//! `tableq serve`: the Table service emulator (spec: rest.md).
//!
//! ```text
//! tableq serve [--host 127.0.0.1] [--port 10002] [--data DIR | --in-memory]
//! ```
//!
//! Wires the flags to `tableq-store` (the engine) and `tableq-server` (HTTP): prints the
//! endpoint, the connection string and the storage location on start-up, logs one line
//! per request on stderr (tracing; `RUST_LOG` is honoured, default `info`), and stops
//! cleanly on Ctrl-C or SIGTERM (in-flight requests finish, the store is closed).
//!
//! Exit codes: 0 after a clean shutdown; 2 when the server cannot start (the address
//! cannot be bound — e.g. the port is taken —, the storage cannot be opened); 1 when
//! serving or closing the store failed.

use clap::Args as ClapArgs;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use tableq_server::{DEFAULT_PORT, Server, ServerConfig};
use tableq_store::{Backend, MemoryBackend};

/// Arguments of `tableq serve`.
#[derive(Debug, ClapArgs)]
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

/// The store the flags ask for.
fn open_store(args: &Args) -> Result<Arc<dyn Backend>, String> {
    if args.in_memory {
        return Ok(Arc::new(MemoryBackend::new()));
    }
    Err(format!(
        "the durable store (--data {}) is not part of this build yet; run with --in-memory \
         for a throwaway store",
        args.data.display()
    ))
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
    let store = match open_store(&args) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let server = match Server::bind(addr, store, ServerConfig::default()).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    println!(
        "tableq serve: Table service emulator on {}",
        server.table_endpoint()
    );
    println!("storage: {}", server.store_description());
    println!("connection string: {}", server.connection_string());
    println!("(UseDevelopmentStorage=true works on the default port; stop with Ctrl-C)");
    match server.run_until(tableq_server::shutdown_signal()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

//! A Table service emulator for Rust tests: [`TestServer`] starts `tableq`'s server
//! in-process on a free loopback port over an in-memory store, and stops it when dropped.
//!
//! The server runs on a tokio runtime of its own, on a background thread, so it works from
//! plain `#[test]` functions as well as from async tests (whatever their runtime). Each
//! server has its own store: nothing leaks from one test to the next. Dropping the server
//! stops it, closes its store, releases its port and joins its thread — a test that starts
//! a thousand of them leaves no thread or port behind.
//!
//! Requests are checked as `tableq serve` checks them (SharedKey, SharedKeyLite or SAS with
//! the development account's well-known key): point any Table client at
//! [`TestServer::connection_string`].
//!
//! ```
//! use tableq::testing::TestServer;
//! use std::io::{Read, Write};
//!
//! let server = TestServer::start().expect("start a test server");
//! assert!(server.endpoint().starts_with("http://127.0.0.1:"));
//! assert!(server.connection_string().contains("AccountName=devstoreaccount1"));
//!
//! // The operator endpoint answers without a signature.
//! let mut stream = std::net::TcpStream::connect(server.addr()).unwrap();
//! stream.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
//! let mut reply = String::new();
//! stream.read_to_string(&mut reply).unwrap();
//! assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
//!
//! drop(server); // stopped: the port is free again
//! ```

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::mpsc;
use std::thread::JoinHandle;
/// The server's configuration, for [`TestServer::start_with`].
pub use tableq_server::ServerConfig;
use tableq_server::{Account, Server, ServerError};
use tableq_store::{Backend, MemoryBackend};
use tokio::sync::oneshot;

/// Why a [`TestServer`] did not start.
#[derive(Debug)]
pub enum StartError {
    /// The server's thread or runtime could not be made.
    Runtime(std::io::Error),
    /// The server refused the configuration or could not bind a port.
    Server(ServerError),
    /// The server's thread ended before the server was ready.
    Died,
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartError::Runtime(e) => write!(f, "cannot start the test server's runtime: {e}"),
            StartError::Server(e) => write!(f, "the test server did not start: {e}"),
            StartError::Died => write!(f, "the test server's thread ended while starting"),
        }
    }
}

impl std::error::Error for StartError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StartError::Runtime(e) => Some(e),
            StartError::Server(e) => Some(e),
            StartError::Died => None,
        }
    }
}

/// What the server's thread reports once the server listens.
struct Started {
    addr: SocketAddr,
    endpoint: String,
    connection_string: String,
}

/// A running in-process server; stops on drop (see the module docs).
#[derive(Debug)]
pub struct TestServer {
    addr: SocketAddr,
    endpoint: String,
    connection_string: String,
    account: Account,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<Result<(), ServerError>>>,
}

impl TestServer {
    /// A server for the development account (`devstoreaccount1` and its well-known key)
    /// over a fresh in-memory store, on a free port of 127.0.0.1.
    pub fn start() -> Result<TestServer, StartError> {
        TestServer::start_with(ServerConfig::default())
    }

    /// A server with this configuration (its account, authorization, limits, throttling
    /// and fault rules) over a fresh in-memory store, on a free port of 127.0.0.1.
    ///
    /// Fault rules make chosen requests fail as the service fails (docs/testing-with-tableq.md),
    /// here the first insert:
    ///
    /// ```
    /// use tableq::testing::{ServerConfig, TestServer};
    /// use tableq_client::TableServiceClient;
    /// use tableq::model::{Entity, ErrorCode};
    ///
    /// let server = TestServer::start_with(ServerConfig {
    ///     faults: Some(r#"{"rules": [{"operation": "InsertEntity", "error": "ServerBusy", "next": 1}]}"#.into()),
    ///     fault_seed: Some(7),
    ///     ..ServerConfig::default()
    /// })
    /// .expect("start a test server");
    /// let runtime = tokio::runtime::Runtime::new().unwrap();
    /// runtime.block_on(async {
    ///     let service = TableServiceClient::from_connection_string(server.connection_string()).unwrap();
    ///     service.create_table("orders").await.unwrap();
    ///     let orders = service.table("orders");
    ///     let first = orders.insert(&Entity::new("p", "1")).await.unwrap_err();
    ///     assert_eq!(first.code(), Some(ErrorCode::ServerBusy));
    ///     orders.insert(&Entity::new("p", "1")).await.unwrap(); // a retry succeeds
    /// });
    /// ```
    pub fn start_with(config: ServerConfig) -> Result<TestServer, StartError> {
        let account = config.account.clone();
        let (report, reported) = mpsc::channel::<Result<Started, ServerError>>();
        let (stop, stopped) = oneshot::channel::<()>();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(StartError::Runtime)?;
        let thread = std::thread::Builder::new()
            .name("tableq-test-server".into())
            .spawn(move || run(runtime, config, report, stopped))
            .map_err(StartError::Runtime)?;
        let started = match reported.recv() {
            Ok(Ok(started)) => started,
            Ok(Err(e)) => {
                let _ = thread.join();
                return Err(StartError::Server(e));
            }
            Err(_) => {
                let _ = thread.join();
                return Err(StartError::Died);
            }
        };
        Ok(TestServer {
            addr: started.addr,
            endpoint: started.endpoint,
            connection_string: started.connection_string,
            account,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The table endpoint, `http://127.0.0.1:<port>/devstoreaccount1`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The connection string for the Azure SDKs:
    /// `DefaultEndpointsProtocol=http;AccountName=…;AccountKey=…;TableEndpoint=…;`.
    pub fn connection_string(&self) -> &str {
        &self.connection_string
    }

    /// The account name.
    pub fn account_name(&self) -> &str {
        &self.account.name
    }

    /// The account's base64 key.
    pub fn account_key(&self) -> &str {
        &self.account.key
    }

    /// The bound address (127.0.0.1 and the chosen port).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The bound port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Stops the server and waits for it (in-flight requests finish, the store is
    /// closed); the error is the server's, if serving or closing failed. Dropping the
    /// server does the same and ignores that error.
    pub fn stop(mut self) -> Result<(), ServerError> {
        self.shut_down()
    }

    fn shut_down(&mut self) -> Result<(), ServerError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(result)) => result,
            Some(Err(panic)) => std::panic::resume_unwind(panic),
            None => Ok(()),
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // Do not turn a failing test's panic into an abort.
            if let Some(stop) = self.stop.take() {
                let _ = stop.send(());
            }
            if let Some(thread) = self.thread.take() {
                let _ = thread.join();
            }
            return;
        }
        let _ = self.shut_down();
    }
}

/// The server's thread: binds, reports, serves until `stopped`; the runtime (and with it
/// every task and blocking thread of the server) ends with the thread.
fn run(
    runtime: tokio::runtime::Runtime,
    config: ServerConfig,
    report: mpsc::Sender<Result<Started, ServerError>>,
    stopped: oneshot::Receiver<()>,
) -> Result<(), ServerError> {
    let served = runtime.block_on(async move {
        let backend: Arc<dyn Backend> = Arc::new(MemoryBackend::new());
        let addr = SocketAddr::from(([127, 0, 0, 1], 0));
        let server = match Server::bind(addr, backend, config).await {
            Ok(server) => server,
            Err(e) => {
                let _ = report.send(Err(e));
                return Ok(());
            }
        };
        let started = Started {
            addr: server.local_addr(),
            endpoint: server.table_endpoint(),
            connection_string: server.connection_string(),
        };
        let serving = server.run_until(async move {
            let _ = stopped.await;
        });
        if report.send(Ok(started)).is_err() {
            return Ok(());
        }
        serving.await
    });
    drop(runtime);
    served
}

//! [`Server`]: binding, serving and graceful shutdown.
//!
//! [`Server::bind`] claims the address (port 0 picks a free port; a taken port is a
//! [`ServerError::Bind`] naming the address, never a panic); [`Server::run_until`] serves
//! until the given future completes, then stops accepting connections, lets in-flight
//! requests finish (for at most [`ServerConfig::shutdown_grace`]) and closes the store, so
//! that every acknowledged write is durable when it returns. [`shutdown_signal`] is the
//! future for Ctrl-C / SIGTERM.
//!
//! Connections are accepted and served by [`crate::serve::connection`] (timeouts, the connection
//! cap, lingering close), over plain TCP ([`PlainTcp`]) or TLS ([`Server::enable_https`]:
//! the bound port itself, or a second port beside HTTP). With
//! [`ServerConfig::threads`] above 1, that many threads serve: the one running
//! [`Server::run_until`] and more, each with a single-threaded tokio runtime and its own
//! accept loops on the same listening sockets, sharing one connection registry (cap,
//! sweeper, drain); a connection is served where it was accepted. [`Server::enable_tokens`] makes
//! the server accept Entra ID bearer tokens over HTTPS (and, with a
//! [`LocalIssuer`](crate::state::token::LocalIssuer), issue them).

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use tableq_store::{Backend, StoreError};
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::app;
use crate::serve::connection::{self, PlainTcp, Registry, Resolved};
use crate::serve::https::TlsAcceptor;
use crate::serve::observe::health::RESERVED_ACCOUNT_NAMES;
use crate::state::accounts::{BearerSetup, Hosted};
use crate::state::config::{Account, ServerConfig};
use crate::state::faults::Faults;
use crate::state::metrics::CloseReason;
use crate::state::shared::{Observed, Shared};
use crate::state::tls::{TlsError, TlsMaterial};
use crate::state::token::Bearer;

/// Why a server could not start or stop cleanly.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// The address could not be bound (port taken, no permission, bad address).
    #[error("cannot listen on {addr}: {source}{}", bind_hint(source))]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Serving failed (the listener broke).
    #[error("the server stopped with an error: {0}")]
    Serve(#[source] std::io::Error),
    /// The store could not be closed cleanly.
    #[error("the store did not close cleanly: {0}")]
    Close(#[source] StoreError),
    /// TLS material that cannot be used.
    #[error("HTTPS: {0}")]
    Tls(#[from] TlsError),
    /// Bearer tokens asked for without HTTPS.
    #[error("bearer tokens are accepted over HTTPS only: enable HTTPS first")]
    TokensNeedHttps,
    /// Fault rules that fail their checks (`ServerConfig::faults`).
    #[error("{0}")]
    Faults(#[from] crate::state::faults::FaultRuleError),
    /// An account cannot be hosted (bad name or key, or hosted twice).
    #[error("cannot host account {name:?}: {reason}")]
    Account {
        /// The account name.
        name: String,
        /// Why.
        reason: String,
    },
}

fn bind_hint(e: &std::io::Error) -> &'static str {
    match e.kind() {
        std::io::ErrorKind::AddrInUse => {
            " (another process — perhaps another tableq or Azurite — uses this port; stop it \
             or choose another port)"
        }
        std::io::ErrorKind::PermissionDenied => " (ports below 1024 need privileges)",
        _ => "",
    }
}

/// A bound server, ready to [`run_until`](Server::run_until).
///
/// ```no_run
/// # async fn demo() -> Result<(), tableq_server::ServerError> {
/// use std::sync::Arc;
/// use tableq_server::{Server, ServerConfig};
/// use tableq_store::MemoryBackend;
/// let server = Server::bind("127.0.0.1:0".parse().unwrap(), Arc::new(MemoryBackend::new()),
///                           ServerConfig::default()).await?;
/// println!("{}", server.connection_string());
/// server.run_until(tableq_server::shutdown_signal()).await
/// # }
/// ```
pub struct Server {
    listener: TcpListener,
    local_addr: SocketAddr,
    hosted: Hosted,
    shared: Arc<Shared>,
    limits: Resolved,
    https: Option<Https>,
}

/// How HTTPS is served: on the bound port itself (`listener: None`), or on a second one.
struct Https {
    acceptor: Arc<TlsAcceptor>,
    listener: Option<TcpListener>,
    local_addr: SocketAddr,
}

/// The listen backlog: connections the kernel holds before they are accepted (the
/// connection cap's waiting room).
const LISTEN_BACKLOG: u32 = 1024;

/// An address claimed for a server that does not listen yet: the port is bound (so it is
/// the process's, and a taken port is an error now), but connections are refused until
/// [`Server::listen_on`] opens it. `tableq serve` claims its port first, then opens the
/// store and makes its keys, then listens: a start that fails leaves nothing behind, and a
/// client that connects as soon as the port answers finds the server ready.
#[derive(Debug)]
pub struct Reserved {
    socket: tokio::net::TcpSocket,
    addr: SocketAddr,
}

impl Reserved {
    /// Binds `addr` without listening (port 0: any free port; see
    /// [`Reserved::local_addr`]).
    pub fn claim(addr: SocketAddr) -> Result<Reserved, ServerError> {
        let error = |source| ServerError::Bind { addr, source };
        let socket = if addr.is_ipv4() {
            tokio::net::TcpSocket::new_v4()
        } else {
            tokio::net::TcpSocket::new_v6()
        }
        .map_err(error)?;
        // As `TcpListener::bind` does on Unix: a restart may reuse a port in TIME_WAIT.
        #[cfg(unix)]
        socket.set_reuseaddr(true).map_err(error)?;
        socket.bind(addr).map_err(error)?;
        let addr = socket.local_addr().map_err(error)?;
        Ok(Reserved { socket, addr })
    }

    /// The claimed address (with the port chosen for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

/// Refuses account names that the operator endpoints (`/health`, `/metrics`) take.
pub(crate) fn check_account_name(name: &str) -> Result<(), ServerError> {
    if RESERVED_ACCOUNT_NAMES.contains(&name) {
        return Err(ServerError::Account {
            name: name.to_owned(),
            reason: format!(
                "`/{name}` is the server's own endpoint (GET /health, /health/ready, /metrics), \
                 so no account can be named {name:?}; choose another name"
            ),
        });
    }
    Ok(())
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("local_addr", &self.local_addr)
            .field("store", &self.hosted.primary().backend.describe())
            .finish()
    }
}

impl Server {
    /// Binds `addr` and prepares to serve the configuration's account from `backend` (port
    /// 0: any free port; see [`Server::local_addr`]). An account name or key that cannot
    /// be used is a [`ServerError::Account`].
    pub async fn bind(
        addr: SocketAddr,
        backend: Arc<dyn Backend>,
        config: ServerConfig,
    ) -> Result<Server, ServerError> {
        Server::listen_on(Reserved::claim(addr)?, backend, config)
    }

    /// Like [`Server::bind`], on an address [`Reserved::claim`]ed before: the port was
    /// claimed early (a taken port fails before anything else is made) and opens now.
    pub fn listen_on(
        reserved: Reserved,
        backend: Arc<dyn Backend>,
        config: ServerConfig,
    ) -> Result<Server, ServerError> {
        let name = config.account.name.clone();
        check_account_name(&name)?;
        let shared = Arc::new(Shared::new(&config));
        let limits = Resolved::new(&config.connections);
        let faults = faults_of(&config)?;
        let mut hosted =
            Hosted::new(backend, config).map_err(|reason| ServerError::Account { name, reason })?;
        hosted.set_faults(faults);
        let addr = reserved.addr;
        let listener = reserved
            .socket
            .listen(LISTEN_BACKLOG)
            .map_err(|source| ServerError::Bind { addr, source })?;
        let local_addr = listener
            .local_addr()
            .map_err(|source| ServerError::Bind { addr, source })?;
        Ok(Server {
            listener,
            local_addr,
            hosted,
            shared,
            limits,
            https: None,
        })
    }

    /// Serves HTTPS with `material`: on `addr` beside HTTP on the bound address (port 0:
    /// any free port), or, with `addr: None`, on the bound address itself instead of HTTP.
    pub async fn enable_https(
        &mut self,
        material: &TlsMaterial,
        addr: Option<SocketAddr>,
    ) -> Result<(), ServerError> {
        let acceptor = Arc::new(TlsAcceptor::new(material)?);
        let (listener, local_addr) = match addr {
            None => (None, self.local_addr),
            Some(addr) => {
                let listener = TcpListener::bind(addr)
                    .await
                    .map_err(|source| ServerError::Bind { addr, source })?;
                let local_addr = listener
                    .local_addr()
                    .map_err(|source| ServerError::Bind { addr, source })?;
                (Some(listener), local_addr)
            }
        };
        self.https = Some(Https {
            acceptor,
            listener,
            local_addr,
        });
        Ok(())
    }

    /// The HTTPS address, if HTTPS is served.
    pub fn https_addr(&self) -> Option<SocketAddr> {
        self.https.as_ref().map(|h| shown(h.local_addr))
    }

    /// Whether plain HTTP is served (false when HTTPS took the bound port).
    pub fn serves_http(&self) -> bool {
        self.https.as_ref().is_none_or(|h| h.listener.is_some())
    }

    /// Accepts bearer tokens (over HTTPS only) as `bearer` says. `names` are the host
    /// names and addresses clients may reach the HTTPS port by (besides `127.0.0.1`,
    /// `localhost` and `[::1]`): tokens of the local issuer carry
    /// `iss = https://{name}:{port}/{tenant}/v2.0`, and `https://{name}:{port}/{account}`
    /// is accepted as an audience. Needs [`Server::enable_https`] first.
    ///
    /// The server names itself by `public_origin` (`https://host[:port]`, e.g. behind a
    /// proxy) when given, else by its bound HTTPS address: that origin is the local
    /// issuer's URL for requests whose `Host` is none of the names above.
    pub fn enable_tokens(
        &mut self,
        bearer: Bearer,
        names: &[String],
        public_origin: Option<&str>,
    ) -> Result<(), ServerError> {
        let https = self.https.as_ref().ok_or(ServerError::TokensNeedHttps)?;
        let port = https.local_addr.port();
        let mut origins = vec![match public_origin {
            Some(origin) => origin.trim_end_matches('/').to_ascii_lowercase(),
            None => format!("https://{}", shown(https.local_addr)),
        }];
        let defaults = ["127.0.0.1".to_owned(), "localhost".into(), "::1".into()];
        for name in defaults.iter().chain(names) {
            let host = if name.contains(':') {
                format!("[{name}]")
            } else {
                name.to_ascii_lowercase()
            };
            let origin = format!("https://{host}:{port}");
            if !origins.contains(&origin) {
                origins.push(origin);
            }
        }
        self.hosted.set_bearer(BearerSetup { bearer, origins });
        Ok(())
    }

    /// The HTTPS table endpoint, `https://<addr>/<account>`, if HTTPS is served.
    pub fn https_table_endpoint(&self) -> Option<String> {
        let addr = self.https_addr()?;
        Some(format!(
            "https://{addr}/{}",
            self.hosted.primary().config.account.name
        ))
    }

    /// The connection string for the HTTPS endpoint, if HTTPS is served.
    pub fn https_connection_string(&self) -> Option<String> {
        let account = &self.hosted.primary().config.account;
        Some(format!(
            "DefaultEndpointsProtocol=https;AccountName={};AccountKey={};TableEndpoint={};",
            account.name,
            account.key,
            self.https_table_endpoint()?
        ))
    }

    /// Hosts one more account, with its own store (its tables and entities are separate
    /// from every other account's); limits and [`AuthMode`](crate::AuthMode) are the
    /// configuration's. A bad name or key, or a name already hosted, is a
    /// [`ServerError::Account`].
    pub fn add_account(
        &mut self,
        account: Account,
        backend: Arc<dyn Backend>,
    ) -> Result<(), ServerError> {
        let name = account.name.clone();
        check_account_name(&name)?;
        self.hosted
            .add(account, backend)
            .map_err(|reason| ServerError::Account { name, reason })
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The table endpoint of the bound address: `http://<addr>/<account>` (`https://` when
    /// HTTPS took the bound port; a wildcard bind address is shown as 127.0.0.1).
    pub fn table_endpoint(&self) -> String {
        let scheme = if self.serves_http() { "http" } else { "https" };
        format!(
            "{scheme}://{}/{}",
            shown(self.local_addr),
            self.hosted.primary().config.account.name
        )
    }

    /// The connection string of the bound address:
    /// `DefaultEndpointsProtocol=http;AccountName=…;AccountKey=…;TableEndpoint=…;` (`https`
    /// when HTTPS took the bound port).
    pub fn connection_string(&self) -> String {
        let account = &self.hosted.primary().config.account;
        let scheme = if self.serves_http() { "http" } else { "https" };
        format!(
            "DefaultEndpointsProtocol={scheme};AccountName={};AccountKey={};TableEndpoint={};",
            account.name,
            account.key,
            self.table_endpoint()
        )
    }

    /// The most connections the server keeps open at once (configured, or derived from
    /// the open-file limit).
    pub fn max_connections(&self) -> usize {
        self.limits.cap
    }

    /// A one-line description of the store (e.g. for a start-up banner).
    pub fn store_description(&self) -> String {
        self.hosted.primary().backend.describe()
    }

    /// Serves until `shutdown` completes; then finishes in-flight requests (waiting at most
    /// the configured grace period) and closes the store.
    pub async fn run_until<F>(self, shutdown: F) -> Result<(), ServerError>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let Server {
            listener,
            hosted,
            shared,
            limits,
            https,
            ..
        } = self;
        let grace = hosted.primary().config.shutdown_grace;
        let threads = hosted.primary().config.threads.max(1);
        let hosted = Arc::new(hosted);
        let observed = Arc::new(Observed {
            shared: shared.clone(),
            hosted: hosted.clone(),
        });
        let registry = Arc::new(Registry::new(limits, shared.metrics.clone()));
        tokio::spawn(registry.clone().sweep());
        let (fired_tx, fired_rx) = watch::channel(false);
        // Plain HTTP on the bound port unless HTTPS took it; HTTPS on its own port or on
        // the bound one.
        let (plain, tls) = match https {
            Some(Https {
                acceptor,
                listener: None,
                ..
            }) => (None, Some((listener, acceptor))),
            Some(Https {
                acceptor,
                listener: Some(tls_listener),
                ..
            }) => (Some(listener), Some((tls_listener, acceptor))),
            None => (Some(listener), None),
        };
        let serving = Serving {
            observed,
            registry: registry.clone(),
            fired: fired_rx,
        };
        let ((plain, tls), threads) = serving.spawn_threads(plain, tls, threads)?;
        let loops = serving.spawn_loops(plain, tls);
        shutdown.await;
        tracing::info!(target: "tableq_server", "shutting down: finishing in-flight requests");
        let _ = fired_tx.send(true);
        let mut served = Ok(());
        for accepting in loops {
            if let Err(e) = accepting.await {
                served = Err(ServerError::Serve(std::io::Error::other(e.to_string())));
            }
        }
        if tokio::time::timeout(grace, registry.drained())
            .await
            .is_err()
        {
            tracing::warn!(
                target: "tableq_server",
                "requests still running after {grace:?}; stopping without them"
            );
            registry.close_all(CloseReason::Shutdown);
            let _ = tokio::time::timeout(Duration::from_secs(1), registry.drained()).await;
        }
        // The other serving threads end with their connections: stop their runtimes (what
        // a closed connection left is cancelled) before the store closes.
        threads.stop().await;
        drop(registry);
        // Closed, and released, on the blocking pool: an engine may block while closing or
        // own resources that must not be dropped on an async worker.
        let closed = tokio::task::spawn_blocking(move || {
            let mut closed = Ok(());
            for state in hosted.states() {
                let result = state.backend.close();
                if closed.is_ok() {
                    closed = result;
                }
            }
            drop(hosted);
            closed
        })
        .await
        .map_err(|e| ServerError::Close(StoreError::storage(e.to_string())))?;
        served?;
        closed.map_err(ServerError::Close)?;
        tracing::info!(target: "tableq_server", "stopped; the store is closed");
        Ok(())
    }
}

/// What every accept loop of a server shares.
#[derive(Clone)]
struct Serving {
    observed: Arc<Observed>,
    registry: Arc<Registry>,
    fired: watch::Receiver<bool>,
}

/// A TLS listener and its acceptor.
type TlsListener<L> = (L, Arc<TlsAcceptor>);

/// A server's listeners on one thread: plain HTTP, HTTPS.
type Listeners = (Option<TcpListener>, Option<TlsListener<TcpListener>>);

impl Serving {
    /// Spawns an accept loop for each listener on the current runtime.
    fn spawn_loops(
        &self,
        plain: Option<TcpListener>,
        tls: Option<TlsListener<TcpListener>>,
    ) -> Vec<tokio::task::JoinHandle<()>> {
        let mut loops = Vec::new();
        if let Some((listener, acceptor)) = tls {
            loops.push(tokio::spawn(connection::accept_loop(
                listener,
                acceptor,
                self.observed.clone(),
                self.registry.clone(),
                self.fired.clone(),
            )));
        }
        if let Some(listener) = plain {
            loops.push(tokio::spawn(connection::accept_loop(
                listener,
                Arc::new(PlainTcp),
                self.observed.clone(),
                self.registry.clone(),
                self.fired.clone(),
            )));
        }
        loops
    }

    /// Starts `threads - 1` more serving threads, each a single-threaded runtime with its
    /// own accept loops on the same listening sockets (the kernel gives each connection to
    /// the thread that accepts it first, and it stays there: no work-stealing, no wake-ups
    /// between threads). Returns the listeners for this thread and the threads started.
    fn spawn_threads(
        &self,
        plain: Option<TcpListener>,
        tls: Option<TlsListener<TcpListener>>,
        threads: usize,
    ) -> Result<(Listeners, ServingThreads), ServerError> {
        let mut started = ServingThreads::default();
        if threads <= 1 {
            return Ok(((plain, tls), started));
        }
        let plain = plain.map(into_std).transpose()?;
        let tls = tls.map(|(l, a)| into_std(l).map(|l| (l, a))).transpose()?;
        for n in 1..threads {
            let plain = plain
                .as_ref()
                .map(std::net::TcpListener::try_clone)
                .transpose()
                .map_err(ServerError::Serve)?;
            let tls = match &tls {
                Some((l, a)) => Some((l.try_clone().map_err(ServerError::Serve)?, a.clone())),
                None => None,
            };
            let serving = self.clone();
            let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(ServerError::Serve)?;
            let thread = std::thread::Builder::new()
                .name(format!("tableq-serve-{n}"))
                .spawn(move || {
                    runtime.block_on(async move {
                        let plain = plain.map(TcpListener::from_std).transpose();
                        let tls = tls
                            .map(|(l, a)| TcpListener::from_std(l).map(|l| (l, a)))
                            .transpose();
                        match (plain, tls) {
                            (Ok(plain), Ok(tls)) => {
                                let loops = serving.spawn_loops(plain, tls);
                                let _ = stop_rx.await;
                                drop(loops);
                            }
                            (Err(e), _) | (_, Err(e)) => {
                                tracing::error!(target: "tableq_server", "a serving thread cannot listen: {e}");
                            }
                        }
                    });
                    // Dropping the runtime cancels what its connections left.
                    drop(runtime);
                })
                .map_err(ServerError::Serve)?;
            started.threads.push((thread, stop_tx));
        }
        let plain = plain
            .map(TcpListener::from_std)
            .transpose()
            .map_err(ServerError::Serve)?;
        let tls = tls
            .map(|(l, a)| TcpListener::from_std(l).map(|l| (l, a)))
            .transpose()
            .map_err(ServerError::Serve)?;
        Ok(((plain, tls), started))
    }
}

/// A listener taken off the current runtime, to be shared with other threads' runtimes.
fn into_std(listener: TcpListener) -> Result<std::net::TcpListener, ServerError> {
    listener.into_std().map_err(ServerError::Serve)
}

/// The serving threads started beside the one running [`Server::run_until`].
#[derive(Default)]
struct ServingThreads {
    threads: Vec<(
        std::thread::JoinHandle<()>,
        tokio::sync::oneshot::Sender<()>,
    )>,
}

impl ServingThreads {
    /// Stops every thread's runtime and waits for the threads to end.
    async fn stop(self) {
        if self.threads.is_empty() {
            return;
        }
        let joined = tokio::task::spawn_blocking(move || {
            for (thread, stop) in self.threads {
                let _ = stop.send(());
                let _ = thread.join();
            }
        });
        let _ = joined.await;
    }
}

/// An address as clients should use it: a wildcard bind address is shown as 127.0.0.1.
fn shown(mut addr: SocketAddr) -> SocketAddr {
    if addr.ip().is_unspecified() {
        addr.set_ip(IpAddr::V4(Ipv4Addr::LOCALHOST));
    }
    addr
}

/// A future that completes on Ctrl-C (SIGINT) or, on Unix, SIGTERM.
///
/// The signal handlers are installed when this function is called (it must be called
/// inside a tokio runtime), not when the future is first polled: a signal that arrives
/// after the call, even before serving starts, is never the default "terminate now".
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let interrupt = signal(SignalKind::interrupt());
        let terminate = signal(SignalKind::terminate());
        async move {
            match (interrupt, terminate) {
                (Ok(mut i), Ok(mut t)) => {
                    tokio::select! {
                        _ = i.recv() => {}
                        _ = t.recv() => {}
                    }
                }
                (Ok(mut i), Err(_)) => {
                    i.recv().await;
                }
                (Err(_), Ok(mut t)) => {
                    t.recv().await;
                }
                (Err(_), Err(_)) => std::future::pending::<()>().await,
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }
}

/// The whole request pipeline as an axum [`Router`](axum::Router) serving `config`'s account
/// from `backend` (authorization as configured), without a listener: for driving requests
/// in-process (the request-path fuzz target and its replay test call it with
/// `tower::ServiceExt::oneshot`). Unlike [`Server::run_until`] it never closes the store,
/// and it is the Table protocol alone: the operator endpoints (`/health`, `/metrics`), the
/// request log, the metrics and the request-body budget belong to the server's connections.
/// An account name or key that cannot be used is a [`ServerError::Account`].
///
/// ```
/// use std::sync::Arc;
/// use tableq_server::{ServerConfig, router};
/// use tableq_store::MemoryBackend;
/// let app: axum::Router = router(Arc::new(MemoryBackend::new()), ServerConfig::default())?;
/// # drop(app);
/// # Ok::<(), tableq_server::ServerError>(())
/// ```
pub fn router(
    backend: std::sync::Arc<dyn tableq_store::Backend>,
    config: ServerConfig,
) -> Result<axum::Router, ServerError> {
    let name = config.account.name.clone();
    let faults = faults_of(&config)?;
    let mut hosted =
        Hosted::new(backend, config).map_err(|reason| ServerError::Account { name, reason })?;
    hosted.set_faults(faults);
    Ok(app::router(std::sync::Arc::new(hosted)))
}

/// The throttle and fault rules `config` asks for (a seed drawn now when it names none).
fn faults_of(config: &ServerConfig) -> Result<Faults, ServerError> {
    let seed = config
        .fault_seed
        .unwrap_or_else(|| uuid::Uuid::new_v4().as_u64_pair().0);
    Ok(Faults::new(
        config.throttle,
        config.faults.as_deref(),
        seed,
    )?)
}

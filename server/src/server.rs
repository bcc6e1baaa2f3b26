//! [`Server`]: binding, serving and graceful shutdown.
//!
//! [`Server::bind`] claims the address (port 0 picks a free port; a taken port is a
//! [`ServerError::Bind`] naming the address, never a panic); [`Server::run_until`] serves
//! until the given future completes, then stops accepting connections, lets in-flight
//! requests finish (for at most [`ServerConfig::shutdown_grace`]) and closes the store, so
//! that every acknowledged write is durable when it returns. [`shutdown_signal`] is the
//! future for Ctrl-C / SIGTERM.
//!
//! Connections are accepted and served by [`crate::connection`] (timeouts, the connection
//! cap, lingering close), over plain TCP ([`PlainTcp`]).

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use tableq_store::{Backend, StoreError};
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::app;
use crate::auth::Hosted;
use crate::config::{Account, ServerConfig};
use crate::connection::{self, CloseReason, PlainTcp, Registry, Resolved};
use crate::observe::health::RESERVED_ACCOUNT_NAMES;
use crate::observe::{Observed, Shared};

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
}

/// Refuses account names that the operator endpoints (`/health`, `/metrics`) take.
pub(crate) fn check_account_name(name: &str) -> Result<(), ServerError> {
    if RESERVED_ACCOUNT_NAMES.contains(&name) {
        return Err(ServerError::Account {
            name: name.to_owned(),
            reason: format!(
                "`/{name}` is the server's own endpoint (GET /health, /health/ready, /metrics),                  so no account can be named {name:?}; choose another name"
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
        let name = config.account.name.clone();
        check_account_name(&name)?;
        let shared = Arc::new(Shared::new(&config));
        let limits = Resolved::new(&config.connections);
        let hosted =
            Hosted::new(backend, config).map_err(|reason| ServerError::Account { name, reason })?;
        let listener = TcpListener::bind(addr)
            .await
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
        })
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

    /// The table endpoint clients use: `http://<addr>/<account>` (a wildcard bind address
    /// is shown as 127.0.0.1).
    pub fn table_endpoint(&self) -> String {
        let mut addr = self.local_addr;
        if addr.ip().is_unspecified() {
            addr.set_ip(IpAddr::V4(Ipv4Addr::LOCALHOST));
        }
        format!(
            "http://{addr}/{}",
            self.hosted.primary().config.account.name
        )
    }

    /// The connection string for this server:
    /// `DefaultEndpointsProtocol=http;AccountName=…;AccountKey=…;TableEndpoint=…;`.
    pub fn connection_string(&self) -> String {
        let account = &self.hosted.primary().config.account;
        format!(
            "DefaultEndpointsProtocol=http;AccountName={};AccountKey={};TableEndpoint={};",
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
            ..
        } = self;
        let grace = hosted.primary().config.shutdown_grace;
        let hosted = Arc::new(hosted);
        let router = app::router(hosted.clone());
        let observed = Arc::new(Observed {
            shared: shared.clone(),
            hosted: hosted.clone(),
        });
        let registry = Arc::new(Registry::new(limits, shared.metrics.clone()));
        tokio::spawn(registry.clone().sweep());
        let (fired_tx, fired_rx) = watch::channel(false);
        let accepting = tokio::spawn(connection::accept_loop(
            listener,
            Arc::new(PlainTcp),
            router,
            observed,
            registry.clone(),
            fired_rx,
        ));
        shutdown.await;
        tracing::info!(target: "tableq_server", "shutting down: finishing in-flight requests");
        let _ = fired_tx.send(true);
        let served = match accepting.await {
            Ok(()) => Ok(()),
            Err(e) => Err(ServerError::Serve(std::io::Error::other(e.to_string()))),
        };
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

//! Accepting and serving connections: the accept loop, HTTP/1.1 on each connection
//! (hyper), the timeouts that close slow and idle connections, the cap on open
//! connections, and graceful shutdown.
//!
//! The byte stream a connection is served over comes from an [`Acceptor`], handed each
//! accepted TCP stream: [`PlainTcp`] serves it as it is; an acceptor that performs a TLS
//! handshake can serve HTTPS beside it, with the same timeouts, cap and shutdown (the
//! handshake runs in the connection's task, within the header timeout). Everything here is
//! generic over the stream (`AsyncRead + AsyncWrite`), and several listeners (HTTP and
//! HTTPS) can share one [`Registry`] — one cap, one sweeper — by running one
//! [`accept_loop`] each.
//!
//! One connection's life:
//!
//! 1. accept, then [`Registry::admit`] (the cap: at the cap, a connection that has waited
//!    long enough for a request is closed to make room, else the loop waits — and the
//!    connections behind this one wait in the listen backlog — until a slot frees; the one
//!    accepted is never closed unanswered). Admitting after the accept means a connection
//!    is closed to make room only when a new one is really there;
//! 2. `TCP_NODELAY`, register ([`registry`]), spawn its task;
//! 3. the acceptor's handshake, bounded by the header timeout;
//! 4. hyper's HTTP/1.1 connection over a [`Tracked`] stream, until the client
//!    or the server closes it — the registry's sweeper asks it to close past a deadline,
//!    and each request carries its own deadline for its body to arrive (`request_timeout`
//!    after its header's first byte, see [`io::ConnService`]);
//! 5. a lingering close: the server's side is shut down (FIN), then what the client still
//!    sends is read and discarded for a moment (bounded), so that a response sent before
//!    the request was read whole (413, 503) reaches the client instead of being destroyed by
//!    a reset when unread bytes are left in the socket.
//!
//! On shutdown the loop stops accepting, every connection finishes its in-flight request
//! (idle ones close at once), and the caller waits for [`Registry::drained`].

pub(crate) mod io;
pub(crate) mod registry;

use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

use crate::state::metrics::CloseReason;
use crate::state::shared::Observed;
use io::{ConnService, Tracked};
pub(crate) use registry::{Registry, Resolved};

/// How long a lingering close reads what the client still sends.
const LINGER: Duration = Duration::from_secs(2);
/// How long it does so once the server is shutting down.
const LINGER_AT_SHUTDOWN: Duration = Duration::from_millis(100);
/// The most bytes a lingering close reads.
const LINGER_BYTES: usize = 8 * 1024 * 1024;

/// Turns an accepted TCP stream into the byte stream HTTP is served over (see the module
/// docs): [`PlainTcp`] for HTTP; a TLS acceptor for HTTPS.
pub(crate) trait Acceptor: Send + Sync + 'static {
    /// The stream HTTP is served over.
    type Io: AsyncRead + AsyncWrite + Unpin + Send + 'static;
    /// Whether the stream is encrypted (HTTPS): requests over it carry
    /// [`Secure`](crate::state::scope::Secure).
    const SECURE: bool;

    /// Prepares one accepted connection (e.g. a TLS handshake). It runs in the
    /// connection's own task, and is given up (the connection closed) after the header
    /// timeout.
    fn accept(&self, tcp: TcpStream) -> impl Future<Output = std::io::Result<Self::Io>> + Send;
}

/// Plain HTTP: the TCP stream as it is.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PlainTcp;

impl Acceptor for PlainTcp {
    type Io = TcpStream;
    const SECURE: bool = false;

    fn accept(&self, tcp: TcpStream) -> impl Future<Output = std::io::Result<TcpStream>> + Send {
        std::future::ready(Ok(tcp))
    }
}

/// Accepts connections on `listener` until `shutdown` turns true, serving each with
/// the request pipeline through `acceptor`. Returns once the loop has stopped accepting; connections
/// still open then finish their in-flight requests (wait for [`Registry::drained`]).
pub(crate) async fn accept_loop<A: Acceptor>(
    listener: tokio::net::TcpListener,
    acceptor: Arc<A>,
    observed: Arc<Observed>,
    registry: Arc<Registry>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut builder = http1::Builder::new();
    // The sweeper enforces the header timeout from the header's first byte (hyper's own
    // would start at once and close idle keep-alive connections); the pipeline sets `Date`.
    builder
        .header_read_timeout(None)
        .auto_date_header(false)
        .keep_alive(true);
    let builder = Arc::new(builder);
    let mut accept_errors = AcceptErrors::default();
    loop {
        if *shutdown.borrow_and_update() {
            return;
        }
        let accepted = tokio::select! {
            biased;
            _ = shutdown.changed() => return,
            accepted = async {
                let accepted = listener.accept().await;
                if accepted.is_ok() {
                    registry.admit().await;
                }
                accepted
            } => accepted,
        };
        let (tcp, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                accept_errors.note(&e).await;
                continue;
            }
        };
        // Responses go out in one write; without Nagle's delay a small one leaves at once.
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(target: "tableq_server", "cannot set TCP_NODELAY: {e}");
        }
        let slot = registry.insert();
        let task = serve_connection(
            tcp,
            acceptor.clone(),
            ConnService::new(
                observed.clone(),
                slot.state.clone(),
                peer,
                A::SECURE,
                registry.limits().request_timeout,
            ),
            builder.clone(),
            slot,
            shutdown.clone(),
        );
        tokio::spawn(task);
    }
}

/// Accept errors are logged (at most once a second) and, when they mean the process is
/// out of descriptors or memory, followed by a short pause instead of a busy loop.
#[derive(Default)]
struct AcceptErrors {
    last_log: Option<std::time::Instant>,
}

impl AcceptErrors {
    async fn note(&mut self, e: &std::io::Error) {
        if self
            .last_log
            .is_none_or(|t| t.elapsed() >= Duration::from_secs(1))
        {
            tracing::warn!(target: "tableq_server", "accepting a connection failed: {e}");
            self.last_log = Some(std::time::Instant::now());
        }
        // EMFILE, ENFILE, ENOBUFS, ENOMEM and the like: wait for resources to come back.
        if !matches!(
            e.kind(),
            std::io::ErrorKind::ConnectionAborted
                | std::io::ErrorKind::ConnectionReset
                | std::io::ErrorKind::Interrupted
                | std::io::ErrorKind::WouldBlock
        ) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// One connection's task (steps 3–5 of the module docs).
async fn serve_connection<A: Acceptor>(
    tcp: TcpStream,
    acceptor: Arc<A>,
    service: ConnService,
    builder: Arc<http1::Builder>,
    slot: registry::Slot,
    mut shutdown: watch::Receiver<bool>,
) {
    let state = slot.state.clone();
    let header_timeout = slot.limits().header_timeout;
    let io = tokio::select! {
        io = tokio::time::timeout(header_timeout, acceptor.accept(tcp)) => match io {
            Ok(Ok(io)) => io,
            Ok(Err(e)) => {
                tracing::debug!(target: "tableq_server", "connection handshake failed: {e}");
                return;
            }
            Err(_) => {
                state.request_close(CloseReason::HeaderTimeout);
                return;
            }
        },
        _ = state.close_requested() => return,
    };
    let mut conn = builder.serve_connection(TokioIo::new(Tracked::new(io, state.clone())), service);
    let mut draining = false;
    let finished = loop {
        if !draining && *shutdown.borrow_and_update() {
            std::pin::Pin::new(&mut conn).graceful_shutdown();
            draining = true;
        }
        tokio::select! {
            done = std::future::poll_fn(|cx| conn.poll_without_shutdown(cx)) => {
                if let Err(e) = &done {
                    tracing::debug!(target: "tableq_server", "connection ended: {e}");
                }
                break done.is_ok();
            }
            reason = state.close_requested() => {
                tracing::debug!(target: "tableq_server", "closing a connection: {}", reason.label());
                // Dropping the connection closes it (and cancels a request it was serving).
                return;
            }
            changed = shutdown.changed(), if !draining => {
                if changed.is_err() {
                    // The server is gone without a shutdown signal: finish like a shutdown.
                    std::pin::Pin::new(&mut conn).graceful_shutdown();
                    draining = true;
                }
            }
        }
    };
    if finished {
        let linger = if *shutdown.borrow() {
            LINGER_AT_SHUTDOWN
        } else {
            LINGER
        };
        let mut io = conn.into_parts().io.into_inner();
        let cut_short = async {
            // A shutdown shortens a linger that started before it.
            let _ = shutdown.wait_for(|fired| *fired).await;
            tokio::time::sleep(LINGER_AT_SHUTDOWN).await;
        };
        tokio::select! {
            () = lingering_close(io.get_mut(), linger) => {}
            _ = state.close_requested() => {}
            () = cut_short => {}
        }
    }
    drop(slot);
}

/// Shuts down the server's side, then reads and discards what the client still sends until
/// it closes, for at most `linger` and [`LINGER_BYTES`].
async fn lingering_close<Io: AsyncRead + AsyncWrite + Unpin>(io: &mut Io, linger: Duration) {
    if io.shutdown().await.is_err() {
        return;
    }
    let deadline = tokio::time::Instant::now() + linger;
    let mut buf = vec![0u8; 16 * 1024];
    let mut read = 0usize;
    while read < LINGER_BYTES {
        match tokio::time::timeout_at(deadline, io.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => read += n,
            _ => return,
        }
    }
}

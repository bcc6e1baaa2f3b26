//! What one connection reports to its [`ConnState`]: [`Tracked`] wraps the connection's
//! byte stream (any `AsyncRead + AsyncWrite`: plain TCP today, TLS later) and notes when
//! bytes arrive and when writes block; [`ConnService`] is the hyper service of the
//! connection, which marks each request's start and end around the pipeline and hands each
//! request its deadline for arriving whole ([`RequestDeadline`]: `request_timeout` after
//! its header's first byte).

use axum::extract::Request;
use axum::response::Response;
use hyper::body::Incoming;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::registry::ConnState;
use crate::serve::observe;
use crate::state::scope::{RequestDeadline, Secure};
use crate::state::shared::Observed;

/// A byte stream whose reads and blocked writes are reported to a [`ConnState`].
pub(crate) struct Tracked<Io> {
    inner: Io,
    state: Arc<ConnState>,
}

impl<Io> Tracked<Io> {
    pub(crate) fn new(inner: Io, state: Arc<ConnState>) -> Tracked<Io> {
        Tracked { inner, state }
    }

    /// The wrapped stream.
    pub(crate) fn get_mut(&mut self) -> &mut Io {
        &mut self.inner
    }
}

impl<Io: AsyncRead + Unpin> AsyncRead for Tracked<Io> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.state.on_read();
        }
        polled
    }
}

impl<Io: AsyncWrite + Unpin> AsyncWrite for Tracked<Io> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.state.on_write(polled.is_pending());
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.state.on_write(polled.is_pending());
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.inner).poll_flush(cx);
        self.state.on_write(polled.is_pending());
        polled
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// The hyper service of one connection: each request served by [`observe::serve`] (the
/// operator endpoints, or the request pipeline `crate::app::serve` with metrics and the log) with its
/// [`RequestDeadline`], its start and end reported to the connection's [`ConnState`] (the
/// end also when the request is dropped, e.g. because the client went away). The peer's address reaches handlers as axum's
/// `ConnectInfo<SocketAddr>` (a SAS's `sip` is checked against it).
#[derive(Clone)]
pub(crate) struct ConnService {
    observed: Arc<Observed>,
    state: Arc<ConnState>,
    peer: std::net::SocketAddr,
    secure: bool,
    request_timeout: Duration,
}

impl ConnService {
    pub(crate) fn new(
        observed: Arc<Observed>,
        state: Arc<ConnState>,
        peer: std::net::SocketAddr,
        secure: bool,
        request_timeout: Duration,
    ) -> ConnService {
        ConnService {
            observed,
            state,
            peer,
            secure,
            request_timeout,
        }
    }
}

/// Ends the request in the [`ConnState`] when dropped.
struct InRequest(Arc<ConnState>);

impl Drop for InRequest {
    fn drop(&mut self) {
        self.0.end_request();
    }
}

impl hyper::service::Service<Request<Incoming>> for ConnService {
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn call(&self, mut request: Request<Incoming>) -> Self::Future {
        let started = self.state.begin_request();
        let extensions = request.extensions_mut();
        extensions.insert(axum::extract::ConnectInfo(self.peer));
        if self.secure {
            extensions.insert(Secure);
        }
        let deadline = RequestDeadline(started + self.request_timeout);
        let in_request = InRequest(self.state.clone());
        let observed = self.observed.clone();
        Box::pin(async move {
            let response = observe::serve(&observed, request, deadline).await;
            drop(in_request);
            Ok(response)
        })
    }
}

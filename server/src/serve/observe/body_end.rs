//! Whether a request's body was read to its end before the request was answered.
//!
//! A request answered before its body was read — refused by authorization, by a missing
//! table, by a precondition, before the handler looked at the body — leaves the body's bytes
//! in flight. hyper then tries once to discard them; when they have not all arrived yet it
//! closes the connection *after* writing the response, which then carries no
//! `Connection: close`. A client that pools the connection (Python's urllib3, under load)
//! sends its next request on it and gets "remote end closed connection without response".
//!
//! [`watch`] wraps the body of a request that has one so that [`Watched::read_to_end`] tells
//! afterwards whether it was read whole; when it was not, the response carries
//! `Connection: close` (see [`crate::serve::observe`]), so the client opens a new
//! connection instead of reusing one the server is closing, and the lingering close
//! (`crate::serve::connection`) keeps the response from being destroyed by a reset. A
//! request without a body (a point get) is not wrapped and pays nothing.

use axum::body::{Body, Bytes};
use hyper::body::{Body as HttpBody, Frame, Incoming, SizeHint};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

/// Set once the watched body has been read to its end.
#[derive(Debug)]
pub(crate) struct Watched(Option<Arc<AtomicBool>>);

impl Watched {
    /// Whether the request's body, if it had one, was read to its end.
    pub(crate) fn read_to_end(&self) -> bool {
        self.0
            .as_ref()
            .is_none_or(|end| end.load(Ordering::Acquire))
    }
}

/// The request body as the router sees it, and what tells afterwards whether it was read
/// whole. A body that is already at its end (no `Content-Length`, or 0, and not chunked) is
/// passed through unwatched.
pub(crate) fn watch(incoming: Incoming) -> (Body, Watched) {
    if incoming.is_end_stream() {
        return (Body::new(incoming), Watched(None));
    }
    let end = Arc::new(AtomicBool::new(false));
    let body = Body::new(WatchedBody {
        inner: incoming,
        end: end.clone(),
    });
    (body, Watched(Some(end)))
}

/// A body that sets its flag when it reaches its end.
struct WatchedBody {
    inner: Incoming,
    end: Arc<AtomicBool>,
}

impl HttpBody for WatchedBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(polled, Poll::Ready(None)) || self.inner.is_end_stream() {
            self.end.store(true, Ordering::Release);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

//! Request bodies: read whole under the size limit, the body timeout and the server's
//! budget for request-body bytes in memory.
//!
//! * **Budget** ([`BodyBudget`](crate::state::budget::BodyBudget)): every body's bytes are reserved before they are read —
//!   its `Content-Length` at once, or each chunk of a chunked body as it comes — and stay
//!   reserved until the request is answered. When the budget is full, a request waits up
//!   to [`ServerConfig::body_budget_wait`](crate::ServerConfig::body_budget_wait) for room,
//!   then gets 503 `ServerBusy` (the SDKs retry it). So however many clients stall with
//!   almost-complete bodies, the bodies held in memory stay within the budget; memory beyond
//!   it stays in the clients' and the kernel's buffers.
//! * **Progress**: a body that goes `body_timeout` without a byte arriving fails with 408
//!   `RequestTimeout`; so does one not complete by the request's deadline
//!   (`request_timeout` after its header's first byte, see `crate::state::scope::RequestDeadline`)
//!   however steadily its bytes trickle in.
//! * **Over the limit**: a body larger than the limit — by its `Content-Length`, or once
//!   more than the limit has arrived — is answered 413 `RequestBodyTooLarge` only after the
//!   rest of it has been read and discarded (up to [`DISCARD_LIMIT`] bytes, within the
//!   timeouts; never kept in memory), so that HTTP stacks that write the whole body before
//!   reading the answer (Node's, Python's) see the 413 instead of a connection reset.
//!   A client that sent `Expect: 100-continue` has sent nothing yet and is answered at once.
//!
//! Whenever a body was not read to its end, the response carries `Connection: close`.
//!
//! **Where a body is kept** ([`BodyBuf`]): a small one on the heap; one of
//! [`MAP_THRESHOLD`] bytes or more (or of unknown length) in an anonymous memory map,
//! which is given back to the operating system the moment it is dropped. The C allocator
//! keeps freed multi-megabyte buffers for reuse instead (glibc raises its mmap threshold
//! after the first one is freed), so without the maps a burst of stalled 4 MB bodies left
//! the process's resident size at its peak after the clients were gone.

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, header};
use http_body_util::BodyExt;
use memmap2::{Mmap, MmapMut};
use std::time::Duration;
use tableq_model::ErrorCode;
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::Instant;

use crate::protocol::error::ApiError;
use crate::state::scope;
use crate::state::shared::Shared;

/// The most bytes of an over-limit body read and discarded before answering 413 (a larger
/// body is answered without reading it, and the connection closed).
pub(crate) const DISCARD_LIMIT: u64 = 32 * 1024 * 1024;

/// Bodies of this size or more (and bodies of unknown length) are read into an anonymous
/// memory map rather than onto the heap.
pub(crate) const MAP_THRESHOLD: usize = 128 * 1024;

/// The body timeout when a body is read outside a server (an in-process router).
const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// A request body as read: on the heap when small, in an anonymous memory map when large
/// (see the module docs).
#[derive(Debug)]
pub(crate) enum BodyBuf {
    /// On the heap.
    Heap(Vec<u8>),
    /// The first `len` bytes of an anonymous map.
    Mapped {
        /// The map (its length is the most the body may hold).
        map: MmapMut,
        /// The bytes written.
        len: usize,
    },
}

impl BodyBuf {
    /// Room for `expected` bytes (a declared length), or for up to `limit` bytes when the
    /// length is unknown; the map only costs memory for the pages written.
    fn new(expected: Option<usize>, limit: usize) -> BodyBuf {
        let room = expected.unwrap_or(limit);
        if (room >= MAP_THRESHOLD || (expected.is_none() && room > 0))
            && let Ok(map) = MmapMut::map_anon(room.max(1))
        {
            return BodyBuf::Mapped { map, len: 0 };
        }
        BodyBuf::Heap(Vec::with_capacity(expected.unwrap_or(0)))
    }

    fn len(&self) -> usize {
        match self {
            BodyBuf::Heap(v) => v.len(),
            BodyBuf::Mapped { len, .. } => *len,
        }
    }

    /// Appends `data` (the caller keeps the total within the room asked for; past a map's
    /// end the body moves to the heap).
    fn extend(&mut self, data: &[u8]) {
        match self {
            BodyBuf::Heap(v) => v.extend_from_slice(data),
            BodyBuf::Mapped { map, len } => match map.get_mut(*len..*len + data.len()) {
                Some(room) => {
                    room.copy_from_slice(data);
                    *len += data.len();
                }
                None => {
                    let mut v = map[..*len].to_vec();
                    v.extend_from_slice(data);
                    *self = BodyBuf::Heap(v);
                }
            },
        }
    }

    /// The body as owned bytes (copied out of a map).
    pub(crate) fn into_vec(self) -> Vec<u8> {
        match self {
            BodyBuf::Heap(v) => v,
            BodyBuf::Mapped { map, len } => map[..len].to_vec(),
        }
    }

    /// The body as [`Bytes`] (a map is shared, not copied).
    pub(crate) fn into_bytes(self) -> Bytes {
        match self {
            BodyBuf::Heap(v) => Bytes::from(v),
            BodyBuf::Mapped { map, len } => match map.make_read_only() {
                Ok(map) => Bytes::from_owner(MappedBody { map, len }),
                Err(_) => Bytes::new(),
            },
        }
    }
}

/// A read-only map holding a body in its first `len` bytes.
struct MappedBody {
    map: Mmap,
    len: usize,
}

impl AsRef<[u8]> for MappedBody {
    fn as_ref(&self) -> &[u8] {
        &self.map[..self.len]
    }
}

fn too_large(limit: usize) -> ApiError {
    ApiError::new(
        ErrorCode::RequestBodyTooLarge,
        format!("the request body is larger than {limit} bytes"),
    )
}

fn busy(shared: Option<&Shared>) -> ApiError {
    if let Some(s) = shared {
        s.metrics.body_rejections.inc();
    }
    ApiError::new(
        ErrorCode::ServerBusy,
        "the server holds as many request bodies in memory as it allows \
         (--body-budget); retry the request",
    )
}

/// The declared `Content-Length`, if any (400 `InvalidHeaderValue` when it is not a number).
fn content_length(headers: &HeaderMap) -> Result<Option<u64>, ApiError> {
    let Some(value) = headers.get(header::CONTENT_LENGTH) else {
        return Ok(None);
    };
    value
        .to_str()
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .map(Some)
        .ok_or_else(|| {
            ApiError::new(
                ErrorCode::InvalidHeaderValue,
                "Content-Length is not a number",
            )
        })
}

/// When the next read of a body gives up: `body_timeout` from now, or the request's
/// deadline if sooner (`true`: the deadline).
fn read_until(timeout: Duration, deadline: Option<std::time::Instant>) -> (Instant, bool) {
    let progress = Instant::now() + timeout;
    match deadline.map(Instant::from_std) {
        Some(deadline) if deadline <= progress => (deadline, true),
        _ => (progress, false),
    }
}

fn expects_continue(headers: &HeaderMap) -> bool {
    headers
        .get(header::EXPECT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("100-continue"))
}

/// Reads a request body of at most `limit` bytes (see the module docs).
pub(crate) async fn read(
    body: Body,
    headers: &HeaderMap,
    limit: usize,
) -> Result<BodyBuf, ApiError> {
    let shared = scope::shared();
    let shared = shared.as_deref();
    let timeout = shared.map_or(DEFAULT_BODY_TIMEOUT, |s| s.body_timeout);
    let deadline = scope::request_deadline();
    let close = scope::close_connection;
    let declared = content_length(headers)?;
    if let Some(len) = declared
        && len > limit as u64
    {
        let drained =
            !expects_continue(headers) && discard(body, 0, Some(len), timeout, deadline).await;
        if !drained {
            close();
        }
        return Err(too_large(limit));
    }
    let budget = shared.map(|s| &s.budget);
    let mut held: Option<OwnedSemaphorePermit> = None;
    if let (Some(budget), Some(len)) = (budget, declared) {
        match budget.reserve(len).await {
            Some(p) => held = Some(p),
            None if len > 0 => {
                close();
                return Err(busy(shared));
            }
            None => {}
        }
    }
    let mut out = BodyBuf::new(declared.map(|n| n as usize), limit);
    let mut body = body;
    loop {
        let (until, whole) = read_until(timeout, deadline);
        let frame = match tokio::time::timeout_at(until, body.frame()).await {
            Ok(None) => break,
            Ok(Some(Ok(frame))) => frame,
            Ok(Some(Err(e))) => {
                close();
                return Err(ApiError::new(
                    ErrorCode::InvalidInput,
                    format!("the request body could not be read: {e}"),
                ));
            }
            Err(_) => {
                close();
                if let Some(s) = shared {
                    s.metrics.body_timeouts.inc();
                }
                if whole {
                    let of = declared.map_or(String::new(), |n| format!(" of {n}"));
                    return Err(ApiError::request_timeout(format!(
                        "the request did not arrive whole within {} s of its first byte \
                         (--request-timeout): {}{of} bytes of its body had arrived",
                        shared.map_or(0.0, |s| s.request_timeout.as_secs_f64()),
                        out.len()
                    )));
                }
                return Err(ApiError::request_timeout(format!(
                    "no byte of the request body arrived for {} s (it had sent {} bytes)",
                    timeout.as_secs_f64(),
                    out.len()
                )));
            }
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        if out.len() + data.len() > limit {
            let seen = (out.len() + data.len()) as u64;
            drop(out);
            drop(held);
            if !discard(body, seen, declared, timeout, deadline).await {
                close();
            }
            return Err(too_large(limit));
        }
        if declared.is_none()
            && let Some(budget) = budget
            && !data.is_empty()
        {
            match budget.reserve(data.len() as u64).await {
                Some(p) => match &mut held {
                    Some(h) => h.merge(p),
                    None => held = Some(p),
                },
                None => {
                    close();
                    return Err(busy(shared));
                }
            }
        }
        out.extend(&data);
    }
    if let Some(permit) = held {
        // Released when the request is answered.
        scope::hold(permit);
    }
    Ok(out)
}

/// Reads and drops the rest of `body` (`seen` bytes already read); `true` when it ended
/// within [`DISCARD_LIMIT`], the timeout and the request's deadline.
async fn discard(
    mut body: Body,
    mut seen: u64,
    declared: Option<u64>,
    timeout: Duration,
    deadline: Option<std::time::Instant>,
) -> bool {
    if declared.is_some_and(|n| n > DISCARD_LIMIT) {
        return false;
    }
    loop {
        let (until, _) = read_until(timeout, deadline);
        match tokio::time::timeout_at(until, body.frame()).await {
            Ok(None) => return true,
            Ok(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    seen += data.len() as u64;
                    if seen > DISCARD_LIMIT {
                        return false;
                    }
                }
            }
            _ => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn bodies_are_read_whole_or_refused() {
        let mut headers = HeaderMap::new();
        let got = read(Body::from("hello"), &headers, 10).await.unwrap();
        assert_eq!(got.into_vec(), b"hello");
        let e = read(Body::from("hello world!"), &headers, 10)
            .await
            .unwrap_err();
        assert_eq!(e.code(), "RequestBodyTooLarge");
        headers.insert(header::CONTENT_LENGTH, "12".parse().unwrap());
        let e = read(Body::from("hello world!"), &headers, 10)
            .await
            .unwrap_err();
        assert_eq!(e.code(), "RequestBodyTooLarge");
        headers.insert(header::CONTENT_LENGTH, "x".parse().unwrap());
        let e = read(Body::from("x"), &headers, 10).await.unwrap_err();
        assert_eq!(e.code(), "InvalidHeaderValue");
    }

    #[tokio::test]
    async fn large_bodies_are_mapped_and_read_whole() {
        let data: Vec<u8> = (0..MAP_THRESHOLD * 3).map(|i| (i % 251) as u8).collect();
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONTENT_LENGTH,
            data.len().to_string().parse().unwrap(),
        );
        let chunks = || {
            data.chunks(10_000)
                .map(|c| Ok::<_, std::io::Error>(Bytes::copy_from_slice(c)))
                .collect::<Vec<_>>()
        };
        let body = Body::from_stream(futures_util::stream::iter(chunks()));
        let got = read(body, &headers, data.len()).await.unwrap();
        assert!(matches!(got, BodyBuf::Mapped { .. }));
        assert_eq!(got.into_bytes(), data);
        // Unknown length (chunked): mapped up to the limit, read whole.
        let body = Body::from_stream(futures_util::stream::iter(chunks()));
        let got = read(body, &HeaderMap::new(), data.len() + 5).await.unwrap();
        assert_eq!(got.len(), data.len());
        assert_eq!(got.into_vec(), data);
        // Small and declared: on the heap.
        let mut headers = HeaderMap::new();
        headers.insert(header::CONTENT_LENGTH, "3".parse().unwrap());
        let got = read(Body::from("abc"), &headers, 10).await.unwrap();
        assert!(matches!(got, BodyBuf::Heap(_)));
    }

    #[test]
    fn a_full_map_moves_to_the_heap() {
        let mut b = BodyBuf::new(Some(MAP_THRESHOLD), MAP_THRESHOLD);
        b.extend(&vec![1u8; MAP_THRESHOLD]);
        b.extend(&[2u8; 3]);
        assert!(matches!(b, BodyBuf::Heap(_)));
        let v = b.into_vec();
        assert_eq!(v.len(), MAP_THRESHOLD + 3);
        assert_eq!(&v[MAP_THRESHOLD..], &[2, 2, 2]);
    }

    #[test]
    fn expect_continue_is_recognised() {
        let mut headers = HeaderMap::new();
        assert!(!expects_continue(&headers));
        headers.insert(header::EXPECT, "100-Continue".parse().unwrap());
        assert!(expects_continue(&headers));
    }
}

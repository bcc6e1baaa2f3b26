//! [`Connection`]: one keep-alive HTTP/1.1 connection on hyper's connection API, for load
//! generators (`tableq bench-http`'s measured requests), the way `oha` or `rewrk` drive a
//! server.
//!
//! Requests are built and signed like every request of this crate
//! ([`TableServiceClient::prepare`](crate::TableServiceClient::prepare)) but sent without
//! reqwest's pool, redirect and proxy layers, which re-parse every request's URL twice and
//! cost more CPU per request than the emulator's whole point get — CPU that, on a small
//! machine, the client would take from the server it measures.
//!
//! ```no_run
//! # async fn demo() -> Result<(), tableq_client::ClientError> {
//! use tableq_client::TableServiceClient;
//! use tableq_client::conn::Connection;
//! let service = TableServiceClient::from_connection_string("UseDevelopmentStorage=true")?;
//! let mut connection = Connection::open(&service.authority()).await?;
//! let request = service.prepare(service.request(reqwest::Method::GET, "Tables"))?;
//! let (status, _body) = connection.send(request).await?;
//! assert!(status.is_success());
//! # Ok(()) }
//! ```

use crate::error::ClientError;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use hyper::header::HeaderValue;
use hyper_util::rt::TokioIo;

/// The status of an answer.
pub use hyper::StatusCode;

/// One keep-alive HTTP/1.1 connection (see the module docs).
pub struct Connection {
    sender: SendRequest<Full<Bytes>>,
    authority: String,
    host: HeaderValue,
}

impl Connection {
    /// Connects to `authority` (`host:port`) with `TCP_NODELAY`, as reqwest does. The
    /// connection's I/O runs on a task of the current tokio runtime.
    pub async fn open(authority: &str) -> Result<Connection, ClientError> {
        let unreachable = |e: &dyn std::error::Error| ClientError::unreachable(authority, e);
        let host = HeaderValue::from_str(authority)
            .map_err(|e| ClientError::Config(format!("{authority:?} is not a host: {e}")))?;
        let stream = tokio::net::TcpStream::connect(authority)
            .await
            .map_err(|e| unreachable(&e))?;
        stream.set_nodelay(true).map_err(|e| unreachable(&e))?;
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| unreachable(&e))?;
        // Ends when the connection closes (the sender is dropped or the server hangs up).
        tokio::spawn(connection);
        Ok(Connection {
            sender,
            authority: authority.to_owned(),
            host,
        })
    }

    /// Sends a built and signed request (its method, path and query, headers and body; the
    /// `Host` is this connection's); returns the status and the whole body.
    pub async fn send(
        &mut self,
        request: reqwest::Request,
    ) -> Result<(StatusCode, Bytes), ClientError> {
        let unreachable = |e: &dyn std::error::Error| ClientError::unreachable(&self.authority, e);
        let url = request.url();
        let target = match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_owned(),
        };
        let body = request
            .body()
            .and_then(reqwest::Body::as_bytes)
            .map(Bytes::copy_from_slice)
            .unwrap_or_default();
        let mut outgoing = hyper::Request::builder()
            .method(request.method().clone())
            .uri(target)
            .body(Full::new(body))
            .map_err(|e| ClientError::Request(e.to_string()))?;
        // reqwest and hyper share the `http` types: the signed headers carry over as they are.
        *outgoing.headers_mut() = request.headers().clone();
        outgoing
            .headers_mut()
            .insert(hyper::header::HOST, self.host.clone());
        self.sender.ready().await.map_err(|e| unreachable(&e))?;
        let response = self
            .sender
            .send_request(outgoing)
            .await
            .map_err(|e| unreachable(&e))?;
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| unreachable(&e))?
            .to_bytes();
        Ok((status, body))
    }
}

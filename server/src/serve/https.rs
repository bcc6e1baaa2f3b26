//! HTTPS: the acceptor that runs a TLS handshake on each accepted connection, with the
//! rustls configuration of the server's [`TlsMaterial`].

use std::sync::Arc;
use tokio::net::TcpStream;

use crate::serve::connection::Acceptor;
use crate::state::tls::{TlsError, TlsMaterial};

/// HTTPS: a TLS handshake on each accepted connection.
pub(crate) struct TlsAcceptor(tokio_rustls::TlsAcceptor);

impl TlsAcceptor {
    /// The acceptor the connection layer serves HTTPS with, for `material`.
    pub(crate) fn new(material: &TlsMaterial) -> Result<TlsAcceptor, TlsError> {
        Ok(TlsAcceptor(tokio_rustls::TlsAcceptor::from(Arc::new(
            material.server_config()?,
        ))))
    }
}

impl Acceptor for TlsAcceptor {
    type Io = tokio_rustls::server::TlsStream<TcpStream>;
    const SECURE: bool = true;

    fn accept(
        &self,
        tcp: TcpStream,
    ) -> impl std::future::Future<Output = std::io::Result<Self::Io>> + Send {
        self.0.accept(tcp)
    }
}

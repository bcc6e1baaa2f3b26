//! A `tableq-server` over a fresh in-memory store, started in this test process on a free
//! loopback port (its own thread and runtime, so that each test can block on a runtime of
//! its own), stopped when dropped — what `tableq serve --in-memory` serves, without the
//! binary (which lives in another package).
//!
//! tableq-server is a dev-dependency of tableq-client, and depends on tableq-client itself:
//! Cargo builds the client library once for both, so the server signs and checks with the
//! very crate under test.
#![allow(dead_code)]

use std::sync::Arc;
use tableq_server::{Server, ServerConfig};
use tableq_store::{Backend, MemoryBackend};
use tokio::sync::oneshot;

/// A running server.
pub struct Serve {
    /// The development account's table endpoint, e.g.
    /// `http://127.0.0.1:40123/devstoreaccount1`.
    pub endpoint: String,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Serve {
    /// Starts a server with the default configuration (authorization required, the
    /// development account) and waits until it listens.
    pub fn start() -> Serve {
        let (listening, port) = std::sync::mpsc::channel::<u16>();
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("a runtime for the server");
            runtime.block_on(async move {
                let backend: Arc<dyn Backend> = Arc::new(MemoryBackend::new());
                let addr = "127.0.0.1:0".parse().expect("an address");
                let server = Server::bind(addr, backend, ServerConfig::default())
                    .await
                    .expect("bind a free port");
                let _ = listening.send(server.local_addr().port());
                server
                    .run_until(async move {
                        let _ = stopped.await;
                    })
                    .await
                    .expect("the server runs");
            });
        });
        let port = port.recv().expect("the server started");
        Serve {
            endpoint: format!("http://127.0.0.1:{port}/devstoreaccount1"),
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

//! The store's contract suite (`store/tests/suite`, the one suite every engine runs
//! in-process) run over HTTP: each case talks to a `tableq serve` child process through
//! `tableq-client` (the [`HttpBackend`] of `tests/http_backend`), so the emulator's write
//! semantics — If-Match and ETags, upserts, merge, validation codes, atomic `$batch`
//! changesets with the failed operation's index — and its reads — paging with
//! continuations across writes, `$select`, UTF-16 key order, planned queries equal to
//! naive evaluation — are held to the same contract as the engines themselves.
//!
//! Engines behind the server: in memory (`--in-memory`), durable (`--data DIR`; the
//! durable cases stop the server by its pid and start a new one on the same directory),
//! and PostgreSQL (`--store postgres://…`, where PostgreSQL is installed; else `SKIPPED`).
//! Every engine runs the suite's one list of cases (`backend_suite!`, `durable_suite!`).

use crate::http_backend;
use crate::pg;
use crate::suite;

use http_backend::HttpBackend;
use std::sync::Arc;
use suite::Fixture;

/// A directory removed when the fixture is dropped.
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn new() -> TempDir {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "tableq-suite-http-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn in_memory() -> Fixture {
    Fixture::new(Arc::new(HttpBackend::start(&["--in-memory"])))
}

fn durable() -> Fixture {
    let dir = TempDir::new();
    let path = dir.0.to_string_lossy().into_owned();
    let start = move || -> Arc<dyn tableq_store::Backend> {
        Arc::new(HttpBackend::start(&["--data", &path]))
    };
    let backend = start();
    Fixture::reopenable(backend, start, dir)
}

mod over_http_in_memory {
    use super::*;
    backend_suite!(in_memory);
}

mod over_http_durable {
    use super::*;
    backend_suite!(durable);
    durable_suite!(durable);
}

/// The suite over HTTP on PostgreSQL (`--store postgres://…`), every case on a schema of its
/// own; skipped without PostgreSQL, a failure in CI where it is installed.
mod over_http_on_postgres {
    use super::*;

    fn on_postgres(test: &str) -> Option<Fixture> {
        let url = pg::server_url(test)?;
        let start = move || -> Arc<dyn tableq_store::Backend> {
            Arc::new(HttpBackend::start(&["--store", &url]))
        };
        let backend = start();
        Some(Fixture::reopenable(backend, start, ()))
    }

    backend_suite!(optional on_postgres);
    durable_suite!(optional on_postgres);
}

//! The backend suite and the durable suite on the durable engine, plus what only a durable
//! engine has: reopening, block splits and merges seen through the contract, open errors
//! (locked, unusable directory, foreign or damaged files).

mod suite;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use tableq_store::{Backend, DurableBackend, DurableOptions};

/// Small blocks, so that the suite's small tables span many blocks and exercise splits,
/// merges and cross-block scans.
fn small_blocks() -> DurableOptions {
    DurableOptions::default()
        .with_block_limits(4, 512)
        .with_cache_bytes(16 << 20)
}

fn open(dir: &Path, options: &DurableOptions) -> Arc<dyn Backend> {
    Arc::new(DurableBackend::open_with(dir, options.clone()).expect("open the data directory"))
}

fn fixture_with(options: DurableOptions) -> suite::Fixture {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path: PathBuf = dir.path().join("data");
    let backend = open(&path, &options);
    suite::Fixture::reopenable(backend, move || open(&path, &options), dir)
}

fn fixture() -> suite::Fixture {
    fixture_with(small_blocks())
}

mod small_blocks {
    use super::*;
    backend_suite!(fixture);
    durable_suite!(fixture);
}

mod default_blocks {
    use super::*;
    fn fixture() -> suite::Fixture {
        fixture_with(DurableOptions::default().with_cache_bytes(16 << 20))
    }
    backend_suite!(fixture);
    durable_suite!(fixture);
}

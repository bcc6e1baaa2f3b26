//! The backend suite on the in-memory engine.

use crate::suite;

use std::sync::Arc;
use tableq_store::MemoryBackend;

fn fixture() -> suite::Fixture {
    suite::Fixture::new(Arc::new(MemoryBackend::new()))
}

backend_suite!(fixture);

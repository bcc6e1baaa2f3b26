//! Pages that never read twice, on the store's engines: a table followed through its
//! continuations gives exactly one unpaged scan and examines each entity about once (at
//! most `MAX_RATIO`, 1.05×, the unpaged scan; the bench measures the 1.01× target), for
//! every query shape and paging of `exec/tests/support/paging.rs` (included by path) — on
//! the memory engine (bulk-loaded, and with write overlays) and on the durable engine (rows
//! in blocks, and rows still in the memtable), through the executor on 2 threads as the
//! server runs it.

use crate::paging_support as paging;

use std::time::{Duration, Instant};
use tableq_exec::Executor;
use tableq_model::Entity;
use tableq_store::{Backend, Change, DurableBackend, DurableOptions, MemorySnapshot, WriteOp};

/// Entities in the table (a prime: no chunk or block size divides it).
const N: u64 = 60_013;

fn report(engine: &str, lines: Vec<String>) {
    for line in lines {
        println!("{engine}: {line}");
    }
}

#[test]
fn memory_engine_pages_examine_each_entity_once() {
    let entities = paging::entities(N);
    let snapshot = MemorySnapshot::from_entities(entities.clone()).unwrap();
    let executor = Executor::new(&snapshot).with_threads(2).unwrap();
    report("memory", paging::check(&executor, &entities));
}

#[test]
fn memory_engine_with_overlays_pages_examine_each_entity_once() {
    let entities = paging::entities(N);
    // Every tenth entity written after the bulk load, in batches: overlay rows among the
    // base rows of every partition.
    let later = |i: &usize| i.is_multiple_of(10);
    let base = entities
        .iter()
        .enumerate()
        .filter(|(i, _)| !later(i))
        .map(|(_, e)| e.clone());
    let mut snapshot = MemorySnapshot::from_entities(base).unwrap();
    let written: Vec<&Entity> = entities
        .iter()
        .enumerate()
        .filter(|(i, _)| later(i))
        .map(|(_, e)| e)
        .collect();
    for batch in written.chunks(1000) {
        snapshot = snapshot
            .with_changes(batch.iter().map(|e| Change::Put((*e).clone())))
            .unwrap();
    }
    let executor = Executor::new(&snapshot).with_threads(2).unwrap();
    report("memory+overlays", paging::check(&executor, &entities));
}

/// A durable table of `entities` (10 000 per batch); with `flushed`, once the rows are in
/// blocks, else with flushes off (rows in the memtable).
fn durable(entities: &[Entity], flushed: bool) -> (DurableBackend, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let options = DurableOptions::default().with_cache_bytes(64 << 20);
    let options = if flushed {
        options
    } else {
        options
            .with_memtable_bytes(usize::MAX)
            .with_flush_interval(Duration::from_secs(24 * 3600))
    };
    let store = DurableBackend::open_with(dir.path(), options).unwrap();
    store.create_table("paging").unwrap();
    for batch in entities.chunks(10_000) {
        let ops = batch
            .iter()
            .map(|e| WriteOp::Insert { entity: e.clone() })
            .collect();
        store.write_batch("paging", ops).unwrap();
    }
    let waited = Instant::now();
    while flushed && store.write_log_stats().memtable_bytes > 0 {
        assert!(waited.elapsed() < Duration::from_secs(120), "not flushed");
        std::thread::sleep(Duration::from_millis(10));
    }
    if !flushed {
        assert!(store.write_log_stats().memtable_bytes > 0);
    }
    (store, dir)
}

#[test]
fn durable_engine_pages_examine_each_entity_once() {
    let entities = paging::entities(N);
    let (store, _dir) = durable(&entities, true);
    let snapshot = store.snapshot("paging").unwrap();
    let executor = Executor::new(&snapshot).with_threads(2).unwrap();
    report("durable", paging::check(&executor, &entities));
}

#[test]
fn durable_engine_memtable_pages_examine_each_entity_once() {
    let entities = paging::entities(N);
    let (store, _dir) = durable(&entities, false);
    let snapshot = store.snapshot("paging").unwrap();
    let executor = Executor::new(&snapshot).with_threads(2).unwrap();
    report("durable memtable", paging::check(&executor, &entities));
}

//! `import --data DIR`: writes straight into the durable store.
//!
//! Entities are grouped by PartitionKey into batches by the rules every bulk load shares
//! (`tableq_client::load::PartitionGroups`, their one home): at most [`BATCH_OPS`]
//! operations per batch (no byte limit: no request travels), a group written when it is
//! full or before it would hold the same RowKey twice (the second goes to the next batch,
//! so it meets the first as an existing entity, as sequential inserts would), and every
//! group written when 4 096 operations are waiting. Batches go to [`WORKERS`] threads
//! chosen by PartitionKey — the batches of one partition are written in input order by one
//! thread — and the threads' concurrent `Backend::write_batch` calls share the store's
//! group commits. The groups written together (when 4 096 operations are waiting, and at
//! the end) go to each thread as one parcel, whose batches it submits all before it waits
//! for any ([`Backend::submit_batch`]), so they share the store's group commits too: with
//! one entity per partition a batch holds one operation, and a commit for each thread's
//! one batch cost 25 µs an entity (40 k entities/s against 246 k with 1 000 entities a
//! partition, 2026-12-07).
//!
//! A batch is all or nothing: when it fails on one operation, that operation is rejected
//! and the rest is written again. When an insert meets an existing entity, every operation
//! of the batch is first looked up, so that a re-import of existing data costs one lookup
//! per entity rather than one commit per entity.

use super::loader::{Item, Loader, Mode};
use super::outcome::Outcome;
use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;
use tableq_client::load::{GroupLimits, MAX_PENDING, PartitionGroups, worker_for};
use tableq_store::{Backend, DurableBackend, DurableOptions, OpenError, StoreError, WriteOp};

/// The most operations in one batch (the service's batch limit).
pub const BATCH_OPS: usize = tableq_client::batch::MAX_OPERATIONS;
/// The batching of `--data`: the service's operation limit, no byte limit.
const LIMITS: GroupLimits = GroupLimits {
    operations: BATCH_OPS,
    bytes: usize::MAX,
    pending: MAX_PENDING,
};
/// Writer threads: each has one batch in the store's queue at a time, so this many batches
/// can share one group commit. The store opened here logs with its default `fsync` policy
/// (in the background), so a commit does not wait for the disk and a few threads keep the
/// writer busy. Measured on the 2-core machine at 1 M entities, the binaries alternating
/// (2026-11-29): 4 threads loaded 160–218 k entities/s where 16 loaded 151–196 k (faster
/// in each of five pairs; 2 threads as 4, 8 and 48 no better than 16). When every commit
/// waited for an `fsync`, 4 threads gave 14 400 entities/s and 16 shared the waits.
const WORKERS: usize = 4;

/// One batch of one partition: each operation with its line number and its line's text
/// (kept so that the operations can be moved into the store: see [`write_parcel`]).
type Batch = Vec<(u64, String, WriteOp)>;

/// What a writer thread receives: batches of distinct partitions, submitted together.
type Parcel = Vec<Batch>;

/// Loads into a durable store opened by this process.
pub struct StoreLoader {
    backend: Arc<DurableBackend>,
    mode: Mode,
    groups: PartitionGroups<(u64, String, WriteOp)>,
    senders: Vec<SyncSender<Parcel>>,
    workers: Vec<JoinHandle<()>>,
    outcome: Arc<Outcome>,
}

/// The store's settings for a load, from `import --cache-size`, `--memtable-size` and
/// `--block-size` (`None`: the store's default).
#[derive(Debug, Clone, Copy)]
pub struct StoreSettings {
    /// The page cache (the store's default: 64 MiB).
    pub cache_bytes: Option<usize>,
    /// The memtable (the store's default: 16 MiB).
    pub memtable_bytes: Option<usize>,
    /// The blocks' soft size limit (the store's default: 32 KiB).
    pub block_bytes: Option<usize>,
}

/// The store's options for a load. The directory is this process's alone (`open` refuses
/// one a server holds), so nothing reads it while the load runs: the memtable is flushed
/// by size, and by time only as often as the log is checkpointed (the store's default
/// flushes every second so that readers find rows in blocks soon; here that only rewrote
/// blocks). The log may hold four memtables before a checkpoint (whose flush folds the
/// memtable too); what the log holds after the last checkpoint is replayed if the load is
/// killed, and the close at the end checkpoints it.
///
/// The memtable's default stays the store's. Measured on 1 M entities (2026-11-29), with
/// flushes by size only: in random key order, where every flush rewrites blocks all over
/// the table, 43 k entities/s at 16 MiB, 65 k at 64 MiB, 67 k at 128 MiB, 88 k at 256 MiB
/// (peak RSS 420 MiB), 94 k with everything in memory until the end — hence
/// `--memtable-size`; in key order 16 to 256 MiB changed nothing at 1 M, but at 10 M a
/// 64 MiB default loaded 176–177 k against 186–188 k entities/s (two runs each, 60 MiB more
/// RSS).
fn store_options(settings: StoreSettings) -> DurableOptions {
    let defaults = DurableOptions::default();
    let memtable = settings.memtable_bytes.unwrap_or(defaults.memtable_bytes);
    let log = defaults.checkpoint_log_bytes.max(
        u64::try_from(memtable)
            .unwrap_or(u64::MAX)
            .saturating_mul(4),
    );
    let interval = defaults.checkpoint_interval;
    let options = defaults
        .with_memtable_bytes(memtable)
        .with_flush_interval(interval)
        .with_checkpoints(log, interval);
    let options = match settings.cache_bytes {
        Some(bytes) => options.with_cache_bytes(bytes),
        None => options,
    };
    match settings.block_bytes {
        Some(bytes) => options.with_block_bytes(bytes),
        None => options,
    }
}

impl StoreLoader {
    /// Opens the store in `dir` as [`store_options`] says, and the table (creating it: the
    /// flag says so).
    pub fn open(
        dir: &Path,
        settings: StoreSettings,
        table: &str,
        mode: Mode,
        outcome: &Arc<Outcome>,
    ) -> Result<(StoreLoader, bool), String> {
        let options = store_options(settings);
        let backend = DurableBackend::open_with(dir, options).map_err(|e| match e {
            OpenError::Locked { .. } => format!(
                "--data: {e}; stop that server first, or import through it with --endpoint URL"
            ),
            e => format!("--data: {e}"),
        })?;
        let created = match backend.table(table) {
            Ok(_) => false,
            Err(StoreError::TableNotFound(_)) => {
                backend
                    .create_table(table)
                    .map_err(|e| format!("cannot create table {table}: {e}"))?;
                true
            }
            Err(e) => return Err(format!("cannot open table {table}: {e}")),
        };
        let backend = Arc::new(backend);
        let mut senders = Vec::with_capacity(WORKERS);
        let mut workers = Vec::with_capacity(WORKERS);
        for _ in 0..WORKERS {
            // One parcel waiting beside the one being written: a parcel may hold a
            // quarter of the 4 096 waiting operations (one entity a partition: 161–178 MiB
            // peak RSS with 4 waiting, 150–161 with one, as fast).
            let (send, receive) = sync_channel::<Parcel>(1);
            let backend = backend.clone();
            let outcome = outcome.clone();
            let table = table.to_owned();
            workers.push(std::thread::spawn(move || {
                write_batches(&*backend, &table, mode, receive, &outcome)
            }));
            senders.push(send);
        }
        Ok((
            StoreLoader {
                backend,
                mode,
                groups: PartitionGroups::new(LIMITS),
                senders,
                workers,
                outcome: outcome.clone(),
            },
            created,
        ))
    }

    /// Sends each partition's group to its writer, in the parcels [`parcels`] makes.
    fn send(&mut self, groups: Vec<(String, Batch)>) -> Result<(), String> {
        for (worker, parcel) in parcels(groups, self.senders.len()) {
            self.senders[worker]
                .send(parcel)
                .map_err(|_| "a writer thread stopped".to_owned())?;
        }
        Ok(())
    }

    fn send_all(&mut self) -> Result<(), String> {
        let groups = self.groups.drain();
        self.send(groups)
    }
}

impl Loader for StoreLoader {
    fn push(&mut self, item: Item) -> Result<(), String> {
        if let Some(why) = self.outcome.failure() {
            return Err(why);
        }
        let Item { line, entity, text } = item;
        let (pk, rk) = (
            entity.partition_key().to_owned(),
            entity.row_key().to_owned(),
        );
        let op = match self.mode {
            Mode::Insert => WriteOp::Insert { entity },
            Mode::Upsert => WriteOp::InsertOrReplace { entity },
        };
        let full = self.groups.push(&pk, &rk, 0, (line, text, op));
        if full.is_empty() {
            return Ok(());
        }
        self.send(full)
    }

    fn finish(mut self: Box<Self>) -> Result<(), String> {
        let sent = self.send_all();
        self.senders.clear();
        for worker in std::mem::take(&mut self.workers) {
            if worker.join().is_err() {
                self.outcome.fail("a writer thread failed".into());
            }
        }
        let closed = self.backend.close();
        sent?;
        if let Some(why) = self.outcome.failure() {
            return Err(why);
        }
        closed.map_err(|e| format!("closing the store failed: {e}"))
    }
}

/// The groups (in the order due) as parcels for `workers` writers: each group to its
/// partition's writer, the groups of one writer in one parcel — except that a partition
/// met again starts the next parcel of its writer, sent after the one holding its earlier
/// group. A parcel's batches are written independently (a failed one is written again
/// after the others), so two batches of one partition in one parcel could be applied out
/// of input order. (`PartitionGroups::push` with `--data`'s limits never returns a
/// partition twice; this does not rely on it.)
fn parcels(groups: Vec<(String, Batch)>, workers: usize) -> Vec<(usize, Parcel)> {
    let mut sent = Vec::new();
    let mut open: Vec<(Parcel, HashSet<String>)> = vec![Default::default(); workers];
    for (partition_key, ops) in groups {
        if ops.is_empty() {
            continue;
        }
        let worker = worker_for(&partition_key, workers);
        let (parcel, partitions) = &mut open[worker];
        if !partitions.insert(partition_key) {
            sent.push((worker, std::mem::take(parcel)));
            partitions.clear();
        }
        parcel.push(ops);
    }
    sent.extend(
        open.into_iter()
            .enumerate()
            .filter(|(_, (parcel, _))| !parcel.is_empty())
            .map(|(worker, (parcel, _))| (worker, parcel)),
    );
    sent
}

/// A writer thread: writes every parcel it receives; stops at the first failure that is no
/// single operation's.
fn write_batches(
    backend: &dyn Backend,
    table: &str,
    mode: Mode,
    parcels: Receiver<Parcel>,
    outcome: &Outcome,
) {
    for parcel in parcels {
        if outcome.failure().is_some() {
            continue; // drain the channel so that the reader never blocks
        }
        if let Err(why) = write_parcel(backend, table, mode, parcel, outcome) {
            outcome.fail(why);
        }
    }
}

/// Writes the batches of one parcel: every one submitted before any is waited for, so that
/// they share commits; on an operation's failure, rejects it and writes the rest of its
/// batch again. Every batch is waited for (and counted) even after one failed.
///
/// The first attempt moves the operations into the store, without a copy (a copy of every
/// entity was a tenth of a `--data` import's CPU); nearly every batch succeeds there. When
/// it fails, the operations are decoded again from their lines, and the retries keep them.
fn write_parcel(
    backend: &dyn Backend,
    table: &str,
    mode: Mode,
    parcel: Parcel,
    outcome: &Outcome,
) -> Result<(), String> {
    let submitted: Vec<_> = parcel
        .into_iter()
        .map(|batch| {
            let (lines, ops): (Vec<(u64, String)>, Vec<WriteOp>) = batch
                .into_iter()
                .map(|(line, text, op)| ((line, text), op))
                .unzip();
            (lines, backend.submit_batch(table, ops))
        })
        .collect();
    let mut failed = None;
    for (lines, pending) in submitted {
        let written = match pending.wait() {
            Ok(written) => {
                outcome.loaded(written.len() as u64);
                Ok(())
            }
            Err(first) => rewrite_batch(backend, table, mode, lines, first, outcome),
        };
        if let Err(why) = written {
            failed.get_or_insert(why);
        }
    }
    failed.map_or(Ok(()), Err)
}

/// A batch whose first attempt failed with `first`, written again from its lines.
fn rewrite_batch(
    backend: &dyn Backend,
    table: &str,
    mode: Mode,
    lines: Vec<(u64, String)>,
    first: tableq_store::BatchError,
    outcome: &Outcome,
) -> Result<(), String> {
    let options = tableq::model::json::DecodeOptions::SERVICE;
    let mut batch = Vec::with_capacity(lines.len());
    for (line, text) in lines {
        let entity = tableq::model::json::decode_entity(&text, &options)
            .map_err(|e| format!("line {line} no longer decodes: {e}"))?;
        let op = match mode {
            Mode::Insert => WriteOp::Insert { entity },
            Mode::Upsert => WriteOp::InsertOrReplace { entity },
        };
        batch.push((line, op));
    }
    retry_batch(backend, table, mode, batch, first, outcome)
}

/// The rest of [`rewrite_batch`] after the first attempt failed with `error`.
fn retry_batch(
    backend: &dyn Backend,
    table: &str,
    mode: Mode,
    mut batch: Vec<(u64, WriteOp)>,
    error: tableq_store::BatchError,
    outcome: &Outcome,
) -> Result<(), String> {
    let mut probed = false;
    let mut failed = Some(error);
    while !batch.is_empty() {
        let error = match failed.take() {
            Some(e) => e,
            None => {
                let ops: Vec<WriteOp> = batch.iter().map(|(_, op)| op.clone()).collect();
                match backend.write_batch(table, ops) {
                    Ok(written) => {
                        outcome.loaded(written.len() as u64);
                        return Ok(());
                    }
                    Err(e) => e,
                }
            }
        };
        let Some(index) = error.index.filter(|i| *i < batch.len()) else {
            return Err(match error.error {
                StoreError::TableNotFound(_) => {
                    format!("table {table} was deleted during the import")
                }
                e => format!("writing to the store failed: {e}"),
            });
        };
        if matches!(error.error, StoreError::EntityAlreadyExists { .. })
            && mode == Mode::Insert
            && !probed
        {
            // Likely a re-import: reject every existing entity at once.
            probed = true;
            let mut kept = Vec::with_capacity(batch.len());
            for (line, op) in batch {
                let (pk, rk) = op.keys();
                match backend.get(table, pk, rk) {
                    Ok(Some(_)) => {
                        let e = StoreError::EntityAlreadyExists {
                            partition_key: pk.to_owned(),
                            row_key: rk.to_owned(),
                        };
                        outcome.reject(line, e.code(), e.to_string());
                    }
                    Ok(None) => kept.push((line, op)),
                    Err(e) => return Err(format!("reading the store failed: {e}")),
                }
            }
            batch = kept;
            continue;
        }
        let (line, _) = batch.remove(index);
        outcome.reject(line, error.error.code(), error.error.to_string());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(pk: &str, lines: &[u64]) -> (String, Batch) {
        let ops = lines
            .iter()
            .map(|&line| {
                let entity = tableq::model::Entity::new(pk, line.to_string());
                (line, String::new(), WriteOp::Insert { entity })
            })
            .collect();
        (pk.to_owned(), ops)
    }

    fn lines(parcel: &Parcel) -> Vec<Vec<u64>> {
        parcel
            .iter()
            .map(|batch| batch.iter().map(|(line, _, _)| *line).collect())
            .collect()
    }

    /// One parcel a writer; a partition met again goes into a later parcel of its writer.
    #[test]
    fn a_parcel_never_holds_two_batches_of_one_partition() {
        let due = vec![
            group("a", &[1, 2]),
            group("b", &[3]),
            group("c", &[]),
            group("a", &[4]),
        ];
        let made = parcels(due, 1);
        let made: Vec<_> = made.iter().map(|(w, p)| (*w, lines(p))).collect();
        assert_eq!(
            made,
            vec![(0, vec![vec![1, 2], vec![3]]), (0, vec![vec![4]])]
        );

        let due: Vec<_> = (0..40u64).map(|i| group(&format!("p{i}"), &[i])).collect();
        let made = parcels(due, 4);
        assert!(made.len() <= 4);
        let mut all: Vec<u64> = made
            .iter()
            .flat_map(|(w, p)| {
                p.iter().map(move |batch| {
                    assert_eq!(worker_for(&format!("p{}", batch[0].0), 4), *w);
                    batch[0].0
                })
            })
            .collect();
        all.sort_unstable();
        assert_eq!(all, (0..40).collect::<Vec<_>>());
    }
}

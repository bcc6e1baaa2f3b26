//! The writer's state ([`Writer`]): the authoritative catalog, property names and
//! memtables, its read snapshot of redb, the log it appends to, and when it flushes and
//! checkpoints ([`CheckpointLimits`]). Its work is in `commit.rs` (groups, flushes,
//! checkpoints, refusals), `flush.rs` (a flush in slices), `checkpoint.rs` (a checkpoint's
//! commit beside the writer), `txn.rs` (transactions and memtable changes) and `replay.rs`.

#[cfg(test)]
use super::checkpoint::Hold;
use super::checkpoint::InFlight;
use super::flush::Flush;
use crate::codec::Names;
use crate::durable::memtable::MemTable;
use crate::durable::shared::Shared;
use crate::durable::wal::Wal;
use redb::ReadOnlyTable;
use std::collections::HashMap;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};
use tableq_model::DateTime;

/// redb's rows as of its last commit, read-only (what the writer reads below memtables).
pub(crate) type StoredRows = ReadOnlyTable<&'static [u8], &'static [u8]>;

/// When the writer checkpoints and flushes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CheckpointLimits {
    pub(crate) log_bytes: u64,
    pub(crate) interval: Duration,
    /// Flush when the memtables hold this many bytes…
    pub(crate) memtable_bytes: usize,
    /// …and at least this often.
    pub(crate) flush_interval: Duration,
    /// The longest a slice of a flush holds the writer (`flush.rs`).
    pub(crate) flush_slice: Duration,
}

/// The writer's state (held by one thread at a time: `gate.rs`).
pub(crate) struct Writer {
    pub(crate) shared: Arc<Shared>,
    /// Table id → property names: the authoritative lists (readers get copies).
    pub(crate) names: HashMap<u64, Names>,
    /// Table id → how many of its names redb holds (a commit stores the rest).
    pub(crate) names_stored: HashMap<u64, usize>,
    /// Table id → catalog key.
    pub(crate) table_keys: HashMap<u64, String>,
    /// Catalog key → (table id, name as created): the tables as the writer sees them.
    pub(crate) tables: HashMap<String, (u64, String)>,
    /// Table id → its memtable (readers get clones of the versions published).
    pub(crate) mem: HashMap<u64, MemTable>,
    /// The memtables' bytes, all tables together.
    pub(crate) mem_bytes: usize,
    /// The largest Timestamp in the memtables (the next flush stores it as the clock).
    pub(crate) mem_max_timestamp: Option<DateTime>,
    /// redb's rows as of its last commit, for `resolve` (taken again after each commit).
    pub(crate) stored_rows: Option<StoredRows>,
    pub(crate) wal: Wal,
    pub(crate) checkpoints: CheckpointLimits,
    pub(crate) last_checkpoint: Instant,
    /// The last flush or checkpoint (either empties the memtables).
    pub(crate) last_flush: Instant,
    pub(crate) last_checkpoint_failure: Option<Instant>,
    /// The last probe of the disk while writes were refused.
    pub(crate) last_probe: Option<Instant>,
    /// Every change to blocks since the last published commit went through a published
    /// commit's [`BlockEdits`](crate::durable::block_map::BlockEdits): the kept block maps
    /// may follow the next one (`txn.rs`). A replay's unpublished flush and a reopen of the
    /// data file clear it; the next published commit then lets the maps go.
    pub(crate) maps_follow: bool,
    /// A flush being folded in slices (`flush.rs`), between two of them.
    pub(crate) flushing: Option<Flush>,
    /// A checkpoint whose durable commit runs beside the writer (`checkpoint.rs`).
    pub(crate) checkpointing: Option<InFlight>,
    /// Holds the next checkpoints' threads before their commit while set (tests: writes
    /// go on meanwhile).
    #[cfg(test)]
    pub(crate) hold_checkpoints: Option<Hold>,
}

impl Writer {
    pub(crate) fn new(
        shared: Arc<Shared>,
        names: HashMap<u64, Names>,
        wal: Wal,
        checkpoints: CheckpointLimits,
    ) -> Writer {
        let mut writer = Writer {
            shared,
            names_stored: names.iter().map(|(id, n)| (*id, n.len())).collect(),
            names,
            table_keys: HashMap::new(),
            tables: HashMap::new(),
            mem: HashMap::new(),
            mem_bytes: 0,
            mem_max_timestamp: None,
            stored_rows: None,
            wal,
            checkpoints,
            last_checkpoint: Instant::now(),
            last_flush: Instant::now(),
            last_checkpoint_failure: None,
            last_probe: None,
            maps_follow: true,
            flushing: None,
            checkpointing: None,
            #[cfg(test)]
            hold_checkpoints: None,
        };
        writer.load_catalog();
        writer
    }

    /// Takes the writer's catalog maps from the published catalog.
    pub(crate) fn load_catalog(&mut self) {
        let catalog = self
            .shared
            .catalog
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        self.table_keys = catalog
            .iter()
            .map(|(key, entry)| (entry.id, key.clone()))
            .collect();
        self.tables = catalog
            .iter()
            .map(|(key, entry)| (key.clone(), (entry.id, entry.name.clone())))
            .collect();
    }
}

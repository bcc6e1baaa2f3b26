//! [`DurableOptions`]: the tuning of a [`DurableBackend`](super::DurableBackend) — redb's
//! cache, the block limits, the durability mode of the write-ahead log and its checkpoints.
//!
//! ```
//! use std::time::Duration;
//! use tableq_store::{DurableOptions, FsyncPolicy};
//! let options = DurableOptions::default()
//!     .with_fsync(FsyncPolicy::Always)
//!     .with_checkpoints(16 << 20, Duration::from_secs(10));
//! assert_eq!(options.fsync.to_string(), "always");
//! ```

use super::wal::FsyncPolicy;
use std::time::Duration;

/// The default [`DurableOptions::cache_bytes`]: 64 MiB.
pub const DEFAULT_CACHE_BYTES: usize = 64 << 20;

/// The default [`DurableOptions::block_bytes`]: 32 KiB (why: `benches/README.md`, "Block
/// size", 2026-12-07).
pub const DEFAULT_BLOCK_BYTES: usize = 32 << 10;

/// Tuning of a [`DurableBackend`](super::DurableBackend) (see [`DurableBackend::open_with`](super::DurableBackend::open_with)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DurableOptions {
    /// Bytes of redb's page cache (default 64 MiB; filled as pages are read, and up to half
    /// of it holds a commit's dirty pages). Pages beyond it are read again from the data
    /// file, which the operating system's file cache usually holds: a larger cache saves
    /// those reads, not disk I/O (`tableq serve --cache-size`). Half as much again, at most,
    /// holds the verified copies of blocks that filtered scans read more than once between
    /// two flushes (`verified.rs`): the engine's memory for blocks is at most 1.5× this.
    pub cache_bytes: usize,
    /// Most rows per block (default 256). Not part of the file format: blocks written with
    /// other limits are read as they are. Larger blocks scan faster (redb's per-entry cost
    /// and the cache misses of entering a block are paid once per block); smaller blocks
    /// make single writes cheaper (a write rewrites the blocks it touches).
    pub block_rows: usize,
    /// Soft byte limit of a block (default 32 KiB): a block grows past it only to hold a
    /// single larger entity. Not part of the file format either. Every read of a block
    /// that is not in the page cache copies the whole block out of the operating system's
    /// file cache, so smaller blocks make random point gets in a table much larger than
    /// the cache cheaper; larger blocks make scans cheaper, and a block of fewer than 32
    /// rows keeps no columns (filtered scans then test it row by row). Measured in
    /// `benches/README.md` ("Block size"); `tableq serve --block-size`.
    pub block_bytes: usize,
    /// Verify every page's checksum when opening (reads the whole file). A file that was
    /// damaged outside redb is then reported as [`OpenError::Corrupt`](super::OpenError::Corrupt). Without it redb
    /// trusts a cleanly closed file: damage is found only when the damaged page is read
    /// (a storage error then; redb's own debug builds may panic on some damage). Recovery
    /// after a crash checks the whole file in any case. Default `false`.
    pub verify_on_open: bool,
    /// When the write-ahead log is `fsync`ed, i.e. what an acknowledged write survives
    /// (default: in the background every second; see [`FsyncPolicy`]).
    pub fsync: FsyncPolicy,
    /// Checkpoint when the log holds this many bytes of records (default 64 MiB): bounds
    /// the log, the time a replay takes after a crash (≈ 200 000 entities) and the memory
    /// redb holds for commits not yet durable.
    pub checkpoint_log_bytes: u64,
    /// Checkpoint when this much time passed since the last checkpoint and the log holds
    /// records (default 30 s).
    pub checkpoint_interval: Duration,
    /// Flush the memtables (the rows written since the last flush, kept in memory in front
    /// of redb) into redb when they hold this many bytes (default 16 MiB, about 60 000
    /// small entities). They are also flushed every
    /// [`flush_interval`](DurableOptions::flush_interval), so the bound matters for
    /// bursts: a larger one makes single writes cheaper (fewer, larger redb transactions)
    /// and holds more memory. Writes go on while a flush runs
    /// ([`flush_slice`](DurableOptions::flush_slice)), up to twice this bound; beyond it
    /// they wait for the flush.
    pub memtable_bytes: usize,
    /// Flush what the memtables hold at least this often (default 1 s): scans read redb's
    /// blocks faster than memtable rows, so a table written in a burst is in blocks soon
    /// after.
    pub flush_interval: Duration,
    /// The longest a flush holds the writer at a time (default 10 ms; it stops at the
    /// first block boundary after it): a flush folds the memtables into redb in slices of
    /// this length, and the writes that queued meanwhile commit between two slices, so no
    /// write waits for a whole flush (which rewrites a block for nearly every row when rows
    /// land at random in a large table: about a second at 10 M entities). Shorter slices
    /// make the longest wait shorter and cost more redb commits a flush.
    pub flush_slice: Duration,
    /// Start even when the write-ahead log does not reach as far as the data file says it
    /// must (missing, cut, another directory's: `log_check.rs`), logging what is lost as a
    /// warning; a log that cannot be used is moved aside (`tableq.wal.discarded-SECONDS`).
    /// Default `false`: such a data directory is refused with
    /// [`OpenError::LogMissing`](super::OpenError::LogMissing),
    /// [`LogTruncated`](super::OpenError::LogTruncated) or
    /// [`LogMismatch`](super::OpenError::LogMismatch) (`tableq serve --accept-log-loss`).
    pub accept_log_loss: bool,
}

impl Default for DurableOptions {
    fn default() -> DurableOptions {
        DurableOptions {
            cache_bytes: DEFAULT_CACHE_BYTES,
            block_rows: 256,
            block_bytes: DEFAULT_BLOCK_BYTES,
            verify_on_open: false,
            accept_log_loss: false,
            fsync: FsyncPolicy::default(),
            checkpoint_log_bytes: 64 << 20,
            checkpoint_interval: Duration::from_secs(30),
            memtable_bytes: 16 << 20,
            flush_interval: Duration::from_secs(1),
            flush_slice: Duration::from_millis(10),
        }
    }
}

impl DurableOptions {
    /// Sets [`cache_bytes`](DurableOptions::cache_bytes).
    pub fn with_cache_bytes(mut self, bytes: usize) -> DurableOptions {
        self.cache_bytes = bytes;
        self
    }

    /// Sets the block limits ([`block_rows`](DurableOptions::block_rows),
    /// [`block_bytes`](DurableOptions::block_bytes)); each is at least 1.
    pub fn with_block_limits(mut self, rows: usize, bytes: usize) -> DurableOptions {
        self.block_rows = rows.max(1);
        self.block_bytes = bytes.max(1);
        self
    }

    /// Sets [`block_bytes`](DurableOptions::block_bytes) (at least 1), keeping
    /// [`block_rows`](DurableOptions::block_rows).
    pub fn with_block_bytes(mut self, bytes: usize) -> DurableOptions {
        self.block_bytes = bytes.max(1);
        self
    }

    /// Sets [`accept_log_loss`](DurableOptions::accept_log_loss).
    pub fn with_accept_log_loss(mut self, accept: bool) -> DurableOptions {
        self.accept_log_loss = accept;
        self
    }

    /// Sets [`verify_on_open`](DurableOptions::verify_on_open).
    pub fn with_verify_on_open(mut self, verify: bool) -> DurableOptions {
        self.verify_on_open = verify;
        self
    }

    /// Sets [`fsync`](DurableOptions::fsync).
    pub fn with_fsync(mut self, fsync: FsyncPolicy) -> DurableOptions {
        self.fsync = fsync;
        self
    }

    /// Sets [`memtable_bytes`](DurableOptions::memtable_bytes) (at least 1).
    pub fn with_memtable_bytes(mut self, bytes: usize) -> DurableOptions {
        self.memtable_bytes = bytes.max(1);
        self
    }

    /// Sets [`flush_interval`](DurableOptions::flush_interval) (at least 1 ms).
    pub fn with_flush_interval(mut self, interval: Duration) -> DurableOptions {
        self.flush_interval = interval.max(Duration::from_millis(1));
        self
    }

    /// Sets [`flush_slice`](DurableOptions::flush_slice) (zero: a slice folds one block).
    pub fn with_flush_slice(mut self, slice: Duration) -> DurableOptions {
        self.flush_slice = slice;
        self
    }

    /// Sets the checkpoint triggers ([`checkpoint_log_bytes`](DurableOptions::checkpoint_log_bytes),
    /// at least 1, and [`checkpoint_interval`](DurableOptions::checkpoint_interval)).
    pub fn with_checkpoints(mut self, log_bytes: u64, interval: Duration) -> DurableOptions {
        self.checkpoint_log_bytes = log_bytes.max(1);
        self.checkpoint_interval = interval;
        self
    }
}

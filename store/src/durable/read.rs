//! Reading: [`DurableSnapshot`] — one redb read transaction (an MVCC snapshot) of one
//! table with the version of its memtable (`memtable.rs`) that goes with it — and the
//! [`EntitySource`] implementation the executor runs on: key-ordered scans over blocks
//! merged with the memtable ([`DurableRows`]), rows read in place ([`DurableRow`]), point
//! gets, splits at block boundaries and property slots.
//!
//! **The memtable** holds what was written since the last flush: a memtable entry wins
//! over the stored row with the same key (a removal hides it). A point get looks in the
//! memtable first. A scan walks the blocks as below and merges the memtable's entries of
//! the same scan in *runs*: the block rows before the next memtable key are yielded
//! without comparing keys (one binary search in the block per memtable entry). A scan of a
//! table whose memtable holds nothing in its range reads the blocks alone.
//!
//! A scan positions once (the block that contains its first key: the last block key `<=`
//! it within the partition, found with one backward step of a redb range), then walks
//! blocks forward up to an exclusive upper block key derived from the scan's bounds. In a
//! block it binary-searches the first and last row inside the scan and yields the rows
//! between, each holding a reference-counted handle on the block's bytes (redb's page
//! guard: no copy). RowKey ranges that span many partitions skip, per partition, straight
//! to the first block that can hold the range and past the rest of the partition.
//!
//! **Filtered scans** read a block's columns, not its rows (`Check::Lazy`), and — from
//! the second filtered read of a block on, until a flush rewrites it — the block's verified copy
//! kept with the table's block map (`verified.rs`): columns decoded, every row checked, so
//! the scan tests its residual and reads matches with no checksum, parse or decoding left.
//! A filtered scan **keeps no block it read from redb**: it tests the block where it lies
//! and copies out the rows it hands over (`keep_row`), so a query page holds what it
//! returns, not what it examined — a filter matching nothing in a table of 10 M entities
//! held every block of the table until its page ended (4 GB resident), and a selective
//! scan's page held the hundreds of blocks it crossed, which the allocator did not give
//! back (`benches/README.md`). Plain scans and gets still keep the blocks their rows
//! borrow (a plain scan hands over every row it reads).
//! **Point gets** read those copies too, and with a block map find their block in memory
//! (`visit_entity`; a data file of few blocks gets its map from the first get, a larger one
//! from a walk on a thread of its own that the first get starts).
//!
//! Storage failures and damaged blocks end the scan and are recorded in the snapshot;
//! [`DurableBackend::query`](crate::Backend::query) reports them
//! ([`DurableSnapshot::take_error`]) instead of returning a short page.
//!
//! ```
//! use tableq_exec::{EntitySource, Executor, PageOptions};
//! use tableq_model::Entity;
//! use tableq_planner::{plan::{KeySet, Plan}, predicate::Predicate};
//! use tableq_store::{Backend, DurableBackend, WriteOp};
//! let dir = tempfile::tempdir().unwrap();
//! let store = DurableBackend::open(dir.path()).unwrap();
//! store.create_table("t1x").unwrap();
//! let ops = (0..300).map(|i| WriteOp::Insert { entity: Entity::new("p", format!("r{i:03}")) }).collect();
//! store.write_batch("t1x", ops).unwrap();
//! let snapshot = store.snapshot("t1x").unwrap();
//! let plan = Plan { ranges: KeySet::all(), residual: Predicate::TRUE, select: None, top: None };
//! let (rows, _) = Executor::new(&snapshot).execute_all(&plan, &PageOptions::default()).unwrap();
//! assert_eq!(rows.len(), 300);
//! assert!(snapshot.get("p", "r042").unwrap().is_some());
//! ```

use super::block_map::{BlockMap, MapBuilds, MapEntry, RecentEdits};
use super::damage::block_damage;
use super::format::block::{BlockView, RowRef};
use super::format::keys::{entity_key, partition_end, partition_prefix, table_end, table_prefix};
use super::locate::{floor_block, search_keys};
use super::memtable::{MemRows, MemTable};
use super::options::DEFAULT_BLOCK_BYTES;
use super::shared::{ReadStart, RowsTable, TableEntry};
use super::verified::{CopyBudget, VerifiedBlock};
use crate::codec::{ColumnDirectory, ColumnRun, Corrupt, LazyColumns, Names, Number, Slot};
use crate::error::StoreError;
use redb::{AccessGuard, ReadableTableMetadata};
use std::borrow::Cow;
use std::ops::{Bound, ControlFlow};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use tableq_exec::{
    Chunk, EntitySource, FILTER_BATCH, Filtered, Key, PropertySlot, RowFilter, RunEnd, Scan,
    SlotLookup, SourceRow, ValueTest, filter_run,
};
use tableq_model::json::ListProperties;
use tableq_model::order::compare_str;
use tableq_model::{DateTime, Entity, EntityView, ValueRef};

type Cursor = redb::Range<'static, &'static [u8], &'static [u8]>;
type BlockGuard = AccessGuard<'static, &'static [u8]>;

/// A consistent, read-only view of one table of a
/// [`DurableBackend`](super::DurableBackend): the [`EntitySource`] of a query page (see the
/// module docs).
pub struct DurableSnapshot {
    table: u64,
    /// The table (its name, for reports of damaged blocks).
    entry: Arc<TableEntry>,
    /// The data directory (for reports of damaged blocks).
    dir: Arc<Path>,
    names: Arc<Names>,
    /// The table's memtable as of this snapshot: what was written since the flush that
    /// `rows` reflects.
    mem: MemTable,
    /// The blocks version of `rows` (`block_map.rs`).
    blocks_version: u64,
    /// What the block map's verified copies are charged to (`verified.rs`).
    copies: Arc<CopyBudget>,
    /// Where a point get has a large table's block map built (`point_map`).
    map_builds: Arc<MapBuilds>,
    /// The first storage failure a scan met (reported by `take_error`).
    error: Mutex<Option<StoreError>>,
    /// The blocks a plain scan or a get of this snapshot read from redb: their rows borrow
    /// from here (created on first use: `Backend::get` needs none).
    blocks: OnceLock<Arena<Loaded>>,
    /// The rows a filtered scan handed over from blocks it read from redb, copied out of
    /// them: a filtered scan keeps no block, so that what a query page holds is bounded by
    /// the rows it returns, not by the blocks it examined (a filter matching nothing in a
    /// table of 10 M entities once held every block of it).
    kept_rows: OnceLock<Arena<KeptRow>>,
    /// The table's block map of this snapshot's version, once the snapshot used one (kept
    /// or built): held for the snapshot's life, so that a flush that moves the kept map on
    /// does not make the snapshot's next wave walk the table again; rows of its verified
    /// copies borrow from it.
    map: OnceLock<Arc<BlockMap>>,
    /// The rows table in its read transaction (shared with the other readers of the
    /// blocks version: `Shared::rows_table`). **Declared last, so dropped last**: it keeps
    /// the read transaction registered with redb, and every page guard in `blocks` must be
    /// released before it is; otherwise a commit between the two drops frees pages that a
    /// guard still holds (redb's debug assertion "freed page still referenced" fired in
    /// `tests/concurrency.rs` when `rows` came first).
    rows: Arc<RowsTable>,
}

/// Keeps `map` as `entry`'s block map, brought up to the latest version the writer's
/// recorded commits reach (`recent`), unless one of the same or a later version is kept.
fn keep_map(entry: &TableEntry, map: Arc<BlockMap>, recent: &RecentEdits) {
    let Some(map) = recent.bring_forward(map, entry.id) else {
        return;
    };
    let mut slot = entry
        .block_map
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if slot.as_ref().is_none_or(|m| m.version < map.version) {
        *slot = Some(map);
    }
}

/// Slots in the first segment of an [`Arena`]; segment `k` has `ARENA_BASE << k`.
const ARENA_BASE: usize = 16;
/// Segments of an [`Arena`] (room for 16 · (2⁴⁰ − 1) blocks).
const ARENA_SEGMENTS: usize = 40;

/// An append-only store of the blocks (or rows) a snapshot read, handing out references
/// that live as long as the snapshot: rows borrow their block from here instead of
/// counting references (an atomic increment and decrement per row). Segments double in
/// size and are allocated on first use; each value gets a unique slot.
struct Arena<T> {
    segments: [OnceLock<Box<[OnceLock<T>]>>; ARENA_SEGMENTS],
    next: AtomicUsize,
}

impl<T> Arena<T> {
    fn new() -> Arena<T> {
        Arena {
            segments: std::array::from_fn(|_| OnceLock::new()),
            next: AtomicUsize::new(0),
        }
    }

    /// Keeps `block` for the arena's lifetime.
    fn keep(&self, block: T) -> &T {
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        let q = i / ARENA_BASE + 1;
        let k = (usize::BITS - 1 - q.leading_zeros()) as usize;
        let first = ARENA_BASE * ((1 << k) - 1);
        let segment = self.segments[k.min(ARENA_SEGMENTS - 1)]
            .get_or_init(|| (0..ARENA_BASE << k).map(|_| OnceLock::new()).collect());
        match segment.get(i - first) {
            // The slot is this call's alone: `get_or_init` stores `block`.
            Some(slot) => slot.get_or_init(|| block),
            // Unreachable (2⁴⁴ blocks); keep the block alive somewhere rather than panic.
            None => Box::leak(Box::new(block)),
        }
    }
}

impl std::fmt::Debug for DurableSnapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DurableSnapshot")
            .field("table", &self.table)
            .field("names", &self.names)
            .field(
                "blocks_read",
                &self
                    .blocks
                    .get()
                    .map_or(0, |a| a.next.load(Ordering::Relaxed)),
            )
            .finish_non_exhaustive()
    }
}

/// A row a filtered scan handed over, copied out of the block it read from redb (see
/// [`DurableSnapshot::keep_row`]).
struct KeptRow {
    pk: Box<str>,
    bytes: Box<[u8]>,
}

/// A block loaded for reading: its bytes in redb's page cache (as of the snapshot's
/// transaction) and its checked header.
struct Loaded {
    bytes: BlockGuard,
    pk: Box<str>,
    rows: usize,
    /// Loaded with [`Check::Lazy`] from a block with columns: its directory and rows are
    /// not verified yet (each when first needed).
    lazy: Option<Lazy>,
}

/// The next block of a scan: loaded from redb (kept in the snapshot's arena once its rows
/// are wanted, or held for one run by a filtered scan), or a verified copy (`verified.rs`: every checksum passed, its columns
/// decoded) borrowed from the snapshot's block map. (Transient, one block at a time: a
/// loaded block moves into the arena as it is, so boxing it would only add an allocation.)
#[allow(clippy::large_enum_variant)]
enum Next<'a> {
    Stored(Loaded),
    Copy(&'a VerifiedBlock),
}

impl Next<'_> {
    /// The block's view.
    #[inline]
    fn view(&self) -> BlockView<'_> {
        match self {
            Next::Stored(loaded) => loaded.view(),
            Next::Copy(copy) => copy.view(),
        }
    }

    /// What the block has yet to verify (nothing for a copy).
    fn lazy(&self) -> Option<&Lazy> {
        match self {
            Next::Stored(loaded) => loaded.lazy.as_ref(),
            Next::Copy(_) => None,
        }
    }

    /// The block's bytes (for a report naming it).
    fn bytes(&self) -> &[u8] {
        match self {
            Next::Stored(loaded) => loaded.bytes.value(),
            Next::Copy(copy) => copy.bytes(),
        }
    }
}

/// What a block loaded with [`Check::Lazy`] has yet to verify.
struct Lazy {
    /// The block's key, to name it if something fails.
    key: Box<[u8]>,
    /// The block directory's check ([`BlockView::verify_directory`]), run before the
    /// block's first row is read.
    directory: OnceLock<Result<(), Corrupt>>,
    /// The column directory, checked when the block was loaded.
    columns: ColumnDirectory,
}

impl Lazy {
    /// Row `i` of `block` (the block this was loaded with), its directory and its own
    /// checksum verified.
    #[inline]
    fn checked_row<'b>(&self, block: &BlockView<'b>, i: usize) -> Result<RowRef<'b>, Corrupt> {
        self.directory
            .get_or_init(|| block.verify_directory())
            .clone()?;
        block.checked_row(i)
    }

    /// [`BlockView::lower_bound`] over `block` (the block this was loaded with),
    /// verifying each row it compares.
    fn lower_bound(&self, block: &BlockView<'_>, rk: &[u8], after: bool) -> Result<usize, Corrupt> {
        block.lower_bound_by(rk, after, |i| {
            self.checked_row(block, i).map(|row| row.row_key_bytes())
        })
    }
}

/// How much of a block is checked when it is loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    /// Every checksum, the header and the row offsets (scans; rows' contents are checked
    /// as read).
    Offsets,
    /// The header's checksum (format 3: the directory; the row a point get returns is
    /// verified by `BlockView::find`) and the header (point gets).
    Header,
    /// The header alone, in constant time (splits: no row is returned from it).
    KeysOnly,
    /// A block with columns (format 4): the directory, the row offsets and the columns,
    /// not the rows (filtered scans, which verify each row they read); any other block as
    /// [`Check::Offsets`].
    Lazy,
}

impl Loaded {
    /// Checks a block as `check` says.
    fn new(key: &[u8], guard: BlockGuard, check: Check) -> Result<Loaded, (Corrupt, BlockGuard)> {
        let bytes = guard.value();
        let mut lazy = None;
        let view = match check {
            Check::Offsets => BlockView::parse(bytes),
            Check::Header => BlockView::parse_header(bytes),
            Check::KeysOnly => BlockView::parse_header_unverified(bytes),
            Check::Lazy => match BlockView::parse_columns_first(bytes) {
                Ok(Some((view, columns))) => {
                    lazy = Some(Lazy {
                        key: key.into(),
                        directory: OnceLock::new(),
                        columns,
                    });
                    Ok(view)
                }
                Ok(None) => BlockView::parse(bytes),
                Err(e) => Err(e),
            },
        };
        match view {
            Ok(view) => {
                let (pk, rows) = (view.partition_key().into(), view.len());
                Ok(Loaded {
                    bytes: guard,
                    pk,
                    rows,
                    lazy,
                })
            }
            Err(e) => Err((e, guard)),
        }
    }

    /// The block's view (its header was checked by `new`).
    #[inline]
    fn view(&self) -> BlockView<'_> {
        BlockView::from_checked(self.bytes.value(), &self.pk, self.rows)
    }
}

impl DurableSnapshot {
    /// A snapshot of `entry` in `txn` with the memtable version `mem` taken with it (both
    /// taken before the call, so that the property names read here cover every row of the
    /// snapshot).
    pub(crate) fn new(
        start: &ReadStart,
        dir: &Arc<Path>,
        copies: &Arc<CopyBudget>,
    ) -> Result<DurableSnapshot, StoreError> {
        let entry = &start.entry;
        let rows = start.rows.clone();
        let names = entry
            .names
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        Ok(DurableSnapshot {
            rows,
            table: entry.id,
            entry: entry.clone(),
            dir: dir.clone(),
            names,
            mem: start.mem.clone(),
            blocks_version: start.blocks_version,
            copies: copies.clone(),
            map_builds: start.map_builds.clone(),
            error: Mutex::new(None),
            blocks: OnceLock::new(),
            kept_rows: OnceLock::new(),
            map: OnceLock::new(),
        })
    }

    /// The table's block map of this snapshot's version (`block_map.rs`): the one kept, or
    /// — for a scan over more than one partition — one built now if the walk is cheap
    /// ([`walk_is_cheap`](Self::walk_is_cheap)); `None` for a scan of one partition
    /// without a map, for a larger table whose map is being built on a thread of its own
    /// meanwhile, or when building one failed (the split's walk through redb then meets
    /// and reports the failure). The split then walks redb only as far as the page's
    /// chunks reach: the first filtered page after a start at 10 M entities waited
    /// 0.74 s for a walk of the whole table (every block read) when the map was built
    /// here, where a page takes 15–40 ms (`benches/README.md`, "The block map's search").
    fn block_map(&self, scan: &Scan<'_>) -> Option<Arc<BlockMap>> {
        if scan.range.partition_key.as_point().is_some() {
            return self.own_map().cloned();
        }
        self.point_map()
    }

    /// Whether the data file holds so few blocks that verified copies of all of them could
    /// fit in the copy budget (at the default block size): a walk of the table then costs
    /// less than the reads that its map saves the same request. `None` when redb fails.
    fn walk_is_cheap(&self) -> Option<bool> {
        let blocks = self.rows.len().ok()?;
        Some(
            usize::try_from(blocks)
                .ok()?
                .checked_mul(DEFAULT_BLOCK_BYTES)
                .is_some_and(|bytes| bytes <= self.copies.limit()),
        )
    }

    /// Builds the table's block map of this snapshot's version, holds it and keeps it
    /// (brought up to date, unless a map of a later version is kept already).
    fn build_map(&self) -> Option<Arc<BlockMap>> {
        let map = Arc::new(BlockMap::build(
            &self.rows,
            self.table,
            self.blocks_version,
            &self.copies,
        )?);
        keep_map(&self.entry, map.clone(), &self.map_builds.recent);
        Some(self.map.get_or_init(|| map).clone())
    }

    /// The block map this snapshot holds: the one it used first, else the table's kept
    /// map if it is of this snapshot's version (then held from now on).
    fn own_map(&self) -> Option<&Arc<BlockMap>> {
        if let Some(map) = self.map.get() {
            return Some(map);
        }
        let kept = self.kept_map()?;
        Some(self.map.get_or_init(|| kept))
    }

    /// The block map point gets (and scans over more than one partition,
    /// [`block_map`](Self::block_map)) use: the kept map of this snapshot's version; or one
    /// built now when the data file holds so few blocks that verified copies of all of them
    /// could fit in the copy budget (at the default block size) — the walk then costs
    /// less than the gets it serves save. For a larger file the walk (every block read
    /// once) would cost a get many times its own time: a thread of its own builds the map
    /// (one at a time per table) while the gets go through redb. Once kept, a map follows
    /// the writer's commits (`BlockMap::followed`), so it is built again only after a
    /// reopen or when commits came faster than the walk.
    ///
    /// Without a map a get finds its block with redb's cursor, which for a key inside a
    /// block reads two leaves of the B-tree — the block's and the next one's, whose first
    /// key bounds it — where a get by the block's key from the map reads one (at 10 M
    /// entities two thirds of a block-sized page read a get, `benches/README.md`).
    fn point_map(&self) -> Option<Arc<BlockMap>> {
        if let Some(map) = self.own_map() {
            return Some(map.clone());
        }
        if self.walk_is_cheap()? {
            return self.build_map();
        }
        self.build_map_elsewhere();
        None
    }

    /// Starts building the table's block map of this snapshot's version on a thread of
    /// its own, unless one is being built.
    fn build_map_elsewhere(&self) {
        let entry = self.entry.clone();
        if entry.map_building.swap(true, Ordering::AcqRel) {
            return;
        }
        let (rows, table, version) = (self.rows.clone(), self.table, self.blocks_version);
        let copies = self.copies.clone();
        let builds = self.map_builds.clone();
        let started = self.map_builds.spawn({
            let entry = entry.clone();
            move |closing| {
                if let Some(map) = BlockMap::build_unless(&rows, table, version, &copies, closing) {
                    keep_map(&entry, Arc::new(map), &builds.recent);
                }
                // The read transaction goes before the next build may start.
                drop(rows);
                entry.map_building.store(false, Ordering::Release);
            }
        });
        if !started {
            entry.map_building.store(false, Ordering::Release);
        }
    }

    /// The map filtered scans walk: the block map this snapshot holds, if any (a page's
    /// waves split the scan first, which builds it).
    fn scan_map(&self) -> Option<&BlockMap> {
        self.own_map().map(|map| &**map)
    }

    /// The table's block map if one of this snapshot's version is kept (none is built).
    fn kept_map(&self) -> Option<Arc<BlockMap>> {
        self.entry
            .block_map
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .filter(|m| m.version == self.blocks_version)
            .cloned()
    }

    /// The first storage failure any scan, get or split of this snapshot met, if any
    /// (scans stop at a failure; a query page that met one must not be returned).
    pub fn take_error(&self) -> Result<(), StoreError> {
        match self
            .error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn fail(&self, error: StoreError) {
        let mut slot = self.error.lock().unwrap_or_else(PoisonError::into_inner);
        slot.get_or_insert(error);
    }

    /// The block under `key` (an entity key; `partition`: its partition prefix) if it
    /// exists, and the index of row `rk` in it. With `located` (the block map and the
    /// position of the block that may hold the key, in the key's partition), the block is
    /// fetched from redb by its key and the map notes the read (a block read twice gets a
    /// verified copy, which later gets read instead: `visit_entity`); without it, redb's
    /// cursor finds the block.
    fn lookup(
        &self,
        key: &[u8],
        partition: &[u8],
        rk: &str,
        located: Option<(&BlockMap, usize)>,
    ) -> Result<Option<(Loaded, usize)>, StoreError> {
        let (key, guard) = match located {
            Some((map, at)) => {
                let Some(entry) = map.entry(at) else {
                    return Ok(None);
                };
                match self.rows.get(&*entry.key).map_err(StoreError::storage)? {
                    Some(guard) => (Cow::Borrowed(&*entry.key), guard),
                    // Not in this version after all: the map is of another (never so).
                    None => return Ok(None),
                }
            }
            None => {
                let found = floor_block(self.rows.range::<&[u8]>(..=key), partition)
                    .map_err(StoreError::storage)?;
                let Some((key, guard)) = found else {
                    return Ok(None);
                };
                (Cow::Owned(key.value().to_vec()), guard)
            }
        };
        let loaded = self.load(&key, guard, Check::Header)?;
        let found = loaded
            .view()
            .find(rk)
            .map_err(|e| self.damage(&key, loaded.bytes.value(), e))?;
        if let Some((map, at)) = located {
            map.copy_of(at, loaded.bytes.value());
        }
        Ok(found.map(|i| (loaded, i)))
    }

    /// The entity with these keys as an owned value (what `Backend::get` returns).
    pub(crate) fn entity(&self, pk: &str, rk: &str) -> Result<Option<Entity>, StoreError> {
        let mut entity = None;
        self.visit_entity(pk, rk, &mut |row| entity = Some(row.to_entity()))?;
        Ok(entity)
    }

    /// The entity with these keys handed to `visit` as a row read in place (from the
    /// memtable or its block, verified as [`entity`](Self::entity) verifies it); whether
    /// it exists. A value found damaged while `visit` reads it fails the call.
    pub(crate) fn visit_entity(
        &self,
        pk: &str,
        rk: &str,
        visit: &mut dyn FnMut(&dyn SourceRow),
    ) -> Result<bool, StoreError> {
        if let Some((pk, entry)) = self.mem.get(pk, rk) {
            let Some(bytes) = &entry.row else {
                return Ok(false);
            };
            visit(&DurableRow::in_memory(pk, bytes, self));
        } else {
            let (key, partition) = search_keys(self.table, pk, rk);
            let map = self.point_map();
            // With the map: the block that may hold the key; none in its partition, no row.
            let located = match map.as_deref() {
                Some(map) => {
                    let at = map.floor(&key, &partition);
                    if !map.entry(at).is_some_and(|e| e.key.starts_with(&partition)) {
                        return Ok(false);
                    }
                    Some((map, at))
                }
                None => None,
            };
            if let Some(copy) = located.and_then(|(map, at)| map.copy_made(at)) {
                let Some(i) = copy.view().find_verified(rk) else {
                    return Ok(false);
                };
                let view = copy.view();
                let (start, end) = view.span(i);
                visit(&DurableRow::in_block(view, start, end, self));
            } else {
                let Some((block, i)) = self.lookup(&key, &partition, rk, located)? else {
                    return Ok(false);
                };
                let view = block.view();
                let (start, end) = view.span(i);
                visit(&DurableRow::in_block(view, start, end, self));
            }
        }
        self.take_error()?;
        Ok(true)
    }

    /// Where a scan starts (inclusive; a block key or a key between blocks) and where its
    /// blocks end (exclusive).
    fn bounds(&self, scan: &Scan<'_>) -> (Vec<u8>, Vec<u8>) {
        let t = self.table;
        // The largest of the scan's lower bounds, with the partition whose block may hold it.
        let mut start: (Vec<u8>, Option<Vec<u8>>) = (table_prefix(t).to_vec(), None);
        let mut raise = |key: Vec<u8>, partition: Option<Vec<u8>>| {
            if key > start.0 {
                start = (key, partition);
            }
        };
        let pk = &scan.range.partition_key;
        match &pk.lower {
            Bound::Included(p) => raise(partition_prefix(t, p), None),
            Bound::Excluded(p) => raise(partition_end(t, p), None),
            Bound::Unbounded => {}
        }
        if let Some(p) = pk.as_point()
            && let Bound::Included(r) | Bound::Excluded(r) = &scan.range.row_key.lower
        {
            raise(entity_key(t, p, r), Some(partition_prefix(t, p)));
        }
        if let Some(from) = scan.from {
            raise(
                entity_key(t, &from.partition_key, &from.row_key),
                Some(partition_prefix(t, &from.partition_key)),
            );
        }
        let mut end = table_end(t);
        let mut lower = |key: Vec<u8>| {
            if key < end {
                end = key;
            }
        };
        match &pk.upper {
            Bound::Included(p) => lower(partition_end(t, p)),
            Bound::Excluded(p) => lower(partition_prefix(t, p)),
            Bound::Unbounded => {}
        }
        if let Some(until) = scan.until {
            lower(entity_key(t, &until.partition_key, &until.row_key));
        }
        let (key, partition) = start;
        (self.floor(key, partition.as_deref()), end)
    }

    /// The key of the block that holds `key` when that block is in `partition`, else `key`.
    fn floor(&self, key: Vec<u8>, partition: Option<&[u8]>) -> Vec<u8> {
        let Some(partition) = partition else {
            return key;
        };
        match floor_block(self.rows.range::<&[u8]>(..=key.as_slice()), partition) {
            Ok(Some((k, _))) => k.value().to_vec(),
            Ok(None) => key,
            Err(e) => {
                self.fail(StoreError::storage(e));
                key
            }
        }
    }

    /// A forward cursor over the blocks with keys in `start..end`.
    fn cursor(&self, start: &[u8], end: &[u8]) -> Option<Cursor> {
        if start >= end {
            return None;
        }
        match self.rows.range::<&[u8]>(start..end) {
            Ok(c) => Some(c),
            Err(e) => {
                self.fail(StoreError::storage(e));
                None
            }
        }
    }

    /// Loads the block stored under `key`, checked as `check` says; damage is reported
    /// ([`block_damage`]: a typed error and a log line naming the block's key range).
    fn load(&self, key: &[u8], guard: BlockGuard, check: Check) -> Result<Loaded, StoreError> {
        Loaded::new(key, guard, check).map_err(|(e, guard)| {
            block_damage(
                &self.dir,
                Some(self.entry.name.as_str()),
                key,
                guard.value(),
                e,
            )
        })
    }

    /// The report of damage `e` in the block stored under `key` ([`block_damage`]).
    fn damage(&self, key: &[u8], bytes: &[u8], e: Corrupt) -> StoreError {
        block_damage(&self.dir, Some(self.entry.name.as_str()), key, bytes, e)
    }

    /// Row `i` of `block`; when the block's rows are not verified yet (`lazy`: its key), the
    /// row is verified first, and a row that fails is recorded as damage (the scan then
    /// fails) and read as an empty row.
    #[inline]
    fn block_row<'a>(
        &'a self,
        block: BlockView<'a>,
        i: usize,
        lazy: Option<&Lazy>,
    ) -> DurableRow<'a> {
        if let Some(lazy) = lazy
            && let Err(e) = lazy.checked_row(&block, i)
        {
            self.fail(self.damage(&lazy.key, block.bytes(), e));
            return DurableRow::in_memory(block.partition_key(), &[], self);
        }
        let (start, end) = block.span(i);
        DurableRow::in_block(block, start, end, self)
    }

    /// Filters rows `rows` of `block` with [`filter_run`] over its columns — a verified
    /// copy's (`copy`), or decoded from the block (`lazy`: what of it is not verified
    /// yet) —, reading the rows a comparison without a column tests in place and handing
    /// over the matches as `take` makes them. `None` after damage (recorded).
    fn filter_block<'a, P, F>(
        &'a self,
        block: BlockView<'_>,
        lazy: Option<&Lazy>,
        copy: Option<&VerifiedBlock>,
        rows: std::ops::Range<usize>,
        take: &dyn Fn(usize) -> DurableRow<'a>,
        pass: &mut FilterPass<'_, P, F>,
    ) -> Option<RunEnd>
    where
        P: RowFilter + ?Sized,
        F: FnMut(Filtered<DurableRow<'a>>) -> ControlFlow<()>,
    {
        let test = |i: usize| self.block_row(block, i, lazy);
        let FilterPass {
            filter,
            report_every,
            scratch,
            visit,
        } = pass;
        if let Some(copy) = copy {
            let run = ColumnRun {
                set: copy.columns(),
                rows,
            };
            return Some(filter_run(
                *filter,
                &run,
                &test,
                take,
                *report_every,
                scratch,
                visit,
            ));
        }
        let key = lazy.map_or(&[][..], |l| &l.key);
        let encoded = match lazy {
            Some(lazy) => Ok(block.encoded_columns_with(&lazy.columns)),
            None => block.encoded_columns(),
        };
        let encoded = match encoded {
            Ok(c) => c,
            Err(e) => {
                self.fail(self.damage(key, block.bytes(), e));
                return None;
            }
        };
        let run = LazyColumns::new(&encoded, rows);
        let ended = filter_run(*filter, &run, &test, take, *report_every, scratch, visit);
        if let Some(e) = run.damage() {
            // A column failed its checksum: its tests went to the rows (verified on their
            // own), but damage is never passed over in silence.
            self.fail(self.damage(key, block.bytes(), e));
            return None;
        }
        Some(ended)
    }

    /// A filtered scan of `rows` (see `scan_filtered`): memtable rows, if any are in the
    /// scan, tested one by one (as [`filter_each`](tableq_exec::filter_each) tests rows),
    /// the runs of block rows between them over the blocks' columns ([`filter_block`]),
    /// over blocks the walk holds rather than keeps — a block row is tested in place and
    /// copied out when it is handed over.
    ///
    /// [`filter_block`]: Self::filter_block
    fn filter_merged<'a, P, F>(
        &'a self,
        mut rows: DurableRows<'a>,
        filter: &P,
        report_every: usize,
        visit: F,
    ) -> Result<(), StoreError>
    where
        P: RowFilter + ?Sized,
        F: FnMut(Filtered<DurableRow<'a>>) -> ControlFlow<()>,
    {
        rows.blocks.hold = true;
        let every = report_every.clamp(1, FILTER_BATCH) as u64;
        let mut pass = FilterPass {
            filter,
            report_every,
            scratch: Vec::new(),
            visit,
        };
        // Memtable rows that failed, not reported yet.
        let mut skipped = 0u64;
        while let Some(entry) = rows.next_entry() {
            let i = match entry? {
                Entry::Mem(row) => {
                    let flow = if filter.test_row(&row) {
                        (pass.visit)(Filtered::Match {
                            row,
                            skipped: std::mem::take(&mut skipped),
                        })
                    } else {
                        skipped += 1;
                        if skipped < every {
                            continue;
                        }
                        (pass.visit)(Filtered::Skipped(std::mem::take(&mut skipped)))
                    };
                    if flow.is_break() {
                        return self.hand_over_next(&mut rows, None, &mut pass.visit);
                    }
                    continue;
                }
                Entry::Block(i) => i,
            };
            let run = rows.block_run(i);
            if skipped > 0
                && (pass.visit)(Filtered::Skipped(std::mem::take(&mut skipped))).is_break()
            {
                let next = rows.blocks.row_to_hand_over(i);
                return self.hand_over_next(&mut rows, Some(next), &mut pass.visit);
            }
            let blocks = &rows.blocks;
            let Some(block) = blocks.view() else {
                break;
            };
            let take = |j: usize| blocks.row_to_hand_over(j);
            let lazy = blocks.unverified();
            let ended = self.filter_block(block, lazy, blocks.copy, run.clone(), &take, &mut pass);
            match ended {
                None => break,
                Some(RunEnd::Done) if self.failed() => break,
                Some(RunEnd::Done) => {}
                Some(RunEnd::StoppedAfter(j)) => {
                    let next = (j + 1 < run.end).then(|| take(j + 1));
                    return self.hand_over_next(&mut rows, next, &mut pass.visit);
                }
            }
        }
        if skipped > 0 {
            let _ = (pass.visit)(Filtered::Skipped(skipped));
        }
        self.take_error()
    }

    /// Ends a filtered scan of merged `rows` that the visitor stopped: hands over `next`,
    /// or else the walk's next entity, as [`Filtered::Next`].
    fn hand_over_next<'a, F>(
        &'a self,
        rows: &mut DurableRows<'a>,
        next: Option<DurableRow<'a>>,
        visit: &mut F,
    ) -> Result<(), StoreError>
    where
        F: FnMut(Filtered<DurableRow<'a>>) -> ControlFlow<()>,
    {
        let next = match next {
            Some(row) => Some(row),
            None => match rows.next_entry().transpose()? {
                Some(Entry::Mem(row)) => Some(row),
                Some(Entry::Block(i)) => Some(rows.blocks.row_to_hand_over(i)),
                None => None,
            },
        };
        if let Some(next) = next.filter(|_| !self.failed()) {
            let _ = visit(Filtered::Next(next));
        }
        self.take_error()
    }

    /// `row` (of a block a filtered scan read from redb and does not keep) copied into the
    /// snapshot, for as long as the snapshot: what a filtered scan hands over.
    fn keep_row<'a>(&'a self, row: DurableRow<'_>) -> DurableRow<'a> {
        let kept = self.kept_rows.get_or_init(Arena::new).keep(KeptRow {
            pk: row.pk.into(),
            bytes: row.bytes.into(),
        });
        DurableRow::in_memory(&kept.pk, &kept.bytes, self)
    }

    /// Whether a failure was recorded.
    fn failed(&self) -> bool {
        self.error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }

    /// The next block of a cursor, checked as `check` says; `None` at the end or after a
    /// failure (recorded).
    fn next_block(&self, cursor: &mut Option<Cursor>, check: Check) -> Option<Loaded> {
        let item = cursor.as_mut()?.next();
        let loaded = match item {
            None => Err(None),
            Some(Err(e)) => Err(Some(StoreError::storage(e))),
            Some(Ok((key, guard))) => self.load(key.value(), guard, check).map_err(Some),
        };
        self.ended_on_failure(loaded, || *cursor = None)
    }

    /// Block `*at` of `map` (a block map of this snapshot's version) if its key is below
    /// `end`, moving past it: its verified copy when one was made (nothing read from
    /// redb), else the stored block — of which the second filtered read makes the copy —
    /// checked as `check` says. `None` at the end or after a failure (recorded).
    fn next_mapped<'m>(
        &self,
        map: &'m BlockMap,
        at: &mut usize,
        end: &[u8],
        check: Check,
    ) -> Option<Next<'m>> {
        let i = *at;
        let entry = map.entry(i).filter(|e| *e.key < *end)?;
        *at += 1;
        if let Some(copy) = map.copy_made(i) {
            return Some(Next::Copy(copy));
        }
        let loaded = match self.rows.get(&*entry.key) {
            Ok(Some(guard)) => match map.copy_of(i, guard.value()) {
                Some(copy) => Ok(Next::Copy(copy)),
                None => self
                    .load(&entry.key, guard, check)
                    .map(Next::Stored)
                    .map_err(Some),
            },
            // The map lists the blocks of this snapshot's version: a block missing from it
            // is damage to the file, not a block to pass over.
            Ok(None) => Err(Some(self.damage(
                &entry.key,
                &[],
                Corrupt("a block of the table's map is missing from the data file"),
            ))),
            Err(e) => Err(Some(StoreError::storage(e))),
        };
        self.ended_on_failure(loaded, || *at = usize::MAX)
    }

    /// The block loaded, or `None` after recording the failure (if any) and running
    /// `stop`, which ends the walk.
    fn ended_on_failure<T>(
        &self,
        loaded: Result<T, Option<StoreError>>,
        stop: impl FnOnce(),
    ) -> Option<T> {
        match loaded {
            Ok(l) => Some(l),
            Err(e) => {
                if let Some(e) = e {
                    self.fail(e);
                }
                stop();
                None
            }
        }
    }
}

/// Cuts a scan into chunks of about `chunk_rows` rows at block boundaries, block by block
/// in key order (`EntitySource::split`).
struct Chunker<'s> {
    scan: &'s Scan<'s>,
    chunk_rows: usize,
    max_chunks: usize,
    chunks: Vec<Chunk>,
    current: Chunk,
    in_current: usize,
}

impl<'s> Chunker<'s> {
    fn new(scan: &'s Scan<'s>, chunk_rows: usize, max_chunks: usize) -> Chunker<'s> {
        Chunker {
            scan,
            chunk_rows: chunk_rows.max(1),
            max_chunks: max_chunks.max(1),
            chunks: Vec::new(),
            current: Chunk {
                from: scan.from.cloned(),
                until: None,
                rows: Some(0),
            },
            in_current: 0,
        }
    }

    /// Whether the chunks asked for are cut.
    fn done(&self) -> bool {
        self.chunks.len() >= self.max_chunks
    }

    /// The next block: of partition `pk`, rows `lo..hi` inside the scan; `row_key` gives
    /// row `lo`'s RowKey, asked for when a chunk is cut before it.
    fn block(
        &mut self,
        pk: &str,
        lo: usize,
        hi: usize,
        row_key: impl FnOnce() -> Result<String, Corrupt>,
    ) -> Result<(), StoreError> {
        if lo >= hi {
            return Ok(());
        }
        if self.in_current >= self.chunk_rows {
            // Cut before this block's first row inside the scan.
            let boundary = Key::new(pk, row_key().map_err(StoreError::storage)?);
            self.current.rows = Some(self.in_current);
            self.current.until = Some(boundary.clone());
            self.chunks.push(std::mem::replace(
                &mut self.current,
                Chunk {
                    from: Some(boundary),
                    until: None,
                    rows: Some(0),
                },
            ));
            self.in_current = 0;
            if self.done() {
                return Ok(());
            }
        }
        self.in_current += hi - lo;
        Ok(())
    }

    /// The next block, read: the rows of `view` inside the scan ([`row_bounds`]).
    fn view(&mut self, view: &BlockView<'_>) -> Result<(), StoreError> {
        let (lo, hi, _) = row_bounds(view, self.scan);
        self.block(view.partition_key(), lo, hi, || {
            std::str::from_utf8(view.row_key_bytes(lo))
                .map(str::to_owned)
                .map_err(|_| Corrupt("RowKey is not UTF-8"))
        })
    }

    /// The chunks, the last one holding `in_memory` more rows (the memtable's).
    fn finish(mut self, in_memory: usize) -> Vec<Chunk> {
        if self.done() {
            return self.chunks;
        }
        if self.in_current > 0 || (self.chunks.is_empty() && in_memory > 0) {
            self.current.rows = Some(self.in_current + in_memory);
            self.current.until = self.scan.until.cloned();
            self.chunks.push(self.current);
        } else if let Some(last) = self.chunks.last_mut() {
            last.until = self.scan.until.cloned();
            last.rows = last.rows.map(|r| r + in_memory);
        }
        self.chunks
    }
}

/// Whether finding a scan's rows in a block of partition `pk` reads RowKeys
/// ([`row_bounds`] binary-searches them): when the scan has RowKey bounds, or starts or
/// ends inside the partition. Otherwise every row of the block is in the scan.
fn bounds_probe(pk: &str, scan: &Scan<'_>) -> bool {
    let rk = &scan.range.row_key;
    !matches!(rk.lower, Bound::Unbounded)
        || !matches!(rk.upper, Bound::Unbounded)
        || scan.from.is_some_and(|f| f.partition_key == pk)
        || scan.until.is_some_and(|u| u.partition_key == pk)
}

/// The rows `lo..hi` of a block inside a scan, and whether the scan's RowKey interval ends
/// inside the block (so later blocks of the partition hold nothing for it).
fn row_bounds(view: &BlockView<'_>, scan: &Scan<'_>) -> (usize, usize, bool) {
    let found = row_bounds_by(view, scan, |rk, after| {
        Ok::<_, std::convert::Infallible>(view.lower_bound(rk, after))
    });
    match found {
        Ok(bounds) => bounds,
        Err(never) => match never {},
    }
}

/// [`row_bounds`] with `lower_bound(rk, after)` finding the first row whose RowKey is
/// `>= rk` (`> rk` when `after`): a block whose rows are not verified yet verifies those
/// its binary search reads ([`Lazy::lower_bound`]).
fn row_bounds_by<E>(
    view: &BlockView<'_>,
    scan: &Scan<'_>,
    lower_bound: impl Fn(&[u8], bool) -> Result<usize, E>,
) -> Result<(usize, usize, bool), E> {
    let n = view.len();
    let pk = view.partition_key();
    let rk = &scan.range.row_key;
    let mut lo = match &rk.lower {
        Bound::Unbounded => 0,
        Bound::Included(k) => lower_bound(k.as_bytes(), false)?,
        Bound::Excluded(k) => lower_bound(k.as_bytes(), true)?,
    };
    let mut hi = match &rk.upper {
        Bound::Unbounded => n,
        Bound::Included(k) => lower_bound(k.as_bytes(), true)?,
        Bound::Excluded(k) => lower_bound(k.as_bytes(), false)?,
    };
    let past_upper = hi < n;
    if let Some(f) = scan.from {
        match compare_str(pk, &f.partition_key) {
            std::cmp::Ordering::Less => lo = n,
            std::cmp::Ordering::Equal => {
                lo = lo.max(lower_bound(f.row_key.as_bytes(), false)?);
            }
            std::cmp::Ordering::Greater => {}
        }
    }
    if let Some(u) = scan.until {
        match compare_str(pk, &u.partition_key) {
            std::cmp::Ordering::Greater => hi = 0,
            std::cmp::Ordering::Equal => {
                hi = hi.min(lower_bound(u.row_key.as_bytes(), false)?);
            }
            std::cmp::Ordering::Less => {}
        }
    }
    Ok((lo, hi.max(lo), past_upper))
}

/// The blocks side of a scan: the rows of the blocks in the scan, in key order.
struct BlockRows<'a> {
    snapshot: &'a DurableSnapshot,
    scan: Scan<'a>,
    /// How the blocks are walked.
    walk: Walk<'a>,
    /// Exclusive upper block key.
    end: Vec<u8>,
    /// The current block (kept in the snapshot's arena for `'a`).
    block: Option<BlockView<'a>>,
    row: usize,
    row_end: usize,
    /// The PartitionKey of the last block read.
    partition: Option<Box<str>>,
    /// After the current block, skip the rest of its partition.
    skip_partition: bool,
    /// Every block of the scan was read (or a failure ended the scan).
    done: bool,
    /// How blocks are checked when loaded ([`Check::Offsets`], or [`Check::Lazy`] for a
    /// filtered scan).
    check: Check,
    /// The current block's key when its rows are not verified yet (see [`Loaded`]).
    lazy: Option<&'a Lazy>,
    /// The current block's verified copy, when it was read from one.
    copy: Option<&'a VerifiedBlock>,
    /// Blocks read from redb are held here, one at a time, instead of being kept in the
    /// snapshot's arena (a filtered scan, which copies out the rows it hands over).
    hold: bool,
    /// The current block when `hold`: dropped when the walk moves on.
    held: Option<Loaded>,
    /// How many blocks the walk moved to (tells a merge that the block changed: a held
    /// block's bytes may lie where the one before it lay).
    moves: u64,
}

/// How a scan walks its blocks. (One per scan, inline in its [`BlockRows`] as the cursor
/// always was: boxing the cursor would add an allocation per scan to save nothing.)
#[allow(clippy::large_enum_variant)]
enum Walk<'a> {
    /// redb's cursor (`None`: at the end).
    Cursor(Option<Cursor>),
    /// The table's block map of the snapshot's version, from block `at` (filtered scans):
    /// blocks with a verified copy are read from it without touching redb, the others by
    /// key.
    Map { map: &'a BlockMap, at: usize },
}

impl<'a> BlockRows<'a> {
    /// The blocks of `scan`, walked through `map` (a block map of the snapshot's version)
    /// when there is one, else through redb.
    fn new(
        snapshot: &'a DurableSnapshot,
        scan: Scan<'a>,
        map: Option<&'a BlockMap>,
    ) -> BlockRows<'a> {
        let (start, end) = snapshot.bounds(&scan);
        let walk = match map {
            Some(map) => Walk::Map {
                at: map.position(&start),
                map,
            },
            None => Walk::Cursor(snapshot.cursor(&start, &end)),
        };
        BlockRows {
            snapshot,
            scan,
            walk,
            end,
            block: None,
            row: 0,
            row_end: 0,
            partition: None,
            skip_partition: false,
            done: false,
            check: Check::Offsets,
            lazy: None,
            copy: None,
            hold: false,
            held: None,
            moves: 0,
        }
    }

    /// Restarts the walk at `key` (at the block holding it, if in `partition`).
    fn seek(&mut self, key: Vec<u8>, partition: Option<&[u8]>) {
        match &mut self.walk {
            Walk::Map { map, at } => {
                *at = match partition {
                    Some(partition) => map.floor(&key, partition),
                    None => map.position(&key),
                };
            }
            Walk::Cursor(cursor) => {
                let start = self.snapshot.floor(key, partition);
                *cursor = self.snapshot.cursor(&start, &self.end);
            }
        }
    }

    /// Ends the walk: no block is read any more.
    fn stop(&mut self) {
        self.walk = Walk::Cursor(None);
    }

    /// The next block of the walk; `None` at the end or after a failure (recorded).
    fn next_block(&mut self) -> Option<Next<'a>> {
        match &mut self.walk {
            Walk::Cursor(cursor) => self
                .snapshot
                .next_block(cursor, self.check)
                .map(Next::Stored),
            Walk::Map { map, at } => self.snapshot.next_mapped(map, at, &self.end, self.check),
        }
    }

    /// Moves to the next block with rows in the scan; `false` at the end.
    fn advance(&mut self) -> bool {
        let table = self.snapshot.table;
        self.block = None;
        self.held = None;
        if self.skip_partition {
            self.skip_partition = false;
            if let Some(pk) = self.partition.take() {
                if self.scan.range.partition_key.as_point().is_some() {
                    self.stop();
                    return false;
                }
                self.seek(partition_end(table, &pk), None);
            }
        }
        loop {
            let Some(loaded) = self.next_block() else {
                return false;
            };
            let view = loaded.view();
            let pk = view.partition_key();
            if !self.scan.range.partition_key.contains(pk) {
                continue;
            }
            let entering = self.partition.as_deref() != Some(pk);
            if entering {
                self.partition = Some(pk.into());
            }
            let bounds = match loaded.lazy() {
                // The scan's bounds may cut this block: finding them reads RowKeys, each
                // verified (with the block directory) as the binary search reads it.
                Some(lazy) if bounds_probe(pk, &self.scan) => {
                    row_bounds_by(&view, &self.scan, |rk, after| {
                        lazy.lower_bound(&view, rk, after)
                    })
                    .map_err(|e| (e, &lazy.key))
                }
                _ => Ok(row_bounds(&view, &self.scan)),
            };
            let (lo, hi, past_upper) = match bounds {
                Ok(bounds) => bounds,
                Err((e, key)) => {
                    self.snapshot
                        .fail(self.snapshot.damage(key, loaded.bytes(), e));
                    self.stop();
                    return false;
                }
            };
            if lo >= hi {
                if past_upper {
                    self.skip_partition = true;
                    return self.advance();
                }
                // Every row is below the RowKey interval: jump to the block that can hold
                // its lower bound (once per partition).
                if entering
                    && lo == view.len()
                    && let Bound::Included(r) | Bound::Excluded(r) = &self.scan.range.row_key.lower
                {
                    let key = entity_key(table, pk, r);
                    let partition = partition_prefix(table, pk);
                    self.seek(key, Some(&partition));
                }
                continue;
            }
            self.skip_partition = past_upper;
            self.moves += 1;
            self.row = lo;
            self.row_end = hi;
            match loaded {
                Next::Stored(loaded) if self.hold => {
                    self.lazy = None;
                    self.copy = None;
                    self.held = Some(loaded);
                }
                Next::Stored(loaded) => {
                    let kept = self.snapshot.blocks.get_or_init(Arena::new).keep(loaded);
                    self.block = Some(kept.view());
                    self.lazy = kept.lazy.as_ref();
                    self.copy = None;
                }
                // The copy lives as long as the snapshot's map: nothing to keep.
                Next::Copy(copy) => {
                    self.block = Some(copy.view());
                    self.lazy = None;
                    self.copy = Some(copy);
                }
            }
            return true;
        }
    }

    /// The current block while it has rows left, loading the next block when it has none;
    /// `None` at the end of the blocks (or after a failure, recorded in the snapshot).
    /// (A plain walk's: its blocks are kept, not held.)
    #[inline]
    fn current(&mut self) -> Option<BlockView<'a>> {
        loop {
            if let Some(block) = self.block
                && self.row < self.row_end
            {
                return Some(block);
            }
            if self.done || !self.advance() {
                self.done = true;
                return None;
            }
        }
    }

    /// The current block (held or kept), for reading in place.
    fn view(&self) -> Option<BlockView<'_>> {
        match (self.block, &self.held) {
            (Some(block), _) => Some(block),
            (None, Some(held)) => Some(held.view()),
            (None, None) => None,
        }
    }

    /// What of the current block is not verified yet (loaded with [`Check::Lazy`]).
    fn unverified(&self) -> Option<&Lazy> {
        match &self.held {
            Some(held) => held.lazy.as_ref(),
            None => self.lazy,
        }
    }

    /// Row `i` of the current block, read in place (for a test), verified first if the
    /// block's rows are not yet ([`DurableSnapshot::block_row`]).
    fn row_in_place(&self, i: usize) -> DurableRow<'_> {
        match (self.block, &self.held) {
            (Some(block), _) => self.snapshot.block_row(block, i, self.lazy),
            (None, Some(held)) => self.snapshot.block_row(held.view(), i, self.unverified()),
            (None, None) => DurableRow::in_memory("", &[], self.snapshot),
        }
    }

    /// Row `i` of the current block as a scan hands it over (verified as
    /// [`row_in_place`](Self::row_in_place)): borrowed from a kept block or a copy, copied
    /// out of a held one.
    fn row_to_hand_over(&self, i: usize) -> DurableRow<'a> {
        if let Some(block) = self.block {
            return self.snapshot.block_row(block, i, self.lazy);
        }
        self.snapshot.keep_row(self.row_in_place(i))
    }

    /// The current row's index, moving past it.
    fn step(&mut self) -> usize {
        self.row += 1;
        self.row - 1
    }

    /// Moves to the next block with rows left in the scan, without keeping it (a held
    /// block stays in `held`, a copy in `copy`); `false` at the end of the blocks (or
    /// after a failure, recorded in the snapshot).
    fn next_run(&mut self) -> bool {
        loop {
            if self.row < self.row_end && (self.block.is_some() || self.held.is_some()) {
                return true;
            }
            if self.done || !self.advance() {
                self.done = true;
                return false;
            }
        }
    }
}

/// The iterator of [`DurableSnapshot`] scans: the blocks' rows merged with the memtable's
/// entries of the same scan (see the module docs).
pub struct DurableRows<'a> {
    blocks: BlockRows<'a>,
    /// The memtable's entries of the scan, with the next one; `None` when it has none.
    mem: Option<std::iter::Peekable<MemRows<'a>>>,
    /// Rows of the current block before this index precede the next memtable entry (0 =
    /// not worked out since the block or the memtable entry changed).
    run_end: usize,
    /// The blocks' end was seen (and its failure, if any, reported).
    blocks_ended: bool,
}

impl std::fmt::Debug for DurableRows<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DurableRows")
            .field("partition", &self.blocks.partition)
            .field("row", &self.blocks.row)
            .field("memtable", &self.mem.is_some())
            .finish_non_exhaustive()
    }
}

impl<'a> DurableRows<'a> {
    /// The rows of `scan`, its blocks walked through `map` if given ([`BlockRows::new`]).
    fn new(
        snapshot: &'a DurableSnapshot,
        scan: Scan<'a>,
        map: Option<&'a BlockMap>,
    ) -> DurableRows<'a> {
        let mut mem = (!snapshot.mem.is_empty()).then(|| snapshot.mem.scan(scan).peekable());
        if mem.as_mut().is_some_and(|m| m.peek().is_none()) {
            mem = None;
        }
        DurableRows {
            blocks: BlockRows::new(snapshot, scan, map),
            mem,
            run_end: 0,
            blocks_ended: false,
        }
    }
}

/// The end of a scan's blocks: the failure that ended them, if any (once), else the end.
fn blocks_end<'a>(snapshot: &DurableSnapshot) -> Option<Result<DurableRow<'a>, StoreError>> {
    snapshot.take_error().err().map(Err)
}

impl<'a> Iterator for DurableRows<'a> {
    type Item = Result<DurableRow<'a>, StoreError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        // The hot path, kept small enough to inline into the executor's loop: the next row
        // of the current block when no memtable entry is in the way.
        if self.mem.is_none() {
            let blocks = &mut self.blocks;
            if blocks.row < blocks.row_end
                && let Some(block) = &blocks.block
            {
                let (start, end) = block.span(blocks.row);
                blocks.row += 1;
                return Some(Ok(DurableRow::in_block(
                    *block,
                    start,
                    end,
                    blocks.snapshot,
                )));
            }
        }
        self.next_slow()
    }
}

impl<'a> DurableRows<'a> {
    /// The next row when the current block is used up or the memtable has entries left:
    /// the merge's next entity ([`next_entry`](Self::next_entry)), a block row borrowed
    /// from its kept block.
    #[inline(never)]
    fn next_slow(&mut self) -> Option<Result<DurableRow<'a>, StoreError>> {
        Some(match self.next_entry()? {
            Ok(Entry::Mem(row)) => Ok(row),
            Ok(Entry::Block(i)) => Ok(self.blocks.row_to_hand_over(i)),
            Err(e) => Err(e),
        })
    }
}

#[cfg(test)]
impl DurableSnapshot {
    /// How many blocks and how many copied rows the snapshot keeps.
    fn kept(&self) -> (usize, usize) {
        let count = |next: Option<&AtomicUsize>| next.map_or(0, |n| n.load(Ordering::Relaxed));
        (
            count(self.blocks.get().map(|a| &a.next)),
            count(self.kept_rows.get().map(|a| &a.next)),
        )
    }
}

/// The next entity of a merged walk ([`DurableRows::next_entry`]): a memtable row, or row
/// `i` of the walk's current block.
enum Entry<'a> {
    Mem(DurableRow<'a>),
    Block(usize),
}

impl<'a> DurableRows<'a> {
    /// The next entity of the blocks merged with the memtable, as a position — the one
    /// merge of the scans: the iterator ([`next_slow`](Self::next_slow)) borrows a block
    /// row from its kept block; a filtered scan over held blocks tests it in place and
    /// copies out the ones it hands over (`filter_merged`).
    fn next_entry(&mut self) -> Option<Result<Entry<'a>, StoreError>> {
        let snapshot = self.blocks.snapshot;
        let failure = || blocks_end(snapshot).map(|r| r.map(Entry::Mem));
        loop {
            let moves = self.blocks.moves;
            let has_block = self.blocks.next_run();
            if self.blocks.moves != moves {
                self.run_end = 0;
            }
            let Some(mem) = self.mem.as_mut() else {
                return match has_block {
                    true => Some(Ok(Entry::Block(self.blocks.step()))),
                    false => failure(),
                };
            };
            let Some(&(mpk, entry)) = mem.peek() else {
                // No memtable entry left: the rest is blocks alone.
                self.mem = None;
                continue;
            };
            if !has_block {
                // The blocks ended: with a failure, reported before the memtable's rest.
                if !self.blocks_ended {
                    self.blocks_ended = true;
                    if let Some(failure) = failure() {
                        return Some(failure);
                    }
                }
                mem.next();
                if let Some(bytes) = &entry.row {
                    return Some(Ok(Entry::Mem(DurableRow::in_memory(mpk, bytes, snapshot))));
                }
                continue;
            }
            let (row, row_end) = (self.blocks.row, self.blocks.row_end);
            if row < self.run_end {
                return Some(Ok(Entry::Block(self.blocks.step())));
            }
            let view = self.blocks.view()?;
            let at = match compare_str(view.partition_key(), mpk) {
                // The block's partition sorts first: all its rows precede the entry.
                std::cmp::Ordering::Less => row_end,
                std::cmp::Ordering::Greater => row,
                std::cmp::Ordering::Equal => view
                    .lower_bound(entry.rk.as_bytes(), false)
                    .clamp(row, row_end),
            };
            let replaced =
                view.partition_key() == mpk && view.row_key_bytes(row) == entry.rk.as_bytes();
            if at > row {
                self.run_end = at;
                return Some(Ok(Entry::Block(self.blocks.step())));
            }
            // The entry comes first; a stored row with its key is replaced or removed.
            if replaced {
                self.blocks.row += 1;
            }
            mem.next();
            self.run_end = 0;
            if let Some(bytes) = &entry.row {
                return Some(Ok(Entry::Mem(DurableRow::in_memory(mpk, bytes, snapshot))));
            }
        }
    }
}

impl DurableRows<'_> {
    /// After [`next_entry`](Self::next_entry) gave row `i` of the current block: the run of
    /// block rows from `i` that no memtable entry interrupts, taken (the walk goes on after
    /// it).
    fn block_run(&mut self, i: usize) -> std::ops::Range<usize> {
        let end = if self.mem.is_none() {
            self.blocks.row_end
        } else {
            self.run_end.clamp(i + 1, self.blocks.row_end.max(i + 1))
        };
        self.blocks.row = self.blocks.row.max(end);
        i..end
    }
}

/// What a filtered scan passes from run to run ([`DurableSnapshot::filter_block`]).
struct FilterPass<'p, P: ?Sized, F> {
    filter: &'p P,
    report_every: usize,
    scratch: Vec<u64>,
    visit: F,
}

/// One entity of a [`DurableSnapshot`], read in place from its block or from the
/// memtable. A damaged value reads as absent (a damaged key as empty) and is recorded in
/// the snapshot, which then fails the page ([`DurableSnapshot::take_error`]).
#[derive(Clone, Copy)]
pub struct DurableRow<'a> {
    pk: &'a str,
    bytes: &'a [u8],
    snapshot: &'a DurableSnapshot,
}

impl<'a> DurableRow<'a> {
    /// Row `start..end` of a block.
    #[inline]
    fn in_block(
        block: BlockView<'a>,
        start: u32,
        end: u32,
        snapshot: &'a DurableSnapshot,
    ) -> DurableRow<'a> {
        DurableRow {
            pk: block.partition_key(),
            bytes: block
                .bytes()
                .get(start as usize..end as usize)
                .unwrap_or_default(),
            snapshot,
        }
    }

    /// A row of the memtable.
    #[inline]
    fn in_memory(pk: &'a str, bytes: &'a [u8], snapshot: &'a DurableSnapshot) -> DurableRow<'a> {
        DurableRow {
            pk,
            bytes,
            snapshot,
        }
    }

    #[inline]
    fn row(&self) -> RowRef<'a> {
        RowRef(self.bytes)
    }

    /// `value`, or `fallback` after recording the damage.
    #[inline]
    fn or_fail<T>(&self, value: Result<T, Corrupt>, fallback: T) -> T {
        match value {
            Ok(v) => v,
            Err(e) => {
                self.snapshot.fail(StoreError::storage(e));
                fallback
            }
        }
    }
}

impl DurableRow<'_> {
    /// Records a damaged value (the page then fails) and reads it as absent: off the scan
    /// loop's hot path.
    #[cold]
    #[inline(never)]
    fn damaged<T>(&self, e: Corrupt) -> Option<T> {
        self.snapshot.fail(StoreError::storage(e));
        None
    }
}

impl std::fmt::Debug for DurableRow<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DurableRow")
            .field("partition_key", &self.partition_key())
            .field("row_key", &self.row().row_key())
            .finish_non_exhaustive()
    }
}

impl EntityView for DurableRow<'_> {
    #[inline]
    fn partition_key(&self) -> &str {
        self.pk
    }
    #[inline]
    fn row_key(&self) -> &str {
        self.or_fail(self.row().row_key(), "")
    }
    #[inline]
    fn timestamp(&self) -> Option<DateTime> {
        self.or_fail(self.row().timestamp(), None)
    }
    fn custom(&self, name: &str) -> Option<ValueRef<'_>> {
        let id = self.snapshot.names.id(name)?;
        self.or_fail(self.row().value(id), None)
    }
}

impl SourceRow for DurableRow<'_> {
    fn to_entity(&self) -> Entity {
        let entity = self.row().to_entity(self.pk, &self.snapshot.names);
        self.or_fail(entity, Entity::new(self.pk, ""))
    }

    #[inline]
    fn custom_by_slot(&self, slot: PropertySlot) -> Option<ValueRef<'_>> {
        match self.row().value(slot.0) {
            Ok(v) => v,
            Err(e) => self.damaged(e),
        }
    }

    /// Numbers are tested as read from their slot; other values are decoded (and checked)
    /// as [`custom_by_slot`](SourceRow::custom_by_slot) does (`test_value`).
    #[inline]
    fn test_slot(&self, slot: PropertySlot, test: &ValueTest) -> bool {
        match test_value(self.row(), slot.0, test) {
            Ok(matches) => matches,
            Err(e) => self.damaged::<()>(e).is_some(),
        }
    }
}

/// Whether the property with name number `id` of `row` satisfies `test`: a number as read
/// from its slot, any other value decoded and checked. Agrees with testing
/// [`RowRef::value`] — the same answer, the same [`Corrupt`] error for a damaged row
/// (property-tested below).
#[inline]
fn test_value(row: RowRef<'_>, id: u32, test: &ValueTest) -> Result<bool, Corrupt> {
    let Some(slot) = row.slot(id)? else {
        return Ok(false);
    };
    Ok(match slot.number() {
        Some(Number::Int32(v)) => test.matches_int32(v),
        Some(Number::Int64(v)) => test.matches_int64(v),
        Some(Number::Double(v)) => test.matches_double(v),
        None => return test_decoded(row, slot, test),
    })
}

/// [`test_value`] of a value that is not a number: out of line, so that the scan loop
/// inlines the numbers' path only.
#[inline(never)]
fn test_decoded(row: RowRef<'_>, slot: Slot, test: &ValueTest) -> Result<bool, Corrupt> {
    row.decode(slot).map(|v| test.matches(v))
}

impl ListProperties for DurableRow<'_> {
    fn for_each_custom(&self, f: &mut dyn FnMut(&str, ValueRef<'_>)) {
        let done = self.row().for_each_by_name(&self.snapshot.names, f);
        self.or_fail(done, ());
    }

    fn for_each_custom_sorted(&self, f: &mut dyn FnMut(&str, ValueRef<'_>)) -> bool {
        let done = self.row().for_each_in_reply_order(&self.snapshot.names, f);
        // A damaged row: the scan fails (recorded), whatever was written.
        self.or_fail(done, true)
    }
}

impl EntitySource for DurableSnapshot {
    type Error = StoreError;
    type Row<'a> = DurableRow<'a>;
    type Rows<'a> = DurableRows<'a>;

    fn scan<'a>(&'a self, scan: Scan<'a>) -> DurableRows<'a> {
        DurableRows::new(self, scan, None)
    }

    /// The rows of [`scan`](EntitySource::scan), handed over block by block: without
    /// memtable entries in the scan, a loop over each block's rows (no iterator state kept
    /// between rows); with them, the merging iterator.
    fn scan_each<'a, F>(&'a self, scan: Scan<'a>, mut visit: F) -> Result<(), StoreError>
    where
        F: FnMut(DurableRow<'a>) -> ControlFlow<()>,
    {
        let mut rows = DurableRows::new(self, scan, None);
        if rows.mem.is_some() {
            for row in rows {
                if visit(row?).is_break() {
                    break;
                }
            }
            return Ok(());
        }
        let blocks = &mut rows.blocks;
        while let Some(block) = blocks.current() {
            let (first, end) = (blocks.row, blocks.row_end);
            blocks.row = end;
            for i in first..end {
                let (start, end) = block.span(i);
                if visit(DurableRow::in_block(block, start, end, self)).is_break() {
                    return Ok(());
                }
            }
        }
        // The end of the blocks: the failure that ended them (or that a row recorded).
        self.take_error()
    }

    /// Filtered scans over the blocks' columns (format 4): each block is loaded with its
    /// directory and columns verified, not its rows (`Check::Lazy`), and its rows in
    /// the scan are handed to [`filter_run`] with its columns; a row is verified when it is
    /// read: a match, a row tested one by one (a comparison without a column), the row
    /// where the scan stops. Blocks whose rows the scan's bounds cut, and blocks of older
    /// formats, are verified whole as a plain scan's. With memtable entries in the scan,
    /// blocks are verified whole when loaded (the merge reads their RowKeys), the runs of
    /// block rows between the entries are filtered over the columns all the same, and the
    /// entries one by one (`filter_merged`). No block read from redb is kept: the rows
    /// handed over are copied out (`keep_row`).
    fn scan_filtered<'a, P, F>(
        &'a self,
        scan: Scan<'a>,
        filter: &P,
        report_every: usize,
        visit: F,
    ) -> Result<(), StoreError>
    where
        P: RowFilter + ?Sized,
        F: FnMut(Filtered<DurableRow<'a>>) -> ControlFlow<()>,
    {
        // The kept block map, if any: blocks with verified copies are read from them.
        let mut rows = DurableRows::new(self, scan, self.scan_map());
        if rows.mem.is_none() {
            // No merge, which would read the blocks' RowKeys: blocks are loaded with their
            // directory and columns verified, their rows as they are read.
            rows.blocks.check = Check::Lazy;
        }
        self.filter_merged(rows, filter, report_every, visit)
    }

    fn get<'a>(
        &'a self,
        partition_key: &str,
        row_key: &str,
    ) -> Result<Option<DurableRow<'a>>, StoreError> {
        if let Some((pk, entry)) = self.mem.get(partition_key, row_key) {
            return Ok(entry
                .row
                .as_deref()
                .map(|bytes| DurableRow::in_memory(pk, bytes, self)));
        }
        let (key, partition) = search_keys(self.table, partition_key, row_key);
        Ok(self
            .lookup(&key, &partition, row_key, None)?
            .map(|(block, i)| {
                let block = self.blocks.get_or_init(Arena::new).keep(block).view();
                let (start, end) = block.span(i);
                DurableRow::in_block(block, start, end, self)
            }))
    }

    fn split(
        &self,
        scan: Scan<'_>,
        chunk_rows: usize,
        max_chunks: usize,
    ) -> Result<Vec<Chunk>, StoreError> {
        let map = self.block_map(&scan);
        self.split_with(map.as_deref(), scan, chunk_rows, max_chunks)
    }

    fn property_slot(&self, name: &str) -> SlotLookup {
        match self.names.id(name) {
            Some(id) => SlotLookup::Slot(PropertySlot(id)),
            None => SlotLookup::Absent,
        }
    }
}

impl DurableSnapshot {
    /// `EntitySource::split` through the table's block map (`map`, of this snapshot's
    /// version), else walking the blocks in redb.
    fn split_with(
        &self,
        map: Option<&BlockMap>,
        scan: Scan<'_>,
        chunk_rows: usize,
        max_chunks: usize,
    ) -> Result<Vec<Chunk>, StoreError> {
        let (start, end) = self.bounds(&scan);
        let mut chunker = Chunker::new(&scan, chunk_rows, max_chunks);
        match map {
            Some(map) => {
                for block in map.from(&start) {
                    if *block.key >= *end || chunker.done() {
                        break;
                    }
                    self.split_mapped(block, &scan, &mut chunker)?;
                }
            }
            None => {
                let mut cursor = self.cursor(&start, &end);
                while !chunker.done()
                    && let Some(loaded) = self.next_block(&mut cursor, Check::KeysOnly)
                {
                    let view = loaded.view();
                    if scan.range.partition_key.contains(view.partition_key()) {
                        chunker.view(&view)?;
                    }
                }
            }
        }
        // The memtable's entries of the scan (counted as rows: an estimate) belong to the
        // chunks around them; a scan of memtable rows alone is one chunk.
        let in_memory = if self.mem.is_empty() || chunker.done() {
            0
        } else {
            self.mem.scan(scan).count()
        };
        // A block that failed to load ends the walk; report it rather than short chunks.
        self.take_error()?;
        Ok(chunker.finish(in_memory))
    }

    /// Hands `block` of the table's block map to `chunker`: its rows, or — when the scan
    /// starts or ends inside its partition or has RowKey bounds ([`bounds_probe`]) — those
    /// inside the scan, found in the block itself (read from redb).
    fn split_mapped(
        &self,
        block: &MapEntry,
        scan: &Scan<'_>,
        chunker: &mut Chunker<'_>,
    ) -> Result<(), StoreError> {
        let pk = &*block.partition_key;
        if !scan.range.partition_key.contains(pk) {
            return Ok(());
        }
        if !bounds_probe(pk, scan) {
            return chunker.block(pk, 0, block.rows as usize, || block.first_row_key());
        }
        let guard = match self.rows.get(&*block.key) {
            Ok(Some(guard)) => guard,
            // Not in this snapshot: the map is of its version, so never; skip the block.
            Ok(None) => return Ok(()),
            Err(e) => return Err(StoreError::storage(e)),
        };
        let loaded = Loaded::new(&block.key, guard, Check::KeysOnly)
            .map_err(|(e, guard)| self.damage(&block.key, guard.value(), e))?;
        chunker.view(&loaded.view())
    }
}

#[cfg(test)]
#[path = "read_tests.rs"]
mod tests;

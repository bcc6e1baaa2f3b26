//! The block map ([`BlockMap`]): every block of one table in one version of the data file —
//! its redb key, PartitionKey and row count — in a sorted vector, so that cutting a scan
//! into chunks (`DurableSnapshot::split`, once per wave of a query page) walks memory
//! instead of redb's B-tree. A walk through redb costs about half a microsecond a block
//! (the cursor, the page cache's lookup and reference count): at 100 000 entities a full
//! scan's splits walked 400 blocks on the calling thread before its helpers could start,
//! ≈ 10 % of the page's time.
//!
//! **Versions.** `Shared::blocks_version` counts the commits that may change blocks:
//! flushes and catalog changes, which the writer publishes under the catalog's write lock,
//! and the reopening of the data file after an I/O failure. A snapshot records the version
//! it began at (under the read lock, with its redb transaction) and uses a map of that
//! version only, which then lists exactly the blocks its transaction sees. A table's map is
//! built by a walk through the table's blocks — for the first split of a scan over more than
//! one partition (`DurableSnapshot::block_map`) or the first point get
//! (`DurableSnapshot::point_map`) — and kept in its `TableEntry`: at once when the data
//! file is small enough for copies of all its blocks to fit in the copy budget, otherwise
//! on a thread of its own ([`MapBuilds`]) while the scans and gets that want it walk redb
//! (the walk reads every block: 0.6–0.7 s at 10 M entities, several seconds from disk, which
//! the first filtered page after a start used to wait for). Scans of one partition never
//! build one (a walk of a large table to split one partition would cost more than it saves).
//!
//! **Search.** A get or a scan finds its first block by a binary search for its key; the
//! map keeps every 16th key in one buffer beside the entries ([`Samples`]), so that the
//! search's first probes stay in the CPU's caches and only the last few read entries.
//!
//! **Following the writer.** A commit that changes blocks does not end a kept map: the
//! writer records the blocks each flush writes and removes ([`BlockEdits`], `edit.rs`) and,
//! before it publishes the commit, derives the next version's map from the kept one
//! ([`BlockMap::followed`]: a merge of two sorted lists; a table the commit did not touch
//! shares the old lists). Without it, every flush — one a second under a steady trickle of
//! writes — cost the next filtered scan a walk of the whole table (≈ 0.6 s at 10 M entities,
//! where a page takes 5 ms) and every verified copy. The writer follows only when every
//! change to blocks since its last published commit was recorded: a replay's unpublished
//! flush or a reopen of the data file lets the maps go instead (`Writer::maps_follow`).
//!
//! **Builds that commits overtook.** A walk of a large table takes seconds (1.7 s at 10 M
//! entities), and a flush that lands meanwhile finds no kept map to follow: the finished
//! map would be of an old version, and every snapshot after it would walk again — under a
//! steady trickle of writes, every query page. The writer therefore also records the edits
//! of its last few commits ([`RecentEdits`]), and a finished build is brought up to the
//! latest recorded version with them before it is kept — the same merge the writer does.
//! A snapshot keeps the map it used (of its own version) for its whole life, so the waves
//! of a page that began before a flush do not walk again once the kept map moved on.
//!
//! ```text
//! map of version 7:   (p|a, 250) (p|k, 180) (q|a, 250)     flush: p|k rewritten, p|s added
//! map of version 8:   (p|a, 250) (p|k, 128) (p|s, 120) (q|a, 250)   copies of p|a, q|a kept
//! ```
//!
//! For splits, the map only says where chunks may be cut and how many rows they hold: each
//! chunk's scan reads its blocks through its own snapshot and verifies them, so no map —
//! even one of the wrong version — could change a query's rows, only how evenly its chunks
//! are cut. The map also keeps the verified copies of its blocks that filtered scans and point gets
//! made (`verified.rs`): those a scan or get does use in place of the stored block, which
//! is why a snapshot only ever uses a map of its own version. A filtered scan walks the kept map
//! instead of redb's cursor: a block with a copy is read without touching redb (its
//! cursor step and page-cache lookup were a tenth of a selective full scan's CPU once the
//! copies were there), a block without one is fetched by its key.
//!
//! ```text
//! blocks of table 1:  [p|a… 250 rows] [p|k… 180] [q|a… 250]
//! map:                 (key [p|a], "p", 250), (key [p|k], "p", 180), (key [q|a], "q", 250)
//! ```

use super::format::block::BlockView;
use super::format::keys::{decode_block_key, table_end, table_prefix};
use super::verified::{CopyBudget, VerifiedBlock};
use crate::codec::Corrupt;
use redb::ReadOnlyTable;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::thread::JoinHandle;

/// A block's verified copy: made by the second filtered scan that reads the block in this
/// version (a table scanned once between two flushes never pays for a copy), `None` when
/// it did not fit in the budget or the block failed a check.
#[derive(Debug, Default)]
struct CopySlot {
    /// A filtered scan read the block.
    seen: AtomicBool,
    copy: OnceLock<Option<Arc<VerifiedBlock>>>,
}

impl CopySlot {
    /// The slot of an unchanged block in the map of the next version: its copy, if one was
    /// made (a block that did not fit, or failed a check, may be tried again).
    fn carried(&self) -> CopySlot {
        let copy = OnceLock::new();
        if let Some(Some(made)) = self.copy.get() {
            let _ = copy.set(Some(made.clone()));
        }
        CopySlot {
            seen: AtomicBool::new(self.seen.load(Ordering::Acquire)),
            copy,
        }
    }
}

/// The blocks of one table in one version of the data file, in key order.
#[derive(Debug)]
pub(crate) struct BlockMap {
    /// The data file's blocks version this map lists (`Shared::blocks_version`).
    pub(crate) version: u64,
    entries: Arc<[MapEntry]>,
    /// Every [`SAMPLE_STRIDE`]th entry's key, side by side: where a search starts.
    samples: Arc<Samples>,
    /// Per entry, its verified copy (`verified.rs`).
    copies: Arc<[CopySlot]>,
    /// What the copies are charged to.
    budget: Arc<CopyBudget>,
}

/// The blocks one commit wrote and removed (`edit.rs` records them as it rewrites blocks):
/// block key → the block now stored under it, or `None` for a key removed; the last edit
/// of a key is what the commit left. With it the writer derives the next version's maps
/// from the kept ones ([`BlockMap::followed`]) instead of dropping them.
#[derive(Debug, Default)]
pub(crate) struct BlockEdits {
    edits: BTreeMap<Box<[u8]>, Option<Written>>,
}

/// A block a commit wrote: its PartitionKey and row count (its key is the edit's).
type Written = (Box<str>, u32);

impl BlockEdits {
    /// The block under `key` was removed.
    pub(crate) fn removed(&mut self, key: &[u8]) {
        self.edits.insert(key.into(), None);
    }

    /// A block of `rows` rows of partition `partition_key` was written under `key`.
    pub(crate) fn written(&mut self, key: &[u8], partition_key: &str, rows: u32) {
        self.edits
            .insert(key.into(), Some((partition_key.into(), rows)));
    }

    /// How many blocks the commit wrote or removed.
    fn len(&self) -> usize {
        self.edits.len()
    }
}

/// The block maps being built on threads of their own (`DurableSnapshot::point_map`: a
/// table too large to walk in a get's time), one engine's: at most one per table at a
/// time (the table's entry says), stopped and waited for when the engine closes — a build
/// holds a read transaction of the data file.
#[derive(Debug, Default)]
pub(crate) struct MapBuilds {
    closing: AtomicBool,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// The edits of the writer's last commits: what brings a finished build up to date.
    pub(crate) recent: RecentEdits,
}

/// How many commits' edits [`RecentEdits`] holds, at most: a build that more commits
/// overtook is dropped (the next snapshot walks again). A walk of 10 M entities takes
/// about 1.7 s; under a steady stream of writes a flush runs all the time, and each of
/// its slices (`writer/flush.rs`, one every 10–30 ms) is a commit — up to 170 of them
/// during such a walk.
pub(crate) const RECENT_COMMITS: usize = 256;
/// How many block edits [`RecentEdits`] holds, at most, over its commits (the oldest
/// commits go first): a flush of random writes into a large table rewrites a block for
/// about every row, ~100 bytes an edit here — 20 000 of them at 10 M entities.
pub(crate) const RECENT_EDITS: usize = 1 << 16;

/// The block edits of the writer's last recorded commits, each with the blocks version it
/// made — a contiguous history ending at the latest one, or empty after a change to
/// blocks that was not recorded (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct RecentEdits {
    commits: Mutex<std::collections::VecDeque<(u64, Arc<BlockEdits>)>>,
}

impl RecentEdits {
    /// The commit that made `version` edited blocks as `edits` say.
    pub(crate) fn record(&self, version: u64, edits: BlockEdits) {
        let mut commits = self.commits.lock().unwrap_or_else(PoisonError::into_inner);
        if commits.back().is_some_and(|(v, _)| v + 1 != version) {
            commits.clear();
        }
        commits.push_back((version, Arc::new(edits)));
        let mut held: usize = commits.iter().map(|(_, e)| e.len()).sum();
        while commits.len() > RECENT_COMMITS || (held > RECENT_EDITS && commits.len() > 1) {
            if let Some((_, e)) = commits.pop_front() {
                held -= e.len();
            }
        }
    }

    /// Blocks changed in a way that was not recorded: no map may be brought past it.
    pub(crate) fn forget(&self) {
        self.commits
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// `map` (of table `table`) brought up to the latest recorded version with the edits
    /// of the commits after its own; `None` when those are not all recorded any more.
    pub(crate) fn bring_forward(&self, map: Arc<BlockMap>, table: u64) -> Option<Arc<BlockMap>> {
        let newer: Vec<(u64, Arc<BlockEdits>)> = self
            .commits
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|(v, _)| *v > map.version)
            .cloned()
            .collect();
        match newer.first() {
            None => return Some(map),
            Some((v, _)) if *v != map.version + 1 => return None,
            Some(_) => {}
        }
        Some(newer.iter().fold(map, |map, (version, edits)| {
            Arc::new(map.followed(*version, table, edits))
        }))
    }
}

impl MapBuilds {
    /// Runs `build` on a thread of its own, handing it the flag that says the engine is
    /// closing (a walk stops early when it is set). False when the engine is closing or no
    /// thread could be started.
    pub(crate) fn spawn(
        self: &Arc<Self>,
        build: impl FnOnce(&AtomicBool) + Send + 'static,
    ) -> bool {
        let mut threads = self.threads.lock().unwrap_or_else(PoisonError::into_inner);
        if self.closing.load(Ordering::Acquire) {
            return false;
        }
        threads.retain(|t| !t.is_finished());
        let builds = self.clone();
        let spawned = std::thread::Builder::new()
            .name("tableq-block-map".into())
            .spawn(move || build(&builds.closing));
        match spawned {
            Ok(thread) => {
                threads.push(thread);
                true
            }
            Err(_) => false,
        }
    }

    /// Stops the builds and waits for them (the engine is closing); no build starts after.
    pub(crate) fn finish(&self) {
        let threads = {
            let mut threads = self.threads.lock().unwrap_or_else(PoisonError::into_inner);
            self.closing.store(true, Ordering::Release);
            std::mem::take(&mut *threads)
        };
        for thread in threads {
            let _ = thread.join();
        }
    }
}

/// One block of a [`BlockMap`]. Its key and PartitionKey are shared by reference: a map
/// that follows a commit copies every entry of its table (`BlockMap::followed`, once a
/// slice of a flush), 2.2 ms a slice at 10 M entities where copies of the bytes took 3.3
/// (median of ~550 slices, `benches/README.md`, "A flush in slices").
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MapEntry {
    /// The block's redb key: (table, PartitionKey, first RowKey), `format/keys.rs`.
    pub(crate) key: Arc<[u8]>,
    pub(crate) partition_key: Arc<str>,
    /// The block's rows.
    pub(crate) rows: u32,
}

impl MapEntry {
    /// The RowKey of the block's first row (from its key).
    pub(crate) fn first_row_key(&self) -> Result<String, Corrupt> {
        decode_block_key(&self.key)
            .map(|(_, _, rk)| rk)
            .ok_or(Corrupt("a block key does not decode"))
    }
}

/// The PartitionKey of an entry that follows `entries`: the last one's own when it is the
/// same partition (the blocks of a partition share one allocation), else a new one.
fn partition_key_after(entries: &[MapEntry], partition_key: &str) -> Arc<str> {
    match entries.last() {
        Some(last) if *last.partition_key == *partition_key => last.partition_key.clone(),
        _ => partition_key.into(),
    }
}

/// How many entries apart [`Samples`] takes its keys: a search reads the samples (small
/// and contiguous, so mostly in the CPU's caches) and then at most this many entries.
const SAMPLE_STRIDE: usize = 16;

/// The keys of every [`SAMPLE_STRIDE`]th entry of a map, in one buffer. A binary search
/// over the entries themselves loads an entry and then its key from another allocation at
/// every probe, both cold in a large map (70 000 blocks at 10 M entities: 17 probes, two
/// cache misses each, a tenth of a point get's CPU at 10 M — `benches/README.md`, "The
/// block map's search"); over the samples the first probes stay in the caches from one
/// search to the next, and only the last few (within a stride) read the entries.
#[derive(Debug, Default)]
struct Samples {
    /// The sampled keys, one after the other.
    keys: Vec<u8>,
    /// Where each sampled key ends in `keys`.
    ends: Vec<usize>,
}

impl Samples {
    fn of(entries: &[MapEntry]) -> Samples {
        let mut samples = Samples::default();
        for entry in entries.iter().step_by(SAMPLE_STRIDE) {
            samples.keys.extend_from_slice(&entry.key);
            samples.ends.push(samples.keys.len());
        }
        samples
    }

    /// Sampled key `i`.
    fn key(&self, i: usize) -> &[u8] {
        let start = i.checked_sub(1).map_or(0, |p| self.ends[p]);
        &self.keys[start..self.ends[i]]
    }

    /// `entries.partition_point(|e| below(&e.key))` for the entries these samples were
    /// taken of (`below` true for a prefix of them).
    fn partition_point(&self, entries: &[MapEntry], below: impl Fn(&[u8]) -> bool) -> usize {
        // The first sample for which `below` fails: the answer lies after the sample
        // before it and at or before it.
        let (mut lo, mut hi) = (0, self.ends.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if below(self.key(mid)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let start = (lo * SAMPLE_STRIDE).saturating_sub(SAMPLE_STRIDE - 1);
        let end = (lo * SAMPLE_STRIDE).min(entries.len());
        start
            + entries
                .get(start..end)
                .unwrap_or_default()
                .partition_point(|e| below(&e.key))
    }
}

impl BlockMap {
    /// The map of table `table` in `rows` (a read transaction of blocks version `version`):
    /// one walk through its blocks, reading each one's header (not verified: the map only
    /// guides splits; every block a scan reads is verified then). `None` when redb fails
    /// or a block's header is damaged: the caller walks redb instead, which meets the
    /// failure and reports it.
    pub(crate) fn build(
        rows: &ReadOnlyTable<&'static [u8], &'static [u8]>,
        table: u64,
        version: u64,
        budget: &Arc<CopyBudget>,
    ) -> Option<BlockMap> {
        Self::build_unless(rows, table, version, budget, &AtomicBool::new(false))
    }

    /// [`build`](Self::build), given up (`None`) once `stop` is set.
    pub(crate) fn build_unless(
        rows: &ReadOnlyTable<&'static [u8], &'static [u8]>,
        table: u64,
        version: u64,
        budget: &Arc<CopyBudget>,
        stop: &AtomicBool,
    ) -> Option<BlockMap> {
        let start = table_prefix(table);
        let end = table_end(table);
        let mut entries: Vec<MapEntry> = Vec::new();
        for item in rows.range::<&[u8]>(&start[..]..end.as_slice()).ok()? {
            if entries.len() % 256 == 255 && stop.load(Ordering::Acquire) {
                return None;
            }
            let (key, value) = item.ok()?;
            let view = BlockView::parse_header_unverified(value.value()).ok()?;
            let rows = u32::try_from(view.len()).ok()?;
            entries.push(MapEntry {
                key: key.value().into(),
                partition_key: partition_key_after(&entries, view.partition_key()),
                rows,
            });
        }
        Some(BlockMap::new(version, entries, budget))
    }

    /// A map of `entries` (in key order), without copies yet.
    fn new(version: u64, entries: Vec<MapEntry>, budget: &Arc<CopyBudget>) -> BlockMap {
        BlockMap {
            version,
            copies: entries.iter().map(|_| CopySlot::default()).collect(),
            samples: Arc::new(Samples::of(&entries)),
            entries: entries.into(),
            budget: budget.clone(),
        }
    }

    /// The map of blocks version `version` that a commit making `edits` leads to from
    /// this one, which lists table `table`'s blocks of the version just before it — what
    /// a walk through the new version's blocks would build, without the walk. Blocks the
    /// commit did not touch keep their verified copies (their bytes are the same in both
    /// versions); a block written or rewritten starts without one. A table the commit did
    /// not touch shares this map's lists.
    pub(crate) fn followed(&self, version: u64, table: u64, edits: &BlockEdits) -> BlockMap {
        let (start, end) = (table_prefix(table), table_end(table));
        let mut changes = edits
            .edits
            .range::<[u8], _>((Bound::Included(&start[..]), Bound::Excluded(&end[..])))
            .peekable();
        if changes.peek().is_none() {
            return BlockMap {
                version,
                entries: self.entries.clone(),
                samples: self.samples.clone(),
                copies: self.copies.clone(),
                budget: self.budget.clone(),
            };
        }
        let mut entries = Vec::with_capacity(self.entries.len() + edits.edits.len());
        let mut copies = Vec::with_capacity(entries.capacity());
        // A block the commit wrote: listed, without a copy.
        type Edit<'e> = (&'e Box<[u8]>, &'e Option<Written>);
        let write = |(key, edit): Edit<'_>, entries: &mut Vec<MapEntry>, copies: &mut Vec<_>| {
            if let Some((partition_key, rows)) = edit {
                entries.push(MapEntry {
                    key: Arc::from(&**key),
                    partition_key: partition_key_after(entries, partition_key),
                    rows: *rows,
                });
                copies.push(CopySlot::default());
            }
        };
        for (entry, slot) in self.entries.iter().zip(self.copies.iter()) {
            while let Some(edit) = changes.next_if(|(key, _)| ***key < *entry.key) {
                write(edit, &mut entries, &mut copies);
            }
            if let Some(edit) = changes.next_if(|(key, _)| ***key == *entry.key) {
                // Removed, or rewritten under the same key: not the block copied before.
                write(edit, &mut entries, &mut copies);
                continue;
            }
            entries.push(entry.clone());
            copies.push(slot.carried());
        }
        for edit in changes {
            write(edit, &mut entries, &mut copies);
        }
        BlockMap {
            version,
            samples: Arc::new(Samples::of(&entries)),
            entries: entries.into(),
            copies: copies.into(),
            budget: self.budget.clone(),
        }
    }

    /// Block `at` (in key order), if there is one.
    pub(crate) fn entry(&self, at: usize) -> Option<&MapEntry> {
        self.entries.get(at)
    }

    /// The position of the first block whose key is `>= start`.
    pub(crate) fn position(&self, start: &[u8]) -> usize {
        self.samples
            .partition_point(&self.entries, |key| key < start)
    }

    /// The position of the last block at or before `key` if its key starts with
    /// `partition` (a partition prefix: the block that may hold `key`), else of the first
    /// block after `key` — where redb's cursor would start after `DurableSnapshot::floor`.
    pub(crate) fn floor(&self, key: &[u8], partition: &[u8]) -> usize {
        let after = self.samples.partition_point(&self.entries, |k| k <= key);
        match after.checked_sub(1) {
            Some(at) if self.entries[at].key.starts_with(partition) => at,
            _ => after,
        }
    }

    /// The verified copy of block `at`, if one was made: a scan reading it needs nothing
    /// from redb.
    pub(crate) fn copy_made(&self, at: usize) -> Option<&Arc<VerifiedBlock>> {
        self.copies.get(at)?.copy.get()?.as_ref()
    }

    /// The verified copy of block `at` (its stored bytes: `bytes`), made now by the second
    /// filtered scan that reads the block (see [`CopySlot`]); `None` the first time, when
    /// the copy does not fit in the budget, or when the block fails a check (the caller
    /// then reads the block the usual way, which reports the damage).
    pub(crate) fn copy_of(&self, at: usize, bytes: &[u8]) -> Option<&Arc<VerifiedBlock>> {
        let slot = self.copies.get(at)?;
        if let Some(copy) = slot.copy.get() {
            return copy.as_ref();
        }
        if !slot.seen.swap(true, Ordering::AcqRel) {
            return None;
        }
        slot.copy
            .get_or_init(|| {
                VerifiedBlock::copy(bytes, &self.budget)
                    .ok()
                    .flatten()
                    .map(Arc::new)
            })
            .as_ref()
    }

    /// How many blocks have a verified copy.
    #[cfg(test)]
    pub(crate) fn copies(&self) -> usize {
        self.copies
            .iter()
            .filter(|c| c.copy.get().is_some_and(Option::is_some))
            .count()
    }

    /// The blocks whose keys are `>= start`, in key order.
    pub(crate) fn from(&self, start: &[u8]) -> &[MapEntry] {
        &self.entries[self.position(start)..]
    }

    /// The blocks, in key order.
    #[cfg(test)]
    pub(crate) fn entries(&self) -> &[MapEntry] {
        &self.entries
    }

    /// The number of blocks.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::durable::format::keys::{entity_key, partition_prefix};

    fn map(keys: &[(&str, &str, u32)]) -> BlockMap {
        let entries = keys
            .iter()
            .map(|(pk, rk, rows)| MapEntry {
                key: entity_key(7, pk, rk).into(),
                partition_key: (*pk).into(),
                rows: *rows,
            })
            .collect();
        BlockMap::new(1, entries, &Arc::new(CopyBudget::new(0)))
    }

    /// A build runs on its own thread until the engine closes: `finish` tells it to stop
    /// and waits for it, and no build starts after.
    #[test]
    fn builds_stop_and_are_waited_for_when_the_engine_closes() {
        let builds = Arc::new(MapBuilds::default());
        let (started, stopped) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let (s, t) = (started.clone(), stopped.clone());
        assert!(builds.spawn(move |closing| {
            s.store(true, Ordering::Release);
            while !closing.load(Ordering::Acquire) {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            t.store(true, Ordering::Release);
        }));
        while !started.load(Ordering::Acquire) {
            std::thread::yield_now();
        }
        builds.finish();
        assert!(
            stopped.load(Ordering::Acquire),
            "finish returned before the build ended"
        );
        assert!(!builds.spawn(|_| panic!("a build after the close")));
    }

    /// The history of recent commits is contiguous and bounded by commits and by edits.
    #[test]
    fn recent_edits_hold_a_bounded_contiguous_history() {
        let recent = RecentEdits::default();
        let versions = || -> Vec<u64> {
            recent
                .commits
                .lock()
                .unwrap()
                .iter()
                .map(|(v, _)| *v)
                .collect()
        };
        let edits = |n: usize| {
            let mut e = BlockEdits::default();
            for i in 0..n {
                e.written(&[1, (i >> 8) as u8, i as u8], "p", 1);
            }
            e
        };
        for v in 1..=3 {
            recent.record(v, edits(RECENT_EDITS / 2));
        }
        assert_eq!(versions(), [2, 3], "at most RECENT_EDITS edits");
        recent.record(5, edits(1));
        assert_eq!(versions(), [5], "a gap starts the history again");
        let last = 5 + RECENT_COMMITS as u64 + 20;
        for v in 6..=last {
            recent.record(v, edits(1));
        }
        let kept = versions();
        assert_eq!(kept.len(), RECENT_COMMITS);
        assert_eq!(kept.last(), Some(&last));
        recent.forget();
        assert!(versions().is_empty());
    }

    /// A flush's edits applied to a map: removed blocks go, written ones come in key order
    /// (one rewritten under its key replaces it), other tables' blocks are not touched.
    #[test]
    fn a_followed_map_lists_the_blocks_after_the_edits() {
        let m = map(&[("p", "a", 3), ("p", "k", 2), ("q", "a", 5)]);
        let mut edits = BlockEdits::default();
        edits.removed(&entity_key(7, "p", "k"));
        edits.written(&entity_key(7, "p", "k"), "p", 4);
        edits.written(&entity_key(7, "p", "s"), "p", 1);
        edits.removed(&entity_key(7, "q", "a"));
        edits.written(&entity_key(8, "x", "a"), "x", 9);
        let next = m.followed(2, 7, &edits);
        assert_eq!(next.version, 2);
        let listed: Vec<(String, u32)> = next
            .entries()
            .iter()
            .map(|e| (e.first_row_key().unwrap(), e.rows))
            .collect();
        assert_eq!(
            listed,
            [
                ("a".to_owned(), 3),
                ("k".to_owned(), 4),
                ("s".to_owned(), 1)
            ]
        );
        // A table without edits shares the lists.
        let other = m.followed(2, 9, &edits);
        assert!(Arc::ptr_eq(&other.entries, &m.entries));
        assert_eq!(other.version, 2);
    }

    #[test]
    fn from_starts_at_the_first_block_at_or_after_a_key() {
        let m = map(&[("p", "a", 3), ("p", "k", 2), ("q", "a", 5)]);
        assert_eq!(m.from(&table_prefix(7)).len(), 3);
        assert_eq!(m.from(&entity_key(7, "p", "k")).len(), 2);
        assert_eq!(m.from(&entity_key(7, "p", "l")).len(), 1);
        assert_eq!(m.from(&partition_prefix(7, "q")).len(), 1);
        assert!(m.from(&table_end(7)).is_empty());
    }

    #[test]
    fn floor_is_the_block_that_may_hold_a_key_within_its_partition() {
        let m = map(&[("p", "b", 3), ("p", "k", 2), ("q", "c", 5)]);
        let p = partition_prefix(7, "p");
        let q = partition_prefix(7, "q");
        // Inside a partition: the block at or before the key.
        assert_eq!(m.floor(&entity_key(7, "p", "k"), &p), 1);
        assert_eq!(m.floor(&entity_key(7, "p", "m"), &p), 1);
        assert_eq!(m.floor(&entity_key(7, "p", "c"), &p), 0);
        // Before a partition's first block: that block.
        assert_eq!(m.floor(&entity_key(7, "p", "a"), &p), 0);
        assert_eq!(m.floor(&entity_key(7, "q", "a"), &q), 2);
        // The block before belongs to another partition: the first block after the key.
        assert_eq!(m.floor(&entity_key(7, "q", "z"), &q), 2);
        assert_eq!(
            m.floor(&entity_key(7, "r", "a"), &partition_prefix(7, "r")),
            3
        );
        assert_eq!(m.position(&entity_key(7, "p", "c")), 1);
        assert!(m.entry(3).is_none());
    }

    #[test]
    fn the_sampled_search_finds_what_a_search_of_every_entry_finds() {
        // Sizes around the stride, keys in two partitions, probes before, at, between
        // and after every key.
        for n in [0, 1, 2, 15, 16, 17, 31, 32, 33, 100, 257] {
            let keys: Vec<(String, String)> = (0..n)
                .map(|i| (format!("p{}", i * 2 / n.max(1)), format!("r{:04}", i * 3)))
                .collect();
            let spec: Vec<(&str, &str, u32)> = keys
                .iter()
                .map(|(p, r)| (p.as_str(), r.as_str(), 1))
                .collect();
            let m = map(&spec);
            let mut probes = vec![Vec::new(), table_end(7).to_vec()];
            for (pk, rk) in &keys {
                for rk in [rk.clone(), format!("{rk}0"), rk[..rk.len() - 1].to_string()] {
                    probes.push(entity_key(7, pk, &rk));
                }
                probes.push(partition_prefix(7, pk));
            }
            for probe in &probes {
                let all = m.entries().partition_point(|e| *e.key < **probe);
                assert_eq!(m.position(probe), all, "n {n}");
                let all = m.entries().partition_point(|e| *e.key <= **probe);
                let p = partition_prefix(7, "p1");
                let expect = match all.checked_sub(1) {
                    Some(at) if m.entries()[at].key.starts_with(&p) => at,
                    _ => all,
                };
                assert_eq!(m.floor(probe, &p), expect, "n {n}");
            }
        }
    }

    #[test]
    fn the_blocks_of_a_partition_share_its_partition_key() {
        let m = map(&[("p", "a", 1), ("p", "b", 1), ("q", "a", 1)]);
        let mut edits = BlockEdits::default();
        edits.written(&entity_key(7, "p", "c"), "p", 2);
        edits.written(&entity_key(7, "p", "d"), "p", 2);
        let next = m.followed(2, 7, &edits);
        let e = next.entries();
        assert!(Arc::ptr_eq(&e[2].partition_key, &e[3].partition_key));
        assert_eq!(&*e[4].partition_key, "q");
    }

    #[test]
    fn a_block_key_gives_the_first_row_key() {
        let m = map(&[("p", "r\u{E000}x", 3)]);
        assert_eq!(
            m.from(&[]).first().unwrap().first_row_key().unwrap(),
            "r\u{E000}x"
        );
        let bad = MapEntry {
            key: Arc::from([0u8, 0, 0].as_slice()),
            partition_key: "p".into(),
            rows: 1,
        };
        assert!(bad.first_row_key().is_err());
    }
}

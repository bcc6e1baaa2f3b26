//! Reading a [`MemorySnapshot`]: key-ordered scans ([`MemoryRows`]), rows borrowed from
//! the compact layout ([`MemoryRow`]), point gets, splits into chunks, and property slots —
//! the [`EntitySource`] implementation.
//!
//! A scan reads *runs*: a slice of row headers of one block — base rows between two
//! overlay keys, or one overlay row. The per-row step only walks the current slice (the
//! same loop as for a table without overlay); the next run is worked out when a slice
//! ends. Without overlay a run is the scan's part of one base partition, as before
//! overlays existed.

use super::overlay::{PartitionOverlay, RowEntry};
use super::partition::{Partition, RowHead};
use super::version::{MemorySnapshot, TableState};
use crate::codec::{ColumnRun, Names};
use crate::tree::{Cursor, TreeEntry};
use std::cmp::Ordering;
use std::convert::Infallible;
use std::hash::RandomState;
use std::ops::{Bound, ControlFlow};
use tableq_exec::{
    Chunk, EntitySource, Filtered, Key, OkRows, PropertySlot, RowFilter, RunEnd, Scan, SlotLookup,
    SourceRow, filter_run,
};
use tableq_model::json::ListProperties;
use tableq_model::order::compare_str;
use tableq_model::{DateTime, Entity, EntityView, ValueRef};
use tableq_planner::plan::KeyInterval;

impl MemorySnapshot {
    /// The number of entities.
    pub fn len(&self) -> usize {
        self.state.len
    }

    /// Whether the snapshot holds no entity.
    pub fn is_empty(&self) -> bool {
        self.state.len == 0
    }

    /// The number of non-empty partitions.
    pub fn partition_count(&self) -> usize {
        self.state.partitions
    }

    /// Approximate heap bytes held by this version of the table (arenas, indexes, names,
    /// overlay): what the bytes-per-entity figure in `benches/README.md` is computed from.
    pub fn heap_bytes(&self) -> usize {
        let s = &self.state;
        let parts: usize = s
            .base
            .partitions
            .iter()
            .map(|p| p.heap_bytes() + size_of::<Partition>() + 16)
            .sum();
        let dir = s.base.partitions.capacity() * 8
            + s.base.by_key.capacity() * (size_of::<(std::sync::Arc<str>, u32)>() + 1);
        let names: usize = s.names.iter().map(|n| 2 * n.len() + 48).sum();
        // Overlay: each block once, tree nodes at about 2/3 occupancy.
        let mut blocks = std::collections::HashSet::new();
        let mut overlay = 0;
        for po in s.overlay.iter() {
            overlay += 2 * size_of::<PartitionOverlay>() + po.key.len();
            for e in po.rows.iter() {
                overlay += 2 * size_of::<RowEntry>();
                if blocks.insert(std::sync::Arc::as_ptr(&e.block)) {
                    overlay += e.block.heap_bytes() + size_of::<Partition>() + 16;
                }
            }
        }
        parts + dir + names + overlay
    }

    /// Every entity in key order (a convenience over [`EntitySource::scan`]).
    pub fn iter(&self) -> MemoryRows<'_> {
        self.rows_from(0, None, None, None, &FULL, &FULL)
    }

    /// The slot of a custom property name, if any entity of this snapshot has it. Useful
    /// for hand-written scans ([`MemoryRow::slot_value`]).
    pub fn slot(&self, name: &str) -> Option<PropertySlot> {
        self.state.names.id(name).map(PropertySlot)
    }

    /// The partition range a scan touches.
    fn partition_span(&self, scan: &Scan<'_>) -> (usize, usize) {
        let pk = &scan.range.partition_key;
        if let Some(p) = pk.as_point() {
            return match self.state.base.by_key.get(p) {
                Some(&i) => (i as usize, i as usize + 1),
                None => (0, 0),
            };
        }
        let parts = &self.state.base.partitions;
        // Partitions are sorted: those below the interval, then inside, then above.
        let mut start = parts.partition_point(|p| pk.position(p.key()).is_lt());
        let mut end = parts.partition_point(|p| pk.position(p.key()).is_le());
        if let Some(from) = scan.from {
            let first = parts
                .partition_point(|p| compare_str(p.key(), &from.partition_key) == Ordering::Less);
            start = start.max(first);
        }
        if let Some(until) = scan.until {
            let past = parts.partition_point(|p| {
                compare_str(p.key(), &until.partition_key) != Ordering::Greater
            });
            end = end.min(past);
        }
        (start, end.max(start))
    }

    fn rows_from<'a>(
        &'a self,
        part: usize,
        end_part: Option<usize>,
        from: Option<&'a Key>,
        until: Option<&'a Key>,
        partition_key: &'a KeyInterval,
        row_key: &'a KeyInterval,
    ) -> MemoryRows<'a> {
        let state: &'a TableState = &self.state;
        let merge = (state.overlay_rows > 0).then(|| Merge {
            partitions: state.overlay.cursor(|pk| {
                partition_key.position(pk).is_lt()
                    || from.is_some_and(|f| compare_str(pk, &f.partition_key).is_lt())
            }),
            key: None,
            base: None,
            pos: 0,
            end: 0,
            rows: None,
        });
        let mut rows = MemoryRows {
            state,
            partition_key,
            row_key,
            from,
            until,
            part,
            end_part: end_part.unwrap_or(state.base.partitions.len()),
            names: &state.names,
            current: None,
            heads: [].iter(),
            merge,
        };
        if rows.merge.is_none() {
            rows.enter_partition();
        }
        rows
    }
}

static FULL: KeyInterval = KeyInterval::full();

/// Row bounds `[lo, hi)` of partition `p` within a RowKey interval and optional key bounds.
fn row_bounds(
    p: &Partition,
    hasher: &RandomState,
    rk: &KeyInterval,
    from: Option<&Key>,
    until: Option<&Key>,
) -> (usize, usize) {
    if let Some(point) = rk.as_point() {
        let inside = from.is_none_or(|f| f.cmp_pair(p.key(), point) != Ordering::Greater)
            && until.is_none_or(|u| u.cmp_pair(p.key(), point) == Ordering::Greater);
        return match p.find(hasher, point) {
            Some(i) if inside => (i, i + 1),
            _ => (0, 0),
        };
    }
    // Rows are sorted: those below the interval, then inside, then above.
    let mut lo = match rk.lower {
        Bound::Unbounded => 0,
        _ => p.partition_point(|row_key| rk.position(row_key).is_lt()),
    };
    let mut hi = match rk.upper {
        Bound::Unbounded => p.len(),
        _ => p.partition_point(|row_key| rk.position(row_key).is_le()),
    };
    if let Some(f) = from {
        match compare_str(p.key(), &f.partition_key) {
            Ordering::Less => return (0, 0),
            Ordering::Equal => lo = lo.max(p.lower_bound(&f.row_key, false)),
            Ordering::Greater => {}
        }
    }
    if let Some(u) = until {
        match compare_str(p.key(), &u.partition_key) {
            Ordering::Greater => return (0, 0),
            Ordering::Equal => hi = hi.min(p.lower_bound(&u.row_key, false)),
            Ordering::Less => {}
        }
    }
    (lo, hi.max(lo))
}

/// Whether `(partition_key, row_key)` lies before the start of a scan's rows in its
/// partition.
#[inline]
fn before_start(rk: &KeyInterval, from: Option<&Key>, partition_key: &str, row_key: &str) -> bool {
    rk.position(row_key).is_lt()
        || from.is_some_and(|f| f.cmp_pair(partition_key, row_key) == Ordering::Greater)
}

/// Whether `(partition_key, row_key)` lies past the end of a scan's rows in its partition.
#[inline]
fn past_end(rk: &KeyInterval, until: Option<&Key>, partition_key: &str, row_key: &str) -> bool {
    rk.position(row_key).is_gt()
        || until.is_some_and(|u| u.cmp_pair(partition_key, row_key) != Ordering::Greater)
}

/// The iterator of [`MemorySnapshot`] scans.
#[derive(Clone)]
pub struct MemoryRows<'a> {
    state: &'a TableState,
    partition_key: &'a KeyInterval,
    row_key: &'a KeyInterval,
    from: Option<&'a Key>,
    until: Option<&'a Key>,
    /// Without overlay: the base partition being read. With overlay: the next base
    /// partition to enter.
    part: usize,
    end_part: usize,
    names: &'a Names,
    /// The block `heads` belongs to.
    pub(super) current: Option<&'a Partition>,
    /// The rest of the current run.
    pub(super) heads: std::slice::Iter<'a, RowHead>,
    /// Merging with the overlay (`None`: the version has no overlay rows).
    merge: Option<Merge<'a>>,
}

/// Where a scan is in the merge of base and overlay.
#[derive(Clone)]
struct Merge<'a> {
    /// The next overlay partition.
    partitions: Cursor<'a, PartitionOverlay>,
    /// The partition being read (`None`: between partitions).
    key: Option<&'a str>,
    /// Its base rows still to read: `pos..end` of `base`.
    base: Option<&'a Partition>,
    pos: usize,
    end: usize,
    /// Its overlay rows still to read (from the first at or after the scan's start).
    rows: Option<Cursor<'a, RowEntry>>,
}

impl std::fmt::Debug for MemoryRows<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryRows")
            .field("part", &self.part)
            .field("end_part", &self.end_part)
            .field("run", &self.heads.len())
            .field("merging", &self.merge.is_some())
            .finish_non_exhaustive()
    }
}

impl<'a> MemoryRows<'a> {
    /// Without overlay: moves to the first partition at or after `self.part` with rows in
    /// bounds.
    fn enter_partition(&mut self) {
        let state: &'a TableState = self.state;
        while self.part < self.end_part {
            let p: &'a Partition = &state.base.partitions[self.part];
            let (lo, hi) = row_bounds(p, &state.hasher, self.row_key, self.from, self.until);
            if lo < hi {
                self.current = Some(p);
                self.heads = p.heads(lo, hi).iter();
                return;
            }
            self.part += 1;
        }
        self.heads = [].iter();
    }

    /// Sets up the next run; `false` at the end of the scan.
    #[inline]
    pub(super) fn advance(&mut self) -> bool {
        if self.merge.is_some() {
            return self.advance_merged();
        }
        if self.part >= self.end_part {
            return false;
        }
        self.part += 1;
        self.enter_partition();
        true
    }

    /// [`advance`](Self::advance) with an overlay: the next run in key order of base rows
    /// (up to the next overlay key) or of one overlay row.
    fn advance_merged(&mut self) -> bool {
        let state: &'a TableState = self.state;
        let (pk_range, rk_range, from, until) =
            (self.partition_key, self.row_key, self.from, self.until);
        let Some(m) = self.merge.as_mut() else {
            return false;
        };
        loop {
            if let Some(key) = m.key {
                let next: Option<&'a RowEntry> = m
                    .rows
                    .as_ref()
                    .and_then(Cursor::peek)
                    .filter(|e| !past_end(rk_range, until, key, e.key()));
                let stop = match (next, m.base) {
                    // Once the base rows in range are used up (overlay rows appended after
                    // them: the usual shape of a load in key order), no search is needed.
                    (Some(e), Some(b)) if m.pos < m.end => {
                        b.lower_bound(e.key(), false).clamp(m.pos, m.end)
                    }
                    _ => m.end,
                };
                if stop > m.pos
                    && let Some(b) = m.base
                {
                    self.current = Some(b);
                    self.heads = b.heads(m.pos, stop).iter();
                    m.pos = stop;
                    return true;
                }
                if let Some(e) = next {
                    if let Some(c) = m.rows.as_mut() {
                        c.next();
                    }
                    if let Some(b) = m.base
                        && m.pos < m.end
                        && b.row_key(m.pos) == e.key()
                    {
                        m.pos += 1; // replaced or removed
                    }
                    if !e.removed {
                        let row = e.row as usize;
                        self.current = Some(&e.block);
                        self.heads = e.block.heads(row, row + 1).iter();
                        return true;
                    }
                    continue;
                }
                m.key = None;
            }
            // The next partition in key order: base, overlay, or both.
            let base_next: Option<&'a Partition> =
                (self.part < self.end_part).then(|| &*state.base.partitions[self.part]);
            let over_next: Option<&'a PartitionOverlay> = loop {
                match m.partitions.peek() {
                    Some(po)
                        if pk_range.position(&po.key).is_gt()
                            || until.is_some_and(|u| {
                                compare_str(&po.key, &u.partition_key).is_gt()
                            }) =>
                    {
                        break None;
                    }
                    Some(po) if po.rows.is_empty() => {
                        m.partitions.next();
                    }
                    other => break other,
                }
            };
            let (key, base, po) = match (base_next, over_next) {
                (None, None) => return false,
                (Some(b), None) => {
                    self.part += 1;
                    (b.key(), Some(b), None)
                }
                (None, Some(po)) => {
                    m.partitions.next();
                    (&*po.key, None, Some(po))
                }
                (Some(b), Some(po)) => match compare_str(b.key(), &po.key) {
                    Ordering::Less => {
                        self.part += 1;
                        (b.key(), Some(b), None)
                    }
                    Ordering::Greater => {
                        m.partitions.next();
                        (&*po.key, None, Some(po))
                    }
                    Ordering::Equal => {
                        self.part += 1;
                        m.partitions.next();
                        (b.key(), Some(b), Some(po))
                    }
                },
            };
            let (lo, hi) = base.map_or((0, 0), |b| {
                row_bounds(b, &state.hasher, rk_range, from, until)
            });
            m.key = Some(key);
            m.base = base;
            m.pos = lo;
            m.end = hi;
            m.rows = po.map(|po| {
                po.rows
                    .cursor(|row_key| before_start(rk_range, from, key, row_key))
            });
        }
    }
}

impl<'a> Iterator for MemoryRows<'a> {
    type Item = MemoryRow<'a>;

    #[inline]
    fn next(&mut self) -> Option<MemoryRow<'a>> {
        loop {
            if let Some(head) = self.heads.next() {
                let partition = self.current?;
                return Some(MemoryRow {
                    names: self.names,
                    partition,
                    head,
                });
            }
            if !self.advance() {
                return None;
            }
        }
    }
}

/// One entity of a [`MemorySnapshot`], borrowed from its compact layout.
#[derive(Clone, Copy)]
pub struct MemoryRow<'a> {
    names: &'a Names,
    partition: &'a Partition,
    head: &'a RowHead,
}

impl std::fmt::Debug for MemoryRow<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryRow")
            .field("partition_key", &self.partition_key())
            .field("row_key", &self.row_key())
            .finish_non_exhaustive()
    }
}

impl<'a> MemoryRow<'a> {
    /// A custom property by slot ([`MemorySnapshot::slot`]): the fast path of hand-written
    /// and compiled scans.
    #[inline(always)]
    pub fn slot_value(&self, slot: PropertySlot) -> Option<ValueRef<'a>> {
        self.partition.value_of(self.head, slot.0)
    }
}

impl EntityView for MemoryRow<'_> {
    fn partition_key(&self) -> &str {
        self.partition.key()
    }
    fn row_key(&self) -> &str {
        self.partition.row_key_of(self.head)
    }
    fn timestamp(&self) -> Option<DateTime> {
        Partition::timestamp_of(self.head)
    }
    fn custom(&self, name: &str) -> Option<ValueRef<'_>> {
        self.partition.value_of(self.head, self.names.id(name)?)
    }
}

impl SourceRow for MemoryRow<'_> {
    fn to_entity(&self) -> Entity {
        self.partition.entity(self.head, self.names)
    }

    // Always inlined: this is the per-row read of every compiled comparison, and LLVM's
    // heuristics otherwise outline it in some builds (≈ 9 % more instructions per full-scan
    // row, measured with callgrind).
    #[inline(always)]
    fn custom_by_slot(&self, slot: PropertySlot) -> Option<ValueRef<'_>> {
        self.slot_value(slot)
    }
}

impl ListProperties for MemoryRow<'_> {
    fn for_each_custom(&self, f: &mut dyn FnMut(&str, ValueRef<'_>)) {
        self.partition.for_each_property(self.head, self.names, f);
    }
}

/// The reads of [`EntitySource`], without the `Result` wrapper a snapshot never needs (the
/// trait implementation calls these).
impl MemorySnapshot {
    /// Every entity of `scan`, in key order ([`EntitySource::scan`]).
    pub fn scan<'a>(&'a self, scan: Scan<'a>) -> MemoryRows<'a> {
        let (start, end) = self.partition_span(&scan);
        self.rows_from(
            start,
            Some(end),
            scan.from,
            scan.until,
            &scan.range.partition_key,
            &scan.range.row_key,
        )
    }

    /// The entity with exactly these keys ([`EntitySource::get`]).
    #[inline]
    pub fn get<'a>(&'a self, partition_key: &str, row_key: &str) -> Option<MemoryRow<'a>> {
        let state = &*self.state;
        if state.overlay_rows > 0
            && let Some(e) = state
                .overlay
                .get(partition_key)
                .and_then(|po| po.rows.get(row_key))
        {
            return (!e.removed).then(|| MemoryRow {
                names: &state.names,
                partition: &e.block,
                head: e.block.head(e.row as usize),
            });
        }
        let partition = state.base.partition(partition_key)?;
        let row = partition.find(&state.hasher, row_key)?;
        Some(MemoryRow {
            names: &state.names,
            partition,
            head: partition.head(row),
        })
    }

    /// Cuts the front of `scan` into chunks ([`EntitySource::split`]): walks the scan's
    /// runs (not its rows), so the cost is one step per base partition and per overlay
    /// row covered. Row counts are exact.
    pub fn split(&self, scan: Scan<'_>, chunk_rows: usize, max_chunks: usize) -> Vec<Chunk> {
        let chunk_rows = chunk_rows.max(1);
        let mut rows = self.scan(scan);
        let mut chunks: Vec<Chunk> = Vec::new();
        let mut from = scan.from.cloned();
        let mut in_current = 0usize;
        // The current chunk is full; its last row is in this partition, and its end is
        // the key of the next row (or the end of the scan).
        let mut full_after: Option<&str> = None;
        loop {
            let run = rows.heads.as_slice();
            let Some(p) = rows.current.filter(|_| !run.is_empty()) else {
                if rows.advance() {
                    continue;
                }
                break;
            };
            if let Some(last) = full_after.take() {
                let boundary = if last == p.key() {
                    Key::new(p.key(), p.row_key_of(&run[0]))
                } else {
                    // The least key after every key of partition `last`.
                    Key::new(format!("{last}\u{0}"), "")
                };
                chunks.push(Chunk {
                    from: from.replace(boundary.clone()),
                    until: Some(boundary),
                    rows: Some(in_current),
                });
                in_current = 0;
                if chunks.len() == max_chunks {
                    return chunks;
                }
            }
            let mut at = 0;
            while at < run.len() {
                let take = (chunk_rows - in_current).min(run.len() - at);
                in_current += take;
                at += take;
                if in_current < chunk_rows {
                    continue;
                }
                if at == run.len() {
                    full_after = Some(p.key());
                    continue;
                }
                let boundary = Key::new(p.key(), p.row_key_of(&run[at]));
                chunks.push(Chunk {
                    from: from.replace(boundary.clone()),
                    until: Some(boundary),
                    rows: Some(in_current),
                });
                in_current = 0;
                if chunks.len() == max_chunks {
                    return chunks;
                }
            }
            rows.heads = [].iter();
        }
        if in_current > 0 {
            chunks.push(Chunk {
                from,
                until: scan.until.cloned(),
                rows: Some(in_current),
            });
        }
        chunks
    }
}

impl EntitySource for MemorySnapshot {
    /// A snapshot in memory cannot fail.
    type Error = Infallible;
    type Row<'a> = MemoryRow<'a>;
    type Rows<'a> = OkRows<MemoryRows<'a>>;

    #[inline]
    fn scan<'a>(&'a self, scan: Scan<'a>) -> OkRows<MemoryRows<'a>> {
        OkRows::new(MemorySnapshot::scan(self, scan))
    }

    #[inline]
    fn get<'a>(
        &'a self,
        partition_key: &str,
        row_key: &str,
    ) -> Result<Option<MemoryRow<'a>>, Infallible> {
        Ok(MemorySnapshot::get(self, partition_key, row_key))
    }

    /// Filters run by run ([`filter_run`]): a run of base rows is tested over its
    /// partition's columns (`crate::codec::ColumnSet`); the overlay's small blocks have none, so their
    /// rows are tested one by one.
    fn scan_filtered<'a, P, F>(
        &'a self,
        scan: Scan<'a>,
        filter: &P,
        report_every: usize,
        mut visit: F,
    ) -> Result<(), Infallible>
    where
        P: RowFilter + ?Sized,
        F: FnMut(Filtered<MemoryRow<'a>>) -> ControlFlow<()>,
    {
        let names = &self.state.names;
        let mut rows = MemorySnapshot::scan(self, scan);
        let mut scratch = Vec::new();
        loop {
            let run = rows.heads.as_slice();
            let Some(partition) = rows.current.filter(|_| !run.is_empty()) else {
                if rows.advance() {
                    continue;
                }
                return Ok(());
            };
            let lo = partition.index_of(run);
            let columns = ColumnRun {
                set: partition.columns(),
                rows: lo..lo + run.len(),
            };
            let row = |i: usize| MemoryRow {
                names,
                partition,
                head: partition.head(i),
            };
            match filter_run(
                filter,
                &columns,
                &row,
                &row,
                report_every,
                &mut scratch,
                &mut visit,
            ) {
                RunEnd::Done => rows.heads = [].iter(),
                RunEnd::StoppedAfter(i) => {
                    rows.heads = partition.heads(i + 1, columns.rows.end).iter();
                    if let Some(next) = rows.next() {
                        let _ = visit(Filtered::Next(next));
                    }
                    return Ok(());
                }
            }
        }
    }

    fn split(
        &self,
        scan: Scan<'_>,
        chunk_rows: usize,
        max_chunks: usize,
    ) -> Result<Vec<Chunk>, Infallible> {
        Ok(MemorySnapshot::split(self, scan, chunk_rows, max_chunks))
    }

    fn property_slot(&self, name: &str) -> SlotLookup {
        match self.state.names.id(name) {
            Some(id) => SlotLookup::Slot(PropertySlot(id)),
            None => SlotLookup::Absent,
        }
    }
}

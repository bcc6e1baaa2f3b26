//! Reading a [`MemorySnapshot`]: key-ordered scans ([`MemoryRows`]), rows borrowed from
//! the compact layout ([`MemoryRow`]), point gets, splits into chunks, and property slots —
//! the [`EntitySource`] implementation.

use super::partition::{Partition, RowHead};
use super::{MemorySnapshot, Names, TableState};
use crate::key::{Chunk, Key, Scan};
use crate::source::{EntitySource, OkRows, PropertySlot, SlotLookup, SourceRow};
use std::cmp::Ordering;
use std::convert::Infallible;
use std::hash::RandomState;
use std::ops::Bound;
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

    /// The number of partitions.
    pub fn partition_count(&self) -> usize {
        self.state.partitions.len()
    }

    /// Approximate heap bytes held by this version of the table (arenas, indexes, names):
    /// what the bytes-per-entity figure in `benches/README.md` is computed from.
    pub fn heap_bytes(&self) -> usize {
        let s = &self.state;
        let parts: usize = s
            .partitions
            .iter()
            .map(|p| p.heap_bytes() + size_of::<Partition>() + 16)
            .sum();
        let dir =
            s.partitions.capacity() * 8 + s.by_key.capacity() * (size_of::<(Box<str>, u32)>() + 1);
        let names: usize = s.names.names.iter().map(|n| 2 * n.len() + 48).sum();
        parts + dir + names
    }

    /// Every entity in key order (a convenience over [`EntitySource::scan`]).
    pub fn iter(&self) -> MemoryRows<'_> {
        self.rows_from(0, None, None, None, &FULL)
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
            return match self.state.by_key.get(p) {
                Some(&i) => (i as usize, i as usize + 1),
                None => (0, 0),
            };
        }
        let parts = &self.state.partitions;
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
        row_key: &'a KeyInterval,
    ) -> MemoryRows<'a> {
        let mut rows = MemoryRows {
            snapshot: self,
            row_key,
            from,
            until,
            part,
            end_part: end_part.unwrap_or(self.state.partitions.len()),
            names: &self.state.names,
            current: None,
            heads: [].iter(),
        };
        rows.enter_partition();
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

/// The iterator of [`MemorySnapshot`] scans.
#[derive(Debug, Clone)]
pub struct MemoryRows<'a> {
    snapshot: &'a MemorySnapshot,
    row_key: &'a KeyInterval,
    from: Option<&'a Key>,
    until: Option<&'a Key>,
    part: usize,
    end_part: usize,
    names: &'a Names,
    current: Option<&'a Partition>,
    heads: std::slice::Iter<'a, RowHead>,
}

impl<'a> MemoryRows<'a> {
    /// Moves to the first partition at or after `self.part` with rows in bounds.
    fn enter_partition(&mut self) {
        let state: &'a TableState = &self.snapshot.state;
        while self.part < self.end_part {
            let p: &'a Partition = &state.partitions[self.part];
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
            if self.part >= self.end_part {
                return None;
            }
            self.part += 1;
            self.enter_partition();
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

    fn for_each_property(&self, f: &mut dyn FnMut(&str, ValueRef<'_>)) {
        self.partition.for_each_property(self.head, self.names, f);
    }
}

/// The reads of [`EntitySource`], without the `Result` wrapper a snapshot never needs (the
/// trait implementation calls these).
impl MemorySnapshot {
    /// Every entity of `scan`, in key order ([`EntitySource::scan`]).
    pub fn scan<'a>(&'a self, scan: Scan<'a>) -> MemoryRows<'a> {
        let (start, end) = self.partition_span(&scan);
        self.rows_from(start, Some(end), scan.from, scan.until, &scan.range.row_key)
    }

    /// The entity with exactly these keys ([`EntitySource::get`]).
    pub fn get<'a>(&'a self, partition_key: &str, row_key: &str) -> Option<MemoryRow<'a>> {
        let state = &self.state;
        let partition = state.partition(partition_key)?;
        let row = partition.find(&state.hasher, row_key)?;
        Some(MemoryRow {
            names: &state.names,
            partition,
            head: partition.head(row),
        })
    }

    /// Cuts the front of `scan` into chunks ([`EntitySource::split`]).
    pub fn split(&self, scan: Scan<'_>, chunk_rows: usize, max_chunks: usize) -> Vec<Chunk> {
        let state = &self.state;
        let chunk_rows = chunk_rows.max(1);
        let (start, end) = self.partition_span(&scan);
        let mut chunks: Vec<Chunk> = Vec::new();
        let mut current = Chunk {
            from: scan.from.cloned(),
            until: None,
            rows: Some(0),
        };
        let mut in_current = 0usize;
        for p in &state.partitions[start..end] {
            let (mut lo, hi) =
                row_bounds(p, &state.hasher, &scan.range.row_key, scan.from, scan.until);
            while lo < hi {
                let take = (chunk_rows - in_current).min(hi - lo);
                in_current += take;
                lo += take;
                if in_current == chunk_rows {
                    let boundary = if lo < hi {
                        Some(Key::new(p.key(), p.row_key(lo)))
                    } else {
                        None // decided below: the next row with data, if any
                    };
                    current.rows = Some(in_current);
                    in_current = 0;
                    match boundary {
                        Some(b) => {
                            current.until = Some(b.clone());
                            chunks.push(std::mem::replace(
                                &mut current,
                                Chunk {
                                    from: Some(b),
                                    until: None,
                                    rows: Some(0),
                                },
                            ));
                        }
                        None => {
                            // The chunk ends with this partition: close it at the next row.
                            current.until = Some(Key::new(format!("{}\u{0}", p.key()), ""));
                            let next_from = current.until.clone();
                            chunks.push(std::mem::replace(
                                &mut current,
                                Chunk {
                                    from: next_from,
                                    until: None,
                                    rows: Some(0),
                                },
                            ));
                        }
                    }
                    if chunks.len() == max_chunks {
                        return chunks;
                    }
                }
            }
        }
        if in_current > 0 {
            current.rows = Some(in_current);
            current.until = scan.until.cloned();
            chunks.push(current);
        } else if let Some(last) = chunks.last_mut() {
            // The last full chunk reached the end of the scan.
            last.until = scan.until.cloned();
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

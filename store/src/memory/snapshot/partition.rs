//! One partition of a [`MemorySnapshot`](super::MemorySnapshot): an immutable, compact
//! block of rows sorted by RowKey, with a hash index for point lookups. The write overlay
//! (`overlay.rs`) uses the same layout, unindexed, for the rows of one write.
//!
//! Layout (all offsets are `u32` into per-partition arenas, so a partition holds at most
//! 4 GiB of text, 4 GiB of bytes and 2³² property slots):
//!
//! * `rows`: one 24-byte [`RowHead`] per entity, sorted by RowKey (UTF-16 ordinal): the
//!   Timestamp, where the RowKey lies in `text`, where its property slots lie in `slots`;
//! * `slots`: one 12-byte `Slot` per property, the store's row codec (`crate::codec`) —
//!   interned name id and type tag in one `u32`, the value inline (numbers, booleans,
//!   DateTime ticks) or as an (offset, length) into `text` (strings) or `bytes` (Guid,
//!   Binary); a row's slots are sorted by id;
//! * `index`: RowKey hash (32 bits) → row number, [`COLLISION`] when two RowKeys share a
//!   hash (then a binary search decides).

use crate::codec::{
    ColumnSet, NO_TIMESTAMP, NameOverflow, Names, Payload, PayloadKind, Slot, timestamp_ticks,
};
use std::cmp::Ordering;
use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher, RandomState};
use std::sync::{Arc, OnceLock};
use tableq_model::{DateTime, Entity, Property, ValueRef, order::compare_str};

/// Why a version could not be built. Nothing was changed: versions are immutable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MemoryError {
    /// A partition outgrew the 32-bit offsets of the layout (4 GiB of strings or of bytes,
    /// or 2³² properties, or 2²⁸ distinct property names).
    #[error("partition too large for the in-memory layout ({what} exceed 32-bit offsets)")]
    PartitionTooLarge {
        /// Which arena overflowed.
        what: &'static str,
    },
}

impl From<NameOverflow> for MemoryError {
    fn from(_: NameOverflow) -> MemoryError {
        MemoryError::PartitionTooLarge {
            what: "property names",
        }
    }
}

/// Something that assigns numbers to property names (interning new ones): a table's own
/// list while bulk loading, a copy-on-write view of the shared list while writing.
pub(crate) trait NameTable {
    /// The number of `name`; `None` once the numbers are exhausted.
    fn intern(&mut self, name: &str) -> Option<u32>;
}

impl NameTable for Names {
    fn intern(&mut self, name: &str) -> Option<u32> {
        Names::intern(self, name)
    }
}

/// Copy-on-write interning for writes: the shared table is cloned only when a write brings
/// a property name it does not know.
impl NameTable for std::borrow::Cow<'_, Names> {
    fn intern(&mut self, name: &str) -> Option<u32> {
        match self.id(name) {
            Some(id) => Some(id),
            None => self.to_mut().push(name),
        }
    }
}

/// Row number marking a hash shared by several RowKeys.
const COLLISION: u32 = u32::MAX;

/// Per-row header (24 bytes).
#[derive(Debug, Clone, Copy)]
pub(crate) struct RowHead {
    timestamp: i64,
    key_start: u32,
    key_len: u32,
    slot_start: u32,
    slot_len: u32,
}

/// Spreads a 32-bit hash over 64 bits for the index's `HashMap` (whose control bytes use the
/// top bits). The keys are already SipHash outputs, so no further hashing is needed.
#[derive(Default)]
pub(crate) struct SpreadHasher(u64);

impl Hasher for SpreadHasher {
    fn finish(&self) -> u64 {
        self.0.wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8) | u64::from(*b);
        }
    }
    fn write_u32(&mut self, i: u32) {
        self.0 = u64::from(i);
    }
}

type Index = HashMap<u32, u32, BuildHasherDefault<SpreadHasher>>;

/// An immutable partition.
///
/// Layout invariant (kept by [`PartitionBuilder`], which appends rows in order and re-lays
/// unsorted input out in order): the arenas hold the rows in row order — row `i`'s RowKey,
/// then its strings, lie in `text` before row `i + 1`'s; its slots and bytes likewise. A
/// run of rows is thus one contiguous range of each arena ([`PartitionBuilder::push_rows`]
/// copies it as such).
pub(crate) struct Partition {
    key: Arc<str>,
    rows: Vec<RowHead>,
    slots: Vec<Slot>,
    text: String,
    bytes: Vec<u8>,
    index: Index,
    /// The fixed-width properties again, column by column (`crate::codec::ColumnSet`): built by the
    /// first scan that asks for a column (so writes, which rebuild partitions, never pay
    /// for them); set to none at once for the write overlay's blocks.
    columns: OnceLock<ColumnSet>,
}

fn to_u32(n: usize, what: &'static str) -> Result<u32, MemoryError> {
    u32::try_from(n).map_err(|_| MemoryError::PartitionTooLarge { what })
}

fn row_hash(hasher: &RandomState, row_key: &str) -> u32 {
    // Truncation to 32 bits is intended: collisions are resolved by binary search.
    hasher.hash_one(row_key) as u32
}

impl Partition {
    /// The PartitionKey.
    pub(crate) fn key(&self) -> &str {
        &self.key
    }

    /// The PartitionKey, shared.
    pub(crate) fn shared_key(&self) -> &Arc<str> {
        &self.key
    }

    /// The number of rows.
    pub(crate) fn len(&self) -> usize {
        self.rows.len()
    }

    /// Heap bytes used (approximately: arenas and index at their capacity).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.key.len()
            + self.rows.capacity() * size_of::<RowHead>()
            + self.slots.capacity() * size_of::<Slot>()
            + self.text.capacity()
            + self.bytes.capacity()
            // hashbrown: one (u32, u32) bucket and one control byte per bucket; buckets are
            // the capacity rounded up to a power of two at 7/8 load.
            + (self.index.capacity() * 8 / 7).next_power_of_two() * (size_of::<(u32, u32)>() + 1)
            + self.columns.get().map_or(0, ColumnSet::heap_bytes)
    }

    /// The partition's columns (row numbers are the partition's), built on first use.
    #[inline]
    pub(crate) fn columns(&self) -> &ColumnSet {
        self.columns.get_or_init(|| {
            let rows: Vec<&[Slot]> = self.rows.iter().map(|h| self.slots_of(h)).collect();
            ColumnSet::build(&rows)
        })
    }

    /// The row number of the first header of `run`, a run of this partition's headers
    /// (from [`heads`](Partition::heads)).
    #[inline]
    pub(crate) fn index_of(&self, run: &[RowHead]) -> usize {
        let offset = (run.as_ptr() as usize).wrapping_sub(self.rows.as_ptr() as usize);
        (offset / size_of::<RowHead>()).min(self.rows.len())
    }

    /// The headers of rows `lo..hi`.
    #[inline]
    pub(crate) fn heads(&self, lo: usize, hi: usize) -> &[RowHead] {
        self.rows.get(lo..hi).unwrap_or(&[])
    }

    #[inline]
    pub(crate) fn head(&self, row: usize) -> &RowHead {
        &self.rows[row]
    }

    #[inline]
    pub(crate) fn row_key_of(&self, head: &RowHead) -> &str {
        let start = head.key_start as usize;
        self.text
            .get(start..start + head.key_len as usize)
            .unwrap_or("")
    }

    #[inline]
    pub(crate) fn row_key(&self, row: usize) -> &str {
        self.row_key_of(&self.rows[row])
    }

    #[inline]
    pub(crate) fn timestamp_of(head: &RowHead) -> Option<DateTime> {
        if head.timestamp == NO_TIMESTAMP {
            None
        } else {
            DateTime::from_ticks(head.timestamp)
        }
    }

    #[inline]
    fn slots_of(&self, head: &RowHead) -> &[Slot] {
        let start = head.slot_start as usize;
        self.slots
            .get(start..start + head.slot_len as usize)
            .unwrap_or(&[])
    }

    /// The value of property `id` in a row. Always inlined into the per-row reads of
    /// compiled predicates (see `MemoryRow::custom_by_slot`).
    #[inline(always)]
    pub(crate) fn value_of(&self, head: &RowHead, id: u32) -> Option<ValueRef<'_>> {
        for slot in self.slots_of(head) {
            let sid = slot.id();
            if sid == id {
                return Some(self.decode(*slot));
            }
            if sid > id {
                return None;
            }
        }
        None
    }

    /// A slot's value (the arenas were written by this partition's builder: the codec's
    /// unchecked read).
    #[inline(always)]
    fn decode(&self, slot: Slot) -> ValueRef<'_> {
        slot.decode_trusted(|| &self.text, || &self.bytes)
    }

    /// The custom properties of a row as owned values.
    pub(crate) fn properties_of(&self, head: &RowHead, names: &Names) -> Vec<Property> {
        self.slots_of(head)
            .iter()
            .map(|s| Property {
                name: names.name(s.id()).to_owned(),
                value: self.decode(*s).to_owned(),
            })
            .collect()
    }

    /// Calls `f` with the custom properties of a row, ordered by name (byte order).
    pub(crate) fn for_each_property(
        &self,
        head: &RowHead,
        names: &Names,
        f: &mut dyn FnMut(&str, ValueRef<'_>),
    ) {
        let slots = self.slots_of(head);
        let sorted = slots
            .windows(2)
            .all(|w| names.name(w[0].id()) < names.name(w[1].id()));
        if sorted {
            for s in slots {
                f(names.name(s.id()), self.decode(*s));
            }
        } else {
            let mut order: Vec<&Slot> = slots.iter().collect();
            order.sort_by(|a, b| names.name(a.id()).cmp(names.name(b.id())));
            for s in order {
                f(names.name(s.id()), self.decode(*s));
            }
        }
    }

    /// A row as an owned entity.
    pub(crate) fn entity(&self, head: &RowHead, names: &Names) -> Entity {
        Entity::with_properties(
            &*self.key,
            self.row_key_of(head),
            Partition::timestamp_of(head),
            self.properties_of(head, names),
        )
    }

    /// The number of leading rows whose RowKey satisfies `below` (which must hold for a
    /// prefix of the rows in key order and for none after it).
    pub(crate) fn partition_point(&self, below: impl Fn(&str) -> bool) -> usize {
        self.rows.partition_point(|h| below(self.row_key_of(h)))
    }

    /// The first row whose RowKey is `>= row_key` (or `> row_key` when `after`).
    pub(crate) fn lower_bound(&self, row_key: &str, after: bool) -> usize {
        self.rows
            .partition_point(|h| match compare_str(self.row_key_of(h), row_key) {
                Ordering::Less => true,
                Ordering::Equal => after,
                Ordering::Greater => false,
            })
    }

    /// [`lower_bound`](Partition::lower_bound)`(row_key, false)`, knowing that it is at
    /// least `from`: an exponential search forward from `from`, `O(log d)` for a result
    /// `d` rows further (a merge walks the base this way, overlay key after overlay key).
    pub(crate) fn lower_bound_from(&self, from: usize, row_key: &str) -> usize {
        let below = |i: usize| compare_str(self.row_key(i), row_key) == Ordering::Less;
        let len = self.rows.len();
        if from >= len || !below(from) {
            return from.min(len);
        }
        // rows[lo] < row_key; find hi with rows[hi] >= row_key (or the end).
        let (mut lo, mut step) = (from, 1usize);
        let hi = loop {
            let probe = lo.saturating_add(step);
            if probe >= len {
                break len;
            }
            if !below(probe) {
                break probe;
            }
            lo = probe;
            step = step.saturating_mul(2);
        };
        lo + 1
            + self
                .heads(lo + 1, hi)
                .partition_point(|h| compare_str(self.row_key_of(h), row_key) == Ordering::Less)
    }

    /// The sizes of the arenas (rows, slots, text, bytes), to reserve room for a copy.
    pub(crate) fn arena_lens(&self) -> (usize, usize, usize, usize) {
        (
            self.rows.len(),
            self.slots.len(),
            self.text.len(),
            self.bytes.len(),
        )
    }

    /// The row with exactly this RowKey.
    pub(crate) fn find(&self, hasher: &RandomState, row_key: &str) -> Option<usize> {
        match self.index.get(&row_hash(hasher, row_key)) {
            None => None,
            Some(&COLLISION) => {
                let i = self.lower_bound(row_key, false);
                (i < self.rows.len() && self.row_key(i) == row_key).then_some(i)
            }
            Some(&i) => {
                let i = i as usize;
                (self.row_key(i) == row_key).then_some(i)
            }
        }
    }
}

impl std::fmt::Debug for Partition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Partition")
            .field("key", &self.key)
            .field("rows", &self.rows.len())
            .finish()
    }
}

/// Builds a partition row by row. Rows may be pushed in any order; [`finish`] sorts them
/// (a later row with the same RowKey replaces an earlier one).
///
/// [`finish`]: PartitionBuilder::finish
#[derive(Debug)]
pub(crate) struct PartitionBuilder {
    key: Arc<str>,
    rows: Vec<RowHead>,
    slots: Vec<Slot>,
    text: String,
    bytes: Vec<u8>,
    sorted: bool,
}

impl PartitionBuilder {
    pub(crate) fn new(key: &str) -> PartitionBuilder {
        PartitionBuilder::with_key(Arc::from(key))
    }

    /// A builder for partition `key` (shared with whoever else holds it).
    pub(crate) fn with_key(key: Arc<str>) -> PartitionBuilder {
        PartitionBuilder {
            key,
            rows: Vec::new(),
            slots: Vec::new(),
            text: String::new(),
            bytes: Vec::new(),
            sorted: true,
        }
    }

    fn note_order(&mut self, row_key: &str) {
        if let Some(last) = self.rows.last() {
            let start = last.key_start as usize;
            let prev = self
                .text
                .get(start..start + last.key_len as usize)
                .unwrap_or("");
            if compare_str(prev, row_key) != Ordering::Less {
                self.sorted = false;
            }
        }
    }

    fn push_text(&mut self, s: &str) -> Result<(u32, u32), MemoryError> {
        let start = to_u32(self.text.len(), "text")?;
        self.text.push_str(s);
        to_u32(self.text.len(), "text")?;
        Ok((start, to_u32(s.len(), "text")?))
    }

    fn push_bytes(&mut self, b: &[u8]) -> Result<(u32, u32), MemoryError> {
        let start = to_u32(self.bytes.len(), "bytes")?;
        self.bytes.extend_from_slice(b);
        to_u32(self.bytes.len(), "bytes")?;
        Ok((start, to_u32(b.len(), "bytes")?))
    }

    fn push_slot(&mut self, id: u32, value: ValueRef<'_>) -> Result<(), MemoryError> {
        let slot = Slot::encode(id, value, |payload| match payload {
            Payload::Text(s) => self.push_text(s).map(|(start, _)| start),
            Payload::Bytes(b) => self.push_bytes(b).map(|(start, _)| start),
        })?;
        self.slots.push(slot);
        Ok(())
    }

    /// Appends an entity (its PartitionKey must be this partition's), interning new names.
    pub(crate) fn push_entity(
        &mut self,
        entity: &Entity,
        names: &mut impl NameTable,
    ) -> Result<(), MemoryError> {
        self.note_order(entity.row_key());
        let (key_start, key_len) = self.push_text(entity.row_key())?;
        let slot_start = to_u32(self.slots.len(), "slots")?;
        let mut props: Vec<(u32, ValueRef<'_>)> = Vec::with_capacity(entity.properties().len());
        for p in entity.properties() {
            let id = names
                .intern(&p.name)
                .ok_or(MemoryError::PartitionTooLarge {
                    what: "property names",
                })?;
            props.push((id, p.value.as_ref()));
        }
        props.sort_unstable_by_key(|(id, _)| *id);
        for (id, value) in props {
            self.push_slot(id, value)?;
        }
        let slot_len = to_u32(self.slots.len() - slot_start as usize, "slots")?;
        let timestamp = timestamp_ticks(entity.timestamp());
        self.rows.push(RowHead {
            timestamp,
            key_start,
            key_len,
            slot_start,
            slot_len,
        });
        Ok(())
    }

    /// Appends a copy of row `row` of `from` (same name table).
    pub(crate) fn push_row(&mut self, from: &Partition, row: usize) -> Result<(), MemoryError> {
        let head = *from.head(row);
        let row_key = from.row_key_of(&head);
        self.note_order(row_key);
        let (key_start, key_len) = self.push_text(row_key)?;
        let slot_start = to_u32(self.slots.len(), "slots")?;
        for slot in from.slots_of(&head) {
            self.push_slot(slot.id(), from.decode(*slot))?;
        }
        self.rows.push(RowHead {
            key_start,
            key_len,
            slot_start,
            ..head
        });
        Ok(())
    }

    /// Makes room for `rows` more rows, `slots` more slots, `text` more bytes of text and
    /// `bytes` more bytes.
    pub(crate) fn reserve(&mut self, (rows, slots, text, bytes): (usize, usize, usize, usize)) {
        self.rows.reserve(rows);
        self.slots.reserve(slots);
        self.text.reserve(text);
        self.bytes.reserve(bytes);
    }

    /// Makes room for `entity` (so that pushing it allocates exactly once per arena).
    pub(crate) fn reserve_entity(&mut self, entity: &Entity) {
        let (mut text, mut bytes) = (entity.row_key().len(), 0);
        for p in entity.properties() {
            match p.value.as_ref() {
                ValueRef::String(s) => text += s.len(),
                ValueRef::Binary(b) => bytes += b.len(),
                ValueRef::Guid(_) => bytes += 16,
                _ => {}
            }
        }
        self.rows.reserve(1);
        self.slots.reserve(entity.properties().len());
        self.text.reserve(text);
        self.bytes.reserve(bytes);
    }

    /// Appends copies of rows `lo..hi` of `from` (same name table): the run's ranges of
    /// the arenas are copied whole and their offsets shifted (see the layout invariant
    /// of [`Partition`]), rather than row by row.
    pub(crate) fn push_rows(
        &mut self,
        from: &Partition,
        lo: usize,
        hi: usize,
    ) -> Result<(), MemoryError> {
        let heads = from.heads(lo, hi);
        let (Some(first), Some(last)) = (heads.first(), heads.last()) else {
            return Ok(());
        };
        self.note_order(from.row_key_of(first));
        // The run's slots, text and bytes.
        let slots_lo = first.slot_start as usize;
        let slots_hi = (last.slot_start + last.slot_len) as usize;
        let text_lo = first.key_start as usize;
        let text_hi = from
            .rows
            .get(hi)
            .map_or(from.text.len(), |next| next.key_start as usize);
        let slots = from.slots.get(slots_lo..slots_hi).unwrap_or(&[]);
        let mut bytes_range: Option<(usize, usize)> = None;
        for s in slots {
            if let Some((PayloadKind::Bytes, at, len)) = s.payload() {
                let (b_lo, b_hi) = (at as usize, (at + len) as usize);
                bytes_range = Some(match bytes_range {
                    Some((l, h)) => (l.min(b_lo), h.max(b_hi)),
                    None => (b_lo, b_hi),
                });
            }
        }
        let (bytes_lo, bytes_hi) = bytes_range.unwrap_or((0, 0));
        // Shifts (as wrapping u32 arithmetic: every shifted offset fits, checked below).
        let text_base = to_u32(self.text.len(), "text")?;
        let bytes_base = to_u32(self.bytes.len(), "bytes")?;
        let slot_base = to_u32(self.slots.len(), "slots")?;
        to_u32(self.text.len() + (text_hi - text_lo), "text")?;
        to_u32(self.bytes.len() + (bytes_hi - bytes_lo), "bytes")?;
        to_u32(self.slots.len() + slots.len(), "slots")?;
        let text_shift = text_base.wrapping_sub(text_lo as u32);
        let bytes_shift = bytes_base.wrapping_sub(bytes_lo as u32);
        let slot_shift = slot_base.wrapping_sub(slots_lo as u32);
        self.text
            .push_str(from.text.get(text_lo..text_hi).unwrap_or(""));
        self.bytes
            .extend_from_slice(from.bytes.get(bytes_lo..bytes_hi).unwrap_or(&[]));
        self.slots.extend(slots.iter().map(|s| match s.payload() {
            Some((PayloadKind::Text, at, _)) => s.with_payload_offset(at.wrapping_add(text_shift)),
            Some((PayloadKind::Bytes, at, _)) => {
                s.with_payload_offset(at.wrapping_add(bytes_shift))
            }
            None => *s,
        }));
        self.rows.extend(heads.iter().map(|h| RowHead {
            key_start: h.key_start.wrapping_add(text_shift),
            slot_start: h.slot_start.wrapping_add(slot_shift),
            ..*h
        }));
        // The run itself is in order (a partition's rows are): only its first row needed
        // comparing with the rows before it.
        Ok(())
    }

    /// Appends a row that holds only a RowKey (the key of a removal in the overlay).
    pub(crate) fn push_key(&mut self, row_key: &str) -> Result<(), MemoryError> {
        self.note_order(row_key);
        let (key_start, key_len) = self.push_text(row_key)?;
        let slot_start = to_u32(self.slots.len(), "slots")?;
        self.rows.push(RowHead {
            timestamp: NO_TIMESTAMP,
            key_start,
            key_len,
            slot_start,
            slot_len: 0,
        });
        Ok(())
    }

    /// Whether no row was pushed.
    pub(crate) fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The rows as pushed (they must be in strictly ascending RowKey order), without a
    /// hash index: a block of the write overlay, which is only read by row number.
    /// [`Partition::find`] never finds anything in it.
    pub(crate) fn finish_block(self) -> Partition {
        debug_assert!(self.sorted, "overlay blocks are built in key order");
        Partition {
            key: self.key,
            rows: self.rows,
            slots: self.slots,
            text: self.text,
            bytes: self.bytes,
            index: Index::default(),
            columns: OnceLock::from(ColumnSet::none()),
        }
    }

    /// Sorts (if needed), drops all but the last row of each RowKey, builds the index.
    pub(crate) fn finish(mut self, hasher: &RandomState) -> Result<Partition, MemoryError> {
        if !self.sorted {
            // Re-lay the rows out in key order, keeping the last of equal keys.
            let mut order: Vec<usize> = (0..self.rows.len()).collect();
            let key = |b: &PartitionBuilder, i: usize| {
                let h = b.rows[i];
                let start = h.key_start as usize;
                b.text
                    .get(start..start + h.key_len as usize)
                    .unwrap_or("")
                    .to_owned()
            };
            let keys: Vec<String> = order.iter().map(|&i| key(&self, i)).collect();
            order.sort_by(|&a, &b| compare_str(&keys[a], &keys[b]).then(b.cmp(&a)));
            order.dedup_by(|later, earlier| keys[*later] == keys[*earlier]);
            let unsorted = Partition {
                key: self.key.clone(),
                rows: std::mem::take(&mut self.rows),
                slots: std::mem::take(&mut self.slots),
                text: std::mem::take(&mut self.text),
                bytes: std::mem::take(&mut self.bytes),
                index: Index::default(),
                columns: OnceLock::from(ColumnSet::none()),
            };
            drop(keys);
            let mut sorted = PartitionBuilder::with_key(self.key.clone());
            for i in order {
                sorted.push_row(&unsorted, i)?;
            }
            sorted.sorted = true;
            return sorted.finish(hasher);
        }
        let mut index = Index::with_capacity_and_hasher(self.rows.len(), Default::default());
        for (i, head) in self.rows.iter().enumerate() {
            let start = head.key_start as usize;
            let rk = self
                .text
                .get(start..start + head.key_len as usize)
                .unwrap_or("");
            let row = to_u32(i, "rows")?;
            index
                .entry(row_hash(hasher, rk))
                .and_modify(|r| *r = COLLISION)
                .or_insert(row);
        }
        self.rows.shrink_to_fit();
        self.slots.shrink_to_fit();
        self.text.shrink_to_fit();
        self.bytes.shrink_to_fit();
        Ok(Partition {
            key: self.key,
            rows: self.rows,
            slots: self.slots,
            text: self.text,
            bytes: self.bytes,
            index,
            columns: OnceLock::new(),
        })
    }
}

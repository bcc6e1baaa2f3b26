//! Columns of a run of rows: for each property that enough of the rows hold with one
//! fixed-width type (Int32, Int64, Double, Boolean, DateTime), the values in row order as a
//! typed array with a presence map — the PAX-style half of both engines' layouts, which
//! lets a residual test a whole column in a tight loop ([`tableq_exec::batch`]) instead of
//! reading every row's slots. The rows keep every value as well (point gets, projections
//! and the other types read them there): the columns are a second copy of the fixed-width
//! values. The memory engine builds them for a partition on the first scan that asks
//! (`memory/snapshot/partition.rs`); the durable engine stores them in each block, after
//! its rows ([`ColumnSet::encode`], `durable/format/block.rs`).
//!
//! A property gets a column when every row that has it holds the same type, that type has
//! a column form, and at least one row in [`DENSITY`] has it (a column costs memory for
//! every row, present or not). Otherwise its comparisons are tested row by row
//! ([`Column::Rows`]), as are those of runs without columns (under [`MIN_ROWS`] rows, or
//! with a property numbered [`MAX_ID`] or more) — [`ColumnSet::none`].
//!
//! **Why not Apache Arrow** (`arrow-rs`), the well-kept columnar crate of the field: its
//! arrays and bitmaps have the same shape as these, but its comparison kernels implement
//! SQL's semantics, not the Table service's — a property of another type than the literal
//! counts as *less* than it, an Int32 literal widens to Int64 and Double columns but an
//! Int64 literal does not narrow, NaN is unordered (`ne` holds), a missing property fails
//! every operator — so every kernel would be ours anyway ([`tableq_exec::ValueTest`]'s
//! word kernels, ≈ 150 lines, property-tested against `tableq_model::compare`), and the
//! columns would bring a large dependency for five `Vec`s a partition.
//!
//! ```text
//! encoded = crc:u32  count:u32  entry*  data*      count = u32::MAX: no columns (none()),
//!                                                  then nothing else
//! entry   = id:u32  kind:u8  flags:u8  0:u16  len:u32  data_crc:u32  min:u64  max:u64
//! data    = present:words × u64  values            one per entry, in the entries' order
//! values  = Int32 rows × i32 | Int64, Double (bits), DateTime (ticks) rows × u64
//!         | Boolean words × u64 (the trues)        | nothing for kind 0 (rows)
//! ```
//!
//! `crc` is the CRC-32 of `count` and the entries (the *column directory*), `data_crc`
//! the CRC-32 of one column's data, so a reader verifies the directory and then only the
//! columns it reads ([`EncodedColumns`], [`LazyColumns`]); `words` = ⌈rows / 64⌉; `len`
//! the column's data bytes (exact for its kind and the rows); kinds 0 rows, 1 Int32,
//! 2 Int64, 3 Double, 4 Boolean, 5 DateTime; entries by ascending `id`. `flags` bit 0:
//! `min` and `max` are the smallest and largest present value (Int32, Int64 and DateTime
//! as i64, Double as its bits, kept only when the column holds no NaN) — the per-block
//! statistic that lets a comparison no value in it can satisfy fail the whole block
//! without its column being read or verified ([`tableq_exec::batch::ColumnRange`]).

use super::Corrupt;
use super::Slot;
use std::borrow::Cow;
use std::ops::Range;
use tableq_exec::PropertySlot;
use tableq_exec::batch::{Column, ColumnRange, Columns, OwnedColumn};
use tableq_model::ValueRef;

/// Rows `rows` of a run, with the run's columns: what both engines hand to
/// [`tableq_exec::filter_run`] (slots are property numbers).
pub(crate) struct ColumnRun<'c> {
    /// The run's columns.
    pub(crate) set: &'c ColumnSet,
    /// The rows of the run in the scan.
    pub(crate) rows: Range<usize>,
}

impl Columns for ColumnRun<'_> {
    fn rows(&self) -> Range<usize> {
        self.rows.clone()
    }

    #[inline]
    fn column(&self, slot: PropertySlot) -> Column<'_> {
        self.set.column(slot.0)
    }

    #[inline]
    fn range(&self, slot: PropertySlot) -> Option<ColumnRange> {
        self.set.range(slot.0)
    }
}

/// A property gets a column when at least one row in `DENSITY` holds it.
pub(crate) const DENSITY: usize = 8;

/// Partitions smaller than this get no columns (their rows are tested one by one; the
/// durable engine's blocks give their own bound to [`ColumnSet::build_with`]).
pub(crate) const MIN_ROWS: usize = 64;

/// Partitions holding a property numbered this high get no columns (a table with that
/// many property names; the build indexes its work by property number).
pub(crate) const MAX_ID: usize = 1 << 16;

/// The columns of one partition, by property number.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct ColumnSet {
    /// Whether columns were built: without, every property reads as [`Column::Rows`].
    built: bool,
    rows: usize,
    /// The property numbers, ascending: what a lookup searches. Kept apart from the
    /// columns they share a cache line or two, where a search of (number, column) pairs
    /// would touch one line per probe — and a filtered scan looks up each comparison's
    /// column in every block, most of them cold (measured: the lookups were the scan's
    /// largest cost per block).
    ids: Box<[u32]>,
    /// The column of `ids[i]`.
    stored: Box<[Stored]>,
}

#[derive(Debug, PartialEq)]
enum Stored {
    /// A column, with the range of its present values when it has one.
    Column(OwnedColumn, Option<ColumnRange>),
    /// Held with several types, or a type without a column form, or too sparse.
    Rows,
}

/// The column form of a value's type, if it has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Int32,
    Int64,
    Double,
    Boolean,
    DateTime,
    /// String, Guid, Binary.
    None,
}

fn kind_of(v: ValueRef<'_>) -> Kind {
    match v {
        ValueRef::Int32(_) => Kind::Int32,
        ValueRef::Int64(_) => Kind::Int64,
        ValueRef::Double(_) => Kind::Double,
        ValueRef::Boolean(_) => Kind::Boolean,
        ValueRef::DateTime(_) => Kind::DateTime,
        _ => Kind::None,
    }
}

/// A slot's value, when it is of a fixed-width type (payloads are never read).
fn fixed(slot: Slot) -> ValueRef<'static> {
    slot.decode_trusted(|| "", || &[])
}

impl ColumnSet {
    /// No columns: every comparison is tested row by row.
    pub(crate) fn none() -> ColumnSet {
        ColumnSet::default()
    }

    /// The columns of a partition whose row `i` holds the slots `rows[i]` (sorted by
    /// property number, as every row's are).
    pub(crate) fn build(rows: &[&[Slot]]) -> ColumnSet {
        ColumnSet::build_with(rows, MIN_ROWS)
    }

    /// [`build`](ColumnSet::build) with none for fewer than `min_rows` rows instead of
    /// [`MIN_ROWS`].
    pub(crate) fn build_with(rows: &[&[Slot]], min_rows: usize) -> ColumnSet {
        let n = rows.len();
        // Slots are sorted by number: a row's last holds its largest.
        let max_id = rows.iter().filter_map(|r| r.last()).map(|s| s.id()).max();
        let Some(max_id) = max_id.map(|m| m as usize) else {
            return ColumnSet::none();
        };
        if n < min_rows || max_id >= MAX_ID {
            return ColumnSet::none();
        }
        // Pass 1, per property number: how many rows hold it, and its one kind.
        let mut seen: Vec<(usize, Option<Kind>)> = vec![(0, None); max_id + 1];
        for slot in rows.iter().flat_map(|r| r.iter()) {
            let kind = kind_of(fixed(*slot));
            let e = &mut seen[slot.id() as usize];
            e.0 += 1;
            e.1 = match e.1 {
                None => Some(kind),
                Some(k) if k == kind => Some(k),
                Some(_) => Some(Kind::None),
            };
        }
        // The properties that get a column, and where each one's column is.
        let words = n.div_ceil(64);
        let mut at = vec![u32::MAX; max_id + 1];
        let mut building: Vec<(u32, Building)> = Vec::new();
        for (id, &(count, kind)) in seen.iter().enumerate() {
            let Some(kind) = kind.filter(|_| count * DENSITY >= n) else {
                continue;
            };
            if let Some(b) = Building::new(kind, n) {
                at[id] = building.len() as u32;
                building.push((id as u32, b));
            }
        }
        // Pass 2: every value into its column.
        let mut present = vec![vec![0u64; words]; building.len()];
        for (i, slots) in rows.iter().enumerate() {
            for slot in slots.iter() {
                let Some(c) = at.get(slot.id() as usize).map(|&c| c as usize) else {
                    continue;
                };
                if let (Some((_, b)), Some(p)) = (building.get_mut(c), present.get_mut(c)) {
                    b.set(i, fixed(*slot));
                    p[i / 64] |= 1 << (i % 64);
                }
            }
        }
        let mut built = building
            .into_iter()
            .zip(present)
            .map(|((id, b), p)| (id, b.finish(p)));
        let mut next = built.next();
        let mut columns = Vec::new();
        for (id, &(count, _)) in seen.iter().enumerate() {
            if count == 0 {
                continue;
            }
            let id = id as u32;
            match next.take() {
                Some((cid, stored)) if cid == id => {
                    columns.push((id, stored));
                    next = built.next();
                }
                other => {
                    next = other;
                    columns.push((id, Stored::Rows));
                }
            }
        }
        ColumnSet::built(n, columns)
    }

    /// A set of built columns of `rows` rows (`columns` sorted by property number).
    fn built(rows: usize, columns: Vec<(u32, Stored)>) -> ColumnSet {
        let (ids, stored): (Vec<u32>, Vec<Stored>) = columns.into_iter().unzip();
        ColumnSet {
            built: true,
            rows,
            ids: ids.into(),
            stored: stored.into(),
        }
    }

    /// Where property `id` is in `ids` and `stored`.
    #[inline]
    fn position(&self, id: u32) -> Option<usize> {
        self.ids.binary_search(&id).ok()
    }

    /// The column of property `id`.
    #[inline]
    pub(crate) fn column(&self, id: u32) -> Column<'_> {
        if !self.built {
            return Column::Rows;
        }
        let Some(at) = self.position(id) else {
            return Column::Absent;
        };
        match &self.stored[at] {
            Stored::Column(c, _) => c.as_column(self.rows),
            Stored::Rows => Column::Rows,
        }
    }

    /// The range of property `id`'s column, when it has one.
    #[inline]
    pub(crate) fn range(&self, id: u32) -> Option<ColumnRange> {
        let at = self.position(id)?;
        match &self.stored[at] {
            Stored::Column(_, range) => *range,
            Stored::Rows => None,
        }
    }

    /// Heap bytes used.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.ids.len() * size_of::<u32>()
            + self.stored.len() * size_of::<Stored>()
            + self
                .stored
                .iter()
                .map(|s| match s {
                    Stored::Column(c, _) => c.heap_bytes(),
                    Stored::Rows => 0,
                })
                .sum::<usize>()
    }
}

const KIND_ROWS: u8 = 0;
const KIND_INT32: u8 = 1;
const KIND_INT64: u8 = 2;
const KIND_DOUBLE: u8 = 3;
const KIND_BOOLEAN: u8 = 4;
const KIND_DATETIME: u8 = 5;
/// `count` of a run without columns.
const NO_COLUMNS: u32 = u32::MAX;
/// Bytes before the entries: `crc`, `count`.
const HEAD: usize = 8;
/// Bytes of one entry of the column directory.
const ENTRY: usize = 32;
/// An entry's `flags` bit: `min` and `max` hold the column's range.
const HAS_RANGE: u8 = 1;

fn kind_code(c: &OwnedColumn) -> u8 {
    match c {
        OwnedColumn::Int32(..) => KIND_INT32,
        OwnedColumn::Int64(..) => KIND_INT64,
        OwnedColumn::Double(..) => KIND_DOUBLE,
        OwnedColumn::Boolean(..) => KIND_BOOLEAN,
        OwnedColumn::DateTime(..) => KIND_DATETIME,
    }
}

/// The bytes of a column of `kind` over `rows` rows (presence map and values).
fn data_len(kind: u8, rows: usize) -> Option<usize> {
    let words = rows.div_ceil(64) * 8;
    match kind {
        KIND_ROWS => Some(0),
        KIND_INT32 => Some(words + rows * 4),
        KIND_INT64 | KIND_DOUBLE | KIND_DATETIME => Some(words + rows * 8),
        KIND_BOOLEAN => Some(words * 2),
        _ => None,
    }
}

/// A range as an entry stores it: `(min, max)` as 64-bit patterns.
fn range_bits(range: &ColumnRange) -> (u64, u64) {
    match *range {
        ColumnRange::Int32(a, b) => (i64::from(a) as u64, i64::from(b) as u64),
        ColumnRange::Int64(a, b) | ColumnRange::DateTime(a, b) => (a as u64, b as u64),
        ColumnRange::Double(a, b) => (a.to_bits(), b.to_bits()),
    }
}

impl ColumnSet {
    /// Appends the encoded columns (see the module docs) to `out`; the directory's
    /// checksum covers `bound` first (bytes stored elsewhere that the directory vouches
    /// for: a block's header and PartitionKey, `durable/format/block.rs`).
    pub(crate) fn encode(&self, out: &mut Vec<u8>, bound: &[&[u8]]) {
        let start = out.len();
        out.extend_from_slice(&[0; 4]);
        if !self.built {
            out.extend_from_slice(&NO_COLUMNS.to_le_bytes());
            let crc = directory_crc(bound, &out[start + 4..]);
            out[start..start + 4].copy_from_slice(&crc.to_le_bytes());
            return;
        }
        out.extend_from_slice(&(self.ids.len() as u32).to_le_bytes());
        let entries = out.len();
        out.resize(entries + ENTRY * self.ids.len(), 0);
        for (k, (id, stored)) in self.ids.iter().zip(self.stored.iter()).enumerate() {
            let data = out.len();
            let words = |out: &mut Vec<u8>, w: &[u64]| {
                for x in w {
                    out.extend_from_slice(&x.to_le_bytes());
                }
            };
            let (kind, range) = match stored {
                Stored::Rows => (KIND_ROWS, None),
                Stored::Column(c, range) => {
                    match c {
                        OwnedColumn::Int32(p, v) => {
                            words(out, p);
                            v.iter()
                                .for_each(|x| out.extend_from_slice(&x.to_le_bytes()));
                        }
                        OwnedColumn::Int64(p, v) | OwnedColumn::DateTime(p, v) => {
                            words(out, p);
                            v.iter()
                                .for_each(|x| out.extend_from_slice(&x.to_le_bytes()));
                        }
                        OwnedColumn::Double(p, v) => {
                            words(out, p);
                            v.iter()
                                .for_each(|x| out.extend_from_slice(&x.to_bits().to_le_bytes()));
                        }
                        OwnedColumn::Boolean(p, t) => {
                            words(out, p);
                            words(out, t);
                        }
                    }
                    (kind_code(c), range.as_ref())
                }
            };
            let len = (out.len() - data) as u32;
            let crc = crc32fast::hash(&out[data..]);
            let (flags, (min, max)) = match range {
                Some(r) => (HAS_RANGE, range_bits(r)),
                None => (0, (0, 0)),
            };
            let e = entries + k * ENTRY;
            out[e..e + 4].copy_from_slice(&id.to_le_bytes());
            out[e + 4] = kind;
            out[e + 5] = flags;
            out[e + 8..e + 12].copy_from_slice(&len.to_le_bytes());
            out[e + 12..e + 16].copy_from_slice(&crc.to_le_bytes());
            out[e + 16..e + 24].copy_from_slice(&min.to_le_bytes());
            out[e + 24..e + 32].copy_from_slice(&max.to_le_bytes());
        }
        let dir_end = entries + ENTRY * self.ids.len();
        let crc = directory_crc(bound, &out[start + 4..dir_end]);
        out[start..start + 4].copy_from_slice(&crc.to_le_bytes());
    }

    /// Whether `bytes` are the encoded columns of `rows` rows, every column's checksum
    /// included (what a whole-block check and `tableq check` verify).
    pub(crate) fn verify(bytes: &[u8], rows: usize, bound: &[&[u8]]) -> Result<(), Corrupt> {
        let encoded = EncodedColumns::parse(bytes, rows, bound)?;
        (0..encoded.dir.count).try_for_each(|k| encoded.data(k).map(|_| ()))
    }

    /// Decodes all the columns of `rows` rows from `bytes` (every checksum verified);
    /// every length is checked, so damage is a [`Corrupt`], never a panic.
    pub(crate) fn decode(bytes: &[u8], rows: usize, bound: &[&[u8]]) -> Result<ColumnSet, Corrupt> {
        let encoded = EncodedColumns::parse(bytes, rows, bound)?;
        if !encoded.dir.built {
            return Ok(ColumnSet::none());
        }
        let columns = (0..encoded.dir.count)
            .map(|k| {
                let stored = match encoded.decode(k)? {
                    Some(c) => Stored::Column(c, encoded.range(k)),
                    None => Stored::Rows,
                };
                Ok((encoded.entry(k).id, stored))
            })
            .collect::<Result<_, Corrupt>>()?;
        Ok(ColumnSet::built(rows, columns))
    }
}

/// One entry of the column directory.
#[derive(Debug, Clone, Copy)]
struct Entry {
    id: u32,
    kind: u8,
    flags: u8,
    crc: u32,
    min: u64,
    max: u64,
}

/// Encoded columns (a block's, `durable/format/block.rs`) with their directory checked
/// and nothing else: a scan verifies and decodes only the columns its residual reads
/// ([`LazyColumns`]), and none whose range excludes a test.
#[derive(Debug, Clone)]
pub(crate) struct EncodedColumns<'b> {
    bytes: &'b [u8],
    /// What the parse found: parsed here, or kept from an earlier parse of the same bytes.
    dir: Cow<'b, ColumnDirectory>,
}

/// What [`EncodedColumns::parse`] found in a columns section, kept to read the same bytes
/// again without parsing them again ([`EncodedColumns::with_directory`]): a scan loads a
/// block with its column directory checked, then reads the columns.
#[derive(Debug, Clone)]
pub(crate) struct ColumnDirectory {
    rows: usize,
    built: bool,
    count: usize,
    /// Where each column's data starts (and, last, where the data ends).
    starts: Vec<usize>,
}

impl<'b> EncodedColumns<'b> {
    /// No columns for a run of `rows` rows: every property reads as [`Column::Rows`].
    pub(crate) fn none(rows: usize) -> EncodedColumns<'static> {
        EncodedColumns {
            bytes: &[],
            dir: Cow::Owned(ColumnDirectory {
                rows,
                built: false,
                count: 0,
                starts: vec![HEAD],
            }),
        }
    }

    /// What the parse found, to read the same bytes again
    /// ([`with_directory`](Self::with_directory)).
    pub(crate) fn into_directory(self) -> ColumnDirectory {
        self.dir.into_owned()
    }

    /// The columns `bytes` whose directory an earlier [`parse`](Self::parse) of the same
    /// bytes returned (nothing is checked again: the caller holds the bytes it parsed).
    pub(crate) fn with_directory(
        bytes: &'b [u8],
        directory: &'b ColumnDirectory,
    ) -> EncodedColumns<'b> {
        EncodedColumns {
            bytes,
            dir: Cow::Borrowed(directory),
        }
    }

    /// Checks the directory of the encoded columns of `rows` rows: its checksum, then the
    /// layout (ascending ids, known kinds, each column's length exact for its kind, the
    /// data ending where the bytes end). (The checksum alone does not cover the section's
    /// length: CRC-32 cannot see zero bytes appended after a run of `FF` bytes, such as
    /// the `count` of a run without columns.)
    pub(crate) fn parse(
        bytes: &'b [u8],
        rows: usize,
        bound: &[&[u8]],
    ) -> Result<EncodedColumns<'b>, Corrupt> {
        let cut = Corrupt("columns cut short");
        if bytes.len() < HEAD {
            return Err(cut);
        }
        let count = u32_le(bytes, 4);
        if count == NO_COLUMNS {
            if bytes.len() != HEAD {
                return Err(Corrupt("bytes after the columns"));
            }
            if u32_le(bytes, 0) != directory_crc(bound, &bytes[4..HEAD]) {
                return Err(Corrupt("the block's columns fail their checksum"));
            }
            return Ok(EncodedColumns::none(rows).with_bytes(bytes));
        }
        let count = count as usize;
        let dir_end = count
            .checked_mul(ENTRY)
            .and_then(|n| n.checked_add(HEAD))
            .filter(|&end| end <= bytes.len())
            .ok_or(cut.clone())?;
        if u32_le(bytes, 0) != directory_crc(bound, &bytes[4..dir_end]) {
            return Err(Corrupt("the block's columns fail their checksum"));
        }
        let mut starts = Vec::with_capacity(count + 1);
        let mut at = dir_end;
        let mut last = None;
        for k in 0..count {
            let e = entry_at(bytes, k);
            if last.is_some_and(|l| l >= e.id) {
                return Err(Corrupt("columns out of order"));
            }
            last = Some(e.id);
            let len = data_len(e.kind, rows).ok_or(Corrupt("unknown column kind"))?;
            if u32_le(bytes, HEAD + k * ENTRY + 8) as usize != len {
                return Err(Corrupt("a column's length does not match its rows"));
            }
            if e.flags & !HAS_RANGE != 0
                || (e.flags & HAS_RANGE != 0
                    && !matches!(
                        e.kind,
                        KIND_INT32 | KIND_INT64 | KIND_DOUBLE | KIND_DATETIME
                    ))
            {
                return Err(Corrupt("unknown column flags"));
            }
            starts.push(at);
            at = at.checked_add(len).ok_or(cut.clone())?;
        }
        starts.push(at);
        match at.cmp(&bytes.len()) {
            std::cmp::Ordering::Less => Err(Corrupt("bytes after the columns")),
            std::cmp::Ordering::Greater => Err(cut),
            std::cmp::Ordering::Equal => Ok(EncodedColumns {
                bytes,
                dir: Cow::Owned(ColumnDirectory {
                    rows,
                    built: true,
                    count,
                    starts,
                }),
            }),
        }
    }

    /// The same directory over `bytes` (the section it was found in).
    fn with_bytes(mut self, bytes: &'b [u8]) -> EncodedColumns<'b> {
        self.bytes = bytes;
        self
    }

    fn entry(&self, k: usize) -> Entry {
        entry_at(self.bytes, k)
    }
}

/// Entry `k` of the column directory at the start of `b` (its length checked by the
/// caller).
fn entry_at(b: &[u8], k: usize) -> Entry {
    let e = HEAD + k * ENTRY;
    Entry {
        id: u32_le(b, e),
        kind: b[e + 4],
        flags: b[e + 5],
        crc: u32_le(b, e + 12),
        min: le64(&b[e + 16..e + 24]),
        max: le64(&b[e + 24..e + 32]),
    }
}

impl<'b> EncodedColumns<'b> {
    /// Where property `id` is in the directory: `Ok(k)`, or `Err(())` when no row of the
    /// run has it.
    fn find(&self, id: u32) -> Result<usize, ()> {
        let (mut lo, mut hi) = (0, self.dir.count);
        while lo < hi {
            let mid = (lo + hi) / 2;
            match u32_le(self.bytes, HEAD + mid * ENTRY).cmp(&id) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(mid),
            }
        }
        Err(())
    }

    /// Column `k`'s range, if its entry holds one (covered by the directory's checksum).
    fn range(&self, k: usize) -> Option<ColumnRange> {
        let e = self.entry(k);
        if e.flags & HAS_RANGE == 0 {
            return None;
        }
        let (a, b) = (e.min, e.max);
        match e.kind {
            KIND_INT32 => Some(ColumnRange::Int32(
                i32::try_from(a as i64).ok()?,
                i32::try_from(b as i64).ok()?,
            )),
            KIND_INT64 => Some(ColumnRange::Int64(a as i64, b as i64)),
            KIND_DATETIME => Some(ColumnRange::DateTime(a as i64, b as i64)),
            KIND_DOUBLE => {
                let (a, b) = (f64::from_bits(a), f64::from_bits(b));
                (!a.is_nan() && !b.is_nan()).then_some(ColumnRange::Double(a, b))
            }
            _ => None,
        }
    }

    /// Column `k`'s data, checksum verified.
    fn data(&self, k: usize) -> Result<&'b [u8], Corrupt> {
        let data = &self.bytes[self.dir.starts[k]..self.dir.starts[k + 1]];
        if crc32fast::hash(data) != self.entry(k).crc {
            return Err(Corrupt("a column fails its checksum"));
        }
        Ok(data)
    }

    /// Column `k`, verified and decoded (`None`: its property is tested row by row).
    fn decode(&self, k: usize) -> Result<Option<OwnedColumn>, Corrupt> {
        let kind = self.entry(k).kind;
        if kind == KIND_ROWS {
            return Ok(None);
        }
        let data = self.data(k)?;
        let words = self.dir.rows.div_ceil(64);
        // `parse` checked the length for the kind: the presence map is there.
        let (p, v) = data
            .split_at_checked(words * 8)
            .ok_or(Corrupt("columns cut short"))?;
        let present = || p.chunks_exact(8).map(le64).collect::<Vec<u64>>();
        let longs = || v.chunks_exact(8).map(le64);
        Ok(Some(match kind {
            KIND_INT32 => OwnedColumn::Int32(
                present(),
                v.chunks_exact(4)
                    .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect(),
            ),
            KIND_INT64 => OwnedColumn::Int64(present(), longs().map(|x| x as i64).collect()),
            KIND_DATETIME => OwnedColumn::DateTime(present(), longs().map(|x| x as i64).collect()),
            KIND_DOUBLE => OwnedColumn::Double(present(), longs().map(f64::from_bits).collect()),
            KIND_BOOLEAN => OwnedColumn::Boolean(present(), longs().collect()),
            _ => return Err(Corrupt("unknown column kind")),
        }))
    }
}

/// Rows `rows` of a block with its encoded columns, decoding each column the first time a
/// test asks for it (and verifying it then); a column whose range excludes a test is never
/// decoded. A column that fails its checksum reads as [`Column::Rows`] (its comparisons
/// are then tested on the rows, which have checksums of their own) and is reported by
/// [`damage`](LazyColumns::damage): the scan fails after the run.
pub(crate) struct LazyColumns<'e, 'b> {
    encoded: &'e EncodedColumns<'b>,
    rows: Range<usize>,
    decoded: Vec<std::cell::OnceCell<Option<OwnedColumn>>>,
    damage: std::cell::Cell<Option<Corrupt>>,
}

impl<'e, 'b> LazyColumns<'e, 'b> {
    /// Rows `rows` of the run whose columns are `encoded`.
    pub(crate) fn new(encoded: &'e EncodedColumns<'b>, rows: Range<usize>) -> Self {
        LazyColumns {
            encoded,
            rows,
            decoded: (0..encoded.dir.count)
                .map(|_| std::cell::OnceCell::new())
                .collect(),
            damage: std::cell::Cell::new(None),
        }
    }

    /// The damage a column read met, if any.
    pub(crate) fn damage(&self) -> Option<Corrupt> {
        self.damage.take()
    }
}

impl Columns for LazyColumns<'_, '_> {
    fn rows(&self) -> Range<usize> {
        self.rows.clone()
    }

    fn column(&self, slot: PropertySlot) -> Column<'_> {
        if !self.encoded.dir.built {
            return Column::Rows;
        }
        let Ok(k) = self.encoded.find(slot.0) else {
            return Column::Absent;
        };
        let decoded = self.decoded[k].get_or_init(|| match self.encoded.decode(k) {
            Ok(c) => c,
            Err(e) => {
                self.damage.set(Some(e));
                None
            }
        });
        match decoded {
            Some(c) => c.as_column(self.encoded.dir.rows),
            None => Column::Rows,
        }
    }

    fn range(&self, slot: PropertySlot) -> Option<ColumnRange> {
        if !self.encoded.dir.built {
            return None;
        }
        self.encoded
            .find(slot.0)
            .ok()
            .and_then(|k| self.encoded.range(k))
    }
}

/// Makes encoded columns' checksums right again after a test changed their bytes (to
/// reach the checks behind them): each column's (as far as the stored lengths go), then
/// the directory's over `bound`.
#[cfg(test)]
pub(crate) fn reseal(section: &mut [u8], bound: &[&[u8]]) {
    if section.len() < HEAD {
        return;
    }
    let count = u32_le(section, 4);
    let dir_end = if count == NO_COLUMNS {
        HEAD
    } else {
        let end = HEAD.saturating_add((count as usize).saturating_mul(ENTRY));
        if end > section.len() {
            return;
        }
        let mut at = end;
        for k in 0..count as usize {
            let e = HEAD + k * ENTRY;
            let len = u32_le(section, e + 8) as usize;
            let Some(data) = section.get(at..at.saturating_add(len)) else {
                break;
            };
            let crc = crc32fast::hash(data);
            section[e + 12..e + 16].copy_from_slice(&crc.to_le_bytes());
            at += len;
        }
        end
    };
    let crc = directory_crc(bound, &section[4..dir_end]);
    section[..4].copy_from_slice(&crc.to_le_bytes());
}

/// The directory's checksum: CRC-32 of `bound`, then of `count` and the entries.
fn directory_crc(bound: &[&[u8]], directory: &[u8]) -> u32 {
    let mut crc = crc32fast::Hasher::new();
    bound.iter().for_each(|b| crc.update(b));
    crc.update(directory);
    crc.finalize()
}

fn u32_le(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn le64(c: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(c);
    u64::from_le_bytes(b)
}

/// A column being filled (values only; the presence map is kept beside it).
enum Building {
    Int32(Vec<i32>),
    Int64(Vec<i64>),
    Double(Vec<f64>),
    Boolean(Vec<u64>),
    DateTime(Vec<i64>),
}

impl Building {
    /// An empty column of `n` rows of `kind` (`None` for a kind without a column form).
    fn new(kind: Kind, n: usize) -> Option<Building> {
        Some(match kind {
            Kind::Int32 => Building::Int32(vec![0; n]),
            Kind::Int64 => Building::Int64(vec![0; n]),
            Kind::Double => Building::Double(vec![0.0; n]),
            Kind::Boolean => Building::Boolean(vec![0; n.div_ceil(64)]),
            Kind::DateTime => Building::DateTime(vec![0; n]),
            Kind::None => return None,
        })
    }

    /// Row `i` holds `v` (of the column's kind: every value of the property is).
    #[inline]
    fn set(&mut self, i: usize, v: ValueRef<'_>) {
        match (self, v) {
            (Building::Int32(c), ValueRef::Int32(v)) => c[i] = v,
            (Building::Int64(c), ValueRef::Int64(v)) => c[i] = v,
            (Building::Double(c), ValueRef::Double(v)) => c[i] = v,
            (Building::Boolean(c), ValueRef::Boolean(v)) => c[i / 64] |= u64::from(v) << (i % 64),
            (Building::DateTime(c), ValueRef::DateTime(v)) => c[i] = v.ticks(),
            _ => {}
        }
    }

    fn finish(self, present: Vec<u64>) -> Stored {
        let column = match self {
            Building::Int32(v) => OwnedColumn::Int32(present, v),
            Building::Int64(v) => OwnedColumn::Int64(present, v),
            Building::Double(v) => OwnedColumn::Double(present, v),
            Building::Boolean(t) => OwnedColumn::Boolean(present, t),
            Building::DateTime(v) => OwnedColumn::DateTime(present, v),
        };
        let range = ColumnRange::of(&column);
        Stored::Column(column, range)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::NameOverflow;
    use tableq_model::DateTime;

    #[derive(Debug)]
    struct Overflow;
    impl From<NameOverflow> for Overflow {
        fn from(_: NameOverflow) -> Overflow {
            Overflow
        }
    }

    fn slot(id: u32, v: ValueRef<'_>) -> Slot {
        Slot::encode::<Overflow>(id, v, |_| Ok(0)).unwrap()
    }

    #[test]
    fn columns_form_for_dense_single_typed_properties() {
        let t = DateTime::from_ticks(DateTime::MIN.ticks() + 5).unwrap();
        let rows: Vec<Vec<Slot>> = (0..100)
            .map(|i| {
                let mut r = vec![
                    slot(0, ValueRef::Int32(i)),
                    slot(1, ValueRef::Boolean(i % 2 == 0)),
                ];
                // Property 2: mixed types; 3: a string; 4: a DateTime in every row;
                // 5: in 1 row of 100 (too sparse).
                r.push(slot(
                    2,
                    if i == 7 {
                        ValueRef::Int64(1)
                    } else {
                        ValueRef::Int32(1)
                    },
                ));
                r.push(slot(3, ValueRef::String("")));
                r.push(slot(4, ValueRef::DateTime(t)));
                if i == 3 {
                    r.push(slot(5, ValueRef::Double(1.0)));
                }
                r
            })
            .collect();
        let refs: Vec<&[Slot]> = rows.iter().map(Vec::as_slice).collect();
        let set = ColumnSet::build(&refs);
        match set.column(0) {
            Column::Int32 { present, values } => {
                assert_eq!(present, [u64::MAX, (1 << 36) - 1]);
                assert_eq!(values[42], 42);
            }
            other => panic!("{other:?}"),
        }
        match set.column(1) {
            Column::Boolean { trues, rows, .. } => {
                assert_eq!(rows, 100);
                assert_eq!(trues[0] & 0b111, 0b101);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(set.column(2), Column::Rows));
        assert!(matches!(set.column(3), Column::Rows));
        assert!(matches!(set.column(4), Column::DateTime { ticks, .. } if ticks[9] == t.ticks()));
        assert!(matches!(set.column(5), Column::Rows));
        assert!(matches!(set.column(6), Column::Absent));
        assert!(set.heap_bytes() > 100 * 4);
        // Encoded and decoded: the same columns.
        let mut bytes = Vec::new();
        set.encode(&mut bytes, &[b"bound"]);
        assert_eq!(ColumnSet::decode(&bytes, 100, &[b"bound"]).unwrap(), set);
        // Every changed byte fails the checksum; every cut fails too.
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x10;
            assert!(
                ColumnSet::decode(&bad, 100, &[b"bound"]).is_err(),
                "byte {i}"
            );
            assert!(
                ColumnSet::decode(&bytes[..i], 100, &[b"bound"]).is_err(),
                "cut at {i}"
            );
        }
        // Ranges: Int32 0..=99 and the DateTime; none for Booleans.
        assert_eq!(set.range(0), Some(ColumnRange::Int32(0, 99)));
        assert_eq!(set.range(1), None);
        assert_eq!(set.range(2), None);
        assert_eq!(
            set.range(4),
            Some(ColumnRange::DateTime(t.ticks(), t.ticks()))
        );
        // Read lazily: the directory alone is checked; a column is verified when read, so
        // damage in one column's data fails that column only.
        let encoded = EncodedColumns::parse(&bytes, 100, &[b"bound"]).unwrap();
        let lazy = LazyColumns::new(&encoded, 0..100);
        assert_eq!(lazy.range(PropertySlot(0)), Some(ColumnRange::Int32(0, 99)));
        assert!(matches!(lazy.column(PropertySlot(6)), Column::Absent));
        assert!(matches!(lazy.column(PropertySlot(2)), Column::Rows));
        assert!(lazy.damage().is_none());
        let last = bytes.len() - 1; // the DateTime column's last value
        let mut bad = bytes.clone();
        bad[last] ^= 1;
        let encoded = EncodedColumns::parse(&bad, 100, &[b"bound"]).unwrap();
        let lazy = LazyColumns::new(&encoded, 0..100);
        assert!(matches!(lazy.column(PropertySlot(0)), Column::Int32 { .. }));
        assert!(lazy.damage().is_none());
        assert!(matches!(lazy.column(PropertySlot(4)), Column::Rows));
        assert_eq!(lazy.damage(), Some(Corrupt("a column fails its checksum")));
        // The directory vouches for its bound bytes: others fail it.
        assert!(EncodedColumns::parse(&bytes, 100, &[b"bounD"]).is_err());
        // Damage in the directory (a range's byte) fails the parse.
        let mut bad = bytes.clone();
        bad[HEAD + 16] ^= 1;
        assert!(EncodedColumns::parse(&bad, 100, &[b"bound"]).is_err());
        // Too few rows: no columns at all.
        let few = ColumnSet::build(&refs[..10]);
        assert!(matches!(few.column(0), Column::Rows));
        assert!(matches!(few.column(6), Column::Rows));
        let mut bytes = Vec::new();
        few.encode(&mut bytes, &[b"bound"]);
        assert_eq!(ColumnSet::decode(&bytes, 10, &[b"bound"]).unwrap(), few);
        // Bytes appended after columns: refused (a zero after `FF FF FF FF` would pass
        // CRC-32 alone).
        for columns in [&set, &few] {
            let mut longer = Vec::new();
            columns.encode(&mut longer, &[b"bound"]);
            longer.push(0);
            assert!(ColumnSet::verify(&longer, columns.rows, &[b"bound"]).is_err());
        }
    }
}

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
//! encoded = crc:u32  count:u32  column*            count = u32::MAX: no columns (none())
//! column  = id:u32  kind:u8  present:words × u64  values
//! values  = Int32 rows × i32 | Int64, Double (bits), DateTime (ticks) rows × u64
//!         | Boolean words × u64 (the trues)        | nothing for kind 0 (rows)
//! ```
//!
//! `crc` is the CRC-32 of everything after it; `words` = ⌈rows / 64⌉; kinds 0 rows,
//! 1 Int32, 2 Int64, 3 Double, 4 Boolean, 5 DateTime; columns by ascending `id`.

use super::Corrupt;
use super::Slot;
use std::ops::Range;
use tableq_exec::PropertySlot;
use tableq_exec::batch::{Column, Columns, OwnedColumn};
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
}

/// A property gets a column when at least one row in `DENSITY` holds it.
pub(crate) const DENSITY: usize = 8;

/// Partitions smaller than this get no columns (their rows are tested one by one).
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
    /// Sorted by property number.
    columns: Vec<(u32, Stored)>,
}

#[derive(Debug, PartialEq)]
enum Stored {
    /// A column.
    Column(OwnedColumn),
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
        let n = rows.len();
        // Slots are sorted by number: a row's last holds its largest.
        let max_id = rows.iter().filter_map(|r| r.last()).map(|s| s.id()).max();
        let Some(max_id) = max_id.map(|m| m as usize) else {
            return ColumnSet::none();
        };
        if n < MIN_ROWS || max_id >= MAX_ID {
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
        ColumnSet {
            built: true,
            rows: n,
            columns,
        }
    }

    /// The column of property `id`.
    #[inline]
    pub(crate) fn column(&self, id: u32) -> Column<'_> {
        if !self.built {
            return Column::Rows;
        }
        let Ok(at) = self.columns.binary_search_by_key(&id, |e| e.0) else {
            return Column::Absent;
        };
        match &self.columns[at].1 {
            Stored::Column(c) => c.as_column(self.rows),
            Stored::Rows => Column::Rows,
        }
    }

    /// Heap bytes used.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.columns.capacity() * size_of::<(u32, Stored)>()
            + self
                .columns
                .iter()
                .map(|(_, s)| match s {
                    Stored::Column(c) => c.heap_bytes(),
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

impl ColumnSet {
    /// Appends the encoded columns (see the module docs) to `out`.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&[0; 4]);
        if !self.built {
            out.extend_from_slice(&NO_COLUMNS.to_le_bytes());
        } else {
            out.extend_from_slice(&(self.columns.len() as u32).to_le_bytes());
            for (id, stored) in &self.columns {
                out.extend_from_slice(&id.to_le_bytes());
                let words = |out: &mut Vec<u8>, w: &[u64]| {
                    for x in w {
                        out.extend_from_slice(&x.to_le_bytes());
                    }
                };
                match stored {
                    Stored::Rows => out.push(KIND_ROWS),
                    Stored::Column(OwnedColumn::Int32(p, v)) => {
                        out.push(KIND_INT32);
                        words(out, p);
                        v.iter()
                            .for_each(|x| out.extend_from_slice(&x.to_le_bytes()));
                    }
                    Stored::Column(OwnedColumn::Int64(p, v)) => {
                        out.push(KIND_INT64);
                        words(out, p);
                        v.iter()
                            .for_each(|x| out.extend_from_slice(&x.to_le_bytes()));
                    }
                    Stored::Column(OwnedColumn::Double(p, v)) => {
                        out.push(KIND_DOUBLE);
                        words(out, p);
                        v.iter()
                            .for_each(|x| out.extend_from_slice(&x.to_bits().to_le_bytes()));
                    }
                    Stored::Column(OwnedColumn::Boolean(p, t)) => {
                        out.push(KIND_BOOLEAN);
                        words(out, p);
                        words(out, t);
                    }
                    Stored::Column(OwnedColumn::DateTime(p, v)) => {
                        out.push(KIND_DATETIME);
                        words(out, p);
                        v.iter()
                            .for_each(|x| out.extend_from_slice(&x.to_le_bytes()));
                    }
                }
            }
        }
        let crc = crc32fast::hash(&out[start + 4..]);
        out[start..start + 4].copy_from_slice(&crc.to_le_bytes());
    }

    /// Whether `bytes` are the encoded columns of `rows` rows: their checksum, then their
    /// layout (ascending ids, known kinds, every length exact to the end), without
    /// decoding them — what a reader checks before trusting them. (The checksum alone does
    /// not cover the section's length: CRC-32 cannot see zero bytes appended after a run of
    /// `FF` bytes, such as the `count` of a run without columns.)
    pub(crate) fn verify(bytes: &[u8], rows: usize) -> Result<(), Corrupt> {
        let (crc, rest) = bytes
            .split_first_chunk::<4>()
            .ok_or(Corrupt("columns cut short"))?;
        if u32::from_le_bytes(*crc) != crc32fast::hash(rest) {
            return Err(Corrupt("the block's columns fail their checksum"));
        }
        let mut r = Reader(rest);
        let count = r.u32()?;
        if count != NO_COLUMNS {
            let words = rows.div_ceil(64);
            let mut last = None;
            for _ in 0..count {
                let id = r.u32()?;
                if last.is_some_and(|l| l >= id) {
                    return Err(Corrupt("columns out of order"));
                }
                last = Some(id);
                match r.u8()? {
                    KIND_ROWS => {}
                    KIND_INT32 => {
                        r.take(words, 8)?;
                        r.take(rows, 4)?;
                    }
                    KIND_INT64 | KIND_DATETIME | KIND_DOUBLE => {
                        r.take(words, 8)?;
                        r.take(rows, 8)?;
                    }
                    KIND_BOOLEAN => {
                        r.take(words, 8)?;
                        r.take(words, 8)?;
                    }
                    _ => return Err(Corrupt("unknown column kind")),
                }
            }
        }
        r.end()
    }

    /// Decodes the columns of `rows` rows from `bytes` (checksum verified first); every
    /// length is checked, so damage is a [`Corrupt`], never a panic.
    pub(crate) fn decode(bytes: &[u8], rows: usize) -> Result<ColumnSet, Corrupt> {
        ColumnSet::verify(bytes, rows)?;
        let mut r = Reader(&bytes[4..]);
        let count = r.u32()?;
        if count == NO_COLUMNS {
            return r.end().map(|()| ColumnSet::none());
        }
        let words = rows.div_ceil(64);
        let mut columns = Vec::with_capacity((count as usize).min(1024));
        for _ in 0..count {
            let id = r.u32()?;
            if columns.last().is_some_and(|(last, _)| *last >= id) {
                return Err(Corrupt("columns out of order"));
            }
            let kind = r.u8()?;
            let stored = match kind {
                KIND_ROWS => Stored::Rows,
                KIND_INT32 => {
                    let p = r.words(words)?;
                    let v = r.take(rows, 4)?;
                    Stored::Column(OwnedColumn::Int32(
                        p,
                        v.chunks_exact(4)
                            .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                            .collect(),
                    ))
                }
                KIND_INT64 | KIND_DATETIME | KIND_DOUBLE => {
                    let p = r.words(words)?;
                    let v: Vec<u64> = r.take(rows, 8)?.chunks_exact(8).map(le64).collect();
                    Stored::Column(match kind {
                        KIND_INT64 => OwnedColumn::Int64(p, v.iter().map(|&x| x as i64).collect()),
                        KIND_DATETIME => {
                            OwnedColumn::DateTime(p, v.iter().map(|&x| x as i64).collect())
                        }
                        _ => OwnedColumn::Double(p, v.iter().map(|&x| f64::from_bits(x)).collect()),
                    })
                }
                KIND_BOOLEAN => {
                    let p = r.words(words)?;
                    let t = r.words(words)?;
                    Stored::Column(OwnedColumn::Boolean(p, t))
                }
                _ => return Err(Corrupt("unknown column kind")),
            };
            columns.push((id, stored));
        }
        r.end()?;
        Ok(ColumnSet {
            built: true,
            rows,
            columns,
        })
    }
}

fn le64(c: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(c);
    u64::from_le_bytes(b)
}

/// Reads encoded columns front to back, checking every length.
struct Reader<'b>(&'b [u8]);

impl<'b> Reader<'b> {
    fn take(&mut self, n: usize, width: usize) -> Result<&'b [u8], Corrupt> {
        let len = n.checked_mul(width).ok_or(Corrupt("columns cut short"))?;
        if self.0.len() < len {
            return Err(Corrupt("columns cut short"));
        }
        let (head, rest) = self.0.split_at(len);
        self.0 = rest;
        Ok(head)
    }
    fn u8(&mut self) -> Result<u8, Corrupt> {
        Ok(self.take(1, 1)?[0])
    }
    fn u32(&mut self) -> Result<u32, Corrupt> {
        let b = self.take(1, 4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn words(&mut self, n: usize) -> Result<Vec<u64>, Corrupt> {
        Ok(self.take(n, 8)?.chunks_exact(8).map(le64).collect())
    }
    fn end(&self) -> Result<(), Corrupt> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(Corrupt("bytes after the columns"))
        }
    }
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
        Stored::Column(match self {
            Building::Int32(v) => OwnedColumn::Int32(present, v),
            Building::Int64(v) => OwnedColumn::Int64(present, v),
            Building::Double(v) => OwnedColumn::Double(present, v),
            Building::Boolean(t) => OwnedColumn::Boolean(present, t),
            Building::DateTime(v) => OwnedColumn::DateTime(present, v),
        })
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
        set.encode(&mut bytes);
        assert_eq!(ColumnSet::decode(&bytes, 100).unwrap(), set);
        // Every changed byte fails the checksum; every cut fails too.
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x10;
            assert!(ColumnSet::decode(&bad, 100).is_err(), "byte {i}");
            assert!(ColumnSet::decode(&bytes[..i], 100).is_err(), "cut at {i}");
        }
        // Too few rows: no columns at all.
        let few = ColumnSet::build(&refs[..10]);
        assert!(matches!(few.column(0), Column::Rows));
        assert!(matches!(few.column(6), Column::Rows));
        let mut bytes = Vec::new();
        few.encode(&mut bytes);
        assert_eq!(ColumnSet::decode(&bytes, 10).unwrap(), few);
        // Bytes appended after columns: refused (a zero after `FF FF FF FF` would pass
        // CRC-32 alone).
        for columns in [&set, &few] {
            let mut longer = Vec::new();
            columns.encode(&mut longer);
            longer.push(0);
            assert!(ColumnSet::verify(&longer, columns.rows).is_err());
        }
    }
}

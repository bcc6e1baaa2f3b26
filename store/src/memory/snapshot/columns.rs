//! The columns of a compact partition: for each property that enough of its rows hold with
//! one fixed-width type (Int32, Int64, Double, Boolean, DateTime), the values in row order
//! as a typed array with a presence map — the PAX-style half of the memory engine's layout,
//! which lets a residual test a whole column in a tight loop
//! ([`tableq_exec::batch`]) instead of reading every row's slots. The rows keep every
//! value as well (point gets, projections and the other types read them there): the columns
//! are a second copy of the fixed-width values, built once when a partition is built.
//!
//! A property gets a column in a partition when every row that has it holds the same
//! type, that type has a column form, and at least one row in [`DENSITY`] has it (a
//! column costs memory for every row of the partition, present or not). Otherwise its
//! comparisons are tested row by row ([`Column::Rows`]), as are those of partitions built
//! without columns (the small blocks of the write overlay) — [`ColumnSet::none`].

use crate::codec::Slot;
use tableq_exec::batch::Column;
use tableq_model::ValueRef;

/// A property gets a column when at least one row in `DENSITY` holds it.
pub(crate) const DENSITY: usize = 8;

/// Partitions smaller than this get no columns (their rows are tested one by one).
pub(crate) const MIN_ROWS: usize = 64;

/// The columns of one partition, by property number.
#[derive(Debug, Default)]
pub(crate) struct ColumnSet {
    /// Whether columns were built: without, every property reads as [`Column::Rows`].
    built: bool,
    rows: usize,
    /// Sorted by property number.
    columns: Vec<(u32, Stored)>,
}

#[derive(Debug)]
enum Stored {
    Int32(Vec<u64>, Vec<i32>),
    Int64(Vec<u64>, Vec<i64>),
    Double(Vec<u64>, Vec<f64>),
    Boolean(Vec<u64>, Vec<u64>),
    DateTime(Vec<u64>, Vec<i64>),
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
        if n < MIN_ROWS {
            return ColumnSet::none();
        }
        // Per property: rows holding it, and its one kind (or None when it has several).
        let mut seen: Vec<(u32, usize, Kind)> = Vec::new();
        for slots in rows {
            for slot in slots.iter() {
                let kind = kind_of(fixed(*slot));
                let id = slot.id();
                match seen.binary_search_by_key(&id, |e| e.0) {
                    Ok(at) => {
                        let e = &mut seen[at];
                        e.1 += 1;
                        if e.2 != kind {
                            e.2 = Kind::None;
                        }
                    }
                    Err(at) => seen.insert(at, (id, 1, kind)),
                }
            }
        }
        let words = n.div_ceil(64);
        let columns = seen
            .into_iter()
            .map(|(id, count, kind)| {
                let stored = if count * DENSITY < n {
                    Stored::Rows
                } else {
                    fill(rows, id, kind, words)
                };
                (id, stored)
            })
            .collect();
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
            Stored::Int32(present, values) => Column::Int32 { present, values },
            Stored::Int64(present, values) => Column::Int64 { present, values },
            Stored::Double(present, values) => Column::Double { present, values },
            Stored::Boolean(present, trues) => Column::Boolean {
                present,
                trues,
                rows: self.rows,
            },
            Stored::DateTime(present, ticks) => Column::DateTime { present, ticks },
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
                    Stored::Int32(p, v) => p.capacity() * 8 + v.capacity() * 4,
                    Stored::Int64(p, v) | Stored::DateTime(p, v) => {
                        p.capacity() * 8 + v.capacity() * 8
                    }
                    Stored::Double(p, v) => p.capacity() * 8 + v.capacity() * 8,
                    Stored::Boolean(p, t) => p.capacity() * 8 + t.capacity() * 8,
                    Stored::Rows => 0,
                })
                .sum::<usize>()
    }
}

/// The column of property `id`, of kind `kind`, over `rows`.
fn fill(rows: &[&[Slot]], id: u32, kind: Kind, words: usize) -> Stored {
    let mut present = vec![0u64; words];
    // Each row's value of `id` (its slots are sorted by number).
    let value = |slots: &[Slot]| {
        slots
            .binary_search_by_key(&id, |s| s.id())
            .ok()
            .map(|at| fixed(slots[at]))
    };
    for (i, slots) in rows.iter().enumerate() {
        if value(slots).is_some() {
            present[i / 64] |= 1 << (i % 64);
        }
    }
    macro_rules! typed {
        ($variant:ident, $default:expr, $pick:pat => $out:expr) => {
            Stored::$variant(
                present,
                rows.iter()
                    .map(|slots| match value(slots) {
                        Some($pick) => $out,
                        _ => $default,
                    })
                    .collect(),
            )
        };
    }
    match kind {
        Kind::Int32 => typed!(Int32, 0, ValueRef::Int32(v) => v),
        Kind::Int64 => typed!(Int64, 0, ValueRef::Int64(v) => v),
        Kind::Double => typed!(Double, 0.0, ValueRef::Double(v) => v),
        Kind::DateTime => typed!(DateTime, 0, ValueRef::DateTime(v) => v.ticks()),
        Kind::Boolean => {
            let mut trues = vec![0u64; words];
            for (i, slots) in rows.iter().enumerate() {
                if let Some(ValueRef::Boolean(true)) = value(slots) {
                    trues[i / 64] |= 1 << (i % 64);
                }
            }
            Stored::Boolean(present, trues)
        }
        Kind::None => Stored::Rows,
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
        // Too few rows: no columns at all.
        let few = ColumnSet::build(&refs[..10]);
        assert!(matches!(few.column(0), Column::Rows));
        assert!(matches!(few.column(6), Column::Rows));
    }
}

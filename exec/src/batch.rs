//! Column batches: how a source that stores properties column by column (a PAX-style
//! layout: per run of rows, per property, typed values and a presence map) hands a run of
//! rows to a compiled residual, which then tests each comparison over a whole column in a
//! tight loop ([`ValueTest`]'s column kernels) instead of reading the property row by row.
//!
//! A source describes a run with [`Columns`]: which rows of its *column space* (row
//! numbers its columns are indexed by, e.g. the rows of one partition) the run covers, and
//! for each property slot a [`Column`]. A column holds the values of one type; a property
//! stored with several types in the run, or of a type without a column form (strings,
//! Guids, binaries), is [`Column::Rows`]: its comparisons are then tested row by row, so
//! every source and every predicate still gets the same answer
//! ([`EntitySource::scan_filtered`](crate::EntitySource::scan_filtered)).
//!
//! Results are bitmaps of [`WORD_ROWS`] rows a word, aligned to the column space: word `k`
//! of a run's result covers rows `(first_word + k) · 64 ..`, where `first_word` is the word
//! of the run's first row ([`Columns::words`]).
//!
//! ```
//! use tableq_exec::batch::Column;
//! use tableq_exec::ValueTest;
//! use tableq_model::{CmpOp, Value};
//! // Rows 0 and 2 have Age (7 and 40); row 1 has none.
//! let ages = Column::Int32 { present: &[0b101], values: &[7, 0, 40] };
//! let mut out = [0u64; 1];
//! assert!(ages.test(&ValueTest::new(CmpOp::Gt, &Value::Int32(5)), 0, &mut out));
//! assert_eq!(out[0], 0b101); // row 1's stored 0 is not a value: it is absent
//! ```

use crate::comparison::{ValueTest, WORD_ROWS};
use crate::slot::PropertySlot;
use std::ops::Range;

/// The values of one property over a source's column space (see the module docs). Bit
/// `i` of `present` is set when row `i` has the property; the value at `i` is then in
/// `values` (anything when the row has none).
#[derive(Debug, Clone, Copy)]
pub enum Column<'a> {
    /// No row of the run has the property.
    Absent,
    /// Int32 values.
    Int32 {
        /// Which rows have the property.
        present: &'a [u64],
        /// One value per row.
        values: &'a [i32],
    },
    /// Int64 values.
    Int64 {
        /// Which rows have the property.
        present: &'a [u64],
        /// One value per row.
        values: &'a [i64],
    },
    /// Double values.
    Double {
        /// Which rows have the property.
        present: &'a [u64],
        /// One value per row.
        values: &'a [f64],
    },
    /// Boolean values, as a bitmap of the rows whose value is `true`.
    Boolean {
        /// Which rows have the property.
        present: &'a [u64],
        /// Which rows hold `true`.
        trues: &'a [u64],
        /// Rows of the column space the bitmaps cover.
        rows: usize,
    },
    /// DateTime values, as ticks.
    DateTime {
        /// Which rows have the property.
        present: &'a [u64],
        /// One value per row, in ticks.
        ticks: &'a [i64],
    },
    /// No column form (several types in the run, or a type without one): test rows one
    /// by one.
    Rows,
}

impl Column<'_> {
    /// Tests the column's words `first_word .. first_word + out.len()` against `test`
    /// (rows without the property fail it). `false` when the column is
    /// [`Column::Rows`] (`out` untouched): the caller tests rows instead.
    pub fn test(&self, test: &ValueTest, first_word: usize, out: &mut [u64]) -> bool {
        let present = match *self {
            Column::Absent => {
                out.fill(0);
                return true;
            }
            Column::Rows => return false,
            Column::Int32 { present, values } => {
                test.int32_words(values, first_word, out);
                present
            }
            Column::Int64 { present, values } => {
                test.int64_words(values, first_word, out);
                present
            }
            Column::Double { present, values } => {
                test.double_words(values, first_word, out);
                present
            }
            Column::Boolean {
                present,
                trues,
                rows,
            } => {
                test.boolean_words(trues, rows, first_word, out);
                present
            }
            Column::DateTime { present, ticks } => {
                test.ticks_words(ticks, first_word, out);
                present
            }
        };
        for (k, word) in out.iter_mut().enumerate() {
            *word &= present.get(first_word + k).copied().unwrap_or(0);
        }
        true
    }
}

/// The smallest and the largest value a column holds over a run's present rows: a small
/// statistic a source may keep per run ([`Columns::range`]), which lets a comparison that
/// no value in it can satisfy fail the whole run without reading the column
/// ([`ColumnRange::excludes`]). A Double column has a range only when it holds no NaN.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ColumnRange {
    /// Int32 values from `.0` to `.1`.
    Int32(i32, i32),
    /// Int64 values from `.0` to `.1`.
    Int64(i64, i64),
    /// Double values from `.0` to `.1` (neither NaN).
    Double(f64, f64),
    /// DateTime values from `.0` to `.1` ticks.
    DateTime(i64, i64),
}

impl ColumnRange {
    /// Whether no value in the range satisfies `test` (rows without the property satisfy
    /// none either): then the test fails on every row of the run.
    ///
    /// ```
    /// use tableq_exec::batch::ColumnRange;
    /// use tableq_exec::ValueTest;
    /// use tableq_model::{CmpOp, Value};
    /// let ages = ColumnRange::Int32(0, 99);
    /// assert!(ages.excludes(&ValueTest::new(CmpOp::Lt, &Value::Int32(0))));
    /// assert!(!ages.excludes(&ValueTest::new(CmpOp::Eq, &Value::Int32(42))));
    /// ```
    #[inline]
    pub fn excludes(&self, test: &ValueTest) -> bool {
        match *self {
            ColumnRange::Int32(lo, hi) => test.excludes_int32(lo, hi),
            ColumnRange::Int64(lo, hi) => test.excludes_int64(lo, hi),
            ColumnRange::Double(lo, hi) => test.excludes_double(lo, hi),
            ColumnRange::DateTime(lo, hi) => test.excludes_ticks(lo, hi),
        }
    }

    /// The range of a column's present values (`None` for a column without values in
    /// `present`, a Boolean column, or a Double column holding a NaN).
    pub fn of(column: &OwnedColumn) -> Option<ColumnRange> {
        fn span<T: Copy + PartialOrd>(present: &[u64], values: &[T]) -> Option<(T, T)> {
            let mut range: Option<(T, T)> = None;
            for (i, &v) in values.iter().enumerate() {
                if present
                    .get(i / WORD_ROWS)
                    .is_some_and(|w| w >> (i % WORD_ROWS) & 1 == 1)
                {
                    range = Some(match range {
                        None => (v, v),
                        Some((lo, hi)) => {
                            (if v < lo { v } else { lo }, if v > hi { v } else { hi })
                        }
                    });
                }
            }
            range
        }
        match column {
            OwnedColumn::Int32(p, v) => span(p, v).map(|(a, b)| ColumnRange::Int32(a, b)),
            OwnedColumn::Int64(p, v) => span(p, v).map(|(a, b)| ColumnRange::Int64(a, b)),
            OwnedColumn::DateTime(p, v) => span(p, v).map(|(a, b)| ColumnRange::DateTime(a, b)),
            OwnedColumn::Double(p, v) => {
                let nan = v.iter().enumerate().any(|(i, d)| {
                    d.is_nan()
                        && p.get(i / WORD_ROWS)
                            .is_some_and(|w| w >> (i % WORD_ROWS) & 1 == 1)
                });
                if nan {
                    None
                } else {
                    span(p, v).map(|(a, b)| ColumnRange::Double(a, b))
                }
            }
            OwnedColumn::Boolean(..) => None,
        }
    }
}

/// A column a source owns: typed values of one type with their presence map (bit `i` of
/// `present` set when row `i` has the property) — what [`Column`] borrows. Sources that
/// build their columns in memory keep them in this form.
#[derive(Debug, Clone, PartialEq)]
pub enum OwnedColumn {
    /// Int32 values.
    Int32(Vec<u64>, Vec<i32>),
    /// Int64 values.
    Int64(Vec<u64>, Vec<i64>),
    /// Double values.
    Double(Vec<u64>, Vec<f64>),
    /// Boolean values, as a bitmap of the `true`s.
    Boolean(Vec<u64>, Vec<u64>),
    /// DateTime values, as ticks.
    DateTime(Vec<u64>, Vec<i64>),
}

impl OwnedColumn {
    /// The column, borrowed, over a column space of `rows` rows.
    #[inline]
    pub fn as_column(&self, rows: usize) -> Column<'_> {
        match self {
            OwnedColumn::Int32(present, values) => Column::Int32 { present, values },
            OwnedColumn::Int64(present, values) => Column::Int64 { present, values },
            OwnedColumn::Double(present, values) => Column::Double { present, values },
            OwnedColumn::Boolean(present, trues) => Column::Boolean {
                present,
                trues,
                rows,
            },
            OwnedColumn::DateTime(present, ticks) => Column::DateTime { present, ticks },
        }
    }

    /// Heap bytes used.
    pub fn heap_bytes(&self) -> usize {
        match self {
            OwnedColumn::Int32(p, v) => p.capacity() * 8 + v.capacity() * 4,
            OwnedColumn::Int64(p, v) | OwnedColumn::DateTime(p, v) => {
                p.capacity() * 8 + v.capacity() * 8
            }
            OwnedColumn::Double(p, v) => p.capacity() * 8 + v.capacity() * 8,
            OwnedColumn::Boolean(p, t) => p.capacity() * 8 + t.capacity() * 8,
        }
    }
}

/// A run of rows a source stores column by column (see the module docs).
pub trait Columns {
    /// The run's rows in the column space.
    fn rows(&self) -> Range<usize>;

    /// The column of a property slot the source issued.
    fn column(&self, slot: PropertySlot) -> Column<'_>;

    /// The range of the values of a property slot's column over the run, when the source
    /// keeps one: a comparison it excludes fails every row of the run without
    /// [`column`](Columns::column) being asked (a source that decodes columns on demand
    /// then never decodes it). `None` (the default) proves nothing. A source must not
    /// return a range narrower than the column's present values.
    fn range(&self, _slot: PropertySlot) -> Option<ColumnRange> {
        None
    }

    /// The bitmap words covering the run: `(first_word, words)`.
    fn words(&self) -> (usize, usize) {
        let rows = self.rows();
        let first = rows.start / WORD_ROWS;
        (first, rows.end.div_ceil(WORD_ROWS).saturating_sub(first))
    }
}

/// Clears the bits of `out` (words from `first_word`) outside `rows`.
pub fn keep_only(out: &mut [u64], first_word: usize, rows: &Range<usize>) {
    for (k, word) in out.iter_mut().enumerate() {
        let start = (first_word + k) * WORD_ROWS;
        let lo = rows.start.saturating_sub(start).min(WORD_ROWS);
        let hi = rows.end.saturating_sub(start).min(WORD_ROWS);
        *word &= bits_between(lo, hi);
    }
}

/// Bits `lo..hi` of a word.
fn bits_between(lo: usize, hi: usize) -> u64 {
    if lo >= hi {
        return 0;
    }
    let upto = |n: usize| {
        if n >= WORD_ROWS {
            u64::MAX
        } else {
            (1u64 << n) - 1
        }
    };
    upto(hi) & !upto(lo)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keep_only_clears_outside_the_run() {
        let mut out = [u64::MAX; 3];
        keep_only(&mut out, 1, &(70..190));
        // Words 1, 2 and 3: rows 64–127, 128–191, 192–255.
        assert_eq!(out[0], !((1u64 << 6) - 1));
        assert_eq!(out[1], (1u64 << 62) - 1);
        assert_eq!(out[2], 0);
        let mut one = [u64::MAX];
        keep_only(&mut one, 0, &(3..3));
        assert_eq!(one[0], 0);
    }

    struct Run(Range<usize>);
    impl Columns for Run {
        fn rows(&self) -> Range<usize> {
            self.0.clone()
        }
        fn column(&self, _: PropertySlot) -> Column<'_> {
            Column::Rows
        }
    }

    #[test]
    fn words_cover_the_run() {
        assert_eq!(Run(0..0).words(), (0, 0));
        assert_eq!(Run(0..64).words(), (0, 1));
        assert_eq!(Run(63..65).words(), (0, 2));
        assert_eq!(Run(128..129).words(), (2, 1));
    }
}

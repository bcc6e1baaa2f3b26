//! Applying one write's [`Change`]s to the blocks of a table, inside the writer's redb
//! transaction.
//!
//! The changes are sorted by key and handled block by block: the block that can hold a
//! key is the last block of its partition whose key (first RowKey) is `<=` it — or, for a
//! key before the partition's first block, that first block — and it takes every change
//! below the next block's key. Its rows and the changes are merged (unchanged rows are
//! copied as bytes), and the result is written back as one or more blocks keyed by their
//! first RowKey:
//!
//! * a block over the limits is split — evenly, or, when the write only appended rows
//!   after the end of the partition, by filling blocks in order (so that sequential
//!   inserts leave full blocks behind); an entity larger than the byte limit gets a block
//!   of its own;
//! * a block left empty is removed; one left small by deletes absorbs the next block of its
//!   partition when both fit in three quarters of the limits.
//!
//! Block lookups are redone from the transaction's current state for every block, so a
//! split or merge earlier in the same write is seen by the changes after it.
//!
//! ```text
//! before: [r01 r02 r03 r04]            insert r05 (append)     [r01 r02 r03 r04] [r05]
//! limits: 4 rows                       insert r00 (evenly)     [r00 r01 r02] [r03 r04 r05]
//! ```

use super::Limits;
use super::block::{
    BlockView, EncodeError, RowRef, block_overhead, build_block, encode_row, row_share,
};
use super::keys::{compare_utf8, entity_key, partition_prefix};
use super::names::Names;
use crate::error::StoreError;
use crate::resolve::Change;
use redb::{ReadableTable, Table};
use std::borrow::Cow;
use std::cmp::Ordering;
use std::ops::{Bound, Range};
use tableq_exec::compare_keys;

pub(crate) type RowsTable<'txn> = Table<'txn, &'static [u8], &'static [u8]>;

/// One change, encoded.
struct Item {
    pk: String,
    rk: String,
    /// The new row, or `None` to delete.
    row: Option<Vec<u8>>,
}

/// A block read from the table: its key and bytes.
type Stored = (Vec<u8>, Vec<u8>);

fn storage(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> StoreError {
    StoreError::storage(e)
}

/// The last block `<= key` whose key starts with `prefix`.
fn floor_in(rows: &RowsTable<'_>, key: &[u8], prefix: &[u8]) -> Result<Option<Stored>, StoreError> {
    match rows.range::<&[u8]>(..=key).map_err(storage)?.next_back() {
        Some(item) => {
            let (k, v) = item.map_err(storage)?;
            Ok(k.value()
                .starts_with(prefix)
                .then(|| (k.value().to_vec(), v.value().to_vec())))
        }
        None => Ok(None),
    }
}

/// The first block after `after` (or at/after it when `inclusive`) whose key starts with
/// `prefix`.
fn next_in(
    rows: &RowsTable<'_>,
    after: &[u8],
    inclusive: bool,
    prefix: &[u8],
) -> Result<Option<Stored>, StoreError> {
    let lower = if inclusive {
        Bound::Included(after)
    } else {
        Bound::Excluded(after)
    };
    match rows
        .range::<&[u8]>((lower, Bound::Unbounded))
        .map_err(storage)?
        .next()
    {
        Some(item) => {
            let (k, v) = item.map_err(storage)?;
            Ok(k.value()
                .starts_with(prefix)
                .then(|| (k.value().to_vec(), v.value().to_vec())))
        }
        None => Ok(None),
    }
}

/// Parses and checks a stored block.
fn checked<'b>(bytes: &'b [u8], names: &Names) -> Result<BlockView<'b>, StoreError> {
    let view = BlockView::parse(bytes).map_err(storage)?;
    view.check_rows(names.len()).map_err(storage)?;
    Ok(view)
}

/// Applies `changes` (distinct keys, as [`crate::resolve()`] returns them) to table
/// `table`, numbering new property names in `names`; returns the numbers of the names it
/// added (the caller stores them).
pub(crate) fn apply(
    rows: &mut RowsTable<'_>,
    table: u64,
    names: &mut Names,
    limits: Limits,
    changes: Vec<Change>,
) -> Result<Vec<u32>, StoreError> {
    let mut added = Vec::new();
    let mut items = Vec::with_capacity(changes.len());
    for change in changes {
        let item = match change {
            Change::Put(entity) => {
                let row = encode_row(&entity, &mut |name| match names.id(name) {
                    Some(id) => Ok(id),
                    None => {
                        let id = names.push(name).ok_or(EncodeError::TooManyNames)?;
                        added.push(id);
                        Ok(id)
                    }
                })
                .map_err(storage)?;
                let (pk, rk) = (entity.partition_key(), entity.row_key());
                Item {
                    pk: pk.to_owned(),
                    rk: rk.to_owned(),
                    row: Some(row),
                }
            }
            Change::Delete {
                partition_key,
                row_key,
            } => Item {
                pk: partition_key,
                rk: row_key,
                row: None,
            },
        };
        items.push(item);
    }
    items.sort_by(|a, b| compare_keys(&a.pk, &a.rk, &b.pk, &b.rk));
    let mut i = 0;
    while i < items.len() {
        i = edit_block(rows, table, names, limits, &items, i)?;
    }
    Ok(added)
}

/// Applies the changes from `items[i]` on that fall into one block; returns the index of
/// the first change it did not apply.
fn edit_block(
    rows: &mut RowsTable<'_>,
    table: u64,
    names: &Names,
    limits: Limits,
    items: &[Item],
    i: usize,
) -> Result<usize, StoreError> {
    let pk = items[i].pk.as_str();
    let prefix = partition_prefix(table, pk);
    let key = entity_key(table, pk, &items[i].rk);
    let block = match floor_in(rows, &key, &prefix)? {
        Some(b) => Some(b),
        None => next_in(rows, &key, true, &prefix)?,
    };
    let next_key = match &block {
        Some((k, _)) => next_in(rows, k, false, &prefix)?.map(|(k, _)| k),
        None => None,
    };
    let mut j = i + 1;
    while j < items.len()
        && items[j].pk == pk
        && next_key
            .as_ref()
            .is_none_or(|nk| entity_key(table, pk, &items[j].rk) < *nk)
    {
        j += 1;
    }
    let changes = &items[i..j];
    let old = match &block {
        Some((_, bytes)) => Some(checked(bytes, names)?),
        None => None,
    };
    let old_rows: Vec<RowRef<'_>> = old
        .map(|v| (0..v.len()).map(|r| v.row(r)).collect())
        .unwrap_or_default();
    let appends_only = next_key.is_none()
        && changes.iter().all(|c| c.row.is_some())
        && old_rows.last().is_none_or(|last| {
            compare_utf8(changes[0].rk.as_bytes(), last.row_key_bytes()) == Ordering::Greater
        });
    let deletes = changes.iter().any(|c| c.row.is_none());
    let mut merged: Vec<Cow<'_, [u8]>> = Vec::with_capacity(old_rows.len() + changes.len());
    let mut o = 0;
    for change in changes {
        let rk = change.rk.as_bytes();
        while o < old_rows.len() && compare_utf8(old_rows[o].row_key_bytes(), rk) == Ordering::Less
        {
            merged.push(Cow::Borrowed(old_rows[o].bytes()));
            o += 1;
        }
        if o < old_rows.len() && old_rows[o].row_key_bytes() == rk {
            o += 1; // replaced or deleted
        }
        if let Some(row) = &change.row {
            merged.push(Cow::Borrowed(row));
        }
    }
    merged.extend(old_rows[o..].iter().map(|r| Cow::Borrowed(r.bytes())));
    // A block left small by deletes absorbs the next block of the partition if both fit.
    let size = |rows: &[Cow<'_, [u8]>]| -> usize {
        block_overhead(pk) + rows.iter().map(|r| row_share(r)).sum::<usize>()
    };
    let next_block = match &next_key {
        Some(nk)
            if deletes
                && !merged.is_empty()
                && merged.len() <= limits.rows / 4
                && size(&merged) <= limits.bytes / 4 =>
        {
            rows.get(nk.as_slice())
                .map_err(storage)?
                .map(|v| (nk.clone(), v.value().to_vec()))
        }
        _ => None,
    };
    let mut absorbed: Option<&[u8]> = None;
    if let Some((nk, bytes)) = &next_block {
        let view = checked(bytes, names)?;
        let extra: Vec<Cow<'_, [u8]>> = (0..view.len())
            .map(|r| Cow::Borrowed(view.row(r).bytes()))
            .collect();
        if merged.len() + extra.len() <= limits.rows * 3 / 4
            && size(&merged) + size(&extra) <= limits.bytes * 3 / 4
        {
            merged.extend(extra);
            absorbed = Some(nk);
        }
    }
    if let Some((k, _)) = &block {
        rows.remove(k.as_slice()).map_err(storage)?;
    }
    if let Some(nk) = absorbed {
        rows.remove(nk).map_err(storage)?;
    }
    for range in chunks(pk, &merged, limits, appends_only) {
        let part = &merged[range];
        let Some(first) = part.first() else { continue };
        let block_key = entity_key(table, pk, RowRef(first).row_key().map_err(storage)?);
        let bytes = build_block(pk, part).map_err(storage)?;
        rows.insert(block_key.as_slice(), bytes.as_slice())
            .map_err(storage)?;
    }
    Ok(j)
}

/// Cuts sorted rows into blocks (see the module docs): ranges of `rows`.
fn chunks(
    pk: &str,
    rows: &[Cow<'_, [u8]>],
    limits: Limits,
    appends_only: bool,
) -> Vec<Range<usize>> {
    let n = rows.len();
    if n == 0 {
        return Vec::new();
    }
    let overhead = block_overhead(pk);
    let total = overhead + rows.iter().map(|r| row_share(r)).sum::<usize>();
    if n <= limits.rows && total <= limits.bytes {
        return std::iter::once(0..n).collect();
    }
    let (target_rows, target_bytes) = if appends_only {
        (limits.rows, limits.bytes)
    } else {
        // Even blocks for the rows that share blocks (a row over the byte limit gets a
        // block of its own whatever the targets).
        let shared: Vec<usize> = rows
            .iter()
            .map(|r| row_share(r))
            .filter(|&s| overhead + s <= limits.bytes)
            .collect();
        let bytes = overhead + shared.iter().sum::<usize>();
        let k = shared
            .len()
            .div_ceil(limits.rows)
            .max(bytes.div_ceil(limits.bytes))
            .max(1);
        (shared.len().div_ceil(k).max(1), bytes.div_ceil(k))
    };
    let mut out = Vec::new();
    let (mut start, mut count, mut bytes) = (0, 0, overhead);
    for (i, row) in rows.iter().enumerate() {
        let share = row_share(row);
        if count > 0
            && (count >= target_rows || bytes + share > limits.bytes || bytes >= target_bytes)
        {
            out.push(start..i);
            (start, count, bytes) = (i, 0, overhead);
        }
        count += 1;
        bytes += share;
    }
    out.push(start..n);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(sizes: &[usize]) -> Vec<Cow<'static, [u8]>> {
        sizes.iter().map(|&s| Cow::Owned(vec![0; s])).collect()
    }

    fn lens(r: &[Range<usize>]) -> Vec<usize> {
        r.iter().map(|r| r.len()).collect()
    }

    const LIMITS: Limits = Limits {
        rows: 4,
        bytes: 1000,
    };

    #[test]
    fn small_sets_stay_one_block() {
        assert_eq!(lens(&chunks("p", &rows(&[10; 4]), LIMITS, false)), [4]);
        assert!(chunks("p", &rows(&[]), LIMITS, false).is_empty());
    }

    #[test]
    fn random_inserts_split_evenly_appends_fill() {
        assert_eq!(lens(&chunks("p", &rows(&[10; 5]), LIMITS, false)), [3, 2]);
        assert_eq!(lens(&chunks("p", &rows(&[10; 5]), LIMITS, true)), [4, 1]);
        assert_eq!(
            lens(&chunks("p", &rows(&[10; 9]), LIMITS, false)),
            [3, 3, 3]
        );
    }

    #[test]
    fn bytes_limit_splits_and_large_rows_stand_alone() {
        assert_eq!(lens(&chunks("p", &rows(&[400; 3]), LIMITS, false)), [2, 1]);
        assert_eq!(
            lens(&chunks("p", &rows(&[10, 5000, 10, 10]), LIMITS, false)),
            [1, 1, 2]
        );
        assert_eq!(lens(&chunks("p", &rows(&[5000]), LIMITS, false)), [1]);
        for r in chunks("p", &rows(&[300, 600, 200, 900, 50, 50]), LIMITS, false) {
            assert!(r.len() == 1 || r.len() * 300 <= 1000, "{r:?}");
        }
    }
}

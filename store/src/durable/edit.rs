//! Applying one write's [`Change`](crate::Change)s to the blocks of a table, inside the writer's redb
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
//! * a block left empty is removed; one left small by deletes absorbs the next and the
//!   previous block of its partition while the result fits in three quarters of the limits.
//!
//! Block lookups (`locate.rs`, the rule the readers follow too) are redone from the
//! transaction's current state for every block, so a split or merge earlier in the same
//! write is seen by the changes after it.
//!
//! ```text
//! before: [r01 r02 r03 r04]            insert r05 (append)     [r01 r02 r03 r04] [r05]
//! limits: 4 rows                       insert r00 (evenly)     [r00 r01 r02] [r03 r04 r05]
//! ```

use super::block_map::BlockEdits;
use super::damage::block_damage;
use super::format::block::{BlockView, RowRef, block_overhead, build_block, row_share};
#[cfg(test)]
use super::format::block::{EncodeError, encode_row};
use super::format::keys::{compare_utf8, entity_key, partition_prefix};
use super::locate::{BlockEntry, floor_block};
use super::memtable::{MemEntry, MemTable};
use super::shared::Limits;
use crate::codec::Names;
use crate::error::StoreError;
#[cfg(test)]
use crate::resolve::Change;
use redb::{ReadableTable, Table};
use std::borrow::Cow;
use std::cmp::Ordering;
use std::ops::{Bound, Range};
use std::path::Path;
use std::time::Instant;
#[cfg(test)]
use tableq_exec::compare_keys;

pub(crate) type RowsTable<'txn> = Table<'txn, &'static [u8], &'static [u8]>;

/// One change, encoded.
struct Item<'a> {
    pk: Cow<'a, str>,
    rk: Cow<'a, str>,
    /// The new row, or `None` to delete.
    row: Option<Cow<'a, [u8]>>,
}

/// A block read from the table: its key and bytes.
type Stored = (Vec<u8>, Vec<u8>);

fn storage(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> StoreError {
    StoreError::storage(e)
}

/// A found block, copied out of the table (the edit rewrites the table under it).
fn stored(found: Option<BlockEntry<'_>>) -> Option<Stored> {
    found.map(|(k, v)| (k.value().to_vec(), v.value().to_vec()))
}

/// The last block `<= key` whose key starts with `prefix`.
fn floor_in(rows: &RowsTable<'_>, key: &[u8], prefix: &[u8]) -> Result<Option<Stored>, StoreError> {
    floor_block(rows.range::<&[u8]>(..=key), prefix)
        .map(stored)
        .map_err(storage)
}

/// The last block before `before` whose key starts with `prefix`.
fn prev_in(
    rows: &RowsTable<'_>,
    before: &[u8],
    prefix: &[u8],
) -> Result<Option<Stored>, StoreError> {
    floor_block(rows.range::<&[u8]>(..before), prefix)
        .map(stored)
        .map_err(storage)
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

/// Parses and checks a stored block (its checksum, then everything), stored under `key`.
/// Damage fails the edit with [`StoreError::Damaged`] naming the block: a damaged block is
/// never rewritten (its rows would be copied into new, well-sealed blocks).
fn checked<'b>(key: &[u8], bytes: &'b [u8], names: &Names) -> Result<BlockView<'b>, StoreError> {
    let view = BlockView::parse(bytes).and_then(|view| {
        view.check_rows(names.len())?;
        Ok(view)
    });
    view.map_err(|e| block_damage(Path::new(""), None, key, bytes, e))
}

/// Applies `changes` (distinct keys, as [`crate::resolve()`] returns them) to table
/// `table`, numbering new property names in `names`; returns the numbers of the names it
/// added. The tests' way into the block edits: the engine reaches them through
/// [`apply_memtable`].
#[cfg(test)]
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
                    pk: Cow::Owned(pk.to_owned()),
                    rk: Cow::Owned(rk.to_owned()),
                    row: Some(Cow::Owned(row)),
                }
            }
            Change::Delete {
                partition_key,
                row_key,
            } => Item {
                pk: Cow::Owned(partition_key),
                rk: Cow::Owned(row_key),
                row: None,
            },
        };
        items.push(item);
    }
    items.sort_by(|a, b| compare_keys(&a.pk, &a.rk, &b.pk, &b.rk));
    apply_items(
        rows,
        table,
        names,
        limits,
        &items,
        &mut BlockEdits::default(),
    )?;
    Ok(added)
}

/// Folds a memtable into table `table`'s blocks: its rows (already encoded with `names`)
/// and removals, in key order — the flush. Every block it writes or removes is recorded
/// in `edits`.
pub(crate) fn apply_memtable(
    rows: &mut RowsTable<'_>,
    table: u64,
    names: &Names,
    limits: Limits,
    mem: &MemTable,
    edits: &mut BlockEdits,
) -> Result<(), StoreError> {
    let mut items = Vec::with_capacity(mem.len());
    for part in mem.partitions() {
        for entry in part.rows.iter() {
            items.push(Item {
                pk: Cow::Borrowed(&*part.pk),
                rk: Cow::Borrowed(&*entry.rk),
                row: entry.row.as_deref().map(Cow::Borrowed),
            });
        }
    }
    apply_items(rows, table, names, limits, &items, edits)
}

/// Applies `entries` (one table's memtable entries in key order, [`MemTable::entries`])
/// block by block until `until` has passed — stopping only between blocks, after one block
/// at least — and returns how many it applied: a slice of a flush (`writer/commit.rs`).
pub(crate) fn apply_entries_until(
    rows: &mut RowsTable<'_>,
    table: u64,
    names: &Names,
    limits: Limits,
    entries: &[MemEntry],
    until: Instant,
    edits: &mut BlockEdits,
) -> Result<usize, StoreError> {
    /// Entries turned into items at a time (a block whose entries straddle two windows is
    /// edited once for each).
    const WINDOW: usize = 1024;
    let mut done = 0;
    for window in entries.chunks(WINDOW) {
        let items: Vec<Item<'_>> = window
            .iter()
            .map(|(pk, entry)| Item {
                pk: Cow::Borrowed(&**pk),
                rk: Cow::Borrowed(&*entry.rk),
                row: entry.row.as_deref().map(Cow::Borrowed),
            })
            .collect();
        let mut i = 0;
        while i < items.len() {
            i = edit_block(rows, table, names, limits, &items, i, edits)?;
            if Instant::now() >= until {
                return Ok(done + i);
            }
        }
        done += items.len();
    }
    Ok(done)
}

/// Applies `items` (sorted by key, distinct keys) block by block.
fn apply_items(
    rows: &mut RowsTable<'_>,
    table: u64,
    names: &Names,
    limits: Limits,
    items: &[Item<'_>],
    edits: &mut BlockEdits,
) -> Result<(), StoreError> {
    let mut i = 0;
    while i < items.len() {
        i = edit_block(rows, table, names, limits, items, i, edits)?;
    }
    Ok(())
}

/// Applies the changes from `items[i]` on that fall into one block, recording the blocks
/// it writes and removes in `edits`; returns the index of the first change it did not
/// apply.
fn edit_block(
    rows: &mut RowsTable<'_>,
    table: u64,
    names: &Names,
    limits: Limits,
    items: &[Item<'_>],
    i: usize,
    edits: &mut BlockEdits,
) -> Result<usize, StoreError> {
    let pk: &str = &items[i].pk;
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
        && *items[j].pk == *pk
        && next_key
            .as_ref()
            .is_none_or(|nk| entity_key(table, pk, &items[j].rk) < *nk)
    {
        j += 1;
    }
    let changes = &items[i..j];
    let old = match &block {
        Some((key, bytes)) => Some(checked(key, bytes, names)?),
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
            merged.push(Cow::Borrowed(row.as_ref()));
        }
    }
    merged.extend(old_rows[o..].iter().map(|r| Cow::Borrowed(r.bytes())));
    // A block left small by deletes absorbs its neighbours in the partition (the next, then
    // the previous) while the result stays within three quarters of the limits.
    let size = |rows: &[Cow<'_, [u8]>]| -> usize {
        block_overhead(pk) + rows.iter().map(|r| row_share(r)).sum::<usize>()
    };
    let small = deletes
        && !merged.is_empty()
        && merged.len() <= limits.rows / 4
        && size(&merged) <= limits.bytes / 4;
    let next_block = match &next_key {
        Some(nk) if small => rows
            .get(nk.as_slice())
            .map_err(storage)?
            .map(|v| (nk.clone(), v.value().to_vec())),
        _ => None,
    };
    let prev_block = match &block {
        Some((k, _)) if small => prev_in(rows, k, &prefix)?,
        _ => None,
    };
    let fits = |a: &[Cow<'_, [u8]>], b: &[Cow<'_, [u8]>]| {
        a.len() + b.len() <= limits.rows * 3 / 4 && size(a) + size(b) <= limits.bytes * 3 / 4
    };
    let mut absorbed: Vec<&[u8]> = Vec::new();
    if let Some((nk, bytes)) = &next_block {
        let view = checked(nk, bytes, names)?;
        let extra: Vec<Cow<'_, [u8]>> = (0..view.len())
            .map(|r| Cow::Borrowed(view.row(r).bytes()))
            .collect();
        if fits(&merged, &extra) {
            merged.extend(extra);
            absorbed.push(nk);
        }
    }
    if let Some((pk_key, bytes)) = &prev_block {
        let view = checked(pk_key, bytes, names)?;
        let mut before: Vec<Cow<'_, [u8]>> = (0..view.len())
            .map(|r| Cow::Borrowed(view.row(r).bytes()))
            .collect();
        if fits(&before, &merged) {
            before.append(&mut merged);
            merged = before;
            absorbed.push(pk_key);
        }
    }
    if let Some((k, _)) = &block {
        rows.remove(k.as_slice()).map_err(storage)?;
        edits.removed(k);
    }
    for k in absorbed {
        rows.remove(k).map_err(storage)?;
        edits.removed(k);
    }
    for range in chunks(pk, &merged, limits, appends_only) {
        let part = &merged[range];
        let Some(first) = part.first() else { continue };
        let block_key = entity_key(table, pk, RowRef(first).row_key().map_err(storage)?);
        let bytes = build_block(pk, part).map_err(storage)?;
        rows.insert(block_key.as_slice(), bytes.as_slice())
            .map_err(storage)?;
        edits.written(&block_key, pk, u32::try_from(part.len()).map_err(storage)?);
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
        // Each of the k blocks carries its own header: the byte target counts one each.
        (
            shared.len().div_ceil(k).max(1),
            (bytes + (k - 1) * overhead).div_ceil(k),
        )
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
    use crate::durable::format::block::BlockView;
    use crate::durable::format::keys::{table_end, table_prefix};
    use crate::durable::format::tables::ROWS;
    use proptest::prelude::*;
    use redb::{Database, ReadableDatabase};
    use std::collections::BTreeMap;
    use tableq_model::order::OrdinalString;
    use tableq_model::{Entity, Value};

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

    // ---------------------------------------------------------------------------------
    // Edits on a real (in-memory) redb table, checked against a map.

    const TABLE: u64 = 5;
    type Model = BTreeMap<(OrdinalString, OrdinalString), i32>;

    struct Store {
        db: Database,
        names: Names,
        limits: Limits,
    }

    impl Store {
        fn new(limits: Limits) -> Store {
            let db = Database::builder()
                .create_with_backend(redb::backends::InMemoryBackend::new())
                .unwrap();
            Store {
                db,
                names: Names::default(),
                limits,
            }
        }

        /// Puts (`Some(v)`, with `pad` bytes of payload) and deletes (`None`).
        fn apply(&mut self, changes: &[(&str, &str, Option<i32>)], pad: usize) {
            let txn = self.db.begin_write().unwrap();
            {
                let mut rows = txn.open_table(ROWS).unwrap();
                let changes = changes
                    .iter()
                    .map(|(pk, rk, v)| match v {
                        Some(v) => {
                            let mut e = Entity::new(*pk, *rk);
                            e.set("V", Value::Int32(*v));
                            if pad > 0 {
                                e.set("Pad", Value::Binary(vec![7; pad]));
                            }
                            Change::Put(e)
                        }
                        None => Change::Delete {
                            partition_key: (*pk).to_owned(),
                            row_key: (*rk).to_owned(),
                        },
                    })
                    .collect();
                apply(&mut rows, TABLE, &mut self.names, self.limits, changes).unwrap();
            }
            txn.commit().unwrap();
        }

        /// Every block's rows, checking the invariants of the module docs; the contents.
        fn check(&self) -> (Model, usize) {
            let txn = self.db.begin_read().unwrap();
            let rows = txn.open_table(ROWS).unwrap();
            let (start, end) = (table_prefix(TABLE), table_end(TABLE));
            let mut model = Model::new();
            let mut last: Option<Vec<u8>> = None;
            let mut blocks = 0;
            for item in rows
                .range::<&[u8]>(start.as_slice()..end.as_slice())
                .unwrap()
            {
                let (key, value) = item.unwrap();
                let view = BlockView::parse(value.value()).unwrap();
                view.check_rows(self.names.len()).unwrap();
                blocks += 1;
                let pk = view.partition_key();
                let first = view.row(0).row_key().unwrap();
                assert_eq!(key.value(), entity_key(TABLE, pk, first), "block key");
                let size = value.value().len();
                assert!(view.len() <= self.limits.rows, "{} rows", view.len());
                assert!(
                    view.len() == 1 || size <= self.limits.bytes,
                    "{size} bytes in {} rows",
                    view.len()
                );
                for i in 0..view.len() {
                    let row = view.row(i);
                    let rk = row.row_key().unwrap();
                    let k = entity_key(TABLE, pk, rk);
                    assert!(last.as_ref().is_none_or(|l| *l < k), "rows in key order");
                    last = Some(k);
                    let e = row.to_entity(pk, &self.names).unwrap();
                    let Some(Value::Int32(v)) = e.custom("V") else {
                        panic!("row without V")
                    };
                    model.insert((OrdinalString(pk.into()), OrdinalString(rk.into())), *v);
                }
            }
            (model, blocks)
        }
    }

    fn key(pk: &str, rk: &str) -> (OrdinalString, OrdinalString) {
        (OrdinalString(pk.into()), OrdinalString(rk.into()))
    }

    #[test]
    fn sequential_inserts_fill_blocks() {
        let mut store = Store::new(Limits {
            rows: 8,
            bytes: 1 << 20,
        });
        for i in 0..100 {
            store.apply(&[("p", &format!("r{i:03}"), Some(i))], 0);
        }
        let (model, blocks) = store.check();
        assert_eq!(model.len(), 100);
        assert_eq!(blocks, 13, "appends leave full blocks: 12 × 8 + 4");
    }

    #[test]
    fn inserts_before_the_first_block_and_reverse_order() {
        let mut store = Store::new(Limits {
            rows: 4,
            bytes: 1 << 20,
        });
        for i in (0..50).rev() {
            store.apply(&[("p", &format!("r{i:03}"), Some(i))], 0);
        }
        store.apply(&[("o", "z", Some(-1)), ("q", "", Some(-2))], 0);
        let (model, _) = store.check();
        assert_eq!(model.len(), 52);
        assert_eq!(model[&key("p", "r000")], 0);
        assert_eq!(model[&key("o", "z")], -1);
    }

    #[test]
    fn deletes_empty_and_merge_blocks() {
        let mut store = Store::new(Limits {
            rows: 8,
            bytes: 1 << 20,
        });
        let all: Vec<String> = (0..64).map(|i| format!("r{i:03}")).collect();
        let puts: Vec<(&str, &str, Option<i32>)> =
            all.iter().map(|rk| ("p", rk.as_str(), Some(1))).collect();
        store.apply(&puts, 0);
        let (_, before) = store.check();
        // Delete all but every eighth row: small blocks merge with their neighbours.
        let dels: Vec<(&str, &str, Option<i32>)> = all
            .iter()
            .enumerate()
            .filter(|(i, _)| i % 8 != 0)
            .map(|(_, rk)| ("p", rk.as_str(), None))
            .collect();
        for chunk in dels.chunks(5) {
            store.apply(chunk, 0);
        }
        let (model, after) = store.check();
        assert_eq!(model.len(), 8);
        assert!(
            after < before,
            "{after} blocks after deletes, {before} before"
        );
        // Delete the rest: no block is left.
        let rest: Vec<(&str, &str, Option<i32>)> = all
            .iter()
            .step_by(8)
            .map(|rk| ("p", rk.as_str(), None))
            .collect();
        store.apply(&rest, 0);
        assert_eq!(store.check(), (Model::new(), 0));
    }

    #[test]
    fn large_entities_get_blocks_of_their_own() {
        let mut store = Store::new(Limits {
            rows: 64,
            bytes: 4096,
        });
        store.apply(&[("p", "a", Some(1)), ("p", "c", Some(3))], 0);
        store.apply(&[("p", "b", Some(2))], 100_000);
        store.apply(&[("p", "bb", Some(4))], 50_000);
        let (model, blocks) = store.check();
        assert_eq!(model.len(), 4);
        assert_eq!(blocks, 4, "a | b (large) | bb (large) | c");
    }

    /// Writes of one batch: (partition, row, value or delete, large).
    type Batch = Vec<(u8, u8, Option<i32>, bool)>;

    fn arb_batches() -> impl Strategy<Value = Vec<Batch>> {
        proptest::collection::vec(
            proptest::collection::vec(
                (
                    0u8..3,
                    0u8..40,
                    proptest::option::weighted(0.7, -50i32..50),
                    proptest::bool::weighted(0.05),
                ),
                1..12,
            ),
            1..25,
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Any sequence of writes leaves well-formed blocks holding exactly what a map holds.
        #[test]
        fn edits_match_a_map(batches in arb_batches(), rows in 2usize..6, bytes in 300usize..2000) {
            const PKS: [&str; 3] = ["p", "\u{10000}", "\u{E000}"];
            let rk = |r: u8| format!("{}{r:02}", if r.is_multiple_of(3) { "\u{FFFD}" } else { "r" });
            let mut store = Store::new(Limits { rows, bytes });
            let mut model = Model::new();
            for batch in batches {
                let mut seen = std::collections::HashSet::new();
                let mut changes = Vec::new();
                let mut large = false;
                for (p, r, v, big) in batch {
                    let (pk, rk) = (PKS[p as usize], rk(r));
                    if !seen.insert((p, r)) {
                        continue;
                    }
                    let k = key(pk, &rk);
                    match v {
                        Some(v) => { model.insert(k, v); }
                        // Deletes name existing entities (as `resolve` guarantees).
                        None if model.remove(&k).is_some() => {}
                        None => continue,
                    }
                    large |= big;
                    changes.push((pk, rk, v));
                }
                let changes: Vec<(&str, &str, Option<i32>)> =
                    changes.iter().map(|(p, r, v)| (*p, r.as_str(), *v)).collect();
                store.apply(&changes, if large { 3000 } else { 0 });
                let (stored, _) = store.check();
                prop_assert_eq!(&stored, &model);
            }
        }
    }
}

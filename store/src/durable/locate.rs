//! Finding the block that holds a key — the one rule every reader and the writer of the
//! durable engine follow. Blocks are keyed by (table, PartitionKey, first RowKey)
//! (`format/keys.rs`), so the block that can hold a key is the **last block whose key is `<=` the
//! key, if that block belongs to the key's partition**; otherwise no stored row of the
//! partition sorts at or before the key.
//!
//! Readers ([`DurableSnapshot`](super::DurableSnapshot): point gets, where a scan starts)
//! and the writer (the current entity `resolve` reads, the block an edit rewrites) hold the
//! rows table differently — a read-only table whose guards outlive the borrow, or the
//! write transaction's table — so they pass the redb range ending at the key, and
//! [`floor_block`] does the rest.
//!
//! ```text
//! blocks of table 1:  [p|a…] [p|k…] [q|a…]      key (p, m) → [p|k…]     key (q, 0) → none
//! ```

use super::format::keys::{entity_key, partition_prefix};
use redb::{AccessGuard, StorageError};

/// A block as a redb range yields it: its key and its bytes.
pub(crate) type BlockEntry<'r> = (
    AccessGuard<'r, &'static [u8]>,
    AccessGuard<'r, &'static [u8]>,
);

/// The redb keys a search for `(pk, rk)` of table `table` needs: the entity's key (the end
/// of the range to pass to [`floor_block`]) and its partition's prefix.
#[inline]
pub(crate) fn search_keys(table: u64, pk: &str, rk: &str) -> (Vec<u8>, Vec<u8>) {
    (entity_key(table, pk, rk), partition_prefix(table, pk))
}

/// The last block of `up_to_key` (a range of blocks ending at a key, inclusive), if its key
/// starts with `partition` (a partition prefix); `None` when the partition has no block at
/// or before the key.
#[inline(always)]
pub(crate) fn floor_block<'r>(
    up_to_key: Result<redb::Range<'r, &'static [u8], &'static [u8]>, StorageError>,
    partition: &[u8],
) -> Result<Option<BlockEntry<'r>>, StorageError> {
    match up_to_key?.next_back() {
        Some(item) => {
            let (key, value) = item?;
            Ok(key.value().starts_with(partition).then_some((key, value)))
        }
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::durable::format::tables::ROWS;
    use redb::{Database, ReadableDatabase, ReadableTable};

    #[test]
    fn the_last_block_at_or_before_the_key_within_the_partition() {
        let db = Database::builder()
            .create_with_backend(redb::backends::InMemoryBackend::new())
            .unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut rows = txn.open_table(ROWS).unwrap();
            for (pk, first) in [("p", "a"), ("p", "k"), ("q", "a")] {
                let key = entity_key(1, pk, first);
                rows.insert(key.as_slice(), format!("{pk}{first}").as_bytes())
                    .unwrap();
            }
            // The writer's view: the write transaction's table.
            let (key, partition) = search_keys(1, "p", "m");
            let found = floor_block(rows.range::<&[u8]>(..=key.as_slice()), &partition);
            assert_eq!(found.unwrap().unwrap().1.value(), b"pk");
        }
        txn.commit().unwrap();
        // A reader's view: a read-only table.
        let read = db.begin_read().unwrap();
        let rows = read.open_table(ROWS).unwrap();
        let find = |pk: &str, rk: &str| {
            let (key, partition) = search_keys(1, pk, rk);
            floor_block(rows.range::<&[u8]>(..=key.as_slice()), &partition)
                .unwrap()
                .map(|(_, v)| String::from_utf8(v.value().to_vec()).unwrap())
        };
        assert_eq!(find("p", "a").as_deref(), Some("pa"), "a block's own key");
        assert_eq!(find("p", "j").as_deref(), Some("pa"));
        assert_eq!(find("p", "\u{FFFF}").as_deref(), Some("pk"));
        assert_eq!(find("p", ""), None, "before the partition's first block");
        assert_eq!(find("q", "").as_deref(), None);
        assert_eq!(find("q", "b").as_deref(), Some("qa"));
        assert_eq!(find("o", "z"), None, "a partition without blocks");
        assert_eq!(
            find("r", ""),
            None,
            "the previous block is another partition's"
        );
    }
}

//! Reporting a damaged block: the typed [`StoreError::Damaged`] that names the data file,
//! the table and the key range of the block, and the `tracing` error line that goes with
//! it. Every path that reads a block for data (scans, point gets, the writer's reads,
//! `tableq check`) reports damage through [`block_damage`].
//!
//! The key range comes from the block's redb key (PartitionKey and first RowKey: redb's
//! own B-tree pages, not the damaged value) and, when the block's row offsets can still be
//! read, its last RowKey.

use super::format::block::BlockView;
use super::format::keys::decode_block_key;
use super::format::tables::DATA_FILE;
use crate::codec::Corrupt;
use crate::error::{Damage, StoreError};
use std::path::Path;

/// The [`Damage`] of the block stored under `key` with bytes `bytes` in the data file of
/// `dir`, in table `table` (its name as created; `None` for an unknown table: its id is
/// shown).
pub(crate) fn describe(
    dir: &Path,
    table: Option<&str>,
    key: &[u8],
    bytes: &[u8],
    what: impl ToString,
) -> Damage {
    let (id, partition_key, first_row_key) =
        decode_block_key(key).unwrap_or((0, String::new(), String::new()));
    let last_row_key = BlockView::parse_header_unverified(bytes)
        .ok()
        .filter(|v| v.len() > 1)
        .map(|v| String::from_utf8_lossy(v.row_key_bytes(v.len() - 1)).into_owned());
    Damage {
        file: dir.join(DATA_FILE),
        table: table.map_or_else(|| format!("(table id {id})"), str::to_owned),
        partition_key,
        first_row_key,
        last_row_key,
        what: what.to_string(),
    }
}

/// The error of a damaged block read for data, logged at `error` level (one line naming
/// the file, the table and the block's key range). The writer, which knows the table by
/// its id and the file by its name alone, passes `None` and an empty `dir`.
pub(crate) fn block_damage(
    dir: &Path,
    table: Option<&str>,
    key: &[u8],
    bytes: &[u8],
    what: Corrupt,
) -> StoreError {
    let damage = describe(dir, table, key, bytes, what);
    tracing::error!(
        file = %damage.file.display(),
        table = %damage.table,
        partition_key = %damage.partition_key,
        first_row_key = %damage.first_row_key,
        last_row_key = damage.last_row_key.as_deref().unwrap_or(""),
        "{damage}; the rows of this block are not served until the data file is restored"
    );
    StoreError::Damaged(Box::new(damage))
}

//! The data file: its name, its format version, and the redb tables it holds (see the
//! format's module docs for what each key and value is).
//!
//! Everything else in the engine reaches the data file's tables through these definitions;
//! a redb table named here is part of the format.

use redb::TableDefinition;

/// The file in the data directory that holds everything.
pub const DATA_FILE: &str = "tableq.redb";

/// The version of tableq's layout inside the redb file (tables, keys, blocks). Version 2
/// added the write-ahead log (a checkpoint records its last record number); version 3
/// adds a checksum to every block (`block.rs`) and the log's generation (`log_check.rs`);
/// version 4 gives each row of a block its own checksum (block format 3), so that a point
/// get verifies what it reads and no more; version 5 stores each block's columns after its
/// rows (block format 4), so that a scan tests its residual over them and verifies only
/// the rows it reads. Files of versions 3 and 4 are read (blocks of format 2 are verified
/// whole, blocks of format 3 have no columns: their rows are tested one by one) and marked
/// version 5 when opened for writing, each block gaining its columns when a write rewrites
/// it; files of
/// versions 1 and 2 are **refused** with
/// [`OpenError::OlderFormat`](crate::durable::OpenError::OlderFormat) rather than read
/// without checksums or upgraded in place: reading them would serve damaged rows unseen,
/// and an in-place upgrade would vouch for bytes nothing had checked. Any other version is
/// refused with
/// [`OpenError::IncompatibleFormat`](crate::durable::OpenError::IncompatibleFormat).
pub const FORMAT_VERSION: u64 = 5;
/// The oldest format version this build opens.
pub(crate) const OLDEST_FORMAT: u64 = 3;

/// `format` → [`FORMAT_VERSION`]; `next_table` → the next table id; `clock` → the largest
/// Timestamp (ticks) any commit stored; `wal_lsn`, `wal_generation` (below).
pub(crate) const META: TableDefinition<&str, u64> = TableDefinition::new("tableq_meta");
/// Table key (lowercase name) → table record ([`encode_table`]).
pub(crate) const TABLES: TableDefinition<&str, &[u8]> = TableDefinition::new("tableq_tables");
/// (table id, name number) → property name.
pub(crate) const NAMES: TableDefinition<(u64, u32), &str> = TableDefinition::new("tableq_names");
/// Block key (`keys.rs`) → block (`block.rs`).
pub(crate) const ROWS: TableDefinition<&[u8], &[u8]> = TableDefinition::new("tableq_rows");
/// Setting name → stored value (created by the first write that needs it).
pub(crate) const SETTINGS: TableDefinition<&str, &str> = TableDefinition::new("tableq_settings");
/// Table id → the table's stored access policies (created by the first write that needs
/// it).
pub(crate) const ACLS: TableDefinition<u64, &str> = TableDefinition::new("tableq_acls");

pub(crate) const META_FORMAT: &str = "format";
pub(crate) const META_NEXT_TABLE: &str = "next_table";
pub(crate) const META_CLOCK: &str = "clock";
/// The number of the last write-ahead log record the durable file contains (written
/// by every checkpoint; absent = 0).
pub(crate) const META_WAL_LSN: &str = "wal_lsn";
/// The generation of the write-ahead log this file goes with (`log_check.rs`): written
/// once, durably, when the first log is created; from then on opening requires that log.
pub(crate) const META_WAL_GENERATION: &str = "wal_generation";

/// The key of the account's service properties in [`SETTINGS`].
pub(crate) const SETTING_SERVICE: &str = "service";

/// A table record: id (8 bytes, little-endian) and name as created.
pub(crate) fn encode_table(id: u64, name: &str) -> Vec<u8> {
    let mut out = id.to_le_bytes().to_vec();
    out.extend_from_slice(name.as_bytes());
    out
}

/// Reverses [`encode_table`].
pub(crate) fn decode_table(bytes: &[u8]) -> Option<(u64, String)> {
    let id = u64::from_le_bytes(bytes.get(..8)?.try_into().ok()?);
    let name = std::str::from_utf8(bytes.get(8..)?).ok()?;
    Some((id, name.to_owned()))
}

//! The durable engine's on-disk format, in one place: what a program needs to read a data
//! directory without tableq. Everything that writes or parses these bytes lives in this
//! module's files; the rest of the engine imports them.
//!
//! * `tables.rs` — the data file's name, [`FORMAT_VERSION`], its redb tables and the table
//!   record;
//! * `keys.rs` — the byte encoding of (table, PartitionKey, RowKey) in block keys;
//! * `block.rs` — the block layout (rows, slots) and its checksum;
//! * `log.rs` — the write-ahead log file: header, reach marker, record framing, reading
//!   with the torn-tail rule;
//! * `record.rs` — the bodies of log records.
//!
//! The slot packing of a row is the store's row codec (`crate::codec`, shared with the
//! memory engine): changing it changes this format. Changing anything below needs a new
//! [`FORMAT_VERSION`] (the data file) or log `version` (the log).
//!
//! # The data directory
//!
//! ```text
//! DIR/tableq.redb                     the data file (redb)
//! DIR/tableq.wal                      the write-ahead log
//! DIR/tableq.redb.tmp, tableq.wal.tmp a new file being initialised (removed or renamed)
//! DIR/tableq.wal.discarded-SECONDS    a log set aside by --accept-log-loss
//! ```
//!
//! The state of the directory is the data file with the log's records numbered after the
//! data file's `wal_lsn` applied in order.
//!
//! # The data file
//!
//! A [redb](https://docs.rs/redb) 4 database (redb's own file format 3) with these tables
//! (redb key type → value type):
//!
//! ```text
//! tableq_meta      &str → u64        "format"         the format version: 5 (3 and 4 are read)
//!                                    "next_table"     the next table id to assign (from 1)
//!                                    "clock"          the largest Timestamp stored, in ticks
//!                                    "wal_lsn"        the last log record the file holds (absent: 0)
//!                                    "wal_generation" the log this file goes with (absent: none yet)
//! tableq_tables    &str → &[u8]      table key (the name in lowercase) → id:u64 (LE)  name (UTF-8, as created)
//! tableq_names     (u64, u32) → &str (table id, name number) → property name; numbers dense from 0
//! tableq_rows      &[u8] → &[u8]     block key → block
//! tableq_settings  &str → &str       "service" → the service properties (JSON, `crate::service`)
//! tableq_acls      u64 → &str        table id → its stored access policies (JSON, `crate::acl`)
//! ```
//!
//! `tableq_settings` and `tableq_acls` appear with the first write that needs them.
//! Timestamps are .NET ticks (100 ns units since 0001-01-01T00:00:00Z).
//!
//! # Block keys
//!
//! ```text
//! key  = table:u64 (big-endian)  esc(PartitionKey)  00  esc(first RowKey)
//! esc  = the string's UTF-8 bytes with  00 → 01 01,  01 → 01 02,  EE → F5,  EF → F6
//! ```
//!
//! Byte order of keys is the spec's order: table id, then PartitionKey, then RowKey,
//! strings by UTF-16 code units (`keys.rs` says why).
//!
//! # Blocks
//!
//! Rows of one partition, several to a redb value (up to `block_rows` rows and
//! `block_bytes` bytes; a larger entity alone), keyed by their first RowKey. All integers
//! little-endian:
//!
//! ```text
//! block   = format:u8 (4)  0:u8  pk_len:u16  rows:u32  crc:u32  pk
//!           offsets:(rows + 1) × u32  hashes:rows × u16  crcs:rows × u32  row*  columns
//! row     = timestamp:i64  rk_len:u16  slots:u16  rk  slot*  data
//! slot    = id_tag:u32  a:u32  b:u32          id_tag = name number << 4 | tag
//! ```
//!
//! * `crc`: CRC-32 (IEEE) of the block's *directory*: the 8 bytes before it, then `pk`,
//!   `offsets`, `hashes` and `crcs` (everything up to the first row);
//! * `crcs[i]`: CRC-32 (IEEE) of row `i`'s bytes — so every byte of a block is covered
//!   by exactly one checksum, and a point get verifies the directory and its own row
//!   only;
//! * `offsets[i]`: where row `i` starts in the block; `offsets[rows]` is where the rows
//!   end and `columns` starts;
//! * `columns`: the block's fixed-width properties again, column by column, to the end of
//!   the block — the encoding of `crate::codec::ColumnSet` (written out there): a column
//!   directory under a CRC-32 of its own, which covers the block's first 8 bytes and `pk`
//!   before it (so the directory vouches for the format, the row count and the
//!   PartitionKey; per column: the property's number, its type, its length, the CRC-32 of
//!   its data and the smallest and largest value it holds),
//!   then each column's data: for each property that every row holding it holds as Int32,
//!   Int64, Double, Boolean or DateTime, and at least one row in 8 holds, a presence
//!   bitmap and the values; blocks under 32 rows have none (under 64 when written by
//!   builds before 2026-12-07). A filtered scan verifies the
//!   column directory, skips a comparison that a column's range excludes without reading
//!   the column, verifies and tests over the columns its residual reads, and verifies the
//!   block's `crc` and the rows it reads only when it reads one;
//! * `hashes[i]`: FNV-1a (32 bits, offset basis `811C9DC5`, prime `01000193`) of row `i`'s
//!   RowKey bytes, folded to 16 bits (`h ^ h >> 16`);
//! * rows sorted by RowKey (UTF-16 order), each RowKey once; `timestamp` in ticks,
//!   `i64::MIN` for none;
//! * slots sorted by name number (`tableq_names` of the block's table); a payload's offset
//!   `a` counts from the row's first byte, so a row can be copied between blocks as bytes.
//!
//! Data format 4 wrote blocks of format 3: the same without `columns` (`offsets[rows]` is
//! the block's length); data format 3 wrote blocks of format 2: format 3 without `crcs`,
//! with `crc` over every byte of the block but itself. This build reads both as they are
//! (a block of format 2 is verified whole on every read; one of format 3 is read row by
//! row) and writes format 4 whenever it rewrites a block; a data file of format 3 or 4 is
//! marked format 5 when it is opened for writing, so that an older build refuses it rather
//! than misreading the new blocks as damage (or, worse, rewriting them without columns
//! that match).
//!
//! ```text
//! tag  type      value
//! 0    Binary    a = payload offset, b = length
//! 1    Boolean   a = 0 or 1
//! 2    DateTime  b:a = ticks (high:low 32 bits)
//! 3    Double    b:a = the IEEE 754 bit pattern
//! 4    Guid      a = payload offset, b = 16 (the 16 bytes in RFC 4122 order)
//! 5    Int32     a = the value (two's complement)
//! 6    Int64     b:a = the value (two's complement)
//! 7    String    a = payload offset, b = length (UTF-8)
//! ```
//!
//! # The write-ahead log
//!
//! ```text
//! file    = header reach record*
//! header  = magic "tableqWL":8  version:u32 (2)  reserved:u32 (0)  base_lsn:u64
//!           generation:u64  crc:u32  0:u32
//! reach   = synced_lsn:u64  synced_len:u64  crc:u32  0:u32       (all zeros: none)
//! record  = len:u32  crc:u32  lsn:u64  body[len]
//! ```
//!
//! All integers little-endian. The header's `crc` is the CRC-32 of its first 32 bytes, the
//! reach marker's of its first 16, a record's of its `len`, `lsn` and body. Records are
//! numbered consecutively from `base_lsn`; `generation` must equal the data file's
//! `wal_generation`; `reach` says the first `synced_len` bytes (records up to
//! `synced_lsn`) were `fsync`ed. Reading: a record that is cut or fails its checksum at
//! the end of the file is a torn tail, discarded (unless it lies before the reach); damage
//! followed by an intact record, or a gap in the numbers, is corruption (`log.rs`).
//!
//! ```text
//! body    = kind:u8 …
//! create  = 1  table:u64  name:str16
//! delete  = 2  table:u64  key:str16
//! write   = 3  table:u64  timestamp:i64  names:u32 (str16)*  changes:u32 change*
//! service = 4  stored:str32                         (the stored form of the properties)
//! acl     = 5  table:u64  0                         (the table's policies removed)
//!         | 5  table:u64  1  stored:str32           (the stored form of the policies)
//! change  = 1  pk:str16  row:u32-length bytes       (a put: a row as in a block)
//!         | 2  pk:str16  rk:str16                    (a delete)
//! str16   = len:u16  UTF-8 bytes
//! str32   = len:u32  UTF-8 bytes
//! ```
//!
//! A put's row numbers its properties by the record's own `names` list (slot number `i`
//! names `names[i]`), not by `tableq_names`: a record is read without table state.

pub(crate) mod block;
pub(crate) mod keys;
pub(crate) mod log;
pub(crate) mod record;
pub(crate) mod tables;

pub use log::WAL_FILE;
pub use tables::{DATA_FILE, FORMAT_VERSION};

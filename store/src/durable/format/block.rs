//! The block layout: several consecutive rows of one partition in one redb value, in a byte
//! layout that the executor reads in place (no `Entity` is built to evaluate a filter).
//! The layout itself — header, row offsets, RowKey hashes, rows, slots and their tags — is
//! written out in the format's module docs (`format/mod.rs`); this file builds and reads it.
//!
//! `hashes[i]` ([`row_key_hash`]) lets a point lookup scan 2 bytes per row (contiguous, so
//! a few cache lines) and compare one RowKey, instead of a binary search whose every probe
//! may miss the cache. A row is position-independent (payload offsets count from the row's
//! first byte), so a write copies unchanged rows between blocks as bytes. A slot is one
//! custom property in the store's row codec (`crate::codec`, shared with the memory
//! engine's partitions).
//!
//! Readers never trust the bytes. **Every byte a read returns or decides with has passed a
//! checksum.** A block of format 4 has four kinds: the *directory* checksum in the header
//! covers the header, the PartitionKey, the row offsets, the RowKey hashes and the row
//! checksums; a *row* checksum covers one row; the *column directory's* checksum covers
//! the header's first 8 bytes (format, row count), the PartitionKey and the list of the
//! block's columns (which follow its rows, `crate::codec::ColumnSet`: the fixed-width
//! properties again, column by column) with each one's range; a *column* checksum covers
//! one column. So a point get verifies the directory (≈ 10 bytes a row)
//! and the one row it returns ([`BlockView::parse_header`], [`BlockView::find`]), not the
//! whole block (up to 64 KiB, most of it cold in the CPU caches); a filtered scan verifies
//! the column directory alone when it loads a block ([`BlockView::parse_columns_first`]),
//! then each column its residual reads (`crate::codec::LazyColumns`; none whose range
//! excludes the comparison), tests its residual over them, and only when it reads a row
//! of the block verifies the block directory ([`BlockView::verify_directory`], once) and
//! that row ([`BlockView::checked_row`]) — a block none of whose rows match costs its
//! column directory and the columns named; a plain
//! scan, a block rewrite, a block's verified copy (`verified.rs`) and `tableq check` verify
//! everything ([`BlockView::parse`];
//! `tableq check` also that the columns hold what the rows hold,
//! [`BlockView::check_columns`]). Blocks of format 3 (data format 4) are format 4 without
//! the columns and are still read. A flipped bit anywhere — a string's byte included, which the
//! structural checks below cannot see — fails the read that would return it with
//! [`Corrupt`] instead of returning a wrong value. Blocks of format 2 (data format 3) have
//! one checksum over the whole block and are still read: every read verifies all of it.
//! Only [`BlockView::parse_header_unverified`] skips the checksums: for splitting a scan,
//! which returns no row (the rows are verified when the chunks are scanned).
//! Beyond the checksums, [`BlockView::parse`] checks the row offsets, every [`RowRef`]
//! accessor checks what it reads and reports damage as [`Corrupt`], and
//! [`BlockView::check_rows`] checks everything (the writer runs it before rewriting a
//! block). Nothing indexes without a bounds check, so damage never panics.
//!
//! Format 1 (before the checksum) had no `crc` field; data files holding it are refused
//! when opened (`open.rs`), so a block of format 1 reads as "unknown block format".
//!
//! ```text
//! block of partition "p", rows "r1" (Age: Int32 7, name number 0) and "r2" (no
//! properties), neither with a Timestamp:
//! 04 00 0100 02000000 crc 70 | 25000000 3F000000 4D000000 | h(r1) h(r2) | c(r1) c(r2) | <row r1: ts, 0200, 0100, "r1", slot(0<<4|5, 7, 0)> | <row r2> | crc FFFFFFFF
//! ```

use super::keys::compare_utf8;
use crate::codec::{
    ColumnDirectory, ColumnSet, Corrupt, EncodedColumns, MAX_NAME_ID, NameOverflow, Names, Payload,
    SLOT_BYTES as SLOT, Slot, timestamp_from_ticks, timestamp_ticks,
};
use std::borrow::Cow;
use std::cmp::Ordering;
use tableq_model::{DateTime, Entity, Property, ValueRef};

/// The layout version this build writes in every block's first byte (4: a checksum for
/// the directory, one for each row, and the block's columns after its rows with a
/// checksum of their own).
pub(crate) const BLOCK_FORMAT: u8 = 4;
/// The layout of data format 4, still read: format 4 without the columns.
pub(crate) const BLOCK_FORMAT_ROWS: u8 = 3;
/// The layout of data format 3, still read: one checksum over the whole block.
pub(crate) const BLOCK_FORMAT_WHOLE: u8 = 2;

/// Bytes of a block header before the PartitionKey.
const BLOCK_HEAD: usize = 12;
/// Where the checksum lies in the header.
const CRC_AT: usize = 8;

/// The header checksum of a block: CRC-32 of every byte it covers — for format 3 the
/// directory (the 8 header bytes before the checksum, then the PartitionKey, row offsets,
/// RowKey hashes and row checksums), for format 2 the whole block — except the checksum
/// field itself. `crc32fast` uses the CPU's carry-less multiply where there is one:
/// measured on the 2-core reference machine (2026-11-27, a throwaway loop) ≈ 0.35 µs per
/// 16 KiB hot in the caches, more for a block cold in memory — which is why a point get no
/// longer checks its whole block (`benches/README.md`, "The machine's limits").
pub(crate) fn block_checksum(bytes: &[u8]) -> u32 {
    let end = match bytes.first() {
        Some(&BLOCK_FORMAT | &BLOCK_FORMAT_ROWS) => directory_end(bytes).min(bytes.len()),
        _ => bytes.len(),
    };
    let mut crc = crc32fast::Hasher::new();
    crc.update(bytes.get(..CRC_AT).unwrap_or(bytes));
    crc.update(bytes.get(BLOCK_HEAD..end).unwrap_or_default());
    crc.finalize()
}

/// Where a format-3 block's directory ends (its first row starts), from its header alone.
fn directory_end(bytes: &[u8]) -> usize {
    let pk_len = usize::from(u16_at(bytes, 2));
    let rows = u32_at(bytes, 4) as usize;
    BLOCK_HEAD
        .saturating_add(pk_len)
        .saturating_add(rows.saturating_mul(ROW_DIR_V3))
        .saturating_add(4)
}

/// The checksum of one row of a format-3 block: CRC-32 of its bytes.
#[inline]
pub(crate) fn row_checksum(row: &[u8]) -> u32 {
    crc32fast::hash(row)
}

/// Directory bytes per row: offset, hash and (format 3) checksum.
const ROW_DIR_V2: usize = 4 + 2;
const ROW_DIR_V3: usize = 4 + 2 + 4;

/// Bytes of a row header before the RowKey.
const ROW_HEAD: usize = 12;

/// Why a row or block cannot be encoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum EncodeError {
    /// A key, value or block exceeds the layout's integer widths.
    #[error("{0} too large for the block layout")]
    TooLarge(&'static str),
    /// The table has used up its property-name numbers.
    #[error("the table has used {} distinct property names, the most it can hold", MAX_NAME_ID as u64 + 1)]
    TooManyNames,
}

impl From<NameOverflow> for EncodeError {
    fn from(_: NameOverflow) -> EncodeError {
        EncodeError::TooManyNames
    }
}

#[inline]
fn u16_at(b: &[u8], o: usize) -> u16 {
    b.get(o..o + 2)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u16::from_le_bytes)
}

#[inline]
fn u32_at(b: &[u8], o: usize) -> u32 {
    b.get(o..o + 4)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u32::from_le_bytes)
}

#[inline]
fn i64_at(b: &[u8], o: usize) -> i64 {
    b.get(o..o + 8)
        .and_then(|s| s.try_into().ok())
        .map_or(0, i64::from_le_bytes)
}

/// A parsed (header-checked) block borrowed from its bytes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BlockView<'b> {
    bytes: &'b [u8],
    pk: &'b str,
    rows: usize,
    /// Offset of the row-offset array.
    dir: usize,
    /// Whether each row has its own checksum (formats 3 and 4); format 2's one checksum
    /// covers the whole block, so its rows need no check of their own once the header's
    /// passed.
    per_row: bool,
    /// Whether the block's columns follow its rows (format 4).
    columns: bool,
}

impl<'b> BlockView<'b> {
    /// Verifies every checksum (format 3: the directory's and every row's) and checks the
    /// header and the row offsets (not the rows' contents: see [`RowRef::check`]). What a
    /// scan needs: every row of the view may then be read with [`row`](BlockView::row).
    pub(crate) fn parse(bytes: &'b [u8]) -> Result<BlockView<'b>, Corrupt> {
        let view = BlockView::parse_directory(bytes)?;
        if view.per_row {
            for i in 0..view.rows {
                view.verify_row(i)?;
            }
        }
        if view.columns {
            ColumnSet::verify(view.columns_bytes(), view.rows, &view.bound())?;
        }
        Ok(view)
    }

    /// [`parse`](BlockView::parse) without the rows' and the columns' checksums: the
    /// directory's checksum, the row offsets and (format 4) the column directory (its
    /// checksum and layout; each column is verified when read,
    /// [`encoded_columns`](BlockView::encoded_columns)). What a scan that tests its
    /// residual over the columns needs: a row read from such a view must come from
    /// [`checked_row`](BlockView::checked_row) (or a search that verifies each row it reads, [`lower_bound_by`](BlockView::lower_bound_by)).
    pub(crate) fn parse_directory(bytes: &'b [u8]) -> Result<BlockView<'b>, Corrupt> {
        let view = BlockView::parse_header(bytes)?;
        view.check_offsets()?;
        if view.columns {
            view.encoded_columns()?;
        } else if view.offset(view.rows) != bytes.len() {
            return Err(Corrupt("block length does not match its rows"));
        }
        Ok(view)
    }

    /// The rows' offsets in order, within the block.
    fn check_offsets(&self) -> Result<(), Corrupt> {
        let mut prev = self.rows_start();
        for i in 0..=self.rows {
            let at = self.offset(i);
            let min = if i == 0 { prev } else { prev + ROW_HEAD };
            if at < min || at > self.bytes.len() {
                return Err(Corrupt("row offsets out of order"));
            }
            prev = at;
        }
        Ok(())
    }

    /// For a block with columns (format 4): the header and the column directory, which
    /// vouches for the header's first bytes (format, row count) and the PartitionKey —
    /// everything a filtered scan decides with before it reads a row — without the block
    /// directory's checksum (over ≈ 10 bytes a row: offsets, hashes, row checksums), which
    /// [`verify_directory`](BlockView::verify_directory) checks before the first row of
    /// the block is read. `None` for a block without columns (verify it as
    /// [`parse_directory`](BlockView::parse_directory) does). Where the columns start is
    /// read from the unverified row offsets: a wrong place fails the column directory's
    /// checksum.
    /// With the view comes what the column directory's parse found, to read the columns
    /// without parsing it again ([`encoded_columns_with`](BlockView::encoded_columns_with)).
    pub(crate) fn parse_columns_first(
        bytes: &'b [u8],
    ) -> Result<Option<(BlockView<'b>, ColumnDirectory)>, Corrupt> {
        let view = BlockView::parse_header_unverified(bytes)?;
        if !view.columns {
            return Ok(None);
        }
        let directory = view.encoded_columns()?.into_directory();
        Ok(Some((view, directory)))
    }

    /// The block directory's checksum: what
    /// [`parse_columns_first`](BlockView::parse_columns_first) left out. The row offsets it
    /// vouches for are not walked here: [`checked_row`](BlockView::checked_row) checks the
    /// two of each row it returns (a walk over every row's offset cost more than the
    /// checksum, for blocks of which a selective scan reads a row or two).
    pub(crate) fn verify_directory(&self) -> Result<(), Corrupt> {
        if u32_at(self.bytes, CRC_AT) != block_checksum(self.bytes) {
            return Err(Corrupt("the block fails its checksum"));
        }
        Ok(())
    }

    /// The bytes the column directory vouches for: the header's first 8 bytes (format,
    /// PartitionKey length, row count) and the PartitionKey.
    fn bound(&self) -> [&'b [u8]; 2] {
        [
            self.bytes.get(..CRC_AT).unwrap_or_default(),
            self.bytes
                .get(BLOCK_HEAD..BLOCK_HEAD + self.pk.len())
                .unwrap_or_default(),
        ]
    }

    /// The block's columns (format 4, every checksum verified and every column decoded;
    /// a block of an older format has none: every property reads as `Column::Rows`).
    pub(crate) fn columns(&self) -> Result<ColumnSet, Corrupt> {
        if !self.columns {
            return Ok(ColumnSet::none());
        }
        ColumnSet::decode(self.columns_bytes(), self.rows, &self.bound())
    }

    /// Whether the block stores its columns (format 4).
    #[cfg(test)]
    pub(crate) fn has_columns(&self) -> bool {
        self.columns
    }

    /// The block's encoded columns with their directory checked (format 4; a block of an
    /// older format has none: every property reads as `Column::Rows`). Each column is
    /// verified when it is decoded (`LazyColumns`).
    pub(crate) fn encoded_columns(&self) -> Result<EncodedColumns<'b>, Corrupt> {
        if !self.columns {
            return Ok(EncodedColumns::none(self.rows));
        }
        EncodedColumns::parse(self.columns_bytes(), self.rows, &self.bound())
    }

    /// The block's encoded columns, read with the directory that
    /// [`parse_columns_first`](BlockView::parse_columns_first) returned for the same bytes.
    pub(crate) fn encoded_columns_with(
        &self,
        directory: &'b ColumnDirectory,
    ) -> EncodedColumns<'b> {
        EncodedColumns::with_directory(self.columns_bytes(), directory)
    }

    /// The bytes after the rows (format 4: the columns).
    fn columns_bytes(&self) -> &'b [u8] {
        let at = self.offset(self.rows).min(self.bytes.len());
        &self.bytes[at..]
    }

    /// Verifies the header's checksum and checks the header (format, PartitionKey, that the
    /// directory fits): what a point lookup needs. For format 3 that covers the directory
    /// only: a row read from such a view must come from [`find`](BlockView::find) or
    /// [`checked_row`](BlockView::checked_row), which verify it.
    pub(crate) fn parse_header(bytes: &'b [u8]) -> Result<BlockView<'b>, Corrupt> {
        let view = BlockView::parse_header_unverified(bytes)?;
        if u32_at(bytes, CRC_AT) != block_checksum(bytes) {
            return Err(Corrupt("the block fails its checksum"));
        }
        Ok(view)
    }

    /// [`parse_header`](BlockView::parse_header) without the checksum, in constant time:
    /// for splitting a scan into chunks, which reads keys only (each chunk's scan then
    /// verifies every block it reads).
    pub(crate) fn parse_header_unverified(bytes: &'b [u8]) -> Result<BlockView<'b>, Corrupt> {
        let (per_row, columns) = match bytes.first() {
            Some(&BLOCK_FORMAT) => (true, true),
            Some(&BLOCK_FORMAT_ROWS) => (true, false),
            Some(&BLOCK_FORMAT_WHOLE) => (false, false),
            _ => return Err(Corrupt("unknown block format")),
        };
        if bytes.len() < BLOCK_HEAD {
            return Err(Corrupt("unknown block format"));
        }
        let pk_len = usize::from(u16_at(bytes, 2));
        let rows = u32_at(bytes, 4) as usize;
        let pk = bytes
            .get(BLOCK_HEAD..BLOCK_HEAD + pk_len)
            .ok_or(Corrupt("PartitionKey past the end"))?;
        let pk = std::str::from_utf8(pk).map_err(|_| Corrupt("PartitionKey is not UTF-8"))?;
        let dir = BLOCK_HEAD + pk_len;
        let per = if per_row { ROW_DIR_V3 } else { ROW_DIR_V2 };
        rows.checked_mul(per)
            .and_then(|n| n.checked_add(4 + dir))
            .filter(|&end| end <= bytes.len())
            .ok_or(Corrupt("row offsets past the end"))?;
        if rows == 0 {
            return Err(Corrupt("empty block"));
        }
        Ok(BlockView {
            bytes,
            pk,
            rows,
            dir,
            per_row,
            columns,
        })
    }

    /// A view of a block whose header [`parse_header`](BlockView::parse_header) (or
    /// [`parse`](BlockView::parse)) accepted before, with the PartitionKey and row count it
    /// returned (no check is repeated).
    #[inline]
    pub(crate) fn from_checked(bytes: &'b [u8], pk: &'b str, rows: usize) -> BlockView<'b> {
        BlockView {
            bytes,
            pk,
            rows,
            dir: BLOCK_HEAD + pk.len(),
            per_row: matches!(bytes.first(), Some(&BLOCK_FORMAT | &BLOCK_FORMAT_ROWS)),
            columns: bytes.first() == Some(&BLOCK_FORMAT),
        }
    }

    #[inline]
    fn offset(&self, i: usize) -> usize {
        u32_at(self.bytes, self.dir + 4 * i) as usize
    }

    /// Where the RowKey hashes start.
    #[inline]
    fn hashes_start(&self) -> usize {
        self.dir + 4 * (self.rows + 1)
    }

    /// Where the row checksums start (format 3).
    #[inline]
    fn checksums_start(&self) -> usize {
        self.hashes_start() + 2 * self.rows
    }

    /// Where the first row starts.
    #[inline]
    fn rows_start(&self) -> usize {
        self.checksums_start() + if self.per_row { 4 * self.rows } else { 0 }
    }

    /// The number of rows (at least 1).
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.rows
    }

    /// The whole block's bytes (rows are [`span`](BlockView::span)s of them).
    #[inline]
    pub(crate) fn bytes(&self) -> &'b [u8] {
        self.bytes
    }

    /// The PartitionKey of every row.
    #[inline]
    pub(crate) fn partition_key(&self) -> &'b str {
        self.pk
    }

    /// Row `i` (`i < len()`), as the byte range it occupies and a view.
    #[inline]
    pub(crate) fn span(&self, i: usize) -> (u32, u32) {
        (self.offset(i) as u32, self.offset(i + 1) as u32)
    }

    /// Row `i`, as it is: verified only if the view came from [`parse`](BlockView::parse)
    /// (or the block is of format 2).
    #[inline]
    pub(crate) fn row(&self, i: usize) -> RowRef<'b> {
        let (start, end) = self.span(i);
        RowRef(
            self.bytes
                .get(start as usize..end as usize)
                .unwrap_or_default(),
        )
    }

    /// Row `i` once it has passed its checksum (format 3; a format-2 view's header check
    /// covered it already).
    #[inline]
    pub(crate) fn checked_row(&self, i: usize) -> Result<RowRef<'b>, Corrupt> {
        if self.per_row {
            self.verify_row(i)?;
        }
        Ok(self.row(i))
    }

    /// Checks row `i` of a format-3 block against its checksum.
    fn verify_row(&self, i: usize) -> Result<(), Corrupt> {
        let (start, end) = self.span(i);
        let (start, end) = (start as usize, end as usize);
        // What `check_offsets` checks of every row, for this one.
        if i >= self.rows || start < self.rows_start() || end < start + ROW_HEAD {
            return Err(Corrupt("row offsets out of order"));
        }
        let row = self
            .bytes
            .get(start..end)
            .ok_or(Corrupt("row offsets past the end"))?;
        if row_checksum(row) != u32_at(self.bytes, self.checksums_start() + 4 * i) {
            return Err(Corrupt("a row fails its checksum"));
        }
        Ok(())
    }

    /// The RowKey of row `i` as bytes (UTF-8 once the row is checked).
    #[inline]
    pub(crate) fn row_key_bytes(&self, i: usize) -> &'b [u8] {
        self.row(i).row_key_bytes()
    }

    /// The first row whose RowKey is `>= rk` (or `> rk` when `after`). Compares RowKeys as
    /// stored: for views from [`parse`](BlockView::parse), whose rows are all verified.
    pub(crate) fn lower_bound(&self, rk: &[u8], after: bool) -> usize {
        let found = self.lower_bound_by(rk, after, |i| {
            Ok::<_, std::convert::Infallible>(self.row_key_bytes(i))
        });
        match found {
            Ok(i) => i,
            Err(never) => match never {},
        }
    }

    /// [`lower_bound`](BlockView::lower_bound) reading row `i`'s RowKey with
    /// `row_key(i)` (which may verify the row first, and fail). The first and last rows
    /// are tried first: a scan's bound usually lies outside the block (a scan split at a
    /// block of a partition compares its bound with every later block of the partition),
    /// and then two RowKeys answer instead of a binary search's seven or eight.
    pub(crate) fn lower_bound_by<'k, E>(
        &self,
        rk: &[u8],
        after: bool,
        row_key: impl Fn(usize) -> Result<&'k [u8], E>,
    ) -> Result<usize, E> {
        let below = |i: usize| -> Result<bool, E> {
            Ok(match compare_utf8(row_key(i)?, rk) {
                Ordering::Less => true,
                Ordering::Equal => after,
                Ordering::Greater => false,
            })
        };
        let n = self.rows;
        if n == 0 || !below(0)? {
            return Ok(0);
        }
        if below(n - 1)? {
            return Ok(n);
        }
        // Row 0 is below `rk`, row n - 1 is not.
        let (mut lo, mut hi) = (1, n - 1);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if below(mid)? {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(lo)
    }

    /// The row with exactly this RowKey, verified: only the rows whose RowKey hash matches
    /// are read (and verified before their RowKey is compared). The hashes are covered by
    /// the header's checksum, so a row whose hash differs is not the one asked for: no
    /// other row is read, and damage in other rows does not fail the lookup.
    pub(crate) fn find(&self, rk: &str) -> Result<Option<usize>, Corrupt> {
        let wanted = row_key_hash(rk.as_bytes()).to_le_bytes();
        let hashes = self
            .bytes
            .get(self.hashes_start()..self.checksums_start())
            .unwrap_or_default();
        for (i, h) in hashes.chunks_exact(2).enumerate() {
            if *h == wanted && self.checked_row(i)?.row_key_bytes() == rk.as_bytes() {
                return Ok(Some(i));
            }
        }
        Ok(None)
    }

    /// [`find`](Self::find) in a block whose rows were all verified already (a verified
    /// copy, `verified.rs`): the same scan of the RowKey hashes, without checking the row
    /// it compares. The hashes lie side by side (2 bytes a row: a few cache lines the
    /// processor streams in), so a get from a block that is not in the cache waits for
    /// ≈ 3 lines instead of the ≈ 14 (offset and RowKey of ≈ 7 rows) a binary search over
    /// the RowKeys waited for.
    pub(crate) fn find_verified(&self, rk: &str) -> Option<usize> {
        let wanted = row_key_hash(rk.as_bytes()).to_le_bytes();
        let hashes = self
            .bytes
            .get(self.hashes_start()..self.checksums_start())
            .unwrap_or_default();
        hashes
            .chunks_exact(2)
            .enumerate()
            .filter(|(_, h)| **h == wanted)
            .map(|(i, _)| i)
            .find(|&i| self.row_key_bytes(i) == rk.as_bytes())
    }

    /// Checks every row (see [`RowRef::check`]), that RowKeys strictly increase and that
    /// their hashes are right.
    pub(crate) fn check_rows(&self, names: usize) -> Result<(), Corrupt> {
        let mut prev: Option<&[u8]> = None;
        for i in 0..self.rows {
            let row = self.row(i);
            row.check(names)?;
            let rk = row.row_key_bytes();
            let stored = u16_at(self.bytes, self.hashes_start() + 2 * i);
            if stored != row_key_hash(rk) {
                return Err(Corrupt("RowKey hash does not match"));
            }
            if prev.is_some_and(|p| compare_utf8(p, rk) != Ordering::Less) {
                return Err(Corrupt("RowKeys out of order"));
            }
            prev = Some(rk);
        }
        Ok(())
    }

    /// Checks that the block's columns (format 4) hold exactly what its rows hold, as
    /// `tableq check` does: a scan tests residuals over the columns, so columns that
    /// disagreed with their rows (a fault that passes both checksums) would answer
    /// queries wrongly. The rows must have passed [`check_rows`](BlockView::check_rows).
    pub(crate) fn check_columns(&self) -> Result<(), Corrupt> {
        if self.columns {
            // Compared as bytes: bit for bit (a NaN equals itself there).
            let rows: Vec<&[u8]> = (0..self.rows).map(|i| self.row(i).0).collect();
            let mut expected = Vec::new();
            columns_of(&rows).encode(&mut expected, &self.bound());
            let at = self.offset(self.rows).min(self.bytes.len());
            if self.bytes[at..] != expected[..] && !self.columns_before_min_rows(at) {
                return Err(Corrupt("the block's columns do not match its rows"));
            }
        }
        Ok(())
    }
}

impl BlockView<'_> {
    /// Whether the block's columns (from byte `at`) are none, as builds before
    /// [`COLUMN_MIN_ROWS`] wrote them for a block of fewer than [`COLUMN_MIN_ROWS_BEFORE`]
    /// rows: right then, and right now (a scan tests such a block's rows one by one).
    fn columns_before_min_rows(&self, at: usize) -> bool {
        if self.rows >= COLUMN_MIN_ROWS_BEFORE {
            return false;
        }
        let mut none = Vec::new();
        ColumnSet::none().encode(&mut none, &self.bound());
        self.bytes[at..] == none[..]
    }
}

/// One row of a block (see the module docs), borrowed from the block's bytes.
///
/// The accessors check what they read and report damage as [`Corrupt`] (a slot table or
/// value past the row's end, a string that is not UTF-8, an unknown tag, a DateTime out of
/// range, name numbers out of order): a scan pays only for the values it reads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct RowRef<'b>(pub(crate) &'b [u8]);

impl<'b> RowRef<'b> {
    /// The row's bytes (what a rewrite copies).
    #[inline]
    pub(crate) fn bytes(&self) -> &'b [u8] {
        self.0
    }

    #[inline]
    fn rk_len(&self) -> usize {
        usize::from(u16_at(self.0, 8))
    }

    #[inline]
    fn slot_count(&self) -> usize {
        usize::from(u16_at(self.0, 10))
    }

    /// The RowKey's bytes, unchecked (empty if they lie past the row's end): for
    /// comparisons, where damage can only misplace a row.
    #[inline]
    pub(crate) fn row_key_bytes(&self) -> &'b [u8] {
        self.0
            .get(ROW_HEAD..ROW_HEAD + self.rk_len())
            .unwrap_or_default()
    }

    /// The RowKey.
    #[inline]
    pub(crate) fn row_key(&self) -> Result<&'b str, Corrupt> {
        let bytes = self
            .0
            .get(ROW_HEAD..ROW_HEAD + self.rk_len())
            .ok_or(Corrupt("RowKey past the row's end"))?;
        std::str::from_utf8(bytes).map_err(|_| Corrupt("RowKey is not UTF-8"))
    }

    /// The Timestamp.
    #[inline]
    pub(crate) fn timestamp(&self) -> Result<Option<DateTime>, Corrupt> {
        if self.0.len() < ROW_HEAD {
            return Err(Corrupt("row shorter than its header"));
        }
        timestamp_from_ticks(i64_at(self.0, 0))
    }

    /// The slot table.
    #[inline]
    fn slots(&self) -> Result<&'b [u8], Corrupt> {
        let start = ROW_HEAD + self.rk_len();
        self.0
            .get(start..start + SLOT * self.slot_count())
            .ok_or(Corrupt("slot table past the row's end"))
    }

    /// The slots, decoded from their bytes.
    #[inline]
    fn slot_iter(&self) -> Result<impl Iterator<Item = Slot> + 'b, Corrupt> {
        Ok(self
            .slots()?
            .chunks_exact(SLOT)
            .map(|s| Slot::from_le_bytes(s.try_into().unwrap_or(&[0; SLOT]))))
    }

    /// A slot's value; its payload lies in the row (offsets from the row's first byte).
    #[inline]
    pub(crate) fn decode(&self, slot: Slot) -> Result<ValueRef<'b>, Corrupt> {
        let row = self.0;
        let payload = move |a: u32, b: u32| {
            row.get(a as usize..a as usize + b as usize)
                .ok_or(Corrupt("value past the row's end"))
        };
        slot.decode(
            move |a, b| {
                std::str::from_utf8(payload(a, b)?).map_err(|_| Corrupt("string is not UTF-8"))
            },
            payload,
        )
    }

    /// The slot of the property with name number `id` (not decoded: see
    /// [`decode`](RowRef::decode)).
    #[inline]
    pub(crate) fn slot(&self, id: u32) -> Result<Option<Slot>, Corrupt> {
        let mut rest = self.slots()?;
        while let Some((bytes, tail)) = rest.split_first_chunk::<SLOT>() {
            // Only the number is read until the slot is found.
            match Slot::id_of_le_bytes(bytes).cmp(&id) {
                Ordering::Less => rest = tail,
                Ordering::Equal => return Ok(Some(Slot::from_le_bytes(bytes))),
                Ordering::Greater => return Ok(None),
            }
        }
        Ok(None)
    }

    /// The value of the property with name number `id`.
    #[inline]
    pub(crate) fn value(&self, id: u32) -> Result<Option<ValueRef<'b>>, Corrupt> {
        match self.slot(id)? {
            Some(slot) => self.decode(slot).map(Some),
            None => Ok(None),
        }
    }

    /// Calls `f` with every property (name number, value), in number order.
    pub(crate) fn for_each(&self, mut f: impl FnMut(u32, ValueRef<'b>)) -> Result<(), Corrupt> {
        let mut prev: Option<u32> = None;
        for slot in self.slot_iter()? {
            let id = slot.id();
            if prev.is_some_and(|p| p >= id) {
                return Err(Corrupt("property numbers out of order"));
            }
            prev = Some(id);
            f(id, self.decode(slot)?);
        }
        Ok(())
    }

    /// The properties as (name, value), ordered by name (byte order, as `Entity` keeps
    /// them); every number must be one of `names`.
    fn named(&self, names: &'b Names) -> Result<Vec<(&'b str, ValueRef<'b>)>, Corrupt> {
        let mut props: Vec<(&str, ValueRef<'b>)> = Vec::with_capacity(self.slot_count());
        let mut unknown = false;
        self.for_each(|id, v| {
            unknown |= id as usize >= names.len();
            props.push((names.name(id), v));
        })?;
        if unknown {
            return Err(Corrupt("unknown property number"));
        }
        if !props.is_sorted_by(|a, b| a.0 < b.0) {
            props.sort_unstable_by(|a, b| a.0.cmp(b.0));
        }
        Ok(props)
    }

    /// The row with its property numbers mapped through `map` (this row's number `n`
    /// becomes `map[n]`; distinct numbers must map to distinct numbers), its slots sorted by
    /// the new numbers. Values stay where they are: slots have a fixed size and payloads
    /// are addressed from the row's first byte. (Replay moves a logged row from its
    /// record's name numbering to its table's without decoding it.)
    pub(crate) fn renumbered(&self, map: &[u32]) -> Result<Vec<u8>, Corrupt> {
        let start = ROW_HEAD + self.rk_len();
        let end = start + SLOT * self.slot_count();
        let mut out = self.0.to_vec();
        let slots = out
            .get_mut(start..end)
            .ok_or(Corrupt("slot table past the row's end"))?;
        let (slots, _) = slots.as_chunks_mut::<SLOT>();
        let mut sorted = true;
        let mut previous: Option<u32> = None;
        for bytes in slots.iter_mut() {
            let slot = Slot::from_le_bytes(bytes);
            let id = *map
                .get(slot.id() as usize)
                .ok_or(Corrupt("unknown property number"))?;
            let slot = slot
                .with_id(id)
                .ok_or(Corrupt("property number too large"))?;
            *bytes = slot.to_le_bytes();
            sorted &= previous.is_none_or(|p| p < id);
            previous = Some(id);
        }
        if !sorted {
            slots.sort_unstable_by_key(|s| Slot::id_of_le_bytes(s));
            if slots
                .windows(2)
                .any(|w| Slot::id_of_le_bytes(&w[0]) == Slot::id_of_le_bytes(&w[1]))
            {
                return Err(Corrupt("two properties renumbered alike"));
            }
        }
        Ok(out)
    }

    /// The row as an owned entity of partition `pk`.
    pub(crate) fn to_entity(self, pk: &str, names: &Names) -> Result<Entity, Corrupt> {
        let props = self.named(names)?.into_iter().map(|(name, v)| Property {
            name: name.to_owned(),
            value: v.to_owned(),
        });
        Ok(Entity::with_properties(
            pk,
            self.row_key()?,
            self.timestamp()?,
            props,
        ))
    }

    /// Calls `f` with every property, ordered by name. On a damaged row, `f` may have seen
    /// the properties before the damaged one when the error comes back (a reader then
    /// fails the whole page).
    pub(crate) fn for_each_by_name(
        &self,
        names: &Names,
        f: &mut dyn FnMut(&str, ValueRef<'_>),
    ) -> Result<(), Corrupt> {
        if self.numbered_by_name(names) {
            // The common case (names numbered in the order of their first use, which for
            // most tables is the order of the first entity's properties): decode and hand
            // over in slot order, collecting nothing.
            for slot in self.slot_iter()? {
                f(names.name(slot.id()), self.decode(slot)?);
            }
            return Ok(());
        }
        for (n, v) in self.named(names)? {
            f(n, v);
        }
        Ok(())
    }

    /// Calls `f` with every property in UTF-16 ordinal order of names (the order of the
    /// service's replies) and returns `true` when the row lists them so as stored: its
    /// numbers ascend and stay below [`Names::ordered`]. Else `false`, calling nothing.
    /// On a damaged row, as [`RowRef::for_each_by_name`].
    pub(crate) fn for_each_in_reply_order(
        &self,
        names: &Names,
        f: &mut dyn FnMut(&str, ValueRef<'_>),
    ) -> Result<bool, Corrupt> {
        if !self.numbered_in_order(names.ordered()) {
            return Ok(false);
        }
        for slot in self.slot_iter()? {
            f(names.name(slot.id()), self.decode(slot)?);
        }
        Ok(true)
    }

    /// Whether the slots' numbers strictly increase and stay below `ordered` (names that
    /// ascend in byte and UTF-16 order): integer comparisons only.
    #[inline]
    fn numbered_in_order(&self, ordered: usize) -> bool {
        let Ok(slots) = self.slots() else {
            return false;
        };
        let mut next = 0usize;
        for bytes in slots.chunks_exact(SLOT) {
            let id = Slot::id_of_le_bytes(bytes) as usize;
            if id < next || id >= ordered {
                return false;
            }
            next = id + 1;
        }
        true
    }

    /// Whether the slots' numbers strictly increase, are all among `names` and name the
    /// properties in strictly increasing name order: then slot order is name order and
    /// nothing needs checking or sorting beyond decoding the values.
    fn numbered_by_name(&self, names: &Names) -> bool {
        if self.numbered_in_order(names.ordered()) {
            return true;
        }
        let Ok(slots) = self.slots() else {
            return false;
        };
        let mut previous: Option<(u32, &str)> = None;
        for bytes in slots.chunks_exact(SLOT) {
            let id = Slot::id_of_le_bytes(bytes);
            if id as usize >= names.len() {
                return false;
            }
            let name = names.name(id);
            if previous.is_some_and(|(p, n)| p >= id || n >= name) {
                return false;
            }
            previous = Some((id, name));
        }
        true
    }

    /// Checks the whole row: everything the accessors check, with name numbers below
    /// `names`.
    pub(crate) fn check(&self, names: usize) -> Result<(), Corrupt> {
        self.row_key()?;
        self.timestamp()?;
        let mut unknown = false;
        self.for_each(|id, _| unknown |= id as usize >= names)?;
        if unknown {
            return Err(Corrupt("unknown property number"));
        }
        Ok(())
    }
}

/// Encodes an entity as a row, numbering its property names with `intern` (which adds
/// unknown names).
pub(crate) fn encode_row(
    entity: &Entity,
    intern: &mut dyn FnMut(&str) -> Result<u32, EncodeError>,
) -> Result<Vec<u8>, EncodeError> {
    let rk = entity.row_key().as_bytes();
    let rk_len = u16::try_from(rk.len()).map_err(|_| EncodeError::TooLarge("RowKey"))?;
    let count = entity.properties().len();
    let slot_count = u16::try_from(count).map_err(|_| EncodeError::TooLarge("property count"))?;
    let mut props: Vec<(u32, ValueRef<'_>)> = Vec::with_capacity(count);
    for p in entity.properties() {
        props.push((intern(&p.name)?, p.value.as_ref()));
    }
    props.sort_unstable_by_key(|(id, _)| *id);
    let data_start = ROW_HEAD + rk.len() + SLOT * count;
    let mut out = Vec::with_capacity(data_start + 16 * count);
    out.extend_from_slice(&timestamp_ticks(entity.timestamp()).to_le_bytes());
    out.extend_from_slice(&rk_len.to_le_bytes());
    out.extend_from_slice(&slot_count.to_le_bytes());
    out.extend_from_slice(rk);
    out.resize(data_start, 0);
    for (k, (id, value)) in props.into_iter().enumerate() {
        let slot = Slot::encode::<EncodeError>(id, value, |payload| {
            let at = u32::try_from(out.len()).map_err(|_| EncodeError::TooLarge("entity"))?;
            u32::try_from(payload.len()).map_err(|_| EncodeError::TooLarge("value"))?;
            match payload {
                Payload::Text(s) => out.extend_from_slice(s.as_bytes()),
                Payload::Bytes(b) => out.extend_from_slice(b),
            }
            Ok(at)
        })?;
        let o = ROW_HEAD + rk.len() + SLOT * k;
        out[o..o + SLOT].copy_from_slice(&slot.to_le_bytes());
    }
    u32::try_from(out.len()).map_err(|_| EncodeError::TooLarge("entity"))?;
    Ok(out)
}

/// Builds a block of partition `pk` from rows sorted by RowKey.
pub(crate) fn build_block(pk: &str, rows: &[Cow<'_, [u8]>]) -> Result<Vec<u8>, EncodeError> {
    assemble(BLOCK_FORMAT, pk, rows)
}

/// A block of layout `format` (format 3: with row checksums; 2: without).
fn assemble(format: u8, pk: &str, rows: &[Cow<'_, [u8]>]) -> Result<Vec<u8>, EncodeError> {
    let per_row = format != BLOCK_FORMAT_WHOLE;
    let pk_len = u16::try_from(pk.len()).map_err(|_| EncodeError::TooLarge("PartitionKey"))?;
    let count = u32::try_from(rows.len()).map_err(|_| EncodeError::TooLarge("block"))?;
    let mut head = [format, 0, 0, 0, 0, 0, 0, 0];
    head[2..4].copy_from_slice(&pk_len.to_le_bytes());
    head[4..8].copy_from_slice(&count.to_le_bytes());
    let mut columns = Vec::new();
    if format == BLOCK_FORMAT {
        let rows: Vec<&[u8]> = rows.iter().map(|r| &r[..]).collect();
        columns_of(&rows).encode(&mut columns, &[&head, pk.as_bytes()]);
    }
    let dir = BLOCK_HEAD + pk.len();
    let per = if per_row { ROW_DIR_V3 } else { ROW_DIR_V2 };
    let first_row = dir + 4 + per * rows.len();
    let total = first_row + rows.iter().map(|r| r.len()).sum::<usize>() + columns.len();
    u32::try_from(total).map_err(|_| EncodeError::TooLarge("block"))?;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&head);
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(pk.as_bytes());
    let mut at = first_row;
    for r in rows {
        out.extend_from_slice(&(at as u32).to_le_bytes());
        at += r.len();
    }
    out.extend_from_slice(&(at as u32).to_le_bytes());
    for r in rows {
        out.extend_from_slice(&row_key_hash(RowRef(r).row_key_bytes()).to_le_bytes());
    }
    if per_row {
        for r in rows {
            out.extend_from_slice(&row_checksum(r).to_le_bytes());
        }
    }
    for r in rows {
        out.extend_from_slice(r);
    }
    out.extend_from_slice(&columns);
    let crc = block_checksum(&out);
    out[CRC_AT..BLOCK_HEAD].copy_from_slice(&crc.to_le_bytes());
    Ok(out)
}

/// Blocks of fewer rows than this store no columns (their rows are tested one by one): 32,
/// so that a block of the default 32 KiB keeps its columns for rows up to ≈ 1 KiB.
pub(crate) const COLUMN_MIN_ROWS: usize = 32;

/// [`COLUMN_MIN_ROWS`] of the builds before 2026-12-07 (64 KiB blocks by default): a block of
/// fewer rows than this that they wrote may have no columns where this build would write
/// them, and is still right ([`BlockView::check_columns`]).
const COLUMN_MIN_ROWS_BEFORE: usize = 64;

/// The columns of rows (`crate::codec::ColumnSet`): none when a row's slots cannot be
/// read (the writer checks rows before it copies them, so that is never the case for a
/// block it writes).
fn columns_of(rows: &[&[u8]]) -> ColumnSet {
    let slots: Result<Vec<Vec<Slot>>, Corrupt> = rows
        .iter()
        .map(|r| Ok(RowRef(r).slot_iter()?.collect()))
        .collect();
    match slots {
        Ok(slots) => {
            let refs: Vec<&[Slot]> = slots.iter().map(Vec::as_slice).collect();
            ColumnSet::build_with(&refs, COLUMN_MIN_ROWS)
        }
        Err(_) => ColumnSet::none(),
    }
}

/// Makes a block's checksums right again after a test changed its bytes (to reach the
/// checks behind them): each row's (format 3, where the directory is readable), then the
/// header's.
#[cfg(test)]
pub(crate) fn reseal(bytes: &mut [u8]) {
    if let Ok(view) = BlockView::parse_header_unverified(bytes)
        && view.per_row
    {
        let sums: Vec<(usize, u32)> = (0..view.rows)
            .filter_map(|i| {
                let (start, end) = view.span(i);
                let row = bytes.get(start as usize..end as usize)?;
                Some((view.checksums_start() + 4 * i, row_checksum(row)))
            })
            .collect();
        for (at, crc) in sums {
            bytes[at..at + 4].copy_from_slice(&crc.to_le_bytes());
        }
    }
    if let Ok(view) = BlockView::parse_header_unverified(bytes)
        && view.columns
    {
        let at = view.offset(view.rows);
        let bound = view.bound().map(<[u8]>::to_vec);
        if let Some(section) = bytes.get_mut(at..) {
            crate::codec::reseal_columns(section, &[&bound[0], &bound[1]]);
        }
    }
    let crc = block_checksum(bytes);
    bytes[CRC_AT..BLOCK_HEAD].copy_from_slice(&crc.to_le_bytes());
}

/// A block in the layout of data format 4 (format 3: checksums per row, no columns), as
/// an older build wrote it: for the tests that newer builds still read it.
#[cfg(test)]
pub(crate) fn build_block_rows(pk: &str, rows: &[Cow<'_, [u8]>]) -> Vec<u8> {
    assemble(BLOCK_FORMAT_ROWS, pk, rows).unwrap()
}

/// A block in the layout of data format 3 (format 2: one checksum over the whole block),
/// as an older build wrote it: for the tests that newer builds still read it.
#[cfg(test)]
pub(crate) fn build_block_whole(pk: &str, rows: &[Cow<'_, [u8]>]) -> Vec<u8> {
    assemble(BLOCK_FORMAT_WHOLE, pk, rows).unwrap()
}

/// The 16-bit RowKey hash of the block layout (FNV-1a, folded): part of the file format.
pub(crate) fn row_key_hash(rk: &[u8]) -> u16 {
    let mut h: u32 = 0x811C_9DC5;
    for &b in rk {
        h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
    }
    (h ^ (h >> 16)) as u16
}

/// The most one fixed-width property of a row adds to its block's columns: its value (at
/// most 8 bytes) and its presence bit, with room for each column's header and the rounding
/// of its bitmaps to words (≤ 21 bytes a column, covered by the spare 7/8 byte a row from
/// 24 rows on; blocks under [`COLUMN_MIN_ROWS`] rows have no columns).
const COLUMN_SHARE: usize = 9;

/// The size of one row's share of a block (its bytes, offset, hash and checksum, and at
/// most what its fixed-width properties add to the block's columns). Blocks are cut so
/// that these shares fit `block_bytes`: a block that outgrew it by its columns would take
/// the next larger redb allocation (twice the pages) and a larger read buffer each time.
pub(crate) fn row_share(row: &[u8]) -> usize {
    let fixed = RowRef(row)
        .slot_iter()
        .map_or(0, |slots| slots.filter(|s| s.is_fixed_width()).count());
    row.len() + ROW_DIR_V3 + COLUMN_SHARE * fixed
}

/// The fixed bytes of a block of partition `pk` (header, end offset, and the columns'
/// checksum and count).
pub(crate) fn block_overhead(pk: &str) -> usize {
    BLOCK_HEAD + pk.len() + 4 + 8
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use tableq_model::Value;
    use uuid::Uuid;

    /// Encodes entities with one shared name table.
    fn encode_all(entities: &[Entity], names: &mut Names) -> Vec<Vec<u8>> {
        entities
            .iter()
            .map(|e| {
                encode_row(e, &mut |n| match names.id(n) {
                    Some(id) => Ok(id),
                    None => names.push(n).ok_or(EncodeError::TooManyNames),
                })
                .unwrap()
            })
            .collect()
    }

    #[test]
    fn every_changed_byte_fails_the_checksum() {
        let mut names = Names::default();
        let mut e = all_types();
        e.set(
            "Name",
            Value::String("a string whose bytes get flipped".into()),
        );
        let bytes = block_of("p", &[e, Entity::new("p", "zz")], &mut names);
        // The columns follow the rows: point gets do not read them, scans do.
        let columns_at = BlockView::parse(&bytes).unwrap().offset(2);
        assert!(columns_at < bytes.len());
        // What a point get of each row reads: the header's checksum, then the row's.
        let point_gets_fail = |damaged: &[u8]| match BlockView::parse_header(damaged) {
            Err(_) => true,
            Ok(view) => ["r\u{E000}", "zz"].iter().any(|rk| view.find(rk).is_err()),
        };
        // What a scan over every column reads: the directory's checksum, the column
        // directory's and each column's.
        let columns_fail = |damaged: &[u8]| match BlockView::parse_directory(damaged) {
            Err(_) => true,
            Ok(view) => view.columns().is_err(),
        };
        for i in 0..bytes.len() {
            for flip in [0x01u8, 0x80, 0xFF] {
                let mut damaged = bytes.clone();
                damaged[i] ^= flip;
                if i < columns_at {
                    assert!(point_gets_fail(&damaged), "byte {i} ^ {flip:#x}");
                } else {
                    assert!(columns_fail(&damaged), "byte {i} ^ {flip:#x}");
                }
                assert!(BlockView::parse(&damaged).is_err(), "byte {i} ^ {flip:#x}");
            }
        }
        // 64 bytes flipped at once (the issue's attack) anywhere in the block.
        for start in (0..bytes.len().saturating_sub(64)).step_by(7) {
            let mut damaged = bytes.clone();
            damaged[start..start + 64]
                .iter_mut()
                .for_each(|b| *b ^= 0xFF);
            if start < columns_at {
                assert!(point_gets_fail(&damaged), "bytes {start}..+64");
            }
            assert!(BlockView::parse(&damaged).is_err(), "bytes {start}..+64");
        }
        // Unverified, only the header is looked at: a flipped value goes unseen there.
        let mut damaged = bytes.clone();
        let last = damaged.len() - 1;
        damaged[last] ^= 1;
        assert!(BlockView::parse_header_unverified(&damaged).is_ok());
    }

    fn block_of(pk: &str, entities: &[Entity], names: &mut Names) -> Vec<u8> {
        let rows: Vec<Cow<'_, [u8]>> = encode_all(entities, names)
            .into_iter()
            .map(Cow::Owned)
            .collect();
        build_block(pk, &rows).unwrap()
    }

    fn all_types() -> Entity {
        let mut e = Entity::new("p\u{1F600}", "r\u{E000}");
        e.set_timestamp(DateTime::from_ticks(639_028_224_000_000_001));
        e.set("Bin", Value::Binary(vec![0, 255, 7]));
        e.set("BinEmpty", Value::Binary(vec![]));
        e.set("BoolF", Value::Boolean(false));
        e.set("BoolT", Value::Boolean(true));
        e.set("DtMax", Value::DateTime(DateTime::MAX));
        e.set("DtMin", Value::DateTime(DateTime::MIN));
        e.set("DNaN", Value::Double(f64::from_bits(0x7FF8_0000_0000_0123)));
        e.set("DNegZero", Value::Double(-0.0));
        e.set("DInf", Value::Double(f64::NEG_INFINITY));
        e.set(
            "Guid",
            Value::Guid(Uuid::from_u128(0x0123_4567_89ab_cdef_0011_2233_4455_6677)),
        );
        e.set("I32", Value::Int32(i32::MIN));
        e.set("I64", Value::Int64(i64::MAX));
        e.set("Str", Value::String("it's \u{1F600} \0 \"x\"".into()));
        e.set("StrEmpty", Value::String(String::new()));
        e
    }

    fn bits(e: &Entity) -> Vec<(String, String)> {
        // Doubles by bit pattern (NaN payloads, -0.0), everything else by Debug.
        e.properties()
            .iter()
            .map(|p| {
                let v = match &p.value {
                    Value::Double(d) => format!("{:#x}", d.to_bits()),
                    v => format!("{v:?}"),
                };
                (p.name.clone(), v)
            })
            .collect()
    }

    /// Blocks of 32 to 63 rows store columns since 2026-12-07; the builds before stored
    /// none for them, which `check_columns` still accepts — below 64 rows only.
    #[test]
    fn blocks_written_with_the_earlier_column_bound_still_check() {
        let mut names = Names::default();
        for (n, accepted) in [
            (31, true),
            (32, true),
            (63, true),
            (64, false),
            (100, false),
        ] {
            let entities: Vec<Entity> = (0..n)
                .map(|i| {
                    let mut e = Entity::new("p", format!("r{i:03}"));
                    e.set("Age", Value::Int32(i));
                    e
                })
                .collect();
            let block = block_of("p", &entities, &mut names);
            let view = BlockView::parse(&block).unwrap();
            view.check_columns().unwrap();
            let n = n as usize;
            assert_eq!(
                view.columns().unwrap() != ColumnSet::none(),
                n >= COLUMN_MIN_ROWS
            );
            // The same rows with no columns, as a build before wrote them.
            let mut old = block[..view.offset(n)].to_vec();
            ColumnSet::none().encode(&mut old, &view.bound());
            let old_view = BlockView::parse(&old).unwrap();
            assert_eq!(old_view.columns().unwrap(), ColumnSet::none());
            assert_eq!(old_view.check_columns().is_ok(), accepted, "{n} rows");
        }
    }

    #[test]
    fn renumbering_moves_a_row_to_another_name_list() {
        let entity = all_types();
        let mut from = Names::default();
        let row = encode_all(std::slice::from_ref(&entity), &mut from).remove(0);
        // Another table knows the names in reverse order, after names of its own.
        let mut to = Names::default();
        to.push("Other");
        for i in (0..from.len()).rev() {
            to.push(from.name(i as u32));
        }
        let map: Vec<u32> = (0..from.len())
            .map(|i| to.id(from.name(i as u32)).unwrap())
            .collect();
        let moved = RowRef(&row).renumbered(&map).unwrap();
        RowRef(&moved).check(to.len()).unwrap();
        assert_eq!(
            RowRef(&moved)
                .to_entity(entity.partition_key(), &to)
                .unwrap(),
            RowRef(&row)
                .to_entity(entity.partition_key(), &from)
                .unwrap()
        );
        // The identity keeps the bytes.
        let same: Vec<u32> = (0..from.len() as u32).collect();
        assert_eq!(RowRef(&row).renumbered(&same).unwrap(), row);
        // A number the map lacks, or two numbers mapped alike, is damage.
        assert!(RowRef(&row).renumbered(&map[..1]).is_err());
        assert!(RowRef(&row).renumbered(&vec![0; from.len()]).is_err());
    }

    #[test]
    fn every_edm_type_round_trips_bit_exactly() {
        let mut names = Names::default();
        let e = all_types();
        let bytes = block_of(e.partition_key(), std::slice::from_ref(&e), &mut names);
        let view = BlockView::parse(&bytes).unwrap();
        view.check_rows(names.len()).unwrap();
        assert_eq!((view.len(), view.partition_key()), (1, "p\u{1F600}"));
        let back = view.row(0).to_entity(view.partition_key(), &names).unwrap();
        // (`Entity`'s `==` says NaN != NaN: compare Doubles by bit pattern.)
        assert_eq!(bits(&back), bits(&e));
        assert_eq!(
            (back.partition_key(), back.row_key()),
            (e.partition_key(), e.row_key())
        );
        assert_eq!(back.timestamp(), e.timestamp());
        // In-place reads agree with the owned entity.
        let row = view.row(0);
        for p in e.properties() {
            let got = row.value(names.id(&p.name).unwrap()).unwrap().unwrap();
            assert_eq!(
                got.total_cmp(&p.value.as_ref()),
                Ordering::Equal,
                "{}",
                p.name
            );
        }
        assert!(row.value(names.len() as u32 + 5).unwrap().is_none());
        let mut seen = Vec::new();
        row.for_each_by_name(&names, &mut |n, _| seen.push(n.to_owned()))
            .unwrap();
        let expected: Vec<String> = e.properties().iter().map(|p| p.name.clone()).collect();
        assert_eq!(seen, expected);
    }

    #[test]
    fn keys_without_timestamp_empty_and_large_entities() {
        let mut names = Names::default();
        let empty = Entity::new("", "");
        let mut big = Entity::new("p", "big");
        for i in 0..16 {
            big.set(format!("S{i:02}"), Value::String("é".repeat(16 * 1024)));
        }
        big.set("B", Value::Binary(vec![9; 64 * 1024]));
        let bytes = block_of("", std::slice::from_ref(&empty), &mut names);
        let view = BlockView::parse(&bytes).unwrap();
        view.check_rows(names.len()).unwrap();
        assert_eq!(view.row(0).to_entity("", &names).unwrap(), empty);
        assert_eq!(view.row(0).timestamp().unwrap(), None);
        let bytes = block_of("p", std::slice::from_ref(&big), &mut names);
        assert!(bytes.len() > 570 * 1024);
        let view = BlockView::parse(&bytes).unwrap();
        view.check_rows(names.len()).unwrap();
        assert_eq!(view.row(0).to_entity("p", &names).unwrap(), big);
    }

    #[test]
    fn the_module_docs_example_is_the_layout() {
        let mut names = Names::default();
        let mut r1 = Entity::new("p", "r1");
        r1.set("Age", Value::Int32(7));
        let bytes = block_of("p", &[r1, Entity::new("p", "r2")], &mut names);
        let mut head = vec![4, 0, 1, 0, 2, 0, 0, 0];
        head.extend_from_slice(&block_checksum(&bytes).to_le_bytes());
        head.extend_from_slice(&[b'p', 0x25, 0, 0, 0, 0x3F, 0, 0, 0, 0x4D, 0, 0, 0]);
        head.extend_from_slice(&row_key_hash(b"r1").to_le_bytes());
        head.extend_from_slice(&row_key_hash(b"r2").to_le_bytes());
        head.extend_from_slice(&row_checksum(&bytes[0x25..0x3F]).to_le_bytes());
        head.extend_from_slice(&row_checksum(&bytes[0x3F..0x4D]).to_le_bytes());
        assert_eq!(&bytes[..head.len()], head.as_slice());
        assert_eq!(head.len(), 0x25);
        // The columns after the rows: two rows are too few for any (count FF FF FF FF),
        // under their own checksum, which covers the header's first 8 bytes and the
        // PartitionKey first.
        assert_eq!(bytes.len(), 0x4D + 8);
        assert_eq!(&bytes[0x51..], [0xFF; 4].as_slice());
        let mut crc = crc32fast::Hasher::new();
        crc.update(&[4, 0, 1, 0, 2, 0, 0, 0, b'p', 0xFF, 0xFF, 0xFF, 0xFF]);
        assert_eq!(&bytes[0x4D..0x51], crc.finalize().to_le_bytes().as_slice());
        // The header's checksum covers the directory but not the rows (their own do), nor
        // itself.
        let mut other = bytes.clone();
        other[0x24] ^= 1;
        assert_ne!(block_checksum(&other), block_checksum(&bytes));
        other[0x24] ^= 1;
        other[0x4C] ^= 1;
        assert_eq!(block_checksum(&other), block_checksum(&bytes));
        other[0x4C] ^= 1;
        other[8] ^= 1;
        assert_eq!(block_checksum(&other), block_checksum(&bytes));
        // Row r1: no Timestamp, RowKey of 2 bytes, 1 slot (name 0, Int32 7).
        let r1 = &bytes[0x25..0x3F];
        assert_eq!(&r1[..8], i64::MIN.to_le_bytes().as_slice());
        assert_eq!(&r1[8..14], [2, 0, 1, 0, b'r', b'1'].as_slice());
        assert_eq!(&r1[14..], [5, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0].as_slice());
    }

    #[test]
    fn a_point_get_verifies_its_row_and_no_other() {
        let mut names = Names::default();
        let mut r1 = Entity::new("p", "r1");
        r1.set("S", Value::String("first".into()));
        let mut r2 = Entity::new("p", "r2");
        r2.set("S", Value::String("second".into()));
        let mut bytes = block_of("p", &[r1.clone(), r2], &mut names);
        // Damage the last byte of r2's string (the rows end where the columns start).
        let last = BlockView::parse(&bytes).unwrap().offset(2) - 1;
        bytes[last] ^= 0x20;
        let view = BlockView::parse_header(&bytes).unwrap();
        assert_eq!(view.find("r1"), Ok(Some(0)));
        assert_eq!(view.row(0).to_entity("p", &names).unwrap(), r1);
        assert_eq!(view.find("r2"), Err(Corrupt("a row fails its checksum")));
        assert_eq!(
            view.checked_row(1),
            Err(Corrupt("a row fails its checksum"))
        );
        assert_eq!(view.find("r3"), Ok(None), "no row of that hash is read");
        // A scan loads the whole block: the damage fails it.
        assert_eq!(
            BlockView::parse(&bytes).unwrap_err(),
            Corrupt("a row fails its checksum")
        );
    }

    #[test]
    fn blocks_of_data_format_3_are_still_read_and_verified_whole() {
        let mut names = Names::default();
        let mut r1 = Entity::new("p", "r1");
        r1.set("S", Value::String("first".into()));
        let entities = [r1.clone(), Entity::new("p", "r2")];
        let rows: Vec<Cow<'_, [u8]>> = encode_all(&entities, &mut names)
            .into_iter()
            .map(Cow::Owned)
            .collect();
        let bytes = build_block_whole("p", &rows);
        assert_eq!(bytes[0], BLOCK_FORMAT_WHOLE);
        let view = BlockView::parse(&bytes).unwrap();
        view.check_rows(names.len()).unwrap();
        assert_eq!(view.row(0).to_entity("p", &names).unwrap(), r1);
        let view = BlockView::parse_header(&bytes).unwrap();
        assert_eq!(view.find("r2"), Ok(Some(1)));
        assert_eq!(view.find("r0"), Ok(None));
        // Its one checksum covers every byte: damage anywhere fails every read.
        for i in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[i] ^= 0x01;
            assert!(BlockView::parse_header(&damaged).is_err(), "byte {i}");
            assert!(BlockView::parse(&damaged).is_err(), "byte {i}");
        }
        // A rewrite carries its rows into the new layout.
        let again: Vec<Cow<'_, [u8]>> = (0..view.len())
            .map(|i| Cow::Borrowed(view.row(i).bytes()))
            .collect();
        let rewritten = build_block("p", &again).unwrap();
        assert_eq!(rewritten[0], BLOCK_FORMAT);
        let view = BlockView::parse(&rewritten).unwrap();
        assert_eq!(view.row(0).to_entity("p", &names).unwrap(), r1);
    }

    #[test]
    fn lookups_follow_utf16_order() {
        let mut names = Names::default();
        let keys = ["", "a", "b\u{10000}", "b\u{E000}", "c"];
        let entities: Vec<Entity> = keys.iter().map(|k| Entity::new("p", *k)).collect();
        let bytes = block_of("p", &entities, &mut names);
        let view = BlockView::parse(&bytes).unwrap();
        view.check_rows(0).unwrap();
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(view.find(k), Ok(Some(i)));
            assert_eq!(view.find_verified(k), Some(i));
            assert_eq!(view.lower_bound(k.as_bytes(), true), i + 1);
        }
        assert_eq!(view.find("b"), Ok(None));
        for missing in ["b", "0", "b\u{FFFF}", "d", "\u{E000}"] {
            assert_eq!(view.find_verified(missing), None, "{missing:?}");
        }
        assert_eq!(view.lower_bound(b"b", false), 2);
        assert_eq!(view.lower_bound("\u{FFFF}".as_bytes(), false), 5);
    }

    #[test]
    fn lookups_tell_rows_whose_row_key_hashes_collide_apart() {
        // RowKeys sharing one 16-bit hash: the hash picks candidates, the RowKey decides.
        let first = "k0".to_owned();
        let wanted = row_key_hash(first.as_bytes());
        let mut keys: Vec<String> = (1..)
            .map(|i| format!("k{i}"))
            .filter(|k| row_key_hash(k.as_bytes()) == wanted)
            .take(3)
            .collect();
        keys.push(first);
        keys.sort();
        let (present, absent) = (&keys[..3], &keys[3]);
        let mut names = Names::default();
        let entities: Vec<Entity> = present.iter().map(|k| Entity::new("p", k)).collect();
        let bytes = block_of("p", &entities, &mut names);
        let view = BlockView::parse(&bytes).unwrap();
        view.check_rows(0).unwrap();
        for (i, k) in present.iter().enumerate() {
            assert_eq!(view.find(k), Ok(Some(i)));
            assert_eq!(view.find_verified(k), Some(i));
        }
        assert_eq!(row_key_hash(absent.as_bytes()), wanted);
        assert_eq!(view.find(absent), Ok(None));
        assert_eq!(view.find_verified(absent), None);
    }

    #[test]
    fn rows_out_of_order_are_rejected() {
        let mut names = Names::default();
        let entities = [Entity::new("p", "b"), Entity::new("p", "a")];
        let bytes = block_of("p", &entities, &mut names);
        let view = BlockView::parse(&bytes).unwrap();
        assert!(view.check_rows(0).is_err());
    }

    #[test]
    fn unknown_name_numbers_are_rejected() {
        let mut names = Names::default();
        let mut e = Entity::new("p", "r");
        e.set("A", Value::Int32(1));
        let bytes = block_of("p", &[e], &mut names);
        let view = BlockView::parse(&bytes).unwrap();
        assert!(view.check_rows(1).is_ok());
        assert!(view.check_rows(0).is_err());
        assert!(view.row(0).to_entity("p", &Names::default()).is_err());
    }

    #[test]
    fn damaged_values_are_reported_where_read() {
        let mut names = Names::default();
        let mut e = Entity::new("p", "r");
        e.set("A", Value::Int32(1));
        e.set("S", Value::String("abc".into()));
        let mut bytes = block_of("p", &[e], &mut names);
        // The string's bytes are the last of the rows: make them invalid UTF-8.
        let at = BlockView::parse(&bytes).unwrap().offset(1) - 2;
        bytes[at] = 0xFF;
        // The row's checksum catches it first ...
        assert_eq!(
            BlockView::parse(&bytes).unwrap_err(),
            Corrupt("a row fails its checksum")
        );
        // ... and with the checksum made right, the rows' own checks do.
        reseal(&mut bytes);
        let view = BlockView::parse(&bytes).unwrap();
        let row = view.row(0);
        assert_eq!(
            row.value(0).unwrap().map(|v| v.to_owned()),
            Some(Value::Int32(1))
        );
        assert_eq!(row.value(1).unwrap_err(), Corrupt("string is not UTF-8"));
        assert!(row.to_entity("p", &names).is_err());
        assert!(view.check_rows(names.len()).is_err());
    }

    proptest! {
        /// `lower_bound` (which tries the first and last rows before its binary search) is
        /// the first row not below the key, for keys before, inside, between and after the
        /// block's, with `after` both ways.
        #[test]
        fn lower_bound_is_the_first_row_not_below(
            keys in proptest::collection::btree_set("[a-e]{0,3}", 1..12),
            probes in proptest::collection::vec("[a-f]{0,4}", 1..12),
        ) {
            let keys: Vec<String> = keys.into_iter().collect();
            let mut names = Names::default();
            let entities: Vec<Entity> = keys.iter().map(|k| Entity::new("p", k.as_str())).collect();
            let bytes = block_of("p", &entities, &mut names);
            let view = BlockView::parse(&bytes).unwrap();
            for probe in probes.iter().chain(&keys) {
                for after in [false, true] {
                    let want = keys.partition_point(|k| {
                        let o = compare_utf8(k.as_bytes(), probe.as_bytes());
                        o == Ordering::Less || (after && o == Ordering::Equal)
                    });
                    prop_assert_eq!(view.lower_bound(probe.as_bytes(), after), want);
                }
            }
        }

        /// Garbage never panics: parsing and checking either fail or yield a readable block.
        #[test]
        fn garbage_is_rejected_or_readable(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let mut bytes = bytes;
            if bytes.len() >= BLOCK_HEAD {
                // Garbage with a right checksum: the checks behind it.
                reseal(&mut bytes);
            }
            if let Ok(view) = BlockView::parse_header(&bytes) {
                for i in 0..view.len() {
                    let _ = (view.row(i).row_key(), view.row(i).value(1), view.find("a"));
                }
            }
            // The lazy path of a filtered scan: the directory's checksum, then each row
            // checked as it is read.
            if let Ok(Some((view, _))) = BlockView::parse_columns_first(&bytes)
                && view.verify_directory().is_ok()
            {
                for i in 0..view.len() {
                    if let Ok(row) = view.checked_row(i) {
                        let _ = (row.row_key(), row.timestamp(), row.value(0), row.value(3));
                    }
                }
            }
            if let Ok(view) = BlockView::parse(&bytes) {
                let names = Names::default();
                let _ = view.check_rows(8);
                for i in 0..view.len() {
                    let row = view.row(i);
                    let _ = (row.row_key(), row.timestamp(), row.value(0), row.value(3));
                    let _ = row.to_entity(view.partition_key(), &names);
                    let _ = view.find("a");
                }
            }
        }

        /// Flipping any byte of a valid block is caught or harmless (never a panic).
        #[test]
        fn corruption_is_caught_or_harmless(at in any::<prop::sample::Index>(), to in any::<u8>()) {
            let mut names = Names::default();
            let mut bytes = block_of("p", &[all_types(), Entity::new("p", "zz")], &mut names);
            let i = at.index(bytes.len());
            let changed = bytes[i] != to;
            bytes[i] = to;
            prop_assert!(!changed || BlockView::parse(&bytes).is_err());
            reseal(&mut bytes);
            if let Ok(view) = BlockView::parse(&bytes)
                && view.check_rows(names.len()).is_ok()
            {
                for i in 0..view.len() {
                    let _ = view.row(i).to_entity("p", &names);
                }
            }
        }
    }

    #[test]
    fn a_row_read_lazily_checks_its_own_offsets() {
        let mut names = Names::default();
        let rows: Vec<Entity> = (0..3).map(|i| Entity::new("p", format!("r{i}"))).collect();
        let mut bytes = block_of("p", &rows, &mut names);
        let view = BlockView::parse(&bytes).unwrap();
        let (dir, rows_start) = (view.dir, view.rows_start());
        // Row 1 made to start inside the directory, every checksum made right again: only
        // the offsets tell.
        let at = dir + 4;
        bytes[at..at + 4].copy_from_slice(&((rows_start - 4) as u32).to_le_bytes());
        reseal(&mut bytes);
        assert_eq!(
            BlockView::parse(&bytes).unwrap_err(),
            Corrupt("row offsets out of order")
        );
        let (view, _) = BlockView::parse_columns_first(&bytes).unwrap().unwrap();
        view.verify_directory().unwrap();
        assert_eq!(
            view.checked_row(1).unwrap_err(),
            Corrupt("row offsets out of order")
        );
        // Row 0 now ends before it could hold its head.
        assert_eq!(
            view.checked_row(0).unwrap_err(),
            Corrupt("row offsets out of order")
        );
        assert!(view.checked_row(2).is_ok());
        assert!(view.checked_row(3).is_err());
    }

    #[test]
    fn corrupt_headers_are_reported() {
        assert!(BlockView::parse(&[]).is_err());
        assert!(BlockView::parse(&[3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]).is_err());
        // Zero rows (with a right checksum).
        let mut empty = vec![BLOCK_FORMAT, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 16, 0, 0, 0];
        let crc = block_checksum(&empty);
        empty[CRC_AT..BLOCK_HEAD].copy_from_slice(&crc.to_le_bytes());
        assert_eq!(
            BlockView::parse(&empty).unwrap_err(),
            Corrupt("empty block")
        );
        // A block of format 1 (no checksum) is not read.
        let mut names = Names::default();
        let mut old = block_of("p", &[Entity::new("p", "r")], &mut names);
        old[0] = 1;
        assert_eq!(
            BlockView::parse(&old).unwrap_err(),
            Corrupt("unknown block format")
        );
        let mut names = Names::default();
        let mut bytes = block_of("p", &[Entity::new("p", "r")], &mut names);
        bytes.push(0);
        assert!(BlockView::parse(&bytes).is_err(), "length mismatch");
    }
}

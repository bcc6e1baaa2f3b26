//! Verified copies of blocks ([`VerifiedBlock`]) for filtered scans of a table whose blocks
//! do not change: a block a filtered scan reads is checked whole once — every checksum, its
//! columns decoded — and copied out of redb's page cache, and the scans after it test their
//! residual over the decoded columns and read matching rows from the copy, with nothing
//! left to verify, parse or decode.
//!
//! Point gets use the same copies (`DurableSnapshot::visit_entity`): with a block map of
//! their version, a get finds its block in the map, reads it from redb and notes the read,
//! so that the block's second read copies it; the gets after that binary-search the copy's
//! RowKeys, touching neither redb's B-tree nor its page cache nor a checksum. Without a
//! map kept by a scan, a get builds one at once for a data file whose blocks' copies could
//! all fit in the budget (at the default block size, 512 blocks — about 120 000 small
//! entities — for the default 32 MiB; at 100 000 entities a point get costs ≈ 5 % less
//! server CPU, median of 46 alternating pairs of `wrk` runs), and has one built on a
//! thread of its own for a larger file (`DurableSnapshot::point_map`).
//!
//! **Why.** A filtered scan of a block costs, besides testing its residual, the block's
//! fixed work: its column directory's checksum and parse, each named column's checksum and
//! decoding into typed arrays, the block directory's checksum before its first matching
//! row. In the duel's selective full scan (100 000 entities, 400 blocks, 541 matches) that
//! was a third of the server's CPU (`perf`, 2026-12-06: checksums 10 %, decoding 4 %, the
//! column directories 6 %, the rest in allocations and the lazy checks' bookkeeping), and it
//! is the same work every time, since a block changes only when a flush rewrites it.
//!
//! **Which version.** The copies belong to the table's block map (`block_map.rs`), which
//! lists the blocks of one blocks version — exactly the blocks a snapshot of that version
//! sees, byte for byte (redb's MVCC) — and a snapshot uses only a map of its own version.
//! A flush makes a new version, and the kept map follows it (`BlockMap::followed`, from the
//! blocks the flush wrote and removed): the new map keeps the copies of the blocks the
//! flush did not touch — the same bytes in both versions — and starts the blocks it wrote
//! without one; the copies of the blocks it rewrote or removed are freed with the old map.
//! A copy is never compared with the stored block again: it was taken from the committed
//! bytes and verified then, so damage that reaches the data file later cannot change what
//! a scan or get returns (a read of the damaged block outside the copy — a plain scan,
//! `tableq check`, a get before the copy was made, the write that rewrites it — still
//! reports it).
//!
//! **Memory.** Copies are charged to one budget per engine ([`CopyBudget`]): the block's
//! bytes and its decoded columns. A block that does not fit in what is left is not copied
//! and is scanned as before. The budget is half of [`DurableOptions::cache_bytes`]
//! (`--cache-size`, 64 MiB by default): 32 MiB hold the blocks of a table of ~120 000 small
//! entities (the duel's 100 000 take 26 MB), and keep the server within its memory target
//! at 10 M entities (`benches/README.md`: a whole `--cache-size` of copies took it to
//! 287 MiB of the 300 allowed).
//!
//! [`DurableOptions::cache_bytes`]: super::DurableOptions::cache_bytes

use super::format::block::BlockView;
use crate::codec::{ColumnSet, Corrupt};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The memory the verified copies of one engine may take (see the module docs).
#[derive(Debug)]
pub(crate) struct CopyBudget {
    limit: usize,
    used: AtomicUsize,
}

impl CopyBudget {
    /// A budget of `limit` bytes.
    pub(crate) fn new(limit: usize) -> CopyBudget {
        CopyBudget {
            limit,
            used: AtomicUsize::new(0),
        }
    }

    /// The bytes the copies may take.
    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// Takes `bytes` from the budget if that many are left.
    fn charge(&self, bytes: usize) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes).filter(|&total| total <= self.limit)
            })
            .is_ok()
    }

    /// Gives `bytes` back.
    fn release(&self, bytes: usize) {
        self.used.fetch_sub(bytes, Ordering::AcqRel);
    }

    /// The bytes the copies take now (reported in the store's metrics).
    pub(crate) fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }
}

/// One block, every checksum verified, copied out of redb, with its columns decoded (see
/// the module docs).
pub(crate) struct VerifiedBlock {
    bytes: Box<[u8]>,
    partition_key: Box<str>,
    rows: usize,
    columns: ColumnSet,
    /// What the copy was charged, given back when it is dropped.
    charged: usize,
    budget: Arc<CopyBudget>,
}

impl std::fmt::Debug for VerifiedBlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VerifiedBlock")
            .field("partition_key", &self.partition_key)
            .field("rows", &self.rows)
            .field("charged", &self.charged)
            .finish_non_exhaustive()
    }
}

impl VerifiedBlock {
    /// Verifies `bytes` (a block) whole and copies it with its decoded columns, charging
    /// `budget`; `Ok(None)` when the budget has not enough left. A block that fails a
    /// check is `Err` (the caller reads it the usual way, which reports the damage).
    pub(crate) fn copy(
        bytes: &[u8],
        budget: &Arc<CopyBudget>,
    ) -> Result<Option<VerifiedBlock>, Corrupt> {
        // Refuse before the work when even the bytes alone do not fit.
        if budget
            .used
            .load(Ordering::Acquire)
            .saturating_add(bytes.len())
            > budget.limit
        {
            return Ok(None);
        }
        let view = BlockView::parse(bytes)?;
        let columns = view.columns()?;
        let charged = bytes.len() + columns.heap_bytes() + size_of::<VerifiedBlock>();
        if !budget.charge(charged) {
            return Ok(None);
        }
        Ok(Some(VerifiedBlock {
            bytes: bytes.into(),
            partition_key: view.partition_key().into(),
            rows: view.len(),
            columns,
            charged,
            budget: budget.clone(),
        }))
    }

    /// The block's view: every row may be read without a check of its own
    /// ([`BlockView::row`]).
    pub(crate) fn view(&self) -> BlockView<'_> {
        BlockView::from_checked(&self.bytes, &self.partition_key, self.rows)
    }

    /// The block's columns (none for a block of an older format: every comparison is
    /// then tested on the rows).
    pub(crate) fn columns(&self) -> &ColumnSet {
        &self.columns
    }

    /// The block's bytes (for a report naming it).
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

impl Drop for VerifiedBlock {
    fn drop(&mut self) {
        self.budget.release(self.charged);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::Names;
    use crate::durable::format::block::{build_block, encode_row};
    use std::borrow::Cow;
    use tableq_model::Entity;

    fn block(rows: usize) -> Vec<u8> {
        let mut names = Names::default();
        let encoded: Vec<Cow<'_, [u8]>> = (0..rows)
            .map(|i| {
                let mut e = Entity::new("p", format!("r{i:04}"));
                e.set("Age", i as i32);
                let row = encode_row(&e, &mut |name| Ok(names.intern(name).unwrap()));
                Cow::Owned(row.unwrap())
            })
            .collect();
        build_block("p", &encoded).unwrap()
    }

    #[test]
    fn a_copy_is_charged_and_gives_its_bytes_back_when_dropped() {
        let bytes = block(100);
        let budget = Arc::new(CopyBudget::new(1 << 20));
        let copy = VerifiedBlock::copy(&bytes, &budget).unwrap().unwrap();
        assert_eq!(copy.view().len(), 100);
        assert_eq!(copy.bytes(), &bytes[..]);
        assert!(budget.used() >= bytes.len());
        assert_eq!(budget.used(), copy.charged);
        drop(copy);
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn a_block_over_what_is_left_is_not_copied() {
        let bytes = block(100);
        let budget = Arc::new(CopyBudget::new(bytes.len() + bytes.len() / 2));
        let first = VerifiedBlock::copy(&bytes, &budget).unwrap();
        assert!(first.is_some());
        assert!(VerifiedBlock::copy(&bytes, &budget).unwrap().is_none());
        drop(first);
        assert!(VerifiedBlock::copy(&bytes, &budget).unwrap().is_some());
        assert_eq!(budget.used(), 0, "the last copy was dropped at once");
    }

    #[test]
    fn a_damaged_block_is_refused_and_charges_nothing() {
        let budget = Arc::new(CopyBudget::new(1 << 20));
        let clean = block(100);
        // A flipped bit anywhere — header, a row, a column — fails a checksum.
        for at in [20, clean.len() / 2, clean.len() - 8] {
            let mut bytes = clean.clone();
            bytes[at] ^= 0x10;
            assert!(VerifiedBlock::copy(&bytes, &budget).is_err(), "byte {at}");
        }
        assert_eq!(budget.used(), 0);
    }
}

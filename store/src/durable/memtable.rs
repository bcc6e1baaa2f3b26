//! The memtable: the rows written since the last flush, kept in memory in front of redb.
//!
//! A live write never touches redb. The writer resolves it against the memtable and redb,
//! appends its record to the write-ahead log, and applies it to the memtable of its table;
//! the next version of the memtable is then published to readers (`gate.rs`, `writer/`).
//! A **flush** (on the background writer thread) folds a frozen version of every memtable
//! into redb's blocks, in slices between which writes go on, and then leaves the memtables
//! only what was written meanwhile ([`MemTable::written_since`], `writer/flush.rs`); a
//! checkpoint is such a flush followed by a durable commit beside the writer
//! (`writer/checkpoint.rs`), or — on close, and with the log at twice its bound — a fold of
//! them in one transaction whose commit is durable.
//! Writes thus pay redb's cost per flush (thousands of rows) instead of per write.
//!
//! * **Layout**: a persistent two-level tree (`crate::tree`): PartitionKey → RowKey →
//!   the row encoded as in a block (`format/block.rs`: position-independent, read in place by
//!   [`DurableRow`](super::DurableRow)) or a removal, which hides the row redb holds.
//! * **Versions are values**: cloning a [`MemTable`] clones two pointers; a reader keeps
//!   the version it took however many writes follow (an insert copies only the tree paths
//!   that a published version shares).
//! * **Reads** ([`MemRows`]): the entries of a [`Scan`] in key order, merged with redb's
//!   rows by `read.rs` (a memtable entry wins over the stored row with its key).
//!
//! ```text
//! memtable  p1 → { r1: row, r4: removed }     redb blocks  p1: [r1' r2 r4]
//! reader    p1: r1 (memtable) r2 (block)      — r1' is replaced, r4 removed
//! ```

use crate::tree::{Cursor, Tree, TreeEntry};
use std::cmp::Ordering;
use std::sync::Arc;
use tableq_exec::Scan;
use tableq_model::order::compare_str;

/// Bytes counted per entry besides its key and row (tree slots, reference counts): what
/// [`MemTable::bytes`] adds up to approximate the memory a memtable holds.
const ENTRY_OVERHEAD: usize = 96;

/// An entry of a memtable with its PartitionKey ([`MemTable::entries`]).
pub(crate) type MemEntry = (Arc<str>, MemRow);

/// One row of a memtable: its RowKey and its encoded row, or `None` for a removal.
#[derive(Clone, Debug)]
pub(crate) struct MemRow {
    pub(crate) rk: Arc<str>,
    pub(crate) row: Option<Arc<[u8]>>,
}

impl TreeEntry for MemRow {
    #[inline]
    fn key(&self) -> &str {
        &self.rk
    }
}

/// The rows of one partition.
#[derive(Clone)]
pub(crate) struct MemPart {
    pub(crate) pk: Arc<str>,
    pub(crate) rows: Tree<MemRow>,
}

impl TreeEntry for MemPart {
    #[inline]
    fn key(&self) -> &str {
        &self.pk
    }
}

/// The changes of one table since the last flush (see the module docs).
#[derive(Clone, Default)]
pub(crate) struct MemTable {
    parts: Tree<MemPart>,
    entries: usize,
    bytes: usize,
}

impl std::fmt::Debug for MemTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemTable")
            .field("entries", &self.entries)
            .field("bytes", &self.bytes)
            .finish()
    }
}

fn entry_bytes(rk: &str, row: Option<&[u8]>) -> usize {
    ENTRY_OVERHEAD + rk.len() + row.map_or(0, <[u8]>::len)
}

impl MemTable {
    /// Whether the memtable holds no entry.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// The number of entries (rows and removals).
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.entries
    }

    /// Approximate heap bytes of the entries (keys, rows, tree slots).
    #[inline]
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// The entry with these keys (a row or a removal) and its partition's key; `None`
    /// when the memtable says nothing about them (redb decides).
    pub(crate) fn get(&self, pk: &str, rk: &str) -> Option<(&str, &MemRow)> {
        let part = self.parts.get(pk)?;
        part.rows.get(rk).map(|row| (&*part.pk, row))
    }

    /// Records the row (`Some`, encoded as in a block) or the removal (`None`) of
    /// `(pk, rk)`, replacing what the memtable held for them.
    pub(crate) fn put(&mut self, pk: &str, rk: &str, row: Option<Arc<[u8]>>) {
        let added = entry_bytes(rk, row.as_deref());
        let entry = MemRow {
            rk: Arc::from(rk),
            row,
        };
        let replaced = match self.parts.get_mut(pk) {
            Some(part) => part.rows.insert(entry),
            None => {
                let mut rows = Tree::default();
                rows.insert(entry);
                self.bytes += ENTRY_OVERHEAD + pk.len();
                self.parts.insert(MemPart {
                    pk: Arc::from(pk),
                    rows,
                });
                None
            }
        };
        self.bytes += added;
        match replaced {
            Some(old) => self.bytes -= entry_bytes(&old.rk, old.row.as_deref()),
            None => self.entries += 1,
        }
    }

    /// Every entry in key order, with its PartitionKey: what a flush folds into redb, and
    /// keeps while it does so in slices (`writer/`).
    pub(crate) fn entries(&self) -> Vec<MemEntry> {
        let mut entries = Vec::with_capacity(self.entries);
        for part in self.parts.iter() {
            entries.extend(part.rows.iter().map(|row| (part.pk.clone(), row.clone())));
        }
        entries
    }

    /// The entries of this memtable that `flushed` (an earlier version of it, all of
    /// whose entries are now in redb) does not hold as they are here: a write made since,
    /// which redb does not hold yet. A removal that `flushed` also held counts as held.
    pub(crate) fn written_since(&self, flushed: &MemTable) -> MemTable {
        let mut rest = MemTable::default();
        if self.parts.same_version(&flushed.parts) {
            return rest;
        }
        for part in self.parts.iter() {
            let before = flushed.parts.get(&part.pk);
            if before.is_some_and(|b| b.rows.same_version(&part.rows)) {
                continue;
            }
            for row in part.rows.iter() {
                let held = before.and_then(|b| b.rows.get(&row.rk)).is_some_and(|old| {
                    match (&old.row, &row.row) {
                        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                        (None, None) => true,
                        _ => false,
                    }
                });
                if !held {
                    rest.put(&part.pk, &row.rk, row.row.clone());
                }
            }
        }
        rest
    }

    /// Every partition in key order.
    pub(crate) fn partitions(&self) -> Cursor<'_, MemPart> {
        self.parts.iter()
    }

    /// The entries of `scan` in key order.
    pub(crate) fn scan<'a>(&'a self, scan: Scan<'a>) -> MemRows<'a> {
        let pk = &scan.range.partition_key;
        let from_pk = scan.from.map(|f| f.partition_key.as_str());
        let parts = self.parts.cursor(|key| {
            pk.position(key).is_lt() || from_pk.is_some_and(|f| compare_str(key, f).is_lt())
        });
        MemRows {
            scan,
            parts,
            rows: None,
            done: false,
        }
    }
}

/// The entries of a [`Scan`] in a [`MemTable`], in key order: `(PartitionKey, entry)`.
pub(crate) struct MemRows<'a> {
    scan: Scan<'a>,
    parts: Cursor<'a, MemPart>,
    /// The partition being read and the cursor in it.
    rows: Option<(&'a str, Cursor<'a, MemRow>)>,
    /// The scan's partitions are all read.
    done: bool,
}

impl<'a> MemRows<'a> {
    /// Enters the next partition of the scan; `false` when there is none.
    fn enter(&mut self) -> bool {
        if self.done {
            return false;
        }
        let Some(part) = self.parts.next() else {
            self.done = true;
            return false;
        };
        let pk: &'a str = &part.pk;
        if self.scan.range.partition_key.position(pk) == Ordering::Greater
            || self
                .scan
                .until
                .is_some_and(|u| compare_str(pk, &u.partition_key) == Ordering::Greater)
        {
            self.done = true;
            return false;
        }
        let rk = &self.scan.range.row_key;
        let from_rk = self
            .scan
            .from
            .filter(|f| f.partition_key == pk)
            .map(|f| f.row_key.as_str());
        let rows = part.rows.cursor(|key| {
            rk.position(key).is_lt() || from_rk.is_some_and(|f| compare_str(key, f).is_lt())
        });
        self.rows = Some((pk, rows));
        true
    }
}

impl<'a> Iterator for MemRows<'a> {
    type Item = (&'a str, &'a MemRow);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some((pk, rows)) = &mut self.rows {
                if let Some(row) = rows.next() {
                    let past = self.scan.range.row_key.position(&row.rk) == Ordering::Greater
                        || self.scan.until.is_some_and(|u| {
                            u.partition_key == *pk && compare_str(&row.rk, &u.row_key).is_ge()
                        });
                    if !past {
                        return Some((pk, row));
                    }
                }
                self.rows = None;
            }
            if !self.enter() {
                return None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;
    use std::ops::Bound;
    use tableq_exec::Key;
    use tableq_model::order::OrdinalString;
    use tableq_planner::plan::{KeyInterval, KeyRange};

    fn row(v: u8) -> Option<Arc<[u8]>> {
        Some(Arc::from(vec![v; 3]))
    }

    fn keys(rows: MemRows<'_>) -> Vec<(String, String, bool)> {
        rows.map(|(pk, r)| (pk.to_owned(), r.rk.to_string(), r.row.is_some()))
            .collect()
    }

    #[test]
    fn puts_replace_and_count() {
        let mut m = MemTable::default();
        assert!(m.is_empty() && m.get("p", "a").is_none());
        m.put("p", "a", row(1));
        m.put("p", "b", None);
        m.put("q", "a", row(2));
        let bytes = m.bytes();
        m.put("p", "a", row(3));
        assert_eq!(
            (m.len(), m.bytes()),
            (3, bytes),
            "a replacement of equal size"
        );
        let (pk, r) = m.get("p", "a").unwrap();
        assert_eq!((pk, r.row.as_deref()), ("p", Some(&[3u8; 3][..])));
        assert!(m.get("p", "b").unwrap().1.row.is_none(), "a removal");
        assert!(m.get("q", "b").is_none());
        let before = m.clone();
        m.put("p", "c", row(4));
        assert!(
            before.get("p", "c").is_none(),
            "an earlier version keeps its contents"
        );
        assert_eq!(m.partitions().count(), 2);
    }

    #[test]
    fn scans_apply_every_bound() {
        let mut m = MemTable::default();
        for pk in ["a", "b", "c"] {
            for rk in ["1", "2", "3"] {
                m.put(pk, rk, row(0));
            }
        }
        let range = KeyRange::new(
            KeyInterval::new(Bound::Included("a".into()), Bound::Excluded("c".into())),
            KeyInterval::new(Bound::Excluded("1".into()), Bound::Unbounded),
        );
        let (from, until) = (Key::new("a", "3"), Key::new("b", "3"));
        let scan = Scan {
            range: &range,
            from: Some(&from),
            until: Some(&until),
        };
        let got: Vec<(String, String)> = keys(m.scan(scan))
            .into_iter()
            .map(|(p, r, _)| (p, r))
            .collect();
        assert_eq!(
            got,
            [("a".into(), "3".into()), ("b".into(), "2".into())],
            "rk > 1, key >= (a,3), key < (b,3), pk < c"
        );
    }

    fn arb_key() -> impl Strategy<Value = String> {
        "[ab\u{E000}\u{10000}]{0,3}"
    }

    fn arb_bound() -> impl Strategy<Value = Bound<String>> {
        prop_oneof![
            Just(Bound::Unbounded),
            arb_key().prop_map(Bound::Included),
            arb_key().prop_map(Bound::Excluded),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]
        /// A scan yields exactly the entries a naive filter of every entry keeps, in order.
        #[test]
        fn scans_equal_a_filtered_map(
            puts in proptest::collection::vec((arb_key(), arb_key(), any::<bool>()), 0..80),
            pk in (arb_bound(), arb_bound()),
            rk in (arb_bound(), arb_bound()),
            from in proptest::option::of((arb_key(), arb_key())),
            until in proptest::option::of((arb_key(), arb_key())),
        ) {
            let mut m = MemTable::default();
            let mut model = BTreeMap::new();
            for (p, r, live) in &puts {
                m.put(p, r, if *live { row(1) } else { None });
                model.insert((OrdinalString(p.clone()), OrdinalString(r.clone())), *live);
            }
            let range = KeyRange::new(KeyInterval::new(pk.0, pk.1), KeyInterval::new(rk.0, rk.1));
            let from = from.map(|(p, r)| Key::new(p, r));
            let until = until.map(|(p, r)| Key::new(p, r));
            let scan = Scan { range: &range, from: from.as_ref(), until: until.as_ref() };
            let want: Vec<(String, String, bool)> = model
                .iter()
                .filter(|((p, r), _)| scan.contains(&p.0, &r.0))
                .map(|((p, r), live)| (p.0.clone(), r.0.clone(), *live))
                .collect();
            prop_assert_eq!(keys(m.scan(scan)), want);
            prop_assert_eq!(m.len(), model.len());
        }

        /// A flush folds a frozen version into redb, then readers get what `written_since`
        /// leaves: over any stored rows, that version folded and the rest in front of it
        /// read exactly as the whole memtable in front of the stored rows — and the rest
        /// holds no entry that the folded version holds as it is.
        #[test]
        fn the_rest_of_a_flush_over_its_fold_reads_as_the_whole_memtable(
            stored in proptest::collection::btree_map((arb_key(), arb_key()), any::<u8>(), 0..20),
            before in proptest::collection::vec((arb_key(), arb_key(), proptest::option::of(any::<u8>())), 0..40),
            after in proptest::collection::vec((arb_key(), arb_key(), proptest::option::of(any::<u8>())), 0..40),
        ) {
            type Rows = BTreeMap<(OrdinalString, OrdinalString), Vec<u8>>;
            let stored: Rows = stored
                .into_iter()
                .map(|((p, r), v)| ((OrdinalString(p), OrdinalString(r)), vec![v]))
                .collect();
            let fold = |base: &Rows, m: &MemTable| {
                let mut out = base.clone();
                for (pk, entry) in m.entries() {
                    let key = (OrdinalString(pk.to_string()), OrdinalString(entry.rk.to_string()));
                    match &entry.row {
                        Some(row) => out.insert(key, row.to_vec()),
                        None => out.remove(&key),
                    };
                }
                out
            };
            let mut m = MemTable::default();
            for (p, r, v) in &before {
                m.put(p, r, v.map(|v| Arc::from(vec![v])));
            }
            let frozen = m.clone();
            for (p, r, v) in &after {
                m.put(p, r, v.map(|v| Arc::from(vec![v])));
            }
            let rest = m.written_since(&frozen);
            prop_assert_eq!(fold(&fold(&stored, &frozen), &rest), fold(&stored, &m));
            prop_assert!(rest.len() <= after.len());
            if after.is_empty() {
                prop_assert!(rest.is_empty());
            }
            let entries = m.entries();
            prop_assert_eq!(entries.len(), m.len());
            let key = |e: &MemEntry| (OrdinalString(e.0.to_string()), OrdinalString(e.1.rk.to_string()));
            let ordered = entries.windows(2).all(|w| key(&w[0]) < key(&w[1]));
            prop_assert!(ordered, "entries in key order");
        }
    }
}

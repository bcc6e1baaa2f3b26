//! Keys seen in an input and the repeated ones: a compact log of (PartitionKey, RowKey,
//! line) per entity, and the resolution of repeats — the later line wins, as an upsert
//! would. Used by the [stream](super) engine and by drivers that load an input into a table.
//!
//! A [`KeyLog`] stores the keys of one block of input back to back in one byte buffer
//! (about 20 bytes plus the key bytes per entity); [`find_repeats`] groups the entries of
//! many logs by a hash of the key, compares keys exactly within a group, and reports every
//! line whose key a later line repeats.

use crate::key::compare_keys;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

/// The keys of one block of input, with their line numbers (relative to the block).
#[derive(Debug, Default)]
pub struct KeyLog {
    bytes: Vec<u8>,
    entries: Vec<Entry>,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    start: u32,
    pk_len: u32,
    rk_len: u32,
    line: u32,
}

impl KeyLog {
    /// Appends a key; returns its index.
    pub fn push(&mut self, partition_key: &str, row_key: &str, line: u32) -> u32 {
        let start = self.bytes.len() as u32;
        self.bytes.extend_from_slice(partition_key.as_bytes());
        self.bytes.extend_from_slice(row_key.as_bytes());
        self.entries.push(Entry {
            start,
            pk_len: partition_key.len() as u32,
            rk_len: row_key.len() as u32,
            line,
        });
        (self.entries.len() - 1) as u32
    }

    /// The number of keys.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no key was logged.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The key at `index` (as returned by [`push`](KeyLog::push)) and its line (relative to
    /// the block). Panics when no key has that index.
    pub fn get(&self, index: u32) -> (&str, &str, u32) {
        let e = self.entries[index as usize];
        let pk_end = (e.start + e.pk_len) as usize;
        let bytes = &self.bytes[e.start as usize..pk_end + e.rk_len as usize];
        // The bytes were pushed as two `&str`s: the split is on a char boundary.
        let text = std::str::from_utf8(bytes).unwrap_or_default();
        let (pk, rk) = text.split_at(e.pk_len as usize);
        (pk, rk, e.line)
    }
}

/// A line whose key a later line repeats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repeat {
    /// The earlier line (overridden).
    pub earlier: u64,
    /// The next line with the same key.
    pub later: u64,
    /// The key.
    pub partition_key: String,
    /// The key.
    pub row_key: String,
}

/// Every repeat among the keys of `logs`, each log with the line number of its first line
/// (`line_base + relative line` = the line number), ordered by the later line.
pub fn find_repeats<'a>(logs: impl Iterator<Item = (&'a KeyLog, u64)>) -> Vec<Repeat> {
    let logs: Vec<(&KeyLog, u64)> = logs.collect();
    let mut refs: Vec<(u64, u32, u32)> = Vec::with_capacity(logs.iter().map(|l| l.0.len()).sum());
    for (b, (log, _)) in logs.iter().enumerate() {
        for i in 0..log.len() as u32 {
            let (pk, rk, _) = log.get(i);
            let mut h = DefaultHasher::new();
            (pk, rk).hash(&mut h);
            refs.push((h.finish(), b as u32, i));
        }
    }
    refs.sort_unstable_by_key(|r| r.0);
    let lookup = |b: u32, i: u32| {
        let (log, base) = logs[b as usize];
        let (pk, rk, line) = log.get(i);
        (pk, rk, base + u64::from(line))
    };
    let mut repeats = Vec::new();
    let mut group: Vec<(&str, &str, u64)> = Vec::new();
    for run in refs.chunk_by(|a, b| a.0 == b.0) {
        if run.len() < 2 {
            continue;
        }
        group.clear();
        group.extend(run.iter().map(|r| lookup(r.1, r.2)));
        group.sort_by(|a, b| compare_keys(a.0, a.1, b.0, b.1).then(a.2.cmp(&b.2)));
        for w in group.windows(2) {
            if w[0].0 == w[1].0 && w[0].1 == w[1].1 {
                repeats.push(Repeat {
                    earlier: w[0].2,
                    later: w[1].2,
                    partition_key: w[0].0.to_owned(),
                    row_key: w[0].1.to_owned(),
                });
            }
        }
    }
    repeats.sort_by_key(|r| r.later);
    repeats
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_across_logs_name_both_lines() {
        let mut a = KeyLog::default();
        a.push("p", "1", 0);
        a.push("p", "2", 1);
        let mut b = KeyLog::default();
        b.push("p", "1", 0);
        b.push("q", "", 3);
        b.push("p", "1", 5);
        assert_eq!(b.get(1), ("q", "", 3));
        let got = find_repeats([(&a, 1), (&b, 10)].into_iter());
        assert_eq!(
            got.iter().map(|r| (r.earlier, r.later)).collect::<Vec<_>>(),
            [(1, 10), (10, 15)]
        );
        assert_eq!(
            (got[0].partition_key.as_str(), got[0].row_key.as_str()),
            ("p", "1")
        );
        // Keys that only concatenate alike are different keys.
        let mut c = KeyLog::default();
        c.push("ab", "c", 0);
        c.push("a", "bc", 1);
        assert!(find_repeats([(&c, 1)].into_iter()).is_empty());
    }
}

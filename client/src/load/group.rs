//! [`PartitionGroups`]: entities grouped by PartitionKey into changesets (batches) as they
//! arrive, and [`worker_for`], the writer each partition goes to — the batching rules of
//! every bulk load, over HTTP ([`BulkLoader`](super::BulkLoader)) or straight into a store
//! (`tableq import --data`, which writes `tableq_store::WriteOp`s).
//!
//! * A changeset holds the items of one PartitionKey: at most [`GroupLimits::operations`]
//!   items and at most [`GroupLimits::bytes`] bytes (as the caller counts them: request
//!   bodies over HTTP).
//! * A group is due as soon as it is full, and before it would exceed the byte limit or hold
//!   the same RowKey twice (the second goes to the next changeset, so it meets the first as
//!   an existing entity, as sequential inserts would).
//! * Every group is due when [`GroupLimits::pending`] items wait.
//! * Items of a partition stay in push order, and [`worker_for`] sends every changeset of a
//!   partition to the same writer: a partition's entities are written in the order they
//!   were pushed.
//!
//! Items are generic: the groups only see each item's keys and size.
//!
//! ```
//! use tableq_client::load::{GroupLimits, PartitionGroups};
//! let limits = GroupLimits { operations: 2, ..GroupLimits::SERVICE };
//! let mut groups = PartitionGroups::new(limits);
//! assert!(groups.push("p", "1", 0, "line 1").is_empty());
//! // The second item fills the changeset: it is due at once.
//! assert_eq!(groups.push("p", "2", 0, "line 2"), [("p".to_owned(), vec!["line 1", "line 2"])]);
//! // A repeated RowKey starts the next changeset.
//! assert!(groups.push("q", "1", 0, "line 3").is_empty());
//! assert_eq!(groups.push("q", "1", 0, "line 4"), [("q".to_owned(), vec!["line 3"])]);
//! assert_eq!(groups.drain(), [("q".to_owned(), vec!["line 4"])]);
//! ```

use crate::batch::MAX_OPERATIONS;
use std::collections::{BTreeSet, HashMap};

/// The most body bytes in one changeset (the service refuses requests over 4 MiB).
pub const MAX_CHANGESET_BYTES: usize = 3 << 20;
/// Entities waiting in groups before every group is sent.
pub const MAX_PENDING: usize = 4096;

/// The limits of [`PartitionGroups`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupLimits {
    /// The most items in one changeset.
    pub operations: usize,
    /// The most bytes in one changeset (as counted by the caller).
    pub bytes: usize,
    /// Items waiting in groups before every group is due.
    pub pending: usize,
}

impl GroupLimits {
    /// The service's: [`MAX_OPERATIONS`] operations and [`MAX_CHANGESET_BYTES`] of bodies
    /// per changeset, every group due at [`MAX_PENDING`] waiting entities.
    pub const SERVICE: GroupLimits = GroupLimits {
        operations: MAX_OPERATIONS,
        bytes: MAX_CHANGESET_BYTES,
        pending: MAX_PENDING,
    };
}

/// One partition's pending items.
struct Group<T> {
    items: Vec<T>,
    rows: BTreeSet<String>,
    bytes: usize,
}

impl<T> Default for Group<T> {
    fn default() -> Group<T> {
        Group {
            items: Vec::new(),
            rows: BTreeSet::new(),
            bytes: 0,
        }
    }
}

impl<T> Group<T> {
    /// Takes the items, leaving the group empty.
    fn take(&mut self) -> Vec<T> {
        self.rows.clear();
        self.bytes = 0;
        std::mem::take(&mut self.items)
    }
}

/// Items grouped by PartitionKey into changesets (see the module docs).
pub struct PartitionGroups<T> {
    groups: HashMap<String, Group<T>>,
    /// Items in the groups.
    pending: usize,
    limits: GroupLimits,
}

impl<T> PartitionGroups<T> {
    /// No groups yet.
    pub fn new(limits: GroupLimits) -> PartitionGroups<T> {
        PartitionGroups {
            groups: HashMap::new(),
            pending: 0,
            limits,
        }
    }

    /// Takes one item of `partition_key` and `row_key`, `bytes` long; returns the changesets
    /// now due, each with its PartitionKey, in the order to send them.
    pub fn push(
        &mut self,
        partition_key: &str,
        row_key: &str,
        bytes: usize,
        item: T,
    ) -> Vec<(String, Vec<T>)> {
        let mut due = Vec::new();
        let limits = self.limits;
        let group = self.groups.entry(partition_key.to_owned()).or_default();
        let full = group.items.len() >= limits.operations
            || group.bytes + bytes > limits.bytes
            || group.rows.contains(row_key);
        if full && !group.items.is_empty() {
            let items = group.take();
            self.pending -= items.len();
            due.push((partition_key.to_owned(), items));
        }
        group.rows.insert(row_key.to_owned());
        group.bytes += bytes;
        group.items.push(item);
        self.pending += 1;
        if group.items.len() >= limits.operations {
            let items = group.take();
            self.pending -= items.len();
            due.push((partition_key.to_owned(), items));
        } else if self.pending >= limits.pending {
            due.extend(self.drain());
        }
        due
    }

    /// Every group still pending (e.g. at the end of the input), emptied.
    pub fn drain(&mut self) -> Vec<(String, Vec<T>)> {
        self.pending = 0;
        self.groups
            .drain()
            .filter(|(_, group)| !group.items.is_empty())
            .map(|(partition_key, group)| (partition_key, group.items))
            .collect()
    }

    /// The items waiting in groups.
    pub fn pending(&self) -> usize {
        self.pending
    }
}

/// Which of `workers` writers (threads or connections) loads `partition_key`: every entity
/// of a partition goes to the same one, so a partition's entities are written in order.
pub fn worker_for(partition_key: &str, workers: usize) -> usize {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let mut hasher = DefaultHasher::new();
    partition_key.hash(&mut hasher);
    (hasher.finish() % workers.max(1) as u64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_groups_repeated_rows_and_byte_limits_make_changesets() {
        let limits = GroupLimits {
            operations: 3,
            bytes: 10,
            pending: 100,
        };
        let mut groups = PartitionGroups::new(limits);
        assert!(groups.push("a", "1", 4, 1).is_empty());
        assert!(groups.push("b", "1", 4, 2).is_empty());
        // 4 + 4 + 4 bytes would pass 10: the group is due before the third item.
        assert!(groups.push("a", "2", 4, 3).is_empty());
        assert_eq!(groups.push("a", "3", 4, 4), [("a".to_owned(), vec![1, 3])]);
        // A repeated RowKey goes to the next changeset.
        assert_eq!(groups.push("b", "1", 1, 5), [("b".to_owned(), vec![2])]);
        // Three items fill a changeset: due at once.
        assert!(groups.push("c", "1", 0, 6).is_empty());
        assert!(groups.push("c", "2", 0, 7).is_empty());
        assert_eq!(
            groups.push("c", "3", 0, 8),
            [("c".to_owned(), vec![6, 7, 8])]
        );
        assert_eq!(groups.pending(), 2);
        let mut rest = groups.drain();
        rest.sort();
        assert_eq!(rest, [("a".to_owned(), vec![4]), ("b".to_owned(), vec![5])]);
        assert_eq!(groups.pending(), 0);
        assert!(groups.drain().is_empty());
    }

    #[test]
    fn every_group_is_due_when_too_many_items_wait() {
        let limits = GroupLimits {
            operations: 100,
            bytes: usize::MAX,
            pending: 3,
        };
        let mut groups = PartitionGroups::new(limits);
        assert!(groups.push("a", "1", 0, 1).is_empty());
        assert!(groups.push("b", "1", 0, 2).is_empty());
        let mut due = groups.push("a", "2", 0, 3);
        due.sort();
        assert_eq!(
            due,
            [("a".to_owned(), vec![1, 3]), ("b".to_owned(), vec![2])]
        );
        assert_eq!(groups.pending(), 0);
    }

    #[test]
    fn a_partition_always_goes_to_the_same_worker() {
        for workers in 1..9 {
            let w = worker_for("p17", workers);
            assert!(w < workers);
            assert_eq!(worker_for("p17", workers), w);
        }
        assert_eq!(worker_for("x", 0), 0);
    }
}

//! Interned property names: a table numbers the custom property names its entities use
//! (0, 1, 2, … in order of first use), and its rows store the number in each [`Slot`](super::Slot)
//! (`super::Slot`); compiled predicates resolve a name to its number once per query
//! ([`tableq_exec::SlotLookup::Slot`]).
//!
//! Invariants: numbers are never reused or changed while the table exists (the list is
//! append-only, [`Names::truncate`] only undoes pushes that were never published); every
//! number fits a slot (at most [`MAX_NAME_ID`]). The durable engine also stores
//! `(table id, number) → name` in redb and publishes a longer list to readers before the
//! commit that first uses the new numbers (`durable/writer/txn.rs`); a memory table shares its
//! list between versions and copies it when a write brings a new name.
//!
//! ```text
//! table 3: 0 → "Active", 1 → "Age", 2 → "Name"      row slots: (1, Int32 42), (2, String …)
//! ```

use std::collections::HashMap;

/// The name map's hasher: foldhash, seeded at random (a seed per process and one per map:
/// property names are the clients', so they cannot choose collisions in advance), several
/// times faster than std's SipHash on names of a few bytes — every property of every row a write
/// encodes is looked up here, twice (the memtable's row, the log record's).
type NameHasher = foldhash::fast::RandomState;

/// Largest number a name can get: a slot keeps 28 bits for it.
pub(crate) const MAX_NAME_ID: u32 = (1 << 28) - 1;

/// One table's property names, by number and by name.
#[derive(Clone, Default)]
pub(crate) struct Names {
    ids: HashMap<Box<str>, u32, NameHasher>,
    names: Vec<Box<str>>,
    /// Names `0..ordered` ascend in byte order and hold no character at or above U+E000,
    /// so they also ascend in UTF-16 ordinal order (the order of the service's replies,
    /// `tableq_model::order::compare_str`): a row whose numbers ascend and stay below this
    /// lists its properties in that order as they are stored ([`Names::ordered`]).
    ordered: usize,
}

impl Names {
    /// The number of `name`, if it was ever used in the table.
    #[inline]
    pub(crate) fn id(&self, name: &str) -> Option<u32> {
        self.ids.get(name).copied()
    }

    /// The name with number `id` (`""` for a number never issued; blocks are checked
    /// against [`Names::len`] when they are read, so this does not happen for stored rows).
    #[inline]
    pub(crate) fn name(&self, id: u32) -> &str {
        self.names.get(id as usize).map_or("", |n| n)
    }

    /// How many names the table has (the next number).
    pub(crate) fn len(&self) -> usize {
        self.names.len()
    }

    /// The numbers below which names ascend in both byte and UTF-16 ordinal order (most
    /// tables: their names were first used in the order of the first entity's properties,
    /// which the SDKs and `tableq gen` list by name).
    #[inline]
    pub(crate) fn ordered(&self) -> usize {
        self.ordered
    }

    /// Adds a name that is not yet known and returns its number; `None` once the numbers
    /// are exhausted.
    pub(crate) fn push(&mut self, name: &str) -> Option<u32> {
        let id = u32::try_from(self.names.len())
            .ok()
            .filter(|&id| id <= MAX_NAME_ID)?;
        let in_order = self.ordered == self.names.len()
            && self.names.last().is_none_or(|last| **last < *name)
            && name.bytes().all(|b| b < 0xEE);
        self.names.push(name.into());
        self.ids.insert(name.into(), id);
        if in_order {
            self.ordered += 1;
        }
        Some(id)
    }

    /// The number of `name`, adding it if it is new; `None` once the numbers are exhausted.
    #[inline]
    pub(crate) fn intern(&mut self, name: &str) -> Option<u32> {
        match self.id(name) {
            Some(id) => Some(id),
            None => self.push(name),
        }
    }

    /// Every name, by number.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &str> {
        self.names.iter().map(|n| &**n)
    }

    /// Drops every name from number `len` on (undoing pushes of a failed commit).
    pub(crate) fn truncate(&mut self, len: usize) {
        for name in self.names.drain(len.min(self.names.len())..) {
            self.ids.remove(&name);
        }
        self.ordered = self.ordered.min(self.names.len());
    }
}

// A table may have millions of names: print a summary.
impl std::fmt::Debug for Names {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Names")
            .field("count", &self.names.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_dense_and_truncate_undoes_pushes() {
        let mut names = Names::default();
        assert_eq!(names.push("B"), Some(0));
        assert_eq!(names.push("A"), Some(1));
        assert_eq!(
            (names.id("A"), names.name(0), names.len()),
            (Some(1), "B", 2)
        );
        names.truncate(1);
        assert_eq!((names.id("A"), names.len(), names.name(1)), (None, 1, ""));
        assert_eq!(names.push("C"), Some(1));
    }

    #[test]
    fn ordered_counts_the_names_that_ascend_in_both_orders() {
        let mut names = Names::default();
        assert_eq!(names.ordered(), 0);
        for n in ["Age", "Name", "Score"] {
            names.push(n);
        }
        assert_eq!(names.ordered(), 3);
        // Out of order: the prefix stops growing, even for a later name in order.
        names.push("City");
        names.push("Zip");
        assert_eq!(names.ordered(), 3);
        names.truncate(3);
        assert_eq!(names.ordered(), 3);
        names.truncate(2);
        assert_eq!(names.ordered(), 2);
        // U+E000 and above sort after the surrogates in UTF-16: never in the prefix.
        let mut private = Names::default();
        private.push("A");
        private.push("B\u{E000}");
        private.push("C");
        assert_eq!(private.ordered(), 1);
    }
}

//! [`Tree`]: a persistent (copy-on-write) B+tree of entries keyed by a string in UTF-16
//! ordinal order — the ordered maps of recent writes in both engines that keep them in
//! memory: the memory engine's write overlay (`memory/snapshot/overlay.rs`) and the durable
//! engine's memtable (`durable/memtable.rs`).
//!
//! * **Persistent**: cloning a tree clones one pointer; [`Tree::insert`] copies only the
//!   nodes on the path to the entry (`Arc::make_mut`: a node nobody else holds is changed
//!   in place), so every earlier clone keeps its contents. An insert costs
//!   `O(log n)` node copies of at most [`LEAF_CAP`] / [`BRANCH_CAP`] pointers.
//! * **Entries** are cheap to clone (a few `Arc`s) and carry their own key
//!   ([`TreeEntry::key`]). Keys are unique: inserting an entry with a key already present
//!   replaces it.
//! * **No removal**: both users record a removal as an entry of its own and rebuild the
//!   tree from scratch when they fold it into their base (the memory engine's compact
//!   partitions, the durable engine's redb blocks), so a tree only grows. Every
//!   node except the root is at least half full (splits halve a full node).
//! * **Separators** are `Arc<str>` copies of the first key of the right node at the time of
//!   its split: every entry of `children[i + 1]` has a key `>= keys[i]`, every entry of
//!   `children[i]` a key `< keys[i]`.
//!
//! Reading in order goes leaf by leaf: [`Tree::cursor`] descends once to the first entry
//! at or after a position, keeping the path (per branch, the children still to visit), and
//! [`Cursor`] steps from a leaf's end to the next leaf along that path, comparing no keys.

use std::cmp::Ordering;
use std::sync::Arc;
use tableq_model::order::compare_str;

/// The most entries a leaf holds. Every insert into a version that readers share copies a
/// leaf and a branch per level, and dropping the replaced version releases what they
/// point to (an atomic decrement each): with 16 rather than 32 a single insert into the
/// durable engine's memtable cost 3–6 % less server CPU (issue 31 §1; 5 and 14 alternating
/// pairs of `wrk` inserts, both near this machine's noise), for a tree about one level
/// deeper.
pub(crate) const LEAF_CAP: usize = 16;
/// The most children a branch holds (see [`LEAF_CAP`]).
pub(crate) const BRANCH_CAP: usize = 16;

/// An entry of a [`Tree`]: cheap to clone, with its key.
pub(crate) trait TreeEntry: Clone {
    /// The entry's key (ordered by [`compare_str`]).
    fn key(&self) -> &str;
}

enum Node<E> {
    Leaf(Vec<E>),
    Branch {
        /// `keys[i]` separates `children[i]` and `children[i + 1]`.
        keys: Vec<Arc<str>>,
        children: Vec<Arc<Node<E>>>,
    },
}

// By hand: the copy gets room for one more element, so the insert that follows the copy
// (the reason for copying) does not reallocate.
impl<E: Clone> Clone for Node<E> {
    fn clone(&self) -> Self {
        match self {
            Node::Leaf(entries) => {
                let mut copy = Vec::with_capacity(entries.len() + 1);
                copy.extend(entries.iter().cloned());
                Node::Leaf(copy)
            }
            Node::Branch { keys, children } => {
                let mut k = Vec::with_capacity(keys.len() + 1);
                k.extend(keys.iter().cloned());
                let mut c = Vec::with_capacity(children.len() + 1);
                c.extend(children.iter().cloned());
                Node::Branch {
                    keys: k,
                    children: c,
                }
            }
        }
    }
}

/// A persistent ordered map (see the module docs).
pub(crate) struct Tree<E> {
    root: Option<Arc<Node<E>>>,
    len: usize,
}

impl<E> Clone for Tree<E> {
    fn clone(&self) -> Self {
        Tree {
            root: self.root.clone(),
            len: self.len,
        }
    }
}

impl<E> Default for Tree<E> {
    fn default() -> Self {
        Tree { root: None, len: 0 }
    }
}

/// Which child of a branch may hold `key`.
#[inline]
fn child_for(keys: &[Arc<str>], key: &str) -> usize {
    keys.partition_point(|k| compare_str(k, key) != Ordering::Greater)
}

/// A node that outgrew its capacity, split: the separator and the new right half.
type Split<E> = (Arc<str>, Arc<Node<E>>);

impl<E: TreeEntry> Tree<E> {
    /// The number of entries.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Whether the tree has no entry.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `other` is this very version (a clone no insert has changed since).
    #[inline]
    pub(crate) fn same_version(&self, other: &Tree<E>) -> bool {
        match (&self.root, &other.root) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }

    /// The entry with this key.
    pub(crate) fn get(&self, key: &str) -> Option<&E> {
        let mut node = self.root.as_deref()?;
        loop {
            match node {
                Node::Branch { keys, children } => node = &children[child_for(keys, key)],
                Node::Leaf(entries) => {
                    return entries
                        .binary_search_by(|e| compare_str(e.key(), key))
                        .ok()
                        .map(|i| &entries[i]);
                }
            }
        }
    }

    /// The entry with this key, to change in place. The nodes on its path are copied first
    /// if another version shares them (earlier clones keep their contents); the caller must
    /// not change the entry's key.
    pub(crate) fn get_mut(&mut self, key: &str) -> Option<&mut E> {
        let mut node = self.root.as_mut()?;
        loop {
            match Arc::make_mut(node) {
                Node::Branch { keys, children } => node = &mut children[child_for(keys, key)],
                Node::Leaf(entries) => {
                    return match entries.binary_search_by(|e| compare_str(e.key(), key)) {
                        Ok(i) => Some(&mut entries[i]),
                        Err(_) => None,
                    };
                }
            }
        }
    }

    /// Inserts `entry`, replacing (and returning) the entry with the same key if any.
    pub(crate) fn insert(&mut self, entry: E) -> Option<E> {
        let Some(root) = self.root.as_mut() else {
            let mut leaf = Vec::with_capacity(LEAF_CAP + 1);
            leaf.push(entry);
            self.root = Some(Arc::new(Node::Leaf(leaf)));
            self.len = 1;
            return None;
        };
        let (replaced, split) = insert_into(root, entry);
        if let Some((key, right)) = split {
            let left = root.clone();
            let mut keys = Vec::with_capacity(BRANCH_CAP);
            keys.push(key);
            let mut children = Vec::with_capacity(BRANCH_CAP + 1);
            children.extend([left, right]);
            *root = Arc::new(Node::Branch { keys, children });
        }
        if replaced.is_none() {
            self.len += 1;
        }
        replaced
    }

    /// A cursor at the first entry whose key is not `before` (a predicate that holds for
    /// a prefix of the keys in order, and for no key after it); at the end when every
    /// entry is `before`.
    pub(crate) fn cursor(&self, before: impl Fn(&str) -> bool) -> Cursor<'_, E> {
        let mut cursor = Cursor {
            path: Vec::new(),
            leaf: &[],
        };
        let Some(mut node) = self.root.as_deref() else {
            return cursor;
        };
        loop {
            match node {
                Node::Leaf(entries) => {
                    let i = entries.partition_point(|e| before(e.key()));
                    cursor.leaf = &entries[i..];
                    if cursor.leaf.is_empty() {
                        // Every entry here is `before`: the next leaf's first is not.
                        cursor.next_leaf();
                    }
                    return cursor;
                }
                Node::Branch { keys, children } => {
                    // Children left of `start` hold only keys below a `before` separator.
                    let start = keys.partition_point(|k| before(k));
                    let mut rest = children[start..].iter();
                    let Some(child) = rest.next() else {
                        return cursor;
                    };
                    cursor.path.push(rest);
                    node = child;
                }
            }
        }
    }

    /// Every entry in key order.
    pub(crate) fn iter(&self) -> Cursor<'_, E> {
        self.cursor(|_| false)
    }
}

fn insert_into<E: TreeEntry>(node: &mut Arc<Node<E>>, entry: E) -> (Option<E>, Option<Split<E>>) {
    match Arc::make_mut(node) {
        Node::Leaf(entries) => {
            match entries.binary_search_by(|e| compare_str(e.key(), entry.key())) {
                Ok(i) => (Some(std::mem::replace(&mut entries[i], entry)), None),
                Err(i) => {
                    entries.insert(i, entry);
                    if entries.len() <= LEAF_CAP {
                        return (None, None);
                    }
                    let mut right = Vec::with_capacity(LEAF_CAP + 1);
                    right.extend(entries.drain(entries.len() / 2..));
                    let key: Arc<str> = Arc::from(right[0].key());
                    (None, Some((key, Arc::new(Node::Leaf(right)))))
                }
            }
        }
        Node::Branch { keys, children } => {
            let i = child_for(keys, entry.key());
            let (replaced, split) = insert_into(&mut children[i], entry);
            let Some((key, right)) = split else {
                return (replaced, None);
            };
            keys.insert(i, key);
            children.insert(i + 1, right);
            if children.len() <= BRANCH_CAP {
                return (replaced, None);
            }
            let mid = children.len() / 2;
            let mut right_children = Vec::with_capacity(BRANCH_CAP + 1);
            right_children.extend(children.drain(mid..));
            let mut right_keys = Vec::with_capacity(BRANCH_CAP);
            right_keys.extend(keys.drain(mid..));
            // keys[mid - 1] separates the halves and moves up.
            let Some(up) = keys.pop() else {
                return (replaced, None); // unreachable: a full branch has keys
            };
            let right = Node::Branch {
                keys: right_keys,
                children: right_children,
            };
            (replaced, Some((up, Arc::new(right))))
        }
    }
}

/// A position in a [`Tree`], moving forward in key order: the rest of the current leaf,
/// and for each branch above it the children still to visit — a leaf's end steps to the
/// next leaf without comparing keys.
pub(crate) struct Cursor<'a, E> {
    /// Per branch level, from the root: the children after the one the cursor is in.
    path: Vec<std::slice::Iter<'a, Arc<Node<E>>>>,
    /// The rest of the current leaf (empty at the end).
    leaf: &'a [E],
}

impl<E> Clone for Cursor<'_, E> {
    fn clone(&self) -> Self {
        Cursor {
            path: self.path.clone(),
            leaf: self.leaf,
        }
    }
}

impl<'a, E: TreeEntry> Cursor<'a, E> {
    /// The entry at the cursor.
    #[inline]
    pub(crate) fn peek(&self) -> Option<&'a E> {
        self.leaf.first()
    }

    /// Moves to the first entry of the next leaf (or to the end).
    #[inline(never)]
    fn next_leaf(&mut self) {
        self.leaf = &[];
        while let Some(siblings) = self.path.last_mut() {
            let Some(mut node) = siblings.next() else {
                self.path.pop();
                continue;
            };
            // The leftmost leaf under `node`.
            loop {
                match &**node {
                    Node::Leaf(entries) => {
                        self.leaf = entries;
                        break;
                    }
                    Node::Branch { children, .. } => {
                        let mut rest = children.iter();
                        let Some(child) = rest.next() else { break };
                        self.path.push(rest);
                        node = child;
                    }
                }
            }
            if !self.leaf.is_empty() {
                return;
            }
        }
    }
}

impl<'a, E: TreeEntry> Iterator for Cursor<'a, E> {
    type Item = &'a E;

    #[inline]
    fn next(&mut self) -> Option<&'a E> {
        let (first, rest) = self.leaf.split_first()?;
        self.leaf = rest;
        if rest.is_empty() {
            self.next_leaf();
        }
        Some(first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;
    use tableq_model::order::OrdinalString;

    #[derive(Clone, Debug, PartialEq)]
    struct E(Arc<str>, u32);

    impl TreeEntry for E {
        fn key(&self) -> &str {
            &self.0
        }
    }

    fn contents(t: &Tree<E>) -> Vec<(String, u32)> {
        t.iter().map(|e| (e.0.to_string(), e.1)).collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn equals_a_btreemap(
            keys in proptest::collection::vec("[ab\u{E000}\u{FFFF}\u{10000}]{0,4}", 0..600),
            seeks in proptest::collection::vec("[ab\u{E000}\u{FFFF}\u{10000}]{0,4}", 0..20),
        ) {
            let mut tree: Tree<E> = Tree::default();
            let mut model: BTreeMap<OrdinalString, u32> = BTreeMap::new();
            let mut versions = Vec::new();
            for (i, k) in keys.iter().enumerate() {
                if i % 97 == 0 {
                    versions.push((tree.clone(), model.clone()));
                }
                let old = tree.insert(E(k.as_str().into(), i as u32)).map(|e| e.1);
                prop_assert_eq!(old, model.insert(OrdinalString(k.clone()), i as u32));
                prop_assert_eq!(tree.len(), model.len());
            }
            versions.push((tree.clone(), model.clone()));
            for (tree, model) in &versions {
                let want: Vec<(String, u32)> = model.iter().map(|(k, v)| (k.0.clone(), *v)).collect();
                prop_assert_eq!(contents(tree), want);
                for k in &keys {
                    prop_assert_eq!(tree.get(k).map(|e| e.1), model.get(&OrdinalString(k.clone())).copied());
                }
                for s in &seeks {
                    let got: Vec<u32> = tree.cursor(|k| compare_str(k, s).is_lt()).map(|e| e.1).collect();
                    let want: Vec<u32> = model.range(OrdinalString(s.clone())..).map(|(_, v)| *v).collect();
                    prop_assert_eq!(got, want);
                }
            }
        }
    }

    #[test]
    fn get_mut_changes_one_version_only() {
        let mut tree: Tree<E> = Tree::default();
        for i in 0..1_000u32 {
            tree.insert(E(format!("{i:04}").into(), i));
        }
        let before = tree.clone();
        tree.get_mut("0500").unwrap().1 = 7;
        assert!(tree.get_mut("x").is_none());
        assert_eq!(tree.get("0500").map(|e| e.1), Some(7));
        assert_eq!(
            before.get("0500").map(|e| e.1),
            Some(500),
            "the clone is unchanged"
        );
        assert_eq!(tree.len(), 1_000);
        assert!(Tree::<E>::default().get_mut("a").is_none());
    }

    #[test]
    fn grows_in_depth_and_keeps_order() {
        let mut tree: Tree<E> = Tree::default();
        // Descending inserts split at the left edge, ascending ones at the right.
        for i in (0..5_000u32).rev() {
            tree.insert(E(format!("{i:05}").into(), i));
        }
        for i in 5_000..10_000u32 {
            tree.insert(E(format!("{i:05}").into(), i));
        }
        let got: Vec<u32> = tree.iter().map(|e| e.1).collect();
        assert_eq!(got, (0..10_000).collect::<Vec<_>>());
        assert_eq!(tree.get("04321").map(|e| e.1), Some(4321));
        assert!(tree.get("x").is_none());
        // A cursor from anywhere walks the rest, leaf after leaf, to the end.
        for start in [
            0u32, 1, 15, 16, 31, 32, 33, 1_000, 4_999, 5_000, 9_998, 9_999,
        ] {
            let from = format!("{start:05}");
            let got: Vec<u32> = tree
                .cursor(|k| compare_str(k, &from).is_lt())
                .map(|e| e.1)
                .collect();
            assert_eq!(got, (start..10_000).collect::<Vec<_>>(), "from {from}");
        }
        // Between two keys, and past the last.
        let got: Vec<u32> = tree
            .cursor(|k| compare_str(k, "04999a").is_lt())
            .map(|e| e.1)
            .collect();
        assert_eq!(got, (5_000..10_000).collect::<Vec<_>>());
        assert_eq!(tree.cursor(|k| compare_str(k, "x").is_lt()).count(), 0);
    }
}

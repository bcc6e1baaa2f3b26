//! [`Keys`]: a key set in the cheapest of its forms (see the [parent module](super)).

use super::space::reduce;
use super::{Intervals, Space};

/// A key set in the cheapest form that holds it: most predicates constrain one key only,
/// and 1-D sets are far cheaper than 2-D ones. Constructors normalise (`Pk(full)` is `All`,
/// `Pk(empty)` is `Nothing`, …).
#[derive(Debug, Clone)]
pub(crate) enum Keys<'a> {
    /// Every key pair.
    All,
    /// No key pair.
    Nothing,
    /// PartitionKey in the set, any RowKey.
    Pk(Intervals<'a>),
    /// RowKey in the set, any PartitionKey.
    Rk(Intervals<'a>),
    /// Any 2-D set.
    Both(Space<'a>),
}

impl<'a> Keys<'a> {
    pub(crate) fn pk(iv: Intervals<'a>) -> Keys<'a> {
        if iv.is_empty() {
            Keys::Nothing
        } else if iv.is_full() {
            Keys::All
        } else {
            Keys::Pk(iv)
        }
    }

    pub(crate) fn rk(iv: Intervals<'a>) -> Keys<'a> {
        if iv.is_empty() {
            Keys::Nothing
        } else if iv.is_full() {
            Keys::All
        } else {
            Keys::Rk(iv)
        }
    }

    pub(crate) fn space(s: Space<'a>) -> Keys<'a> {
        if s.is_empty() {
            Keys::Nothing
        } else if s.is_full() {
            Keys::All
        } else {
            Keys::Both(s)
        }
    }

    pub(crate) fn is_all(&self) -> bool {
        matches!(self, Keys::All)
    }

    pub(crate) fn is_nothing(&self) -> bool {
        matches!(self, Keys::Nothing)
    }

    pub(crate) fn into_space(self) -> Space<'a> {
        match self {
            Keys::All => Space::full(),
            Keys::Nothing => Space::empty(),
            Keys::Pk(iv) => Space::product(&iv, &Intervals::full()),
            Keys::Rk(iv) => Space::product(&Intervals::full(), &iv),
            Keys::Both(s) => s,
        }
    }

    /// The number of ranges the set turns into.
    pub(crate) fn range_count(&self) -> usize {
        match self {
            Keys::All | Keys::Rk(_) => 1,
            Keys::Nothing => 0,
            Keys::Pk(iv) => iv.0.len(),
            Keys::Both(s) => s.range_count(),
        }
    }

    pub(crate) fn intersect(self, other: Keys<'a>) -> Keys<'a> {
        match (self, other) {
            (Keys::Nothing, _) | (_, Keys::Nothing) => Keys::Nothing,
            (Keys::All, x) | (x, Keys::All) => x,
            (Keys::Pk(a), Keys::Pk(b)) => Keys::pk(a.intersect(&b)),
            (Keys::Rk(a), Keys::Rk(b)) => Keys::rk(a.intersect(&b)),
            (Keys::Pk(a), Keys::Rk(b)) | (Keys::Rk(b), Keys::Pk(a)) => {
                Keys::space(Space::product(&a, &b))
            }
            (a, b) => Keys::space(a.into_space().intersect(&b.into_space())),
        }
    }

    pub(crate) fn complement(self) -> Keys<'a> {
        match self {
            Keys::All => Keys::Nothing,
            Keys::Nothing => Keys::All,
            Keys::Pk(iv) => Keys::pk(iv.complement()),
            Keys::Rk(iv) => Keys::rk(iv.complement()),
            Keys::Both(s) => Keys::space(s.complement()),
        }
    }

    /// The intersection of all (`All` for none).
    pub(crate) fn intersect_all(items: Vec<Keys<'a>>) -> Keys<'a> {
        reduce(items, Keys::All, Keys::intersect)
    }

    /// The union of all (`Nothing` for none).
    pub(crate) fn union_all(items: Vec<Keys<'a>>) -> Keys<'a> {
        let items: Vec<Keys<'a>> = items.into_iter().filter(|k| !k.is_nothing()).collect();
        if items.iter().any(Keys::is_all) {
            return Keys::All;
        }
        match items.as_slice() {
            [] => return Keys::Nothing,
            [_] => return items.into_iter().next().unwrap_or(Keys::Nothing),
            _ => {}
        }
        if items.iter().all(|k| matches!(k, Keys::Pk(_))) {
            let ivs = items.iter().flat_map(|k| match k {
                Keys::Pk(iv) => iv.0.as_slice(),
                _ => &[],
            });
            return Keys::pk(Intervals::union_many(ivs.copied()));
        }
        if items.iter().all(|k| matches!(k, Keys::Rk(_))) {
            let ivs = items.iter().flat_map(|k| match k {
                Keys::Rk(iv) => iv.0.as_slice(),
                _ => &[],
            });
            return Keys::rk(Intervals::union_many(ivs.copied()));
        }
        Keys::space(Space::union_all(
            items.into_iter().map(Keys::into_space).collect(),
        ))
    }

    /// Whether both hold the same key pairs.
    pub(crate) fn same_set(&self, other: &Keys<'a>) -> bool {
        match (self, other) {
            (Keys::All, Keys::All) | (Keys::Nothing, Keys::Nothing) => true,
            (Keys::Pk(a), Keys::Pk(b)) | (Keys::Rk(a), Keys::Rk(b)) => a == b,
            (a, b) => a.clone().into_space() == b.clone().into_space(),
        }
    }
}

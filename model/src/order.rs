//! The one value order of the spec, for strings: ordinal by UTF-16 code units.
//!
//! Rust compares `str` by UTF-8 bytes, which equals code-point order. UTF-16 ordinal order
//! (.NET `String.CompareOrdinal`) differs in exactly one place: a supplementary-plane
//! character (U+10000…, encoded as a surrogate pair starting 0xD800–0xDBFF) sorts *before*
//! U+E000–U+FFFF. Every ordering in tableq — sorting, key ranges, continuations — must use
//! [`compare_str`], never `str::cmp`.
//!
//! ```
//! use std::cmp::Ordering;
//! use tableq_model::order::compare_str;
//! assert_eq!(compare_str("a", "b"), Ordering::Less);
//! // U+10000 is "\u{D800}\u{DC00}" in UTF-16, which sorts before U+FFFF.
//! assert_eq!(compare_str("\u{10000}", "\u{FFFF}"), Ordering::Less);
//! assert!("\u{10000}" > "\u{FFFF}"); // while UTF-8 byte order says the opposite
//! ```

use std::cmp::Ordering;

/// Compares two strings by UTF-16 code units (ordinal, case-sensitive).
///
/// Fast path: the common byte prefix is skipped with a byte comparison; only the first
/// differing character is decoded.
#[inline]
pub fn compare_str(a: &str, b: &str) -> Ordering {
    let (ab, bb) = (a.as_bytes(), b.as_bytes());
    let common = ab.iter().zip(bb).take_while(|(x, y)| x == y).count();
    if common == ab.len() || common == bb.len() {
        return ab.len().cmp(&bb.len());
    }
    // Back up to the start of the differing character (both strings agree up to `common`).
    let mut start = common;
    while !a.is_char_boundary(start) {
        start -= 1;
    }
    let ca = a[start..].chars().next().map_or(0, u32::from);
    let cb = b[start..].chars().next().map_or(0, u32::from);
    utf16_key(ca).cmp(&utf16_key(cb))
}

/// Maps a code point to a key whose order is the order of its UTF-16 encoding.
#[inline]
fn utf16_key(c: u32) -> (u32, u32) {
    if c >= 0x10000 {
        (0xD800 + ((c - 0x10000) >> 10), c)
    } else {
        (c, c)
    }
}

/// The number of UTF-16 code units of a string (the unit of every length limit of the spec).
#[inline]
pub fn utf16_len(s: &str) -> usize {
    if s.is_ascii() {
        s.len()
    } else {
        s.chars().map(char::len_utf16).sum()
    }
}

/// A string key ordered by [`compare_str`]: use it as a `BTreeMap` key or sort key.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct OrdinalString(pub String);

impl PartialOrd for OrdinalString {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for OrdinalString {
    fn cmp(&self, other: &Self) -> Ordering {
        compare_str(&self.0, &other.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn utf16_cmp(a: &str, b: &str) -> Ordering {
        a.encode_utf16().cmp(b.encode_utf16())
    }

    #[test]
    fn examples() {
        assert_eq!(compare_str("", ""), Ordering::Equal);
        assert_eq!(compare_str("", "a"), Ordering::Less);
        assert_eq!(compare_str("B", "a"), Ordering::Less); // case-sensitive ordinal
        assert_eq!(compare_str("\u{E000}", "\u{1F600}"), Ordering::Greater);
        assert_eq!(compare_str("x\u{1F600}", "x\u{FFFD}"), Ordering::Less);
        assert_eq!(compare_str("é", "e\u{301}"), Ordering::Greater);
        assert_eq!(utf16_len("a\u{1F600}é"), 4);
    }

    proptest! {
        #[test]
        fn matches_utf16_encoding(a in "\\PC{0,6}", b in "\\PC{0,6}") {
            prop_assert_eq!(compare_str(&a, &b), utf16_cmp(&a, &b));
        }

        #[test]
        fn matches_utf16_with_shared_prefix(p in "\\PC{0,4}", a in "[\\u{E000}-\\u{FFFF}\\u{10000}-\\u{10FFFF}a]{0,3}", b in "[\\u{E000}-\\u{FFFF}\\u{10000}-\\u{10FFFF}a]{0,3}") {
            let (a, b) = (format!("{p}{a}"), format!("{p}{b}"));
            prop_assert_eq!(compare_str(&a, &b), utf16_cmp(&a, &b));
        }
    }
}

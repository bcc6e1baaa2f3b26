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
/// Fast path: the common byte prefix is skipped eight bytes at a time
/// ([`common_prefix`]); only the first differing character is decoded.
#[inline]
pub fn compare_str(a: &str, b: &str) -> Ordering {
    let (ab, bb) = (a.as_bytes(), b.as_bytes());
    let common = common_prefix(ab, bb);
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

/// The length of the longest common prefix of `a` and `b`: eight bytes compared at a time
/// (the first differing byte of a word is its lowest set byte of the XOR, the words read
/// little-endian), then byte by byte. Keys share long prefixes (`r00000041`, `r00000042`),
/// and a byte loop was 4 % of an import's CPU (`perf`, 10 M entities, 2026-11-29).
#[inline]
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let mut i = 0;
    while let (Some(x), Some(y)) = (
        a.get(i..).and_then(<[u8]>::first_chunk::<8>),
        b.get(i..).and_then(<[u8]>::first_chunk::<8>),
    ) {
        let diff = u64::from_le_bytes(*x) ^ u64::from_le_bytes(*y);
        if diff != 0 {
            return i + (diff.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    i + a[i.min(a.len())..]
        .iter()
        .zip(&b[i.min(b.len())..])
        .take_while(|(x, y)| x == y)
        .count()
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

        /// Prefixes past one and two 8-byte words, so that the mismatch falls in a word, at
        /// a word's edge and in the bytes after the last whole word.
        #[test]
        fn matches_utf16_with_long_shared_prefix(p in "[a-z0-9\\u{E9}\\u{1F600}]{0,20}", a in "\\PC{0,3}", b in "\\PC{0,3}") {
            let (a, b) = (format!("{p}{a}"), format!("{p}{b}"));
            prop_assert_eq!(compare_str(&a, &b), utf16_cmp(&a, &b));
            let bytes = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
            prop_assert_eq!(common_prefix(a.as_bytes(), b.as_bytes()), bytes);
        }
    }
}

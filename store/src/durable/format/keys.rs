//! The order-preserving byte encoding of (table, PartitionKey, RowKey) that the redb keys of
//! the durable engine use: comparing two encoded keys byte by byte gives the spec's order —
//! table id, then PartitionKey, then RowKey, strings by UTF-16 code units
//! ([`tableq_model::order::compare_str`]).
//!
//! # Encoding
//!
//! * the table id as 8 big-endian bytes;
//! * each string as its UTF-8 bytes, with three changes so that byte order is UTF-16 order
//!   and a string never contains the terminator:
//!   * the lead bytes `0xEE` and `0xEF` (U+E000–U+FFFF) become `0xF5` and `0xF6`, bytes no
//!     UTF-8 text contains, so those characters sort *after* the supplementary planes
//!     (lead bytes `0xF0`–`0xF4`), as their UTF-16 code units do;
//!   * U+0000 becomes `01 01` and U+0001 becomes `01 02` (stored keys never contain control
//!     characters, but seek keys built from filters and continuations may);
//! * the PartitionKey is followed by the terminator `0x00`, which sorts below every
//!   character, so `("a", "b")` sorts before `("ab", "")`.
//!
//! Within one character the code is UTF-8's (code point order); between characters the lead
//! bytes order U+0000–U+0001 < U+0002–U+D7FF < U+10000–U+10FFFF < U+E000–U+FFFF, which is
//! the order of their first UTF-16 code units. The code is prefix-free, so comparing two
//! encodings compares the strings character by character.
//!
//! For example (table 1; `|` marks the parts):
//!
//! ```text
//! (1, "p", "\u{10000}")  →  00 00 00 00 00 00 00 01 | 70 | 00 | F0 90 80 80
//! (1, "p", "\u{E000}")   →  00 00 00 00 00 00 00 01 | 70 | 00 | F5 80 80
//! ```
//!
//! The first sorts first, as `"\u{10000}"` (UTF-16 `D800 DC00`) sorts before `"\u{E000}"`.

use std::cmp::Ordering;

/// Bytes of the table-id prefix.
pub(crate) const TABLE_ID_LEN: usize = 8;

/// Appends the encoding of `s` (without terminator).
pub(crate) fn push_str(out: &mut Vec<u8>, s: &str) {
    for &b in s.as_bytes() {
        match b {
            0x00 => out.extend_from_slice(&[0x01, 0x01]),
            0x01 => out.extend_from_slice(&[0x01, 0x02]),
            0xEE => out.push(0xF5),
            0xEF => out.push(0xF6),
            b => out.push(b),
        }
    }
}

/// The prefix every key of table `table` starts with.
pub(crate) fn table_prefix(table: u64) -> [u8; TABLE_ID_LEN] {
    table.to_be_bytes()
}

/// The first key after every key of table `table` (the next table's prefix).
pub(crate) fn table_end(table: u64) -> Vec<u8> {
    match table.checked_add(1) {
        Some(next) => next.to_be_bytes().to_vec(),
        // The last possible table: every key of it is below nine 0xFF bytes.
        None => vec![0xFF; TABLE_ID_LEN + 1],
    }
}

/// The prefix of every key of partition `pk` of table `table`: table id, PartitionKey,
/// terminator.
pub(crate) fn partition_prefix(table: u64, pk: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(TABLE_ID_LEN + pk.len() + 1 + 16);
    out.extend_from_slice(&table_prefix(table));
    push_str(&mut out, pk);
    out.push(0x00);
    out
}

/// The first key after every key of partition `pk`: below the keys of every greater
/// PartitionKey (whose encodings continue `pk`'s with a byte `>= 0x01`, or differ earlier).
pub(crate) fn partition_end(table: u64, pk: &str) -> Vec<u8> {
    let mut out = partition_prefix(table, pk);
    if let Some(last) = out.last_mut() {
        *last = 0x01;
    }
    out
}

/// The key of the entity (or block start) `(pk, rk)` of table `table`.
pub(crate) fn entity_key(table: u64, pk: &str, rk: &str) -> Vec<u8> {
    let mut out = partition_prefix(table, pk);
    push_str(&mut out, rk);
    out
}

/// Reverses [`entity_key`] for a block key: (table id, PartitionKey, first RowKey), with any
/// byte sequence that is not a valid encoding shown as U+FFFD (for reports about damage,
/// where the key itself may be damaged). `None` when the key is shorter than a table id.
pub(crate) fn decode_block_key(key: &[u8]) -> Option<(u64, String, String)> {
    let table = u64::from_be_bytes(key.get(..TABLE_ID_LEN)?.try_into().ok()?);
    let rest = &key[TABLE_ID_LEN..];
    let (pk, rk) = match rest.iter().position(|&b| b == 0x00) {
        Some(end) => (&rest[..end], &rest[end + 1..]),
        None => (rest, &[][..]),
    };
    let unescape = |bytes: &[u8]| {
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            let (byte, width) = match (bytes[i], bytes.get(i + 1)) {
                (0x01, Some(&0x01)) => (0x00, 2),
                (0x01, Some(&0x02)) => (0x01, 2),
                (0xF5, _) => (0xEE, 1),
                (0xF6, _) => (0xEF, 1),
                (b, _) => (b, 1),
            };
            out.push(byte);
            i += width;
        }
        String::from_utf8_lossy(&out).into_owned()
    };
    Some((table, unescape(pk), unescape(rk)))
}

/// Compares two UTF-8 strings given as bytes by UTF-16 code units (the order of
/// [`tableq_model::order::compare_str`]) without decoding them: the first differing byte
/// decides, with the lead bytes of U+E000–U+FFFF moved above those of the supplementary
/// planes. (Both strings agree up to that byte, so both bytes sit at the same position of a
/// character: two lead bytes, or two continuation bytes of characters sharing a lead byte.)
#[inline]
pub(crate) fn compare_utf8(a: &[u8], b: &[u8]) -> Ordering {
    match a.iter().zip(b).position(|(x, y)| x != y) {
        Some(i) => rank(a[i]).cmp(&rank(b[i])),
        None => a.len().cmp(&b.len()),
    }
}

#[inline]
fn rank(b: u8) -> u8 {
    match b {
        0xEE => 0xF5,
        0xEF => 0xF6,
        b => b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use tableq_exec::compare_keys;
    use tableq_model::order::compare_str;

    #[test]
    fn block_keys_decode_back() {
        for (pk, rk) in [
            ("p", "r"),
            ("", ""),
            ("a\u{0}\u{1}b", "\u{E000}\u{FFFF}x"),
            ("é", "\u{1F600}"),
        ] {
            let key = entity_key(7, pk, rk);
            assert_eq!(
                decode_block_key(&key),
                Some((7, pk.to_owned(), rk.to_owned()))
            );
        }
        assert_eq!(decode_block_key(&[1, 2]), None);
        let (_, pk, _) = decode_block_key(&[0, 0, 0, 0, 0, 0, 0, 1, 0xFF, 0x00]).unwrap();
        assert_eq!(pk, "\u{FFFD}");
    }

    fn arb_string() -> impl Strategy<Value = String> {
        // ASCII, the two escaped characters, two-byte, BMP below and above the surrogates,
        // and supplementary-plane characters, with many shared prefixes.
        proptest::collection::vec(
            prop_oneof![
                Just('\u{0}'),
                Just('\u{1}'),
                Just('\u{2}'),
                Just('a'),
                Just('b'),
                Just('é'),
                Just('\u{D7FF}'),
                Just('\u{E000}'),
                Just('\u{FFFD}'),
                Just('\u{FFFF}'),
                Just('\u{10000}'),
                Just('\u{1F600}'),
                Just('\u{10FFFF}'),
                any::<char>(),
            ],
            0..5,
        )
        .prop_map(|cs| cs.into_iter().collect())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn encoded_order_is_utf16_order(a in (arb_string(), arb_string()), b in (arb_string(), arb_string())) {
            let ka = entity_key(7, &a.0, &a.1);
            let kb = entity_key(7, &b.0, &b.1);
            prop_assert_eq!(ka.cmp(&kb), compare_keys(&a.0, &a.1, &b.0, &b.1));
        }

        #[test]
        fn raw_comparison_is_utf16_order(a in arb_string(), b in arb_string()) {
            prop_assert_eq!(compare_utf8(a.as_bytes(), b.as_bytes()), compare_str(&a, &b));
        }

        #[test]
        fn keys_stay_inside_their_partition_and_table(pk in arb_string(), rk in arb_string()) {
            let key = entity_key(3, &pk, &rk);
            prop_assert!(key.starts_with(&partition_prefix(3, &pk)));
            prop_assert!(key < partition_end(3, &pk));
            prop_assert!(key.as_slice() < table_end(3).as_slice());
            prop_assert!(key.as_slice() >= table_prefix(3).as_slice());
        }

        #[test]
        fn partition_end_is_below_every_greater_partition(a in arb_string(), b in arb_string(), rk in arb_string()) {
            if compare_str(&a, &b) == Ordering::Less {
                prop_assert!(partition_end(1, &a) <= entity_key(1, &b, &rk));
            }
        }
    }

    #[test]
    fn tables_do_not_interleave() {
        let last_of_1 = entity_key(1, "\u{10FFFF}\u{FFFF}", "\u{FFFF}");
        assert!(last_of_1.as_slice() < table_end(1).as_slice());
        assert!(table_end(1).as_slice() <= entity_key(2, "", "").as_slice());
        assert!(table_end(u64::MAX).as_slice() > entity_key(u64::MAX, "\u{FFFF}", "").as_slice());
    }

    #[test]
    fn supplementary_sorts_before_private_use_and_specials() {
        let order = [
            "",
            "a",
            "\u{D7FF}",
            "\u{10000}",
            "\u{1F600}",
            "\u{E000}",
            "\u{FFFD}",
        ];
        for w in order.windows(2) {
            assert!(entity_key(1, w[0], "") < entity_key(1, w[1], ""), "{w:?}");
            assert!(entity_key(1, "p", w[0]) < entity_key(1, "p", w[1]), "{w:?}");
        }
        // The PartitionKey ends before the RowKey starts.
        assert!(entity_key(1, "a", "\u{FFFF}") < entity_key(1, "a\u{1}", ""));
        assert!(entity_key(1, "a", "b") < entity_key(1, "ab", ""));
    }
}

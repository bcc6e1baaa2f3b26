//! The log file's bytes: its header and reach marker, records framed for appending, and
//! reading a whole file back with the torn-tail rule (the file itself is written through
//! `wal/file.rs`).
//!
//! The layout (header, reach marker, record framing, checksums) is written out in the
//! format's module docs (`format/mod.rs`). `base_lsn` is the number of the first record
//! the file holds (records are numbered consecutively from it); `generation` is the log's
//! identity, which the data file records (`open.rs`): a log of another data directory is
//! never replayed.
//!
//! # The reach marker
//!
//! `reach` says how far the log was known durable: every record up to number `synced_lsn`
//! (the file's first `synced_len` bytes) had been `fsync`ed. It is rewritten in place
//! (one positioned write of 24 bytes, [`reach`]) right after each `fsync` returns, naming
//! what that `fsync` made durable, so it never claims more than the disk holds; the marker
//! itself reaches the disk with the next `fsync` (after a power loss it may name one
//! `fsync` less; after a process crash it is exact, from the page cache). Under `always`
//! every acknowledged record is thus covered; under `interval=MS`, those of the last
//! interval are not. All zeros means no record was known durable. A log whose intact
//! records end before its reach lost durable records (cut, or damaged before the reach):
//! opening refuses it (`durable/mod.rs`, `OpenError::LogTruncated`).
//!
//! # Reading: the torn-tail rule
//!
//! Records are read in order. A record that is incomplete or fails its checksum **at the
//! end of the log** is discarded: a crash interrupted its `write(2)`, so it was never
//! acknowledged (a reply is only sent once the record is complete) — unless it lies before
//! the reach marker, which the opening checks. Opening logs every discarded tail (offset
//! and size) as a warning. Damage **before** an
//! intact record of the log is corruption: [`read`] refuses the log rather than guess. To
//! tell the two apart, the bytes after a bad record are searched for any intact record
//! that could follow it (right magic of length, checksum and a later number); zeros — what
//! a file system shows for a tail that never reached the disk — are never one. Records
//! must be numbered consecutively from `base_lsn`; a gap is corruption too.

use crate::codec::Corrupt;

/// The name of the log file in the data directory.
pub const WAL_FILE: &str = "tableq.wal";

/// The first bytes of every log file.
const MAGIC: [u8; 8] = *b"tableqWL";
/// The layout version this build writes and reads (2: with generation and reach marker).
const VERSION: u32 = 2;
/// Bytes of the file header proper.
const HEAD: usize = 40;
/// Where the reach marker lies.
pub(crate) const REACH_AT: u64 = HEAD as u64;
/// Bytes of the reach marker.
const REACH_LEN: usize = 24;
/// Bytes before the first record: the header and the reach marker.
pub(crate) const HEADER_LEN: u64 = (HEAD + REACH_LEN) as u64;
/// Bytes of a record header (length, checksum, number).
pub(crate) const RECORD_HEAD: usize = 16;
/// The largest record body accepted (a record holds one request, whose body the server
/// bounds at 4 MiB; encoded it stays well below this).
pub(crate) const MAX_BODY: usize = 64 << 20;

/// The file header (with an all-zero reach marker) of log `generation` whose first record
/// will be number `base_lsn`.
pub(crate) fn header(base_lsn: u64, generation: u64) -> [u8; HEADER_LEN as usize] {
    let mut out = [0; HEADER_LEN as usize];
    out[..8].copy_from_slice(&MAGIC);
    out[8..12].copy_from_slice(&VERSION.to_le_bytes());
    out[16..24].copy_from_slice(&base_lsn.to_le_bytes());
    out[24..32].copy_from_slice(&generation.to_le_bytes());
    let crc = crc32fast::hash(&out[..32]);
    out[32..36].copy_from_slice(&crc.to_le_bytes());
    out
}

/// The reach marker (written at [`REACH_AT`]): records up to `lsn`, the first `len` bytes
/// of the file, were made durable.
pub(crate) fn reach(lsn: u64, len: u64) -> [u8; REACH_LEN] {
    let mut out = [0; REACH_LEN];
    out[..8].copy_from_slice(&lsn.to_le_bytes());
    out[8..16].copy_from_slice(&len.to_le_bytes());
    let crc = crc32fast::hash(&out[..16]);
    out[16..20].copy_from_slice(&crc.to_le_bytes());
    out
}

/// How far a log was known durable ([`reach`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Reach {
    /// Every record up to this number was `fsync`ed (0: none known).
    pub(crate) lsn: u64,
    /// The file's length at that `fsync`.
    pub(crate) len: u64,
}

/// Appends record `lsn` with `body` to `out`.
pub(crate) fn push_record(out: &mut Vec<u8>, lsn: u64, body: &[u8]) {
    let len = body.len() as u32;
    let mut crc = crc32fast::Hasher::new();
    crc.update(&len.to_le_bytes());
    crc.update(&lsn.to_le_bytes());
    crc.update(body);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&crc.finalize().to_le_bytes());
    out.extend_from_slice(&lsn.to_le_bytes());
    out.extend_from_slice(body);
}

/// A log read back ([`read`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Contents<'b> {
    /// The number of the file's first record.
    pub(crate) base_lsn: u64,
    /// The log's generation (`None`: the file is empty or all zeros, it has no header).
    pub(crate) generation: Option<u64>,
    /// How far the log was known durable; `None` when the marker fails its checksum (a
    /// write of it torn by a power loss: nothing can be said).
    pub(crate) reach: Option<Reach>,
    /// The intact records: (number, body), consecutive from `base_lsn`.
    pub(crate) records: Vec<(u64, &'b [u8])>,
    /// Where the intact records end: a torn tail starts here (the file's length if none).
    pub(crate) valid_len: u64,
}

impl Contents<'_> {
    /// The number of the last intact record, or `base_lsn - 1` when there is none.
    pub(crate) fn last_lsn(&self) -> u64 {
        self.records
            .last()
            .map_or(self.base_lsn.saturating_sub(1), |(lsn, _)| *lsn)
    }
}

/// Why a log cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum LogDamage {
    /// Not a log of this layout.
    #[error("it is not a tableq write-ahead log ({0})")]
    NotALog(&'static str),
    /// Damage before intact records, or a gap in the numbering.
    #[error("it is damaged at byte {offset}: {what}")]
    Corrupt {
        /// Where the damage starts.
        offset: u64,
        /// What is wrong.
        what: &'static str,
    },
}

fn u64_at(b: &[u8], i: usize) -> u64 {
    let mut word = [0; 8];
    word.copy_from_slice(&b[i..i + 8]);
    u64::from_le_bytes(word)
}

/// The header's base number, generation and reach; `None` for an all-zero header (a file
/// whose header never reached the disk), an error for anything else that is not a header.
fn parse_header(bytes: &[u8]) -> Result<Option<(u64, u64, Option<Reach>)>, LogDamage> {
    let head = bytes
        .get(..HEADER_LEN as usize)
        .ok_or(LogDamage::NotALog("shorter than its header"))?;
    if head.iter().all(|&b| b == 0) {
        return Ok(None);
    }
    if head[..8] != MAGIC {
        return Err(LogDamage::NotALog("unknown magic bytes"));
    }
    let word = |i: usize| u32::from_le_bytes([head[i], head[i + 1], head[i + 2], head[i + 3]]);
    if word(8) != VERSION {
        return Err(LogDamage::NotALog(if word(8) == 1 {
            "version 1, written by an older tableq"
        } else {
            "unknown version"
        }));
    }
    if word(32) != crc32fast::hash(&head[..32]) {
        return Err(LogDamage::Corrupt {
            offset: 0,
            what: "the header fails its checksum",
        });
    }
    let marker = &head[HEAD..];
    let reach = if marker.iter().all(|&b| b == 0) {
        Some(Reach::default())
    } else if u32::from_le_bytes([marker[16], marker[17], marker[18], marker[19]])
        == crc32fast::hash(&marker[..16])
    {
        Some(Reach {
            lsn: u64_at(marker, 0),
            len: u64_at(marker, 8),
        })
    } else {
        None
    };
    Ok(Some((u64_at(head, 16), u64_at(head, 24), reach)))
}

/// The record at `at`, if an intact one numbered within `numbers` starts there: (number,
/// body, end). The number is checked before the checksum, so a search through garbage
/// hashes almost nothing.
fn record_at(
    bytes: &[u8],
    at: usize,
    numbers: std::ops::Range<u64>,
) -> Option<(u64, &[u8], usize)> {
    let head = bytes.get(at..at.checked_add(RECORD_HEAD)?)?;
    let len = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
    if len > MAX_BODY {
        return None;
    }
    let crc = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
    let mut lsn = [0; 8];
    lsn.copy_from_slice(&head[8..16]);
    let lsn = u64::from_le_bytes(lsn);
    if !numbers.contains(&lsn) {
        return None;
    }
    let end = at + RECORD_HEAD + len;
    let body = bytes.get(at + RECORD_HEAD..end)?;
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&head[..4]);
    hasher.update(&head[8..16]);
    hasher.update(body);
    (hasher.finalize() == crc).then_some((lsn, body, end))
}

/// Reads a whole log file's bytes (see the module docs). A file too short for a header,
/// or with an all-zero header and nothing else, reads as an empty log starting at
/// `fallback_base`.
pub(crate) fn read(bytes: &[u8], fallback_base: u64) -> Result<Contents<'_>, LogDamage> {
    let empty = Contents {
        base_lsn: fallback_base,
        generation: None,
        reach: Some(Reach::default()),
        records: Vec::new(),
        valid_len: 0,
    };
    if bytes.iter().all(|&b| b == 0) {
        // Empty, or created but never written (a crash right after the file appeared).
        return Ok(empty);
    }
    let Some((base_lsn, generation, reach)) = parse_header(bytes)? else {
        return Err(LogDamage::Corrupt {
            offset: 0,
            what: "the header is missing but records follow",
        });
    };
    let mut records = Vec::new();
    let mut at = HEADER_LEN as usize;
    let mut expected = base_lsn;
    while at < bytes.len() {
        match record_at(bytes, at, 0..u64::MAX) {
            Some((lsn, body, end)) if lsn == expected => {
                records.push((lsn, body));
                expected = expected.wrapping_add(1);
                at = end;
            }
            Some(_) => {
                return Err(LogDamage::Corrupt {
                    offset: at as u64,
                    what: "records are not numbered consecutively",
                });
            }
            None => {
                // A bad record: the torn tail, unless an intact later record follows (any
                // of the next 2^24 numbers: more never fit in a log between checkpoints).
                let later = expected..expected.saturating_add(1 << 24);
                let later =
                    (at + 1..bytes.len()).any(|p| record_at(bytes, p, later.clone()).is_some());
                if later {
                    return Err(LogDamage::Corrupt {
                        offset: at as u64,
                        what: "a damaged record is followed by intact ones",
                    });
                }
                break;
            }
        }
    }
    Ok(Contents {
        base_lsn,
        generation: Some(generation),
        reach,
        records,
        valid_len: at.min(bytes.len()) as u64,
    })
}

/// Keeps the damage type convertible for decoding errors of record bodies.
impl From<Corrupt> for LogDamage {
    fn from(e: Corrupt) -> LogDamage {
        LogDamage::Corrupt {
            offset: 0,
            what: e.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(base: u64, bodies: &[&[u8]]) -> Vec<u8> {
        let mut out = header(base, 7).to_vec();
        for (i, b) in bodies.iter().enumerate() {
            push_record(&mut out, base + i as u64, b);
        }
        out
    }

    fn lsns(c: &Contents<'_>) -> Vec<u64> {
        c.records.iter().map(|(l, _)| *l).collect()
    }

    #[test]
    fn an_empty_or_never_written_log_has_no_records() {
        for bytes in [vec![], vec![0; 7], vec![0; 4096]] {
            let c = read(&bytes, 9).unwrap();
            assert_eq!((c.base_lsn, c.records.len(), c.last_lsn()), (9, 0, 8));
        }
        let bytes = header(5, 7);
        let c = read(&bytes, 1).unwrap();
        assert_eq!(
            (c.base_lsn, c.records.len(), c.valid_len),
            (5, 0, HEADER_LEN)
        );
        assert_eq!((c.generation, c.reach), (Some(7), Some(Reach::default())));
    }

    #[test]
    fn intact_records_are_read_in_order() {
        let bytes = log(3, &[b"a", b"", b"ccc"]);
        let c = read(&bytes, 0).unwrap();
        assert_eq!(lsns(&c), [3, 4, 5]);
        assert_eq!(c.records[2].1, b"ccc");
        assert_eq!(c.valid_len, bytes.len() as u64);
    }

    #[test]
    fn a_torn_last_record_is_discarded_wherever_it_was_cut() {
        let whole = log(1, &[b"first", b"second record"]);
        let first_end = HEADER_LEN as usize + RECORD_HEAD + 5;
        for cut in first_end..whole.len() {
            let c = read(&whole[..cut], 0).unwrap();
            assert_eq!(
                (lsns(&c), c.valid_len),
                (vec![1], first_end as u64),
                "cut {cut}"
            );
        }
        // The unwritten rest of a tail reads as zeros on some file systems.
        let mut zeros = whole[..first_end + 9].to_vec();
        zeros.resize(first_end + 4096, 0);
        assert_eq!(lsns(&read(&zeros, 0).unwrap()), [1]);
    }

    #[test]
    fn a_checksum_mismatch_at_the_end_is_discarded() {
        let mut bytes = log(1, &[b"first", b"second"]);
        let last = bytes.len() - 1;
        bytes[last] ^= 0x40;
        assert_eq!(lsns(&read(&bytes, 0).unwrap()), [1]);
    }

    #[test]
    fn damage_before_intact_records_is_refused() {
        let mut bytes = log(1, &[b"first", b"second", b"third"]);
        let in_second = HEADER_LEN as usize + RECORD_HEAD + 5 + RECORD_HEAD + 2;
        bytes[in_second] ^= 1;
        assert!(matches!(
            read(&bytes, 0),
            Err(LogDamage::Corrupt {
                what: "a damaged record is followed by intact ones",
                ..
            })
        ));
        // A damaged length field: the next record is still found.
        let mut bytes = log(1, &[b"first", b"second", b"third"]);
        bytes[HEADER_LEN as usize] = 0xFF;
        assert!(read(&bytes, 0).is_err());
    }

    #[test]
    fn gaps_and_foreign_files_are_refused() {
        let mut bytes = header(1, 7).to_vec();
        push_record(&mut bytes, 1, b"a");
        push_record(&mut bytes, 3, b"c");
        assert!(matches!(read(&bytes, 0), Err(LogDamage::Corrupt { .. })));
        assert!(matches!(
            read(b"not a log at all, definitely not a log", 0),
            Err(LogDamage::NotALog(_))
        ));
        let mut bad_header = log(1, &[b"a"]);
        bad_header[17] ^= 1;
        assert!(read(&bad_header, 0).is_err());
        let mut zero_header = log(1, &[b"a"]);
        zero_header[..HEADER_LEN as usize].fill(0);
        assert!(read(&zero_header, 0).is_err());
    }

    #[test]
    fn the_reach_marker_and_generation_read_back() {
        let mut bytes = log(4, &[b"a", b"b"]);
        bytes[REACH_AT as usize..HEADER_LEN as usize].copy_from_slice(&reach(5, 123));
        let c = read(&bytes, 0).unwrap();
        assert_eq!(
            (c.generation, c.reach),
            (Some(7), Some(Reach { lsn: 5, len: 123 }))
        );
        // A torn marker says nothing (and is not the header's damage).
        bytes[REACH_AT as usize + 3] ^= 1;
        assert_eq!(read(&bytes, 0).unwrap().reach, None);
        // A log of the previous layout is named as such.
        let mut old = log(1, &[b"a"]);
        old[8] = 1;
        assert_eq!(
            read(&old, 0).unwrap_err(),
            LogDamage::NotALog("version 1, written by an older tableq")
        );
    }
}

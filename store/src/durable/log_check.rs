//! Does the write-ahead log reach as far as the data file says it must? The comparison
//! that opening a data directory (`mod.rs`) and `tableq check` (`check.rs`) both make.
//!
//! What the data file says (`schema` in mod.rs): the log's **generation** (recorded when
//! the log is created, before anything is appended to it) and `wal_lsn`, the last record a
//! checkpoint folded into the data file. What the log says (`format/log.rs`): its generation,
//! its first record number, and its **reach marker** — the last record known `fsync`ed.
//! From these:
//!
//! | found | means | [`LogProblem`] |
//! |---|---|---|
//! | no log file, the data file names a generation | the log was deleted | `Missing` |
//! | a log shorter than its header, or all zeros | the log was cut | `TooShort` |
//! | another generation | another data directory's log | `OtherGeneration` |
//! | records, but the data file names no generation | a data file made anew next to an old log | `Unexpected` |
//! | the first record after `wal_lsn + 1` | records between are gone | `StartsAfter` |
//! | intact records ending before the reach marker | durable records cut or damaged | `ShortOfReach` |
//! | bytes after the last intact record | a torn tail (normal after a crash) | `TornTail` (a warning) |
//! | a reach marker failing its checksum | a torn marker write (a power loss) | `ReachUnreadable` (a warning) |
//!
//! Every problem but the two warnings loses acknowledged writes: opening refuses the data
//! directory (`OpenError::LogMissing`, `LogTruncated`, `LogMismatch`) unless
//! `DurableOptions::accept_log_loss` is set, and then logs what was lost.
//!
//! What no check can see: records appended after the last `fsync` (under `interval=MS`,
//! the writes of the last interval; under `always`, none that was acknowledged) — a log
//! cut back to a record boundary there reads like a log that holds fewer writes. After a
//! power loss the marker on disk may name one `fsync` less than was made durable.

use super::format::log::{Contents, HEADER_LEN, Reach};

/// What was found where the log should be.
#[derive(Debug)]
pub(crate) enum LogFound<'a> {
    /// No log file.
    Missing,
    /// The log file, `len` bytes, read back.
    Read {
        /// The file's length.
        len: u64,
        /// Its records.
        contents: &'a Contents<'a>,
    },
}

/// One way the log does not reach as far as the data file says (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LogProblem {
    /// No log file, though the data file says one was created.
    Missing {
        /// The generation the data file names.
        generation: u64,
    },
    /// The file is shorter than a log header, or all zeros.
    TooShort {
        /// Its length.
        found: u64,
    },
    /// The log is another data directory's.
    OtherGeneration {
        /// The data file's.
        expected: u64,
        /// The log's.
        found: u64,
    },
    /// The log holds records, but the data file never had a log.
    Unexpected {
        /// How many records.
        records: usize,
    },
    /// The log starts after the records the data file lacks.
    StartsAfter {
        /// The first record the log holds.
        base: u64,
        /// The last record the data file holds.
        wal_lsn: u64,
    },
    /// Durable records are missing at the end (cut or damaged).
    ShortOfReach {
        /// How far the log was known durable.
        reach: Reach,
        /// The last intact record.
        last_lsn: u64,
        /// Where the intact records end.
        valid_len: u64,
        /// The file's length.
        len: u64,
    },
    /// Bytes after the last intact record were discarded (a torn write: warning only).
    TornTail {
        /// Where they start.
        offset: u64,
        /// How many.
        bytes: u64,
    },
    /// The reach marker fails its checksum (warning only: nothing can be checked).
    ReachUnreadable,
}

impl LogProblem {
    /// Whether acknowledged writes are lost (else it is a warning).
    pub(crate) fn loses_writes(&self) -> bool {
        !matches!(
            self,
            LogProblem::TornTail { .. } | LogProblem::ReachUnreadable
        )
    }

    /// Whether the log cannot be used at all (replaced by an empty one when the loss is
    /// accepted); else its intact records are replayed.
    pub(crate) fn discards_log(&self) -> bool {
        !matches!(
            self,
            LogProblem::TornTail { .. }
                | LogProblem::ReachUnreadable
                | LogProblem::ShortOfReach { .. }
        )
    }

    /// What was expected and what was found, for `OpenError::LogTruncated` and reports.
    pub(crate) fn expected_found(&self) -> (String, String) {
        match *self {
            LogProblem::Missing { generation } => (
                format!("the log of generation {generation:#x}"),
                "no file".into(),
            ),
            LogProblem::TooShort { found } => (
                format!("at least {HEADER_LEN} bytes (its header)"),
                format!("{found} bytes without a header"),
            ),
            LogProblem::OtherGeneration { expected, found } => (
                format!("generation {expected:#x}"),
                format!("generation {found:#x}"),
            ),
            LogProblem::Unexpected { records } => {
                ("no records".into(), format!("{records} records"))
            }
            LogProblem::StartsAfter { base, wal_lsn } => (
                format!("records from number {}", wal_lsn + 1),
                format!("records from number {base}"),
            ),
            LogProblem::ShortOfReach {
                reach,
                last_lsn,
                valid_len,
                len,
            } => (
                format!(
                    "records up to number {} ({} bytes), fsynced before the stop",
                    reach.lsn, reach.len
                ),
                format!(
                    "intact records up to number {last_lsn} ({valid_len} bytes; the file \
                     has {len})"
                ),
            ),
            LogProblem::TornTail { offset, bytes } => (
                "intact records to the end".into(),
                format!("{bytes} bytes at offset {offset} that are not an intact record"),
            ),
            LogProblem::ReachUnreadable => (
                "a reach marker".into(),
                "a marker that fails its checksum".into(),
            ),
        }
    }
}

impl std::fmt::Display for LogProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = match self {
            LogProblem::Missing { .. } => "the write-ahead log is missing",
            LogProblem::TooShort { .. } => "the write-ahead log was cut short",
            LogProblem::OtherGeneration { .. } => {
                "the write-ahead log belongs to another data file"
            }
            LogProblem::Unexpected { .. } => {
                "the write-ahead log holds records the data file never had a log for"
            }
            LogProblem::StartsAfter { .. } => {
                "records between the data file and the write-ahead log are missing"
            }
            LogProblem::ShortOfReach { .. } => {
                "the write-ahead log ends before records it had made durable"
            }
            LogProblem::TornTail { .. } => "a torn tail of the write-ahead log is discarded",
            LogProblem::ReachUnreadable => {
                "the write-ahead log's reach marker fails its checksum (not checked)"
            }
        };
        let (expected, found) = self.expected_found();
        write!(f, "{what}: expected {expected}, found {found}")
    }
}

/// Compares the log found with what the data file says: its log `generation` (`None`: it
/// never had a log) and `wal_lsn`.
pub(crate) fn compare(
    found: &LogFound<'_>,
    generation: Option<u64>,
    wal_lsn: u64,
) -> Vec<LogProblem> {
    let mut problems = Vec::new();
    let (len, contents) = match found {
        LogFound::Missing => {
            if let Some(generation) = generation {
                problems.push(LogProblem::Missing { generation });
            }
            return problems;
        }
        LogFound::Read { len, contents } => (*len, *contents),
    };
    let Some(found_generation) = contents.generation else {
        // Empty or all zeros: created, never written.
        if generation.is_some() {
            problems.push(LogProblem::TooShort { found: len });
        }
        return problems;
    };
    match generation {
        Some(expected) if expected != found_generation => {
            problems.push(LogProblem::OtherGeneration {
                expected,
                found: found_generation,
            });
            return problems;
        }
        None if !contents.records.is_empty() => {
            problems.push(LogProblem::Unexpected {
                records: contents.records.len(),
            });
            return problems;
        }
        _ => {}
    }
    if contents.base_lsn > wal_lsn.saturating_add(1) {
        problems.push(LogProblem::StartsAfter {
            base: contents.base_lsn,
            wal_lsn,
        });
        return problems;
    }
    match contents.reach {
        Some(reach) if reach.lsn > contents.last_lsn().max(wal_lsn) => {
            problems.push(LogProblem::ShortOfReach {
                reach,
                last_lsn: contents.last_lsn(),
                valid_len: contents.valid_len,
                len,
            });
        }
        Some(_) => {}
        None => problems.push(LogProblem::ReachUnreadable),
    }
    if contents.valid_len < len {
        problems.push(LogProblem::TornTail {
            offset: contents.valid_len,
            bytes: len - contents.valid_len,
        });
    }
    problems
}

//! Continuations: where a page ends ([`Resume`]) and how that position becomes the
//! continuation key handed to the client — the first existing entity the page has not
//! decided (not examined, or a match it had no room for), inclusive. It may lie past
//! entities the page examined and rejected after its last row (module `merge`).
//!
//! Resuming at a continuation with the same plan yields exactly the remaining results:
//! entities before it are never revisited, so inserts and deletes between pages cannot
//! cause a result to be skipped or repeated.

use crate::key::{Key, Scan};
use crate::source::{EntitySource, SourceRow};
use tableq_planner::plan::KeyRange;

/// Where the next page starts.
pub(super) enum Resume {
    /// A key that exists (or a position no result lies before).
    At(Key),
    /// Resume scanning the ranges from number `range` at `from`: resolved to the next
    /// existing key.
    Position { range: usize, from: Option<Key> },
}

/// The key of a row.
pub(super) fn key_of<R: SourceRow>(row: &R) -> Key {
    Key::new(row.partition_key(), row.row_key())
}

/// The continuation for a page over `ranges` of `source` that ended at `resume` (`None`:
/// the plan is done).
pub(super) fn continuation<S: EntitySource + ?Sized>(
    source: &S,
    ranges: &[KeyRange],
    resume: Option<Resume>,
) -> Result<Option<Key>, S::Error> {
    match resume {
        None => Ok(None),
        Some(Resume::At(key)) => Ok(Some(key)),
        Some(Resume::Position { range, from }) => resolve(source, ranges, range, from),
    }
}

/// The key of the first entity at or after a position (in range number `range` or a
/// later one), if any. Every entity a scan of a range yields is in the range, so this
/// is the first entity of the first non-empty scan.
fn resolve<S: EntitySource + ?Sized>(
    source: &S,
    ranges: &[KeyRange],
    range: usize,
    from: Option<Key>,
) -> Result<Option<Key>, S::Error> {
    for r in &ranges[range.min(ranges.len())..] {
        if let Some((pk, rk)) = r.as_point() {
            if from.as_ref().is_none_or(|f| f.cmp_pair(pk, rk).is_le())
                && source.get(pk, rk)?.is_some()
            {
                return Ok(Some(Key::new(pk, rk)));
            }
            continue;
        }
        let scan = Scan {
            range: r,
            from: from.as_ref(),
            until: None,
        };
        if let Some(row) = source.scan(scan).next() {
            return Ok(Some(key_of(&row?)));
        }
    }
    Ok(None)
}

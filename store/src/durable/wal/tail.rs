//! The log after a checkpoint that ran beside the writer: the records the checkpoint holds
//! go, the ones appended after its point stay.
//!
//! A checkpoint made on the writer's thread holds every record of the log, which is then
//! emptied ([`Wal::reset`](super::Wal::reset)). A checkpoint beside the writer
//! (`writer/checkpoint.rs`) holds the records up to its *point* — the last record the
//! flush before it folded — while writers go on appending after it. Its log keeps those
//! later records: a new file (`tableq.wal.tail`, beside the log) gets a header whose first
//! record is the one after the point, then the log's bytes from the point on; it is
//! `fsync`ed and renamed over the log, and appends continue in it.
//!
//! The copy is made in two steps so that the writer waits only for the last bytes:
//! [`copy_tail`] copies what was appended when it began and `fsync`s it, on the
//! checkpoint's thread; [`Wal::keep_after`](super::Wal::keep_after), on the writer, copies
//! the records appended since, `fsync`s, renames and switches the log to the new file —
//! holding the log's sync lock, so that no `fsync` marks reach in one file for the other.
//!
//! **Crashes.** Before the rename the old log is whole (a leftover `tableq.wal.tail` is
//! removed when the directory is opened); after it the new log holds every record after the
//! point, and the data file's durable commit names the point: a replay applies the same
//! records either way. **Taken-back records.** Records cut off again after a failed redb
//! commit ([`Wal::take_back`](super::Wal::take_back)) may have been copied already: a
//! copy during which one was taken back is not used, and the writer copies the tail itself.
//!
//! ```text
//! log before:  header(base 1) | r1 r2 r3 r4 | r5 r6 r7      checkpoint point: r4
//! new log:     header(base 5) | r5 r6 r7                    (r5 r6 by the checkpoint's thread,
//!                                                            r7 by the writer)
//! ```

use super::file::LogFile;
use crate::durable::format::log::header;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The name of a log being made (beside the log, whose name it takes when it is complete).
const TAIL_SUFFIX: &str = ".tail";

/// Bytes copied at a time.
const CHUNK: usize = 1 << 20;

/// A new log file holding the records after a checkpoint's point, as far as copied (see the
/// module docs). Dropped unused, its file is removed.
#[derive(Debug)]
pub(crate) struct Tail {
    pub(super) file: Option<File>,
    pub(super) path: PathBuf,
    /// Where in the old log the copy starts (the point's end).
    pub(super) from: u64,
    /// Where in the old log the copy so far ends.
    pub(super) copied_to: u64,
    /// The log's count of taken-back records when the copy began.
    pub(super) take_backs: u64,
}

impl Drop for Tail {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Where the new log of `log_path` is made.
pub(crate) fn tail_path(log_path: &Path) -> PathBuf {
    let mut name = log_path.as_os_str().to_owned();
    name.push(TAIL_SUFFIX);
    PathBuf::from(name)
}

/// Where a copy of a log's tail starts and ends, and whose log it is ([`copy_tail`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct TailSpan {
    /// The offset in the log it starts from (a checkpoint's point).
    pub(crate) from: u64,
    /// The log's count of taken-back records when the copy began (read before `end`).
    pub(crate) take_backs: u64,
    /// The log's length then.
    pub(crate) end: u64,
    /// The number of the first record copied, and the log's generation.
    pub(crate) base_lsn: u64,
    pub(crate) generation: u64,
}

/// Makes a new log beside `log_path`: the header of log `span.generation` whose first
/// record is `span.base_lsn`, then `log`'s bytes from `span.from` to `span.end`; `fsync`ed
/// (see the module docs; any thread).
pub(crate) fn copy_tail(log: &dyn LogFile, log_path: &Path, span: TailSpan) -> io::Result<Tail> {
    let TailSpan {
        from,
        take_backs,
        end,
        base_lsn,
        generation,
    } = span;
    let path = tail_path(log_path);
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)?;
    let mut tail = Tail {
        file: Some(file),
        path,
        from,
        copied_to: from,
        take_backs,
    };
    if let Some(file) = tail.file.as_mut() {
        file.write_all(&header(base_lsn, generation))?;
    }
    tail.copy_to(log, end)?;
    if let Some(file) = &tail.file {
        file.sync_data()?;
    }
    Ok(tail)
}

impl Tail {
    /// Appends the log's bytes from where the copy ends to `end`.
    pub(super) fn copy_to(&mut self, log: &dyn LogFile, end: u64) -> io::Result<()> {
        let Some(file) = self.file.as_mut() else {
            return Err(io::Error::other("the log's tail was already used"));
        };
        // The writer's copy is of the last few records: no larger buffer than they need.
        let left = usize::try_from(end.saturating_sub(self.copied_to)).unwrap_or(CHUNK);
        let mut buf = vec![0u8; left.min(CHUNK)];
        while self.copied_to < end {
            let n = usize::try_from(end - self.copied_to).map_or(CHUNK, |n| n.min(CHUNK));
            log.read_at(&mut buf[..n], self.copied_to)?;
            file.write_all(&buf[..n])?;
            self.copied_to += n as u64;
        }
        Ok(())
    }
}

/// Makes the names of the files renamed into `dir` durable: `fsync`s it (where directories
/// can be opened for it: not on Windows; where they can, a failure is a real one).
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    match File::open(dir) {
        Ok(d) => d.sync_all(),
        Err(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::durable::format::log::{Reach, read};
    use crate::durable::wal::{DiskLog, FsyncPolicy, Wal};
    use std::sync::Arc;

    /// A log of `generation` 7 in `dir` whose first record will be number 1.
    fn new_log(path: &Path) -> Wal {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .read(true)
            .write(true)
            .truncate(true)
            .open(path)
            .unwrap();
        file.write_all(&header(1, 7)).unwrap();
        let len = file.metadata().unwrap().len();
        Wal::new(
            Arc::new(DiskLog::new(file)),
            FsyncPolicy::default(),
            7,
            len,
            1,
        )
    }

    /// A record's number and body.
    type Record = (u64, Vec<u8>);

    fn records(path: &Path) -> (u64, Vec<Record>, Option<Reach>) {
        let bytes = std::fs::read(path).unwrap();
        let c = read(&bytes, 1).unwrap();
        let records = c.records.iter().map(|(l, b)| (*l, b.to_vec())).collect();
        (c.base_lsn, records, c.reach)
    }

    /// The copy made beside the writer, completed by the writer with what came after it:
    /// the new log starts after the point, holds every later record, says they are durable,
    /// and takes further appends.
    #[test]
    fn the_log_keeps_the_records_after_the_point() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tableq.wal");
        let mut wal = new_log(&path);
        wal.append(&[b"one".to_vec()]).unwrap();
        let point = wal.len();
        wal.append(&[b"two".to_vec(), b"three".to_vec()]).unwrap();
        let tail = wal.shared().copy_tail(&path, point, 2, 7).unwrap();
        assert!(tail_path(&path).exists());
        wal.append(&[b"four".to_vec()]).unwrap();
        wal.keep_after(1, point, Some(tail), &path).unwrap();
        assert!(!tail_path(&path).exists());
        let (base, got, reach) = records(&path);
        assert_eq!(base, 2);
        let want: Vec<(u64, Vec<u8>)> = vec![
            (2, b"two".to_vec()),
            (3, b"three".to_vec()),
            (4, b"four".to_vec()),
        ];
        assert_eq!(got, want);
        assert_eq!(reach.map(|r| r.lsn), Some(4));
        wal.append(&[b"five".to_vec()]).unwrap();
        let (_, got, _) = records(&path);
        assert_eq!(got.last(), Some(&(5, b"five".to_vec())));
        assert_eq!(wal.len(), std::fs::metadata(&path).unwrap().len());
    }

    /// A record copied beside the writer and then taken back (its redb commit failed) is
    /// not kept: the copy is not used, and the writer copies the tail again (the record
    /// after it has the same number and length: only the count of take-backs tells).
    #[test]
    fn a_record_taken_back_during_the_copy_is_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tableq.wal");
        let mut wal = new_log(&path);
        wal.append(&[b"one".to_vec()]).unwrap();
        let point = wal.len();
        let appended = wal.append(&[b"refuse".to_vec()]).unwrap();
        let tail = wal.shared().copy_tail(&path, point, 2, 7).unwrap();
        wal.take_back(appended);
        wal.append(&[b"second".to_vec()]).unwrap();
        wal.keep_after(1, point, Some(tail), &path).unwrap();
        let (base, got, _) = records(&path);
        assert_eq!((base, got), (2, vec![(2, b"second".to_vec())]));
    }

    /// With no record after the point the log is emptied in place, and the copy removed.
    #[test]
    fn with_nothing_after_the_point_the_log_is_emptied() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tableq.wal");
        let mut wal = new_log(&path);
        wal.append(&[b"one".to_vec()]).unwrap();
        let point = wal.len();
        let tail = wal.shared().copy_tail(&path, point, 2, 7).unwrap();
        wal.keep_after(1, point, Some(tail), &path).unwrap();
        assert!(!tail_path(&path).exists());
        let (base, got, _) = records(&path);
        assert_eq!((base, got), (2, vec![]));
    }
}

//! The file the write-ahead log is written through ([`LogFile`]): appending, `fsync`,
//! cutting back, the two in-place rewrites (the header, the reach marker), positioned
//! reads, and taking another file's place (a log that keeps only its tail after a
//! checkpoint, `tail.rs`) — the I/O side of the log; its bytes are the durable format's
//! (`format/log.rs`).

use crate::durable::format::log::REACH_AT;
use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::sync::{Arc, PoisonError, RwLock};

/// The file the log is written through: a real file, or (in tests) one that counts or
/// delays calls to show when the writer syncs.
pub(crate) trait LogFile: Send + Sync {
    /// Appends `data` at the end of what was written (one `write(2)` loop).
    fn append(&self, data: &[u8]) -> io::Result<()>;
    /// Makes everything appended durable (`fdatasync`).
    fn sync(&self) -> io::Result<()>;
    /// Cuts the file to `len` bytes and continues appending there.
    fn truncate(&self, len: u64) -> io::Result<()>;
    /// Overwrites the first bytes (the header) without moving the append position (called
    /// by the thread that appends).
    fn write_header(&self, data: &[u8]) -> io::Result<()>;
    /// Overwrites the reach marker at [`REACH_AT`] with one positioned write, safe while
    /// another thread appends.
    fn write_reach(&self, data: &[u8]) -> io::Result<()>;
    /// Fills `buf` from `offset` with one positioned read loop, safe while another thread
    /// appends (the bytes before the append position never move).
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// Makes `file` the log: every later call reads and writes it, and appends continue at
    /// its position, its end (the caller renamed it over the log's name and holds the log's
    /// sync lock).
    fn replace(&self, file: File);
}

/// A log file on disk (the file behind a lock only [`LogFile::replace`] writes: every
/// other call clones the handle and does its I/O without holding the lock).
#[derive(Debug)]
pub(crate) struct DiskLog(RwLock<Arc<File>>);

impl DiskLog {
    pub(crate) fn new(file: File) -> DiskLog {
        DiskLog(RwLock::new(Arc::new(file)))
    }

    fn file(&self) -> Arc<File> {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl LogFile for DiskLog {
    fn append(&self, data: &[u8]) -> io::Result<()> {
        (&*self.file()).write_all(data)
    }

    fn sync(&self) -> io::Result<()> {
        self.file().sync_data()
    }

    fn truncate(&self, len: u64) -> io::Result<()> {
        let file = self.file();
        file.set_len(len)?;
        (&*file).seek(SeekFrom::Start(len)).map(drop)
    }

    fn write_header(&self, data: &[u8]) -> io::Result<()> {
        let file = self.file();
        let mut f = &*file;
        let end = f.stream_position()?;
        f.seek(SeekFrom::Start(0))?;
        let written = f.write_all(data);
        f.seek(SeekFrom::Start(end))?;
        written
    }

    /// `pwrite(2)`: the append position stays where the appending thread left it.
    #[cfg(unix)]
    fn write_reach(&self, data: &[u8]) -> io::Result<()> {
        std::os::unix::fs::FileExt::write_all_at(&*self.file(), data, REACH_AT)
    }

    /// `pread(2)`: the append position stays where the appending thread left it.
    #[cfg(unix)]
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        std::os::unix::fs::FileExt::read_exact_at(&*self.file(), buf, offset)
    }

    /// Elsewhere a read would move the append position: not done (a checkpoint then
    /// leaves the log whole, `tail.rs`, and the log's bound empties it).
    #[cfg(not(unix))]
    fn read_at(&self, _buf: &mut [u8], _offset: u64) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "positioned reads of the log are only done on Unix",
        ))
    }

    fn replace(&self, file: File) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(file);
    }

    /// Elsewhere a positioned write moves the file position under the appending thread:
    /// the marker is not kept up to date (it stays all zeros: no reach is claimed).
    #[cfg(not(unix))]
    fn write_reach(&self, _data: &[u8]) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::durable::format::log::HEADER_LEN;
    use crate::durable::format::log::{Reach, header, push_record, reach, read};

    #[test]
    fn the_disk_file_appends_truncates_and_rewrites_its_header() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let file = DiskLog::new(
            std::fs::OpenOptions::new()
                .create(true)
                .read(true)
                .write(true)
                .truncate(true)
                .open(&path)
                .unwrap(),
        );
        file.append(&header(1, 7)).unwrap();
        let mut rec = Vec::new();
        push_record(&mut rec, 1, b"one");
        file.append(&rec).unwrap();
        file.sync().unwrap();
        assert_eq!(
            lsns(&read(&std::fs::read(&path).unwrap(), 0).unwrap().records),
            [1]
        );
        file.truncate(HEADER_LEN).unwrap();
        file.write_header(&header(2, 7)).unwrap();
        let mut rec = Vec::new();
        push_record(&mut rec, 2, b"two");
        file.append(&rec).unwrap();
        // The reach marker is written in place while the append position stays.
        file.write_reach(&reach(2, 99)).unwrap();
        let mut rec = Vec::new();
        push_record(&mut rec, 3, b"three");
        file.append(&rec).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let c = read(&bytes, 0).unwrap();
        assert_eq!((c.base_lsn, lsns(&c.records)), (2, vec![2, 3]));
        assert_eq!(c.reach, Some(Reach { lsn: 2, len: 99 }));
    }

    fn lsns(records: &[(u64, &[u8])]) -> Vec<u64> {
        records.iter().map(|(l, _)| *l).collect()
    }
}

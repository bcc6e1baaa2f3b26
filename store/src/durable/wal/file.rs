//! The file the write-ahead log is written through ([`LogFile`]): appending, `fsync`,
//! cutting back, and the two in-place rewrites (the header, the reach marker) — the I/O
//! side of the log; its bytes are the durable format's (`format/log.rs`).

use crate::durable::format::log::REACH_AT;
use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};

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
}

/// A log file on disk.
#[derive(Debug)]
pub(crate) struct DiskLog(pub(crate) File);

impl LogFile for DiskLog {
    fn append(&self, data: &[u8]) -> io::Result<()> {
        (&self.0).write_all(data)
    }

    fn sync(&self) -> io::Result<()> {
        self.0.sync_data()
    }

    fn truncate(&self, len: u64) -> io::Result<()> {
        self.0.set_len(len)?;
        (&self.0).seek(SeekFrom::Start(len)).map(drop)
    }

    fn write_header(&self, data: &[u8]) -> io::Result<()> {
        let end = (&self.0).stream_position()?;
        (&self.0).seek(SeekFrom::Start(0))?;
        let written = (&self.0).write_all(data);
        (&self.0).seek(SeekFrom::Start(end))?;
        written
    }

    /// `pwrite(2)`: the append position stays where the appending thread left it.
    #[cfg(unix)]
    fn write_reach(&self, data: &[u8]) -> io::Result<()> {
        std::os::unix::fs::FileExt::write_all_at(&self.0, data, REACH_AT)
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
        let file = DiskLog(
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

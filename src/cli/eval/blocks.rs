//! The input of the streaming engine cut into [`Piece`]s: blocks of whole lines (about
//! 1 MiB, never splitting a line), or a marker for a line over the 4 MiB limit, which is
//! skipped without being held in memory (a line only just over the limit may still arrive
//! whole in a block — at most limit + one block — and the worker rejects it). Offsets are
//! byte positions in the input, so a matching line can be read again from a file later.

use std::io::{self, Read};
use tableq::exec::lines::MAX_LINE_BYTES;

/// Bytes per block of lines.
pub(super) const BLOCK_BYTES: usize = 1 << 20;

/// A piece of input: whole lines, or a line over the limit (skipped unread).
pub(super) enum Piece {
    Lines {
        bytes: Vec<u8>,
        /// Offset of the first byte in the input.
        offset: u64,
        /// The piece starts the input (a byte-order mark may open it).
        first: bool,
    },
    TooLong {
        /// Offset of the end of the line in the input.
        end: u64,
        /// Length without the line end.
        len: u64,
    },
}

/// Cuts the input into pieces.
pub(super) struct Reader {
    input: Box<dyn Read + Send>,
    carry: Vec<u8>,
    offset: u64,
    eof: bool,
    first: bool,
}

impl Reader {
    pub(super) fn new(input: Box<dyn Read + Send>) -> Reader {
        Reader {
            input,
            carry: Vec::new(),
            offset: 0,
            eof: false,
            first: true,
        }
    }

    /// Appends up to `n` bytes; sets `eof` at the end.
    fn fill(&mut self, buf: &mut Vec<u8>, n: usize) -> io::Result<()> {
        let len = buf.len();
        buf.resize(len + n, 0);
        loop {
            match self.input.read(&mut buf[len..]) {
                Ok(got) => {
                    buf.truncate(len + got);
                    self.eof |= got == 0;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    buf.truncate(len);
                    return Err(e);
                }
            }
        }
    }

    /// The next piece, or `None` at the end of the input.
    pub(super) fn next(&mut self) -> io::Result<Option<Piece>> {
        let mut buf = std::mem::take(&mut self.carry);
        while !self.eof && buf.len() < BLOCK_BYTES {
            let want = BLOCK_BYTES - buf.len();
            self.fill(&mut buf, want)?;
        }
        loop {
            if let Some(i) = memchr::memrchr(b'\n', &buf) {
                self.carry = buf[i + 1..].to_vec();
                buf.truncate(i + 1);
                return Ok(Some(self.lines(buf)));
            }
            if self.eof {
                return Ok((!buf.is_empty()).then(|| self.lines(buf)));
            }
            if buf.len() > MAX_LINE_BYTES + 2 {
                return self.skip_long_line(buf).map(Some);
            }
            self.fill(&mut buf, BLOCK_BYTES)?;
        }
    }

    fn lines(&mut self, bytes: Vec<u8>) -> Piece {
        let piece = Piece::Lines {
            offset: self.offset,
            first: self.first,
            bytes,
        };
        if let Piece::Lines { bytes, .. } = &piece {
            self.offset += bytes.len() as u64;
        }
        self.first = false;
        piece
    }

    /// Skips the rest of a line that is already over the limit (`seen` holds its start).
    fn skip_long_line(&mut self, seen: Vec<u8>) -> io::Result<Piece> {
        let mut len = seen.len() as u64;
        let mut last = seen.last().copied().unwrap_or(0);
        let mut buf = Vec::with_capacity(BLOCK_BYTES);
        loop {
            buf.clear();
            self.fill(&mut buf, BLOCK_BYTES)?;
            if let Some(i) = memchr::memchr(b'\n', &buf) {
                let before = if i > 0 { buf[i - 1] } else { last };
                len += i as u64;
                self.carry = buf[i + 1..].to_vec();
                self.offset += len + 1;
                let len = len - u64::from(before == b'\r');
                self.first = false;
                return Ok(Piece::TooLong {
                    end: self.offset,
                    len,
                });
            }
            if self.eof {
                self.offset += len;
                self.first = false;
                return Ok(Piece::TooLong {
                    end: self.offset,
                    len,
                });
            }
            len += buf.len() as u64;
            last = buf.last().copied().unwrap_or(last);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(input: &[u8]) -> Vec<String> {
        let mut reader = Reader::new(Box::new(io::Cursor::new(input.to_vec())));
        let mut out = Vec::new();
        while let Some(piece) = reader.next().unwrap() {
            out.push(match piece {
                Piece::Lines {
                    bytes,
                    offset,
                    first,
                } => {
                    format!("{offset}{}:{}", if first { "*" } else { "" }, bytes.len())
                }
                Piece::TooLong { end, len } => format!("long {len} to {end}"),
            });
        }
        out
    }

    #[test]
    fn blocks_end_at_line_ends_and_long_lines_are_skipped() {
        assert_eq!(pieces(b""), Vec::<String>::new());
        assert_eq!(pieces(b"a\nb"), ["0*:2", "2:1"]);
        let line = vec![b'x'; 1000];
        let mut input = Vec::new();
        for _ in 0..2000 {
            input.extend_from_slice(&line);
            input.push(b'\n');
        }
        let got = pieces(&input);
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0], format!("0*:{}", BLOCK_BYTES / 1001 * 1001));
        // A line well over the limit is skipped unread (one just over it may still come in a
        // block, bounded by limit + block size, and is rejected by the worker).
        let long = MAX_LINE_BYTES + 2 * BLOCK_BYTES + 10;
        let mut input = b"ok\n".to_vec();
        input.extend(std::iter::repeat_n(b'y', long));
        input.extend_from_slice(b"\r\nend\n");
        let total = input.len();
        let got = pieces(&input);
        assert_eq!(got[0], "0*:3");
        assert_eq!(got[1], format!("long {long} to {}", total - 4));
        assert_eq!(got[2], format!("{}:4", total - 4));
    }
}

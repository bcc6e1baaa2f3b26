//! JSON-lines input shared by `tableq validate`, `tableq eval` and `tableq import`: how
//! entity files are opened and read line by line, so that every command reads a file the
//! same way.
//!
//! * FILE, or standard input when FILE is `-` or absent (with a hint on stderr when that is
//!   a terminal);
//! * the lines themselves follow the rules of [`tableq::exec::lines`], their one home (the
//!   stream engine of `eval` reads by them too): LF or CRLF ends, a byte-order mark at the
//!   very start skipped, blank lines skipped but counted, a line over
//!   [`MAX_LINE_BYTES`](tableq::exec::lines::MAX_LINE_BYTES) reported
//!   (`RequestBodyTooLarge`), bytes that are not UTF-8 making the input unreadable;
//! * [`JsonLines`] reads them from any reader, skipping a long line without holding it in
//!   memory.
//!
//! Byte positions in messages are 0-based, like every byte offset tableq prints.

use std::fs::File;
use std::io::{self, BufRead, BufReader, IsTerminal, Read};
use std::path::{Path, PathBuf};
use tableq::exec::lines::{self, MAX_LINE_BYTES};
use tableq::model::ModelError;

/// Read buffer size: large sequential reads for big files.
const BUFFER_BYTES: usize = 1 << 20;

/// An opened input and the name to use for it in messages.
pub struct Input {
    /// `<stdin>` or the file's path.
    pub label: String,
    /// The bytes.
    pub reader: Box<dyn Read + Send>,
    /// The file, when the input is one (it can be read again), and its size.
    pub file: Option<(PathBuf, u64)>,
}

/// Opens FILE, or standard input for `-` or no FILE. The error is a message for people.
/// `command` names the subcommand in the terminal hint.
pub fn open(file: Option<&Path>, command: &str) -> Result<Input, String> {
    match file {
        Some(p) if p.is_dir() => Err(format!(
            "`{}` is a directory: give a file of entities (JSON lines), e.g. `{}/entities.jsonl`, \
             or - for standard input",
            p.display(),
            p.display()
        )),
        Some(p) if p.as_os_str() != "-" => match File::open(p) {
            Ok(f) => {
                let size = f.metadata().map(|m| m.len()).unwrap_or(0);
                Ok(Input {
                    label: p.display().to_string(),
                    reader: Box::new(f),
                    file: Some((p.to_path_buf(), size)),
                })
            }
            Err(e) => Err(format!("cannot read `{}`: {e}", p.display())),
        },
        _ => {
            if io::stdin().is_terminal() {
                eprintln!(
                    "tableq {command}: reading entities (JSON lines) from the terminal; end with \
                     Ctrl-D, or pass a FILE (tableq {command} --help)"
                );
            }
            Ok(Input {
                label: "<stdin>".to_owned(),
                reader: Box::new(io::stdin()),
                file: None,
            })
        }
    }
}

/// The input cannot be read: an I/O error or bytes that are not UTF-8. Holds a message that
/// names the line.
#[derive(Debug)]
pub struct Unreadable(pub String);

/// One line of input.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A non-blank line (its text was written to the caller's buffer) and its number.
    Text(u64),
    /// A line over [`MAX_LINE_BYTES`] (skipped unread): its number and length in bytes.
    TooLong(u64, u64),
}

/// Splits buffered input into numbered, non-blank lines.
pub struct JsonLines<R> {
    input: BufReader<R>,
    /// The number of the last line read (blank ones included).
    line: u64,
    buf: Vec<u8>,
    max_line: usize,
    /// Bytes consumed so far.
    consumed: u64,
}

impl<R: Read> JsonLines<R> {
    /// Lines of `input`.
    pub fn new(input: R) -> JsonLines<R> {
        JsonLines::with_max_line(input, MAX_LINE_BYTES)
    }

    /// Lines of `input`, with another line limit (for tests).
    pub fn with_max_line(input: R, max_line: usize) -> JsonLines<R> {
        JsonLines {
            input: BufReader::with_capacity(BUFFER_BYTES, input),
            line: 0,
            buf: Vec::with_capacity(4096),
            max_line,
            consumed: 0,
        }
    }

    /// Bytes of input consumed so far (for progress).
    pub fn bytes_read(&self) -> u64 {
        self.consumed
    }

    /// Reads the next non-blank line into `text` (replacing its contents), or `None` at the
    /// end of the input.
    pub fn next_line(&mut self, text: &mut String) -> Result<Option<Line>, Unreadable> {
        loop {
            self.buf.clear();
            let line = self.line + 1;
            let io_error = |e: io::Error| Unreadable(format!("line {line}: {e}"));
            // Read up to the newline, but hold at most `max_line + 2` bytes (CRLF); beyond,
            // only count (`long` = the line's length so far, line end excluded).
            let mut long = 0u64;
            let mut last = 0u8;
            loop {
                let available = self.input.fill_buf().map_err(io_error)?;
                if available.is_empty() {
                    break;
                }
                let (take, done) = match memchr::memchr(b'\n', available) {
                    Some(i) => (i + 1, true),
                    None => (available.len(), false),
                };
                let chunk = &available[..take];
                if long == 0 && self.buf.len() + take <= self.max_line + 2 {
                    self.buf.extend_from_slice(chunk);
                } else {
                    long += (self.buf.len() + take) as u64;
                    self.buf.clear();
                    if done {
                        let cr = match chunk {
                            [.., b'\r', b'\n'] => true,
                            [b'\n'] => last == b'\r',
                            _ => false,
                        };
                        long -= 1 + u64::from(cr);
                    }
                }
                last = chunk.last().copied().unwrap_or(last);
                self.consumed += take as u64;
                self.input.consume(take);
                if done {
                    break;
                }
            }
            if long == 0 && self.buf.is_empty() {
                return Ok(None);
            }
            self.line = line;
            if long > 0 {
                return Ok(Some(Line::TooLong(line, long)));
            }
            let bytes = self.buf.as_slice();
            let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
            match lines::read(bytes, line == 1, self.max_line).1 {
                lines::Line::Text(s) => {
                    text.clear();
                    text.push_str(s);
                    return Ok(Some(Line::Text(line)));
                }
                lines::Line::Blank => {}
                lines::Line::TooLong(len) => return Ok(Some(Line::TooLong(line, len))),
                lines::Line::NotUtf8(at) => return Err(Unreadable(lines::not_utf8(line, at))),
            }
        }
    }
}

/// One problem of one place, as both commands print it: `<where>: <Code>: <message>`,
/// with the message kept on one line.
pub fn problem(location: &str, e: &ModelError) -> String {
    let message = e.message.replace(['\n', '\r'], " ");
    format!("{location}: {}: {message}", e.code)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(bytes: &[u8], max: usize) -> Result<Vec<(Line, String)>, Unreadable> {
        let mut reader = JsonLines::with_max_line(bytes, max);
        let (mut out, mut text) = (Vec::new(), String::new());
        while let Some(line) = reader.next_line(&mut text)? {
            let t = if matches!(line, Line::Text(_)) {
                text.clone()
            } else {
                String::new()
            };
            out.push((line, t));
        }
        Ok(out)
    }

    #[test]
    fn bom_crlf_and_blank_lines() {
        let got = lines(b"\xEF\xBB\xBF{\"a\":1}\r\n\n   \n{\"b\":2}", 100).unwrap();
        assert_eq!(
            got,
            vec![
                (Line::Text(1), "{\"a\":1}".to_owned()),
                (Line::Text(4), "{\"b\":2}".to_owned())
            ]
        );
    }

    #[test]
    fn a_bom_later_in_the_file_is_kept() {
        let got = lines(b"{}\n\xEF\xBB\xBF{}\n", 100).unwrap();
        assert_eq!(got[1].1, "\u{FEFF}{}");
    }

    #[test]
    fn invalid_utf8_names_the_line_and_the_0_based_byte() {
        let err = lines(b"{}\n{\"a\":\"\xFF\"}\n", 100).unwrap_err();
        assert_eq!(err.0, "line 2 is not valid UTF-8 (at byte 6 of the line)");
    }

    #[test]
    fn long_lines_are_skipped_unread() {
        let mut input = b"{}\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', 50));
        input.extend_from_slice(b"\r\n{\"b\":2}\n");
        input.extend(std::iter::repeat_n(b'y', 11));
        let got = lines(&input, 10).unwrap();
        assert_eq!(
            got,
            vec![
                (Line::Text(1), "{}".to_owned()),
                (Line::TooLong(2, 50), String::new()),
                (Line::Text(3), "{\"b\":2}".to_owned()),
                (Line::TooLong(4, 11), String::new()),
            ]
        );
        // Exactly at the limit is fine.
        let got = lines(b"0123456789\r\n", 10).unwrap();
        assert_eq!(got, vec![(Line::Text(1), "0123456789".to_owned())]);
    }

    #[test]
    fn problem_lines_stay_on_one_line() {
        let e = ModelError::new(tableq::model::ErrorCode::InvalidInput, "a\nb");
        assert_eq!(problem("line 3", &e), "line 3: InvalidInput: a b");
    }
}

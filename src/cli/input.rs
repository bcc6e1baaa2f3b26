//! JSON-lines input shared by `tableq validate` and `tableq eval`: one place that decides
//! how entity files are opened and split into lines, so both commands read a file the same
//! way.
//!
//! * FILE, or standard input when FILE is `-` or absent;
//! * lines end in LF or CRLF; a UTF-8 byte-order mark at the very start is skipped;
//! * blank (whitespace-only) lines are skipped but still counted in line numbers;
//! * bytes that are not UTF-8 make the input unreadable (it is not JSON lines at all).

use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::Path;
use tableq::model::ModelError;

/// Read buffer size: large sequential reads for big files.
const BUFFER_BYTES: usize = 1 << 20;

/// An opened input and the name to use for it in messages.
pub struct Input {
    /// `<stdin>` or the file's path.
    pub label: String,
    /// The buffered bytes.
    pub reader: Box<dyn BufRead + Send>,
}

/// Opens FILE, or standard input for `-` or no FILE. The error is a message for people.
pub fn open(file: Option<&Path>) -> Result<Input, String> {
    match file {
        Some(p) if p.as_os_str() != "-" => match File::open(p) {
            Ok(f) => Ok(Input {
                label: p.display().to_string(),
                reader: Box::new(BufReader::with_capacity(BUFFER_BYTES, f)),
            }),
            Err(e) => Err(format!("cannot read `{}`: {e}", p.display())),
        },
        _ => Ok(Input {
            label: "<stdin>".to_owned(),
            reader: Box::new(BufReader::with_capacity(BUFFER_BYTES, io::stdin())),
        }),
    }
}

/// The input cannot be read: an I/O error or bytes that are not UTF-8. Holds a message that
/// names the line.
#[derive(Debug)]
pub struct Unreadable(pub String);

/// Splits buffered input into numbered, non-blank lines.
pub struct JsonLines<R> {
    input: R,
    /// The number of the last line read (blank ones included).
    line: u64,
    buf: Vec<u8>,
}

impl<R: BufRead> JsonLines<R> {
    /// Lines of `input`.
    pub fn new(input: R) -> JsonLines<R> {
        JsonLines {
            input,
            line: 0,
            buf: Vec::with_capacity(4096),
        }
    }

    /// Reads the next non-blank line into `text` (replacing its contents) and returns its
    /// number (from 1), or `None` at the end of the input.
    pub fn next_line(&mut self, text: &mut String) -> Result<Option<u64>, Unreadable> {
        loop {
            self.buf.clear();
            let read = self
                .input
                .read_until(b'\n', &mut self.buf)
                .map_err(|e| Unreadable(format!("line {}: {e}", self.line + 1)))?;
            if read == 0 {
                return Ok(None);
            }
            self.line += 1;
            let mut bytes = self.buf.as_slice();
            if self.line == 1 {
                bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
            }
            let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
            let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
            let line = std::str::from_utf8(bytes).map_err(|e| {
                Unreadable(format!(
                    "line {} is not valid UTF-8 (at byte {} of the line)",
                    self.line,
                    e.valid_up_to() + 1
                ))
            })?;
            if !line.trim().is_empty() {
                text.clear();
                text.push_str(line);
                return Ok(Some(self.line));
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

    fn lines(bytes: &[u8]) -> Result<Vec<(u64, String)>, Unreadable> {
        let mut reader = JsonLines::new(bytes);
        let (mut out, mut text) = (Vec::new(), String::new());
        while let Some(n) = reader.next_line(&mut text)? {
            out.push((n, text.clone()));
        }
        Ok(out)
    }

    #[test]
    fn bom_crlf_and_blank_lines() {
        let got = lines(b"\xEF\xBB\xBF{\"a\":1}\r\n\n   \n{\"b\":2}").unwrap();
        assert_eq!(
            got,
            vec![(1, "{\"a\":1}".to_owned()), (4, "{\"b\":2}".to_owned())]
        );
    }

    #[test]
    fn a_bom_later_in_the_file_is_kept() {
        let got = lines(b"{}\n\xEF\xBB\xBF{}\n").unwrap();
        assert_eq!(got[1].1, "\u{FEFF}{}");
    }

    #[test]
    fn invalid_utf8_names_the_line() {
        let err = lines(b"{}\n{\"a\":\"\xFF\"}\n").unwrap_err();
        assert_eq!(err.0, "line 2 is not valid UTF-8 (at byte 7 of the line)");
    }

    #[test]
    fn problem_lines_stay_on_one_line() {
        let e = ModelError::new(tableq::model::ErrorCode::InvalidInput, "a\nb");
        assert_eq!(problem("line 3", &e), "line 3: InvalidInput: a b");
    }
}

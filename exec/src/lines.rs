//! JSON lines: the one home of the rules by which tableq reads entities one per line —
//! [`tableq eval`](crate::stream)'s streaming engine here, and the command-line readers of
//! `tableq validate`, `eval --engine table` and `import`, which cut a file or a pipe into
//! lines and hand each line to [`read`].
//!
//! * a line ends in LF or CRLF (the CR is not part of the line); the last line may lack
//!   its end;
//! * a UTF-8 byte-order mark at the very start of the input (the first line only) is
//!   skipped;
//! * a blank (whitespace-only) line is skipped but still counted in line numbers;
//! * a line longer than the limit ([`MAX_LINE_BYTES`], without its line end) is a problem
//!   of its own ([`line_too_long`]) and skipped — readers skip it without holding it in
//!   memory;
//! * bytes that are not UTF-8 make the input unreadable: it is not JSON lines at all
//!   ([`not_utf8`] names the line and the 0-based byte).
//!
//! Whether a line's text is an entity is the data model's question
//! ([`tableq_model::json`]); these rules only say what the text of each line is. No I/O
//! happens here: readers bring the bytes.
//!
//! ```
//! use tableq_exec::lines::{Line, read};
//! assert_eq!(read(b"\xEF\xBB\xBF{\"a\":1}\r", true, 100), (3, Line::Text("{\"a\":1}")));
//! assert_eq!(read(b"\xEF\xBB\xBF{}", false, 100).1, Line::Text("\u{FEFF}{}"));
//! assert_eq!(read(b"   ", false, 100).1, Line::Blank);
//! assert_eq!(read(b"0123456789x", false, 10).1, Line::TooLong(11));
//! assert_eq!(read(b"{\"a\":\"\xFF\"}", false, 100).1, Line::NotUtf8(6));
//! ```

use tableq_model::{ErrorCode, ModelError};

/// The longest line read: 4 MiB, the service's limit for a request body. (An entity is at
/// most 1 MiB by the service's size formula; its JSON text may be larger — escapes,
/// annotations — but a longer line is no request the service would accept.)
pub const MAX_LINE_BYTES: usize = 4 << 20;

/// The UTF-8 byte-order mark, skipped at the start of the input.
const BYTE_ORDER_MARK: &[u8] = b"\xEF\xBB\xBF";

/// What one line of input is, by the rules of the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line<'a> {
    /// The line's text, not blank: an entity's JSON, or a problem for the data model.
    Text(&'a str),
    /// A blank line: skipped, but counted in line numbers.
    Blank,
    /// A line over the limit: its length in bytes (without its line end).
    TooLong(u64),
    /// Not UTF-8: the 0-based offset of the first bad byte within the line.
    NotUtf8(usize),
}

/// Reads one line: `bytes` is the line up to, not including, its LF; `first` says that it
/// starts the input (a byte-order mark may open it); lines over `max_line_bytes` are
/// [`Line::TooLong`]. Returns where the line's content starts within `bytes` (3 after a
/// byte-order mark, else 0) and what the line is.
pub fn read(bytes: &[u8], first: bool, max_line_bytes: usize) -> (usize, Line<'_>) {
    let (start, content) = match bytes.strip_prefix(BYTE_ORDER_MARK) {
        Some(rest) if first => (BYTE_ORDER_MARK.len(), rest),
        _ => (0, bytes),
    };
    let content = content.strip_suffix(b"\r").unwrap_or(content);
    if content.len() > max_line_bytes {
        return (start, Line::TooLong(content.len() as u64));
    }
    let line = match std::str::from_utf8(content) {
        Ok(text) if text.trim().is_empty() => Line::Blank,
        Ok(text) => Line::Text(text),
        Err(e) => Line::NotUtf8(e.valid_up_to()),
    };
    (start, line)
}

/// Why the input is unreadable when line `line` is not UTF-8 (`valid_up_to`: the 0-based
/// offset of the first bad byte within the line).
///
/// ```
/// assert_eq!(
///     tableq_exec::lines::not_utf8(2, 6),
///     "line 2 is not valid UTF-8 (at byte 6 of the line)"
/// );
/// ```
pub fn not_utf8(line: u64, valid_up_to: usize) -> String {
    format!("line {line} is not valid UTF-8 (at byte {valid_up_to} of the line)")
}

/// The problem reported for a line over [`MAX_LINE_BYTES`] that is `bytes` long.
///
/// ```
/// let e = tableq_exec::lines::line_too_long(5_000_000);
/// assert_eq!(e.code, tableq_model::ErrorCode::RequestBodyTooLarge);
/// assert!(e.message.starts_with("the line is 5000000 bytes long: the limit is 4194304 bytes"));
/// ```
pub fn line_too_long(bytes: u64) -> ModelError {
    ModelError::new(
        ErrorCode::RequestBodyTooLarge,
        format!(
            "the line is {bytes} bytes long: the limit is {MAX_LINE_BYTES} bytes (4 MiB, the \
             service's request limit); the line was skipped unread"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_ends_byte_order_marks_and_blanks() {
        assert_eq!(read(b"{}", false, 10), (0, Line::Text("{}")));
        assert_eq!(read(b"{}\r", false, 10), (0, Line::Text("{}")));
        // Only one CR belongs to the line end.
        assert_eq!(read(b"{}\r\r", false, 10), (0, Line::Text("{}\r")));
        assert_eq!(read(b"\xEF\xBB\xBF{}\r", true, 10), (3, Line::Text("{}")));
        assert_eq!(read(b"\xEF\xBB\xBF", true, 10), (3, Line::Blank));
        assert_eq!(read(b"", false, 10), (0, Line::Blank));
        assert_eq!(read(b" \t\r", false, 10), (0, Line::Blank));
    }

    #[test]
    fn the_limit_counts_the_content_without_the_line_end() {
        assert_eq!(read(b"0123456789\r", false, 10).1, Line::Text("0123456789"));
        assert_eq!(read(b"0123456789x\r", false, 10).1, Line::TooLong(11));
        // The limit comes before UTF-8: a long line is skipped whatever its bytes.
        assert_eq!(read(b"\xFF\xFF\xFF", false, 2).1, Line::TooLong(3));
        assert_eq!(read(b"ab\xFF", false, 10).1, Line::NotUtf8(2));
    }

    #[test]
    fn messages() {
        assert_eq!(
            not_utf8(2, 6),
            "line 2 is not valid UTF-8 (at byte 6 of the line)"
        );
        let e = line_too_long(5);
        assert_eq!(e.code, ErrorCode::RequestBodyTooLarge);
        assert_eq!(
            e.message,
            "the line is 5 bytes long: the limit is 4194304 bytes (4 MiB, the service's request \
             limit); the line was skipped unread"
        );
    }
}

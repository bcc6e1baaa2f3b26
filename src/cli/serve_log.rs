//! The text format of `tableq serve`'s log: tracing-subscriber's default format, with the
//! per-request line (target `tableq_server::request`, one per request) written by a fast
//! path that produces the very same bytes.
//!
//! The default formatter costs ≈ 13 000 instructions per line (a `write!` chain per field,
//! the message escaped through a `Formatter`, the date computed from scratch): ≈ 10 % of a
//! point get. [`RequestLineFormat`] writes the request line directly — the date part of
//! the timestamp kept per second and thread, the message escaped exactly as
//! tracing-subscriber escapes it (ANSI and C1 control characters, so a client cannot inject
//! terminal sequences through a table name) — and hands every other event, and every event
//! when colours are on or a span is entered, to the default formatter.
//!
//! **Where lines go**: [`BufferedStderr`], stderr behind a 64 KiB buffer that a flusher
//! thread writes out every [`FLUSH_EVERY`] (and that is written out whenever it fills, and
//! at exit). A `write(2)` per request line cost ≈ 12 % of the point-get throughput at 8
//! connections; lines now leave in batches, whole and in order (one lock for the buffer).
//! The price: a `kill -9` loses the lines of the last [`FLUSH_EVERY`], and a line reaches a
//! terminal up to that much later. (A log thread fed through a channel was measured too:
//! on two cores its wake-ups cost more than the `write(2)` they saved.)
//!
//! ```text
//! 2026-11-27T04:24:31.310349Z  INFO tableq_server::request: POST /devstoreaccount1/Tables 201 1.0ms request_id=… operation=CreateTable
//! ```

use std::cell::RefCell;
use std::fmt::{self, Write};
use std::io::{self, BufWriter, Stderr};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::{Format, Full, Writer};
use tracing_subscriber::fmt::time::SystemTime as DefaultTime;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, MakeWriter};
use tracing_subscriber::registry::LookupSpan;

/// The target of the per-request lines (`tableq_server`'s request log).
const REQUEST_TARGET: &str = "tableq_server::request";

/// The default text format, with the fast path for request lines (see the module docs).
#[derive(Debug, Default)]
pub struct RequestLineFormat {
    fallback: Format<Full, DefaultTime>,
}

impl<S, N> FormatEvent<S, N> for RequestLineFormat
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let meta = event.metadata();
        let fast = meta.target() == REQUEST_TARGET
            && *meta.level() == Level::INFO
            && !writer.has_ansi_escapes()
            && meta.fields().iter().all(|f| f.name() == "message")
            && ctx.lookup_current().is_none();
        if !fast {
            return self.fallback.format_event(ctx, writer, event);
        }
        #[cfg(test)]
        tests::FAST_LINES.with(|n| n.set(n.get() + 1));
        write_timestamp(&mut writer, SystemTime::now())?;
        writer.write_str("  INFO tableq_server::request: ")?;
        let mut message = Message {
            writer: &mut writer,
            sanitize: true,
            result: Ok(()),
        };
        message.sanitize = message.writer.sanitizes_ansi_escapes();
        event.record(&mut message);
        message.result?;
        writer.write_char('\n')
    }
}

/// The format `tableq serve` logs text with (a convenience for the subscriber builder).
pub fn text_format() -> RequestLineFormat {
    RequestLineFormat::default()
}

/// How long a log line may wait in [`BufferedStderr`]'s buffer.
pub const FLUSH_EVERY: Duration = Duration::from_millis(20);

/// Bytes buffered before a write to stderr.
const BUFFER_BYTES: usize = 64 * 1024;

/// stderr behind a buffer that a flusher thread writes out (see the module docs).
#[derive(Clone)]
pub struct BufferedStderr {
    shared: Arc<Buffered>,
}

struct Buffered {
    out: Mutex<BufWriter<Stderr>>,
    /// Set when the guard is dropped: the flusher writes out and ends.
    stop: Mutex<bool>,
    wake: Condvar,
}

/// Writes out what is buffered when dropped, and stops the flusher thread.
pub struct FlushGuard {
    shared: Arc<Buffered>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// A buffered stderr for the log and the guard that writes it out at exit. Without a
/// flusher thread (it could not be started) lines are written out as the buffer fills and
/// when the guard is dropped.
pub fn buffered_stderr() -> (BufferedStderr, FlushGuard) {
    let shared = Arc::new(Buffered {
        out: Mutex::new(BufWriter::with_capacity(BUFFER_BYTES, io::stderr())),
        stop: Mutex::new(false),
        wake: Condvar::new(),
    });
    let flusher = shared.clone();
    let thread = std::thread::Builder::new()
        .name("tableq-log-flush".into())
        .spawn(move || {
            let mut stopped = flusher.stop.lock().unwrap_or_else(PoisonError::into_inner);
            while !*stopped {
                stopped = flusher
                    .wake
                    .wait_timeout(stopped, FLUSH_EVERY)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
                flusher.flush();
            }
        })
        .ok();
    (
        BufferedStderr {
            shared: shared.clone(),
        },
        FlushGuard { shared, thread },
    )
}

impl Buffered {
    fn out(&self) -> MutexGuard<'_, BufWriter<Stderr>> {
        self.out.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes out the buffer (a failure to write the log is not worth dying for).
    fn flush(&self) {
        let _ = io::Write::flush(&mut *self.out());
    }
}

impl Drop for FlushGuard {
    fn drop(&mut self) {
        *self
            .shared
            .stop
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = true;
        self.shared.wake.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.shared.flush();
    }
}

/// One event's writer: the buffer, locked for the event's single `write_all`.
pub struct BufferedWriter<'a>(MutexGuard<'a, BufWriter<Stderr>>);

impl io::Write for BufferedWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.0.write_all(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        // The flusher's job: a line is not written out on its own.
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for BufferedStderr {
    type Writer = BufferedWriter<'a>;
    fn make_writer(&'a self) -> BufferedWriter<'a> {
        BufferedWriter(self.shared.out())
    }
}

/// Writes the `message` field, escaped as tracing-subscriber escapes it.
struct Message<'w, 'b> {
    writer: &'w mut Writer<'b>,
    sanitize: bool,
    result: fmt::Result,
}

impl Visit for Message<'_, '_> {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if self.result.is_err() || field.name() != "message" {
            return;
        }
        self.result = if self.sanitize {
            write!(Escaping(self.writer), "{value:?}")
        } else {
            write!(self.writer, "{value:?}")
        };
    }
}

/// A writer that escapes the characters tracing-subscriber escapes in messages: ESC, BEL,
/// BS, FF and DEL as `\xNN`, and C1 controls (U+0080–U+009F) as `\u{NN}`.
struct Escaping<'w, 'b>(&'w mut Writer<'b>);

impl Write for Escaping<'_, '_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let mut rest = s;
        while let Some(at) = escape_at(rest) {
            self.0.write_str(&rest[..at])?;
            let Some(c) = rest[at..].chars().next() else {
                break;
            };
            match c {
                '\x1b' => self.0.write_str("\\x1b")?,
                '\x07' => self.0.write_str("\\x07")?,
                '\x08' => self.0.write_str("\\x08")?,
                '\x0c' => self.0.write_str("\\x0c")?,
                '\x7f' => self.0.write_str("\\x7f")?,
                c => write!(self.0, "\\u{{{:x}}}", c as u32)?,
            }
            rest = &rest[at + c.len_utf8()..];
        }
        self.0.write_str(rest)
    }
}

/// Where the first character to escape starts in `s`: a scan of bytes, not characters
/// (ESC, BEL, BS, FF and DEL are single bytes; U+0080–U+009F are `C2 80`–`C2 9F` in
/// UTF-8), so a line with nothing to escape — every request line, nearly — costs one pass.
fn escape_at(s: &str) -> Option<usize> {
    let bytes = s.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            0x07 | 0x08 | 0x0c | 0x1b | 0x7f => return Some(at),
            0xc2 if matches!(bytes.get(at + 1), Some(0x80..=0x9f)) => return Some(at),
            _ => at += 1,
        }
    }
    None
}

thread_local! {
    /// The second last formatted on this thread and its `YYYY-MM-DDTHH:MM:SS` text.
    static SECOND: RefCell<(u64, String)> = const { RefCell::new((u64::MAX, String::new())) };
}

/// Writes `now` as tracing-subscriber's default timer does: RFC 3339 in UTC with
/// microseconds, `2026-11-27T04:24:31.310349Z`.
fn write_timestamp(writer: &mut impl Write, now: SystemTime) -> fmt::Result {
    let Ok(since) = now.duration_since(UNIX_EPOCH) else {
        // Before 1970: not worth a fast path.
        return write!(
            writer,
            "{}",
            chrono::DateTime::<chrono::Utc>::from(now).format("%Y-%m-%dT%H:%M:%S%.6fZ")
        );
    };
    let (secs, micros) = (since.as_secs(), since.subsec_micros());
    SECOND.with_borrow_mut(|(second, text)| {
        if *second != secs {
            text.clear();
            let date = chrono::DateTime::<chrono::Utc>::from(now);
            write!(text, "{}", date.format("%Y-%m-%dT%H:%M:%S"))?;
            *second = secs;
        }
        writer.write_str(text)
    })?;
    let mut digits = [b'0'; 6];
    let mut n = micros;
    for d in digits.iter_mut().rev() {
        *d = b'0' + (n % 10) as u8;
        n /= 10;
    }
    writer.write_char('.')?;
    writer.write_str(std::str::from_utf8(&digits).map_err(|_| fmt::Error)?)?;
    writer.write_char('Z')
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;
    use tracing_subscriber::fmt::MakeWriter;

    thread_local! {
        /// Lines written by the fast path on this thread.
        pub(super) static FAST_LINES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl<'a> MakeWriter<'a> for Captured {
        type Writer = Captured;
        fn make_writer(&'a self) -> Captured {
            self.clone()
        }
    }

    impl Captured {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    /// The lines `log` writes through the default format and through ours.
    fn both(log: impl Fn()) -> (String, String) {
        let default = Captured::default();
        let ours = Captured::default();
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer(default.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, &log);
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .event_format(text_format())
            .with_writer(ours.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, &log);
        (default.text(), ours.text())
    }

    /// A line without its timestamp (checked on its own below).
    fn after_timestamp(line: &str) -> &str {
        let (stamp, rest) = line.split_at(27);
        assert!(
            stamp.len() == 27 && stamp.ends_with('Z') && &stamp[10..11] == "T",
            "{line:?}"
        );
        rest
    }

    #[test]
    fn request_lines_are_byte_for_byte_the_default_format() {
        let messages = [
            "GET /devstoreaccount1/bench(PartitionKey='p',RowKey='r') 200 0.1ms request_id=x operation=QueryEntity",
            "POST /a/t\u{1b}[31mred 400 InvalidInput 0.0ms request_id=y operation=InsertEntity table=t\u{7}\u{8}\u{c}\u{7f}",
            "C1 \u{85}\u{9b}\u{9f} and \u{a0} é 名 \u{1F600}",
            "",
        ];
        for m in messages {
            let before = FAST_LINES.with(|n| n.get());
            let (default, ours) = both(|| tracing::info!(target: "tableq_server::request", "{m}"));
            assert_eq!(after_timestamp(&ours), after_timestamp(&default), "{m:?}");
            assert_eq!(
                FAST_LINES.with(|n| n.get()),
                before + 1,
                "the fast path wrote {m:?}"
            );
        }
        // Other events keep the default format, fields and all.
        let (default, ours) = both(|| {
            tracing::info!(target: "tableq_server::request", method = "GET", "request");
            tracing::warn!(target: "tableq_server::request", "not info");
            tracing::info!(target: "tableq::other", count = 3, "elsewhere");
            let span = tracing::info_span!("inside", id = 7);
            let _in = span.enter();
            tracing::info!(target: "tableq_server::request", "in a span");
        });
        let strip = |t: &str| {
            t.lines()
                .map(|l| after_timestamp(l).to_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(strip(&ours), strip(&default));
        // (Only the plain request line can take the fast path; the span's is the default's.)
        assert_eq!(strip(&ours).len(), 4);
    }

    proptest::proptest! {
        /// The byte scan finds what a scan of characters for the escaped ones finds.
        #[test]
        fn escape_at_finds_the_first_escaped_character(s in "[a\\x00-\\x1f\\x7f-\\u{a1}\\u{100}é名😀]{0,40}") {
            let chars = s.find(|c| {
                matches!(c, '\x1b' | '\x07' | '\x08' | '\x0c' | '\x7f' | '\u{80}'..='\u{9f}')
            });
            proptest::prop_assert_eq!(escape_at(&s), chars);
        }
    }

    #[test]
    fn timestamps_are_rfc3339_utc_with_microseconds() {
        for (secs, micros) in [
            (0u64, 0u32),
            (1_764_217_471, 310_349),
            (1_764_217_471, 5),
            (253_402_300_799, 999_999),
            (951_782_400, 123_456), // 2000-02-29
        ] {
            let t = UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_micros(micros.into());
            let mut ours = String::new();
            write_timestamp(&mut ours, t).unwrap();
            let want = chrono::DateTime::<chrono::Utc>::from(t)
                .format("%Y-%m-%dT%H:%M:%S%.6fZ")
                .to_string();
            assert_eq!(ours, want);
            // The cached second is reused for the next instant in the same second.
            if micros < 999_999 {
                let mut again = String::new();
                write_timestamp(&mut again, t + Duration::from_micros(1)).unwrap();
                assert_eq!(again[..20], want[..20]);
                assert_ne!(again, want);
            }
        }
    }
}

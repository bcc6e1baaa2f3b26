//! The result rows on stdout: [`Output`] (buffered; a closed stdout ends the output
//! quietly) and the [`row_writer`] of a query.

use super::context::Failure;
use super::queries::Query;
use std::io::{self, BufWriter, Write};
use tableq::model::json::{EntityWriter, EnvelopeRef, ListProperties, MetadataLevel};

/// Buffered stdout for result rows. A closed stdout (`tableq eval … | head`) ends the
/// output quietly; other write errors are fatal.
pub(super) struct Output {
    out: BufWriter<io::StdoutLock<'static>>,
    line: Vec<u8>,
    closed: bool,
}

impl Output {
    pub(super) fn new() -> Output {
        Output {
            out: BufWriter::with_capacity(1 << 16, io::stdout().lock()),
            line: Vec::with_capacity(1024),
            closed: false,
        }
    }

    /// Writes one entity as a JSON line.
    pub fn entity<E: ListProperties + ?Sized>(
        &mut self,
        writer: &EntityWriter<'_>,
        entity: &E,
    ) -> Result<(), Failure> {
        self.line.clear();
        writer.write(&mut self.line, entity, EnvelopeRef::default());
        self.line.push(b'\n');
        let line = std::mem::take(&mut self.line);
        let result = self.bytes(&line);
        self.line = line;
        result
    }

    /// Writes already encoded bytes.
    pub fn bytes(&mut self, bytes: &[u8]) -> Result<(), Failure> {
        if self.closed {
            return Ok(());
        }
        self.out.write_all(bytes).or_else(|e| self.error(e))
    }

    /// The header line of a query of `--queries`.
    pub(super) fn header(&mut self, query: &Query) -> Result<(), Failure> {
        let text = format!(
            "# query {} (line {}): {}\n",
            query.number, query.line, query.text
        );
        self.bytes(text.as_bytes())
    }

    pub(super) fn flush(&mut self) -> Result<(), Failure> {
        if self.closed {
            return Ok(());
        }
        self.out.flush().or_else(|e| self.error(e))
    }

    fn error(&mut self, e: io::Error) -> Result<(), Failure> {
        if e.kind() == io::ErrorKind::BrokenPipe {
            self.closed = true;
            Ok(())
        } else {
            Err(Failure::Message(format!("cannot write to stdout: {e}")))
        }
    }
}

/// The writer for result rows of a query: minimal metadata without an envelope (so only
/// the `@odata.type` annotations JSON needs), projected to the plan's `$select`.
pub(super) fn row_writer(query: &Query) -> EntityWriter<'_> {
    EntityWriter::new(MetadataLevel::MinimalMetadata).with_select(query.plan.select.as_deref())
}

//! Log output through a redactor: the tracing subscriber's writer.

use std::io::{self, Write};

use tracing_subscriber::fmt::MakeWriter;

use super::Redactor;

/// Makes the writers of a log subscriber so that each event passes through
/// `redactor` before it reaches `inner` (stderr in the binary). The
/// subscriber writes one event per writer, so an event is redacted whole,
/// however it was split into writes.
#[derive(Debug, Clone)]
pub struct Redacting<M> {
    inner: M,
    redactor: Redactor,
}

impl<M> Redacting<M> {
    pub fn new(inner: M, redactor: Redactor) -> Self {
        Redacting { inner, redactor }
    }
}

impl<'a, M: MakeWriter<'a>> MakeWriter<'a> for Redacting<M> {
    type Writer = RedactingLine<M::Writer>;

    fn make_writer(&'a self) -> Self::Writer {
        RedactingLine { buf: Vec::new(), inner: self.inner.make_writer(), redactor: self.redactor.clone() }
    }
}

/// One event's output, held until the writer is dropped, then redacted and
/// written.
pub struct RedactingLine<W: Write> {
    buf: Vec<u8>,
    inner: W,
    redactor: Redactor,
}

impl<W: Write> Write for RedactingLine<W> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<W: Write> Drop for RedactingLine<W> {
    fn drop(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        let text = String::from_utf8_lossy(&self.buf);
        let text = self.redactor.redact(&text);
        // A log line that cannot be written has nowhere else to go.
        let _ = self.inner.write_all(text.as_bytes());
        let _ = self.inner.flush();
    }
}

//! The one writer of a spool: a thread that appends records in batches, one fsync per batch.
//!
//! Handlers hand records over a channel and wait for their answer. The thread takes every
//! record waiting (up to [`MAX_BATCH`]), writes them in one `write`, flushes the file once
//! (`fdatasync`), and only then answers each: many handlers appending at once share one
//! flush, which is what makes the spool as fast as its disk's flushes allow rather than one
//! flush per delivery (group commit).

use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use super::segment::{self, Position};
use super::{SpoolError, SpoolState};

/// Most records written under one flush: bounds one batch's memory (and the wait of its
/// first handler) while leaving room for hundreds of concurrent handlers.
pub(super) const MAX_BATCH: usize = 256;

/// One append: the payload, when it arrived, and where to send the answer.
pub(super) struct Append {
    pub(super) millis: u64,
    pub(super) payload: Vec<u8>,
    pub(super) done: oneshot::Sender<Result<(), SpoolError>>,
}

/// The writer's own state: the segment it appends to.
pub(super) struct Writer {
    pub(super) shared: Arc<SpoolState>,
    pub(super) file: File,
    /// The path of `file`, the segment at `at`.
    pub(super) path: PathBuf,
    pub(super) at: Position,
    /// Set after a failed write that could not be undone: the segment's end is unknown, so
    /// nothing more is appended to it.
    pub(super) broken: bool,
}

impl Writer {
    /// Runs until every sender is gone (the service shut down).
    pub(super) fn run(mut self, mut appends: mpsc::Receiver<Append>) {
        let mut batch = Vec::with_capacity(MAX_BATCH);
        while appends.blocking_recv().map(|a| batch.push(a)).is_some() {
            while batch.len() < MAX_BATCH {
                match appends.try_recv() {
                    Ok(append) => batch.push(append),
                    Err(_) => break,
                }
            }
            self.write_batch(&mut batch);
        }
    }

    fn write_batch(&mut self, batch: &mut Vec<Append>) {
        let mut bytes = Vec::new();
        let mut accepted = Vec::with_capacity(batch.len());
        let room = self.shared.room();
        for append in batch.drain(..) {
            let size = segment::HEADER_BYTES + append.payload.len() as u64;
            if self.broken {
                let _ = append.done.send(Err(SpoolError::Broken));
            } else if bytes.len() as u64 + size > room {
                self.shared.counts().full += 1;
                let _ = append.done.send(Err(SpoolError::Full));
            } else {
                segment::encode(append.millis, &append.payload, &mut bytes);
                accepted.push((append.millis, append.done));
            }
        }
        if accepted.is_empty() {
            return;
        }
        let written = self.rotate_if_full().and_then(|()| self.append(&bytes));
        match written {
            Ok(()) => {
                let mut counts = self.shared.counts();
                if counts.depth == 0 {
                    counts.oldest_millis = Some(accepted[0].0);
                }
                counts.depth += accepted.len() as u64;
                counts.depth_bytes += bytes.len() as u64;
                counts.spooled += accepted.len() as u64;
                drop(counts);
                self.shared.readable.notify_one();
                for (_, done) in accepted {
                    let _ = done.send(Ok(()));
                }
            }
            Err(error) => {
                tracing::error!(%error, records = accepted.len(), "writing to the spool failed");
                for (_, done) in accepted {
                    let _ = done.send(Err(SpoolError::Io));
                }
            }
        }
    }

    /// Writes and flushes `bytes` at the segment's end, then publishes the new end to the
    /// reader. On failure the partial write is cut off again.
    fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        let written = self.file.write_all(bytes).and_then(|()| self.sync());
        if let Err(error) = written {
            let undone = self
                .file
                .set_len(self.at.offset)
                .and_then(|()| self.file.seek(SeekFrom::Start(self.at.offset)).map(drop));
            self.broken = undone.is_err();
            return Err(error);
        }
        self.at.offset += bytes.len() as u64;
        *self.shared.durable() = self.at;
        Ok(())
    }

    /// Flushes the segment's data to disk: a power cut from here on keeps all of it.
    fn sync(&self) -> io::Result<()> {
        self.shared.disk.sync_data(&self.file, &self.path)
    }

    /// Starts the next segment once this one reached the configured size, so that drained
    /// segments can be deleted whole.
    fn rotate_if_full(&mut self) -> io::Result<()> {
        if self.at.offset < self.shared.config.segment_bytes {
            return Ok(());
        }
        let next = Position {
            segment: self.at.segment + 1,
            offset: 0,
        };
        let dir = &self.shared.config.dir;
        let path = segment::segment_path(dir, next.segment);
        let file = self.shared.disk.open(&path)?;
        self.shared.disk.sync_dir(dir)?;
        self.file = file;
        self.path = path;
        self.at = next;
        *self.shared.durable() = next;
        Ok(())
    }
}

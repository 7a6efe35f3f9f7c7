//! The one reader of a spool: hands out records oldest first, and moves the ack forward only
//! when told that a record is safe elsewhere.

use std::fs::File;
use std::io;
use std::path::Path;
use std::sync::Arc;

use super::segment::{self, Position};
use super::{Entry, SpoolState};

pub(super) struct Reader {
    pub(super) shared: Arc<SpoolState>,
    /// The next record to hand out (everything before it is acknowledged).
    pub(super) cursor: Position,
    pub(super) ack_file: File,
    /// The segment being read, and its id.
    pub(super) file: Option<(u64, File)>,
}

impl Reader {
    /// The oldest record not yet acknowledged, or `None` when every durable record is.
    pub(super) fn next(&mut self) -> io::Result<Option<Entry>> {
        loop {
            let durable = *self.shared.durable();
            if self.cursor.segment == durable.segment && self.cursor.offset >= durable.offset {
                return Ok(None);
            }
            let at = self.cursor;
            let file = self.segment_file()?;
            let file_len = file.metadata()?.len();
            let record = segment::read_at(file, at.offset, file_len)?;
            match record {
                Some(record) => {
                    self.shared.counts().oldest_millis = Some(record.millis);
                    return Ok(Some(Entry {
                        millis: record.millis,
                        payload: record.payload,
                        at: self.cursor,
                        end: record.end,
                    }));
                }
                // An older segment is complete once the writer moved on: at its end, the
                // next one begins.
                None if self.cursor.segment < durable.segment && self.cursor.offset >= file_len => {
                    self.finish_segment()?;
                }
                None => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!(
                            "the spool record at {}:{} is damaged",
                            self.cursor.segment, self.cursor.offset
                        ),
                    ))
                }
            }
        }
    }

    /// Marks `entry` as safe elsewhere: the ack moves past it, durably.
    pub(super) fn ack(&mut self, entry: &Entry) -> io::Result<()> {
        if entry.at != self.cursor {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "only the oldest record handed out can be acknowledged",
            ));
        }
        let next = Position {
            segment: entry.at.segment,
            offset: entry.end,
        };
        segment::write_ack(&*self.shared.disk, &self.ack_file, self.dir(), next)?;
        self.cursor = next;
        let mut counts = self.shared.counts();
        counts.depth -= 1;
        counts.depth_bytes -= entry.end - entry.at.offset;
        counts.drained += 1;
        if counts.depth == 0 {
            counts.oldest_millis = None;
        }
        Ok(())
    }

    fn segment_file(&mut self) -> io::Result<&mut File> {
        let id = self.cursor.segment;
        if self.file.as_ref().is_none_or(|(open, _)| *open != id) {
            let path = segment::segment_path(self.dir(), id);
            self.file = Some((id, File::open(path)?));
        }
        Ok(&mut self.file.as_mut().expect("just opened").1)
    }

    /// Moves the ack to the start of the next segment, then deletes the finished one: a crash
    /// between the two leaves a segment that the next start deletes, never a gap.
    fn finish_segment(&mut self) -> io::Result<()> {
        let done = self.cursor.segment;
        let next = Position {
            segment: done + 1,
            offset: 0,
        };
        segment::write_ack(&*self.shared.disk, &self.ack_file, self.dir(), next)?;
        self.cursor = next;
        self.file = None;
        let disk = &self.shared.disk;
        disk.remove(&segment::segment_path(self.dir(), done))?;
        disk.sync_dir(self.dir())
    }

    fn dir(&self) -> &Path {
        &self.shared.config.dir
    }
}

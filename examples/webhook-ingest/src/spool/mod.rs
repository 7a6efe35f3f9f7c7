//! A durable local queue: what the service acknowledges while its store cannot take it.
//!
//! The spool is a directory of append-only segment files and one small ack file. Each record
//! carries its length and a CRC-32 (`segment.rs`). One writer thread appends records in
//! batches and flushes each batch to disk before any of its appends is answered, so an
//! acknowledged record survives a kill -9 or a power cut (not a lost disk). One reader hands
//! records out oldest first and moves the ack past a record only when told that it is safe
//! elsewhere; a drained segment is deleted whole. On open, a torn last record (a write that
//! a crash cut short, never acknowledged) is cut off, logged and counted.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> std::io::Result<()> {
//! use webhook_ingest::spool::{Spool, SpoolConfig};
//!
//! let dir = std::env::temp_dir().join(format!("spool-doc-{}", std::process::id()));
//! let spool = Spool::open(SpoolConfig::new(&dir))?;
//! spool.append(b"first".to_vec()).await.unwrap();
//! spool.append(b"second".to_vec()).await.unwrap();
//! let entry = spool.next().await?;
//! assert_eq!(entry.payload, b"first");
//! spool.ack(&entry).await?;
//! assert_eq!(spool.stats().depth, 1);
//! # drop(spool);
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok(())
//! # }
//! ```

mod disk;
mod metrics;
mod reader;
mod segment;
#[cfg(test)]
mod tests;
pub mod unverified;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::{mpsc, oneshot, Notify};

use segment::Position;
pub use segment::MAX_PAYLOAD_BYTES;

/// Where the spool lives unless told: beside the working directory's other files.
pub const DEFAULT_SPOOL_DIR: &str = "webhook-ingest-spool";
/// The spool's bound unless told: hours of a busy fleet's pushes, and a size any server's
/// disk has to spare.
pub const DEFAULT_SPOOL_MAX_BYTES: u64 = 1 << 30;
/// A segment is closed and a new one started past this size; a drained segment is deleted
/// whole, so this is also how much drained data may wait on disk for its deletion.
pub const DEFAULT_SEGMENT_BYTES: u64 = 64 << 20;
/// Bytes a record takes on disk beside its payload: length, checksum, arrival time.
pub const RECORD_HEADER_BYTES: u64 = segment::HEADER_BYTES;
/// Appends waiting for the writer at most; more handlers wait for room in the channel.
const APPEND_QUEUE: usize = 4096;

/// Where a spool lives and how large it may grow.
#[derive(Debug, Clone)]
pub struct SpoolConfig {
    /// Its directory, created (mode 0700) when missing. Each node (running copy of the
    /// service) needs its own.
    pub dir: PathBuf,
    /// Appends that would take the records not yet drained past this many bytes are refused.
    pub max_bytes: u64,
    /// The size at which the writer starts a new segment.
    pub segment_bytes: u64,
}

impl SpoolConfig {
    /// A spool in `dir` with the default bounds.
    pub fn new(dir: impl AsRef<Path>) -> Self {
        Self {
            dir: dir.as_ref().to_owned(),
            max_bytes: DEFAULT_SPOOL_MAX_BYTES,
            segment_bytes: DEFAULT_SEGMENT_BYTES,
        }
    }
}

impl Default for SpoolConfig {
    fn default() -> Self {
        Self::new(DEFAULT_SPOOL_DIR)
    }
}

/// Why an append was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SpoolError {
    #[error("the spool is full")]
    Full,
    #[error("writing to the spool failed")]
    Io,
    #[error("the spool's file is in an unknown state after a failed write")]
    Broken,
    #[error("the spool's writer has stopped")]
    Stopped,
    /// A payload past the largest record the spool reads back: kept, it would be taken for
    /// a damaged one and hold up every record after it.
    #[error("the payload is larger than a spool record can be")]
    TooLarge,
}

/// One record handed out by [`Spool::next`].
#[derive(Debug)]
pub struct Entry {
    /// When it was appended, in milliseconds since the Unix epoch.
    pub millis: u64,
    pub payload: Vec<u8>,
    at: Position,
    end: u64,
}

/// What `/health` and `/metrics` show of a spool.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct SpoolStats {
    /// Records not yet drained, and their bytes on disk.
    pub depth: u64,
    pub depth_bytes: u64,
    /// How long the oldest record not yet drained has waited, in whole seconds.
    pub oldest_age_seconds: u64,
    /// Records appended, drained, and torn tails cut off (with their bytes), since start.
    pub spooled: u64,
    pub drained: u64,
    pub cut: u64,
    pub cut_bytes: u64,
    /// Appends refused because the spool was full.
    pub full: u64,
}

#[derive(Default)]
struct Counts {
    depth: u64,
    depth_bytes: u64,
    oldest_millis: Option<u64>,
    spooled: u64,
    drained: u64,
    cut: u64,
    cut_bytes: u64,
    full: u64,
}

/// What the writer, the reader and the handles share.
struct SpoolState {
    config: SpoolConfig,
    /// The end of what is on disk and flushed: the reader reads up to here.
    durable: Mutex<Position>,
    counts: Mutex<Counts>,
    /// Woken by the writer after each flushed batch.
    readable: Notify,
    /// What the spool's files are created, flushed and removed through.
    disk: Box<dyn disk::Disk>,
}

impl SpoolState {
    fn durable(&self) -> MutexGuard<'_, Position> {
        self.durable.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn counts(&self) -> MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Bytes that may still be appended.
    fn room(&self) -> u64 {
        self.config
            .max_bytes
            .saturating_sub(self.counts().depth_bytes)
    }
}

/// A handle on an open spool; cheap to clone. The writer thread stops when the last handle
/// is dropped, after answering every append it took.
#[derive(Clone)]
pub struct Spool {
    shared: Arc<SpoolState>,
    appends: mpsc::Sender<Append>,
    reader: Arc<Mutex<reader::Reader>>,
}

use writer::Append;

impl Spool {
    /// Opens the spool in `config.dir`, creating it if needed, and starts its writer thread.
    /// Blocks on the disk: the segments are read through once, to count them and to cut off
    /// a torn tail.
    pub fn open(config: SpoolConfig) -> std::io::Result<Spool> {
        open::open(config, Box::new(disk::OsDisk))
    }

    /// Appends `payload` and returns once it is on disk and flushed. A payload over 64 MiB
    /// is refused ([`SpoolError::TooLarge`]): no record is kept that could not be read back.
    pub async fn append(&self, payload: Vec<u8>) -> Result<(), SpoolError> {
        if payload.len() as u64 > segment::MAX_PAYLOAD_BYTES {
            return Err(SpoolError::TooLarge);
        }
        let (done, answer) = oneshot::channel();
        let append = Append {
            millis: now_millis(),
            payload,
            done,
        };
        self.appends
            .send(append)
            .await
            .map_err(|_| SpoolError::Stopped)?;
        answer.await.map_err(|_| SpoolError::Stopped)?
    }

    /// The oldest record not yet acknowledged, waiting for one if there is none. Meant for
    /// one drainer: it hands out the same record until that one is acknowledged.
    pub async fn next(&self) -> std::io::Result<Entry> {
        loop {
            let reader = self.reader.clone();
            let next = tokio::task::spawn_blocking(move || lock(&reader).next())
                .await
                .map_err(std::io::Error::other)??;
            if let Some(entry) = next {
                return Ok(entry);
            }
            self.shared.readable.notified().await;
        }
    }

    /// Records that `entry` (the last one [`next`](Self::next) handed out) is safe elsewhere:
    /// it will not be handed out again, not even after a restart.
    pub async fn ack(&self, entry: &Entry) -> std::io::Result<()> {
        let reader = self.reader.clone();
        let (at, end) = (entry.at, entry.end);
        tokio::task::spawn_blocking(move || {
            let entry = Entry {
                millis: 0,
                payload: Vec::new(),
                at,
                end,
            };
            lock(&reader).ack(&entry)
        })
        .await
        .map_err(std::io::Error::other)?
    }

    /// Its depth, the oldest record's age and its totals.
    pub fn stats(&self) -> SpoolStats {
        let counts = self.shared.counts();
        let age = counts
            .oldest_millis
            .map_or(0, |oldest| now_millis().saturating_sub(oldest) / 1000);
        SpoolStats {
            depth: counts.depth,
            depth_bytes: counts.depth_bytes,
            oldest_age_seconds: age,
            spooled: counts.spooled,
            drained: counts.drained,
            cut: counts.cut,
            cut_bytes: counts.cut_bytes,
            full: counts.full,
        }
    }

    /// The directory it lives in.
    pub fn dir(&self) -> &Path {
        &self.shared.config.dir
    }
}

impl std::fmt::Debug for Spool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spool")
            .field("dir", &self.shared.config.dir)
            .field("stats", &self.stats())
            .finish()
    }
}

fn lock(reader: &Mutex<reader::Reader>) -> MutexGuard<'_, reader::Reader> {
    reader.lock().unwrap_or_else(|e| e.into_inner())
}

fn now_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_millis() as u64
}

mod open;

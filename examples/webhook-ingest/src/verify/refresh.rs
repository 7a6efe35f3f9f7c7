//! Keeps the secret cache and the file of known inboxes up to date with the store: at start,
//! after every change made through this node, and every `--inbox-refresh` for the changes
//! other nodes of a fleet make. An inbox made or rotated here is written to the file before
//! its answer leaves ([`Refreshes::write_now`]), so that a node stopped right after the
//! answer knows it when it starts again while the store is down.
//!
//! A refresh that fails (the store is down) changes nothing: the cache and the file keep
//! what the last one that worked read, which is the point of keeping them.

use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Mutex, Notify};

use super::known;
use super::secret_cache::{SecretCache, MAX_CACHED_INBOXES};
use crate::store::Store;

/// How often the inboxes are read again unless `--inbox-refresh` says otherwise: an inbox
/// made on another node of a fleet is verified here during an outage once a minute has
/// passed, at the cost of one read of the inboxes table a minute.
pub const DEFAULT_INBOX_REFRESH: Duration = Duration::from_secs(60);
/// The wait before trying again after a refresh failed, unless the period is shorter: a
/// store back from an outage is read within seconds.
const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(2);

/// Asks for a refresh now, counts the refreshes, and writes the file of known inboxes; cheap
/// to clone.
#[derive(Clone, Default, Debug)]
pub struct Refreshes {
    wanted: Arc<Notify>,
    done: Arc<AtomicU64>,
    /// Where the file of known inboxes lives; none without a spool.
    file: Option<Arc<PathBuf>>,
    /// Held by whoever writes the file, from the read of what it writes to the rename: a
    /// refresh that listed the store before an inbox was made cannot replace the file that
    /// already holds it.
    writing: Arc<Mutex<()>>,
}

impl Refreshes {
    /// Refreshes that keep the file of known inboxes at `file`, if any.
    pub fn new(file: Option<PathBuf>) -> Self {
        Self {
            file: file.map(Arc::new),
            ..Self::default()
        }
    }

    /// Writes the file of known inboxes from what `secrets` remembers now, and returns once
    /// it is on disk: called after an inbox is made or rotated here, before the answer.
    pub async fn write_now(&self, secrets: &SecretCache) -> io::Result<()> {
        let Some(path) = self.file.clone() else {
            return Ok(());
        };
        let _writing = self.writing.lock().await;
        let inboxes = secrets.known();
        tokio::task::spawn_blocking(move || known::save(&path, &inboxes))
            .await
            .map_err(io::Error::other)?
    }

    /// Asks for a refresh after a change made through this node. One asked during a
    /// refresh runs again once that one is done.
    pub fn want(&self) {
        self.wanted.notify_one();
    }

    /// Refreshes that read the store and wrote the file, since start.
    pub fn done(&self) -> u64 {
        self.done.load(Ordering::Relaxed)
    }
}

/// The task that refreshes.
pub(crate) struct Refresher {
    pub(crate) store: Store,
    pub(crate) secrets: SecretCache,
    pub(crate) every: Duration,
    pub(crate) refreshes: Refreshes,
}

impl Refresher {
    /// The cache filled from the file, which a restart during an outage depends on. Read
    /// before the service takes its first request.
    pub(crate) fn load_file(&self) {
        let Some(path) = &self.refreshes.file else {
            return;
        };
        match known::load(path) {
            Ok(inboxes) => {
                self.secrets.replace(&inboxes);
                tracing::info!(inboxes = inboxes.len(), file = %path.display(), "known inboxes read");
            }
            Err(error) => {
                tracing::warn!(%error, file = %path.display(), "the file of known inboxes is unreadable; the store's next answer replaces it");
            }
        }
    }

    /// Refreshes until the service stops.
    pub(crate) async fn run(self) {
        let mut was_failing = false;
        loop {
            let failed = self.refresh().await.is_err();
            if failed && !was_failing {
                tracing::warn!(
                    "the known inboxes cannot be refreshed; the last ones read are kept"
                );
            }
            was_failing = failed;
            let wait = if failed {
                self.every.min(RETRY_AFTER_FAILURE)
            } else {
                self.every
            };
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = self.refreshes.wanted.notified() => {}
            }
        }
    }

    async fn refresh(&self) -> Result<(), ()> {
        let limit = u32::try_from(MAX_CACHED_INBOXES).unwrap_or(u32::MAX);
        let _writing = self.refreshes.writing.lock().await;
        let inboxes = self.store.inboxes(limit).await.map_err(|error| {
            tracing::debug!(%error, "listing the inboxes failed");
        })?;
        self.secrets.replace(&inboxes);
        if let Some(path) = self.refreshes.file.as_deref().cloned() {
            let written = tokio::task::spawn_blocking(move || known::save(&path, &inboxes)).await;
            if let Ok(Err(error)) | Err(error) = written.map_err(std::io::Error::other) {
                tracing::warn!(%error, "writing the file of known inboxes failed");
                return Err(());
            }
        }
        self.refreshes.done.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

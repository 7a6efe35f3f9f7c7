//! The file of known inboxes: what this node last read of every inbox, kept beside its
//! spool so that a restart while the store is down still verifies their deliveries.
//!
//! It holds each inbox's id, instance, digest, provider, secret and the previous secret of
//! its last rotation with that rotation's age, so it is created with mode 0600 in the spool's
//! 0700 directory, as the spool's own records are. It is replaced whole, never edited in
//! place: written to a temporary file, flushed, renamed over the old one, and the directory
//! flushed, so a crash leaves the old file or the new one, never half of either.
//!
//! ```
//! use webhook_ingest::ids::{DigestId, InboxId, InstanceId};
//! use webhook_ingest::store::{InboxRow, KnownInbox};
//! use webhook_ingest::verify::known;
//! use webhook_ingest::provider::Provider;
//!
//! let dir = std::env::temp_dir().join(format!("known-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! let path = dir.join(known::KNOWN_INBOXES_FILE);
//! let inbox = InboxRow {
//!     id: InboxId::parse("ib_1").unwrap(),
//!     digest_id: DigestId::parse("dg_1").unwrap(),
//!     provider: Provider::Gitlab,
//!     secret: "whs_current".into(),
//!     previous: None,
//! };
//! let instance = InstanceId::parse("in_1").unwrap();
//! known::save(&path, &[KnownInbox { instance, inbox }]).unwrap();
//! let loaded = known::load(&path).unwrap();
//! assert_eq!((loaded[0].instance.as_str(), loaded[0].inbox.secret.as_str()), ("in_1", "whs_current"));
//! # std::fs::remove_dir_all(&dir).unwrap();
//! ```

use std::fs;
use std::io::{self, Write};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::ids::{DigestId, InboxId, InstanceId};
use crate::provider::Provider;
use crate::store::{InboxRow, KnownInbox, PreviousSecret};

/// The file's name in the spool's directory.
pub const KNOWN_INBOXES_FILE: &str = "known-inboxes.json";
/// The layout written; a file of another version is not read (its inboxes are then unknown
/// until the store answers, which is how a first start is too).
const VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
struct File {
    version: u32,
    /// When it was written, by this machine's clock: a previous secret's age keeps growing
    /// from here while the node is down.
    written_at_ms: u64,
    inboxes: Vec<Entry>,
}

#[derive(Serialize, Deserialize)]
struct Entry {
    instance: String,
    id: String,
    digest: String,
    provider: String,
    secret: String,
    previous: Option<Previous>,
}

#[derive(Serialize, Deserialize)]
struct Previous {
    secret: String,
    /// The rotation's age when the store was read.
    age_ms: u64,
}

/// Replaces the file at `path` with `inboxes`, atomically and durably.
pub fn save(path: &Path, inboxes: &[KnownInbox]) -> io::Result<()> {
    let file = File {
        version: VERSION,
        written_at_ms: now_ms(),
        inboxes: inboxes.iter().map(entry).collect(),
    };
    let bytes = serde_json::to_vec(&file).map_err(io::Error::other)?;
    let temporary = path.with_extension("json.tmp");
    // A temporary file left by a crash may have been made by anyone: start a fresh one, so
    // the mode below is the one it has.
    match fs::remove_file(&temporary) {
        Err(error) if error.kind() != io::ErrorKind::NotFound => return Err(error),
        _ => {}
    }
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut out = options.open(&temporary)?;
    out.write_all(&bytes)?;
    out.sync_all()?;
    drop(out);
    fs::rename(&temporary, path)?;
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    fs::File::open(dir.unwrap_or(Path::new(".")))?.sync_all()
}

/// The inboxes in the file at `path`, each previous secret aged by the time since it was
/// written; none when there is no file yet.
pub fn load(path: &Path) -> io::Result<Vec<KnownInbox>> {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(error),
    };
    let file: File = serde_json::from_slice(&bytes)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    if file.version != VERSION {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("version {} is not {VERSION}", file.version),
        ));
    }
    // A clock that moved back ages nothing rather than rejuvenating a secret.
    let since = Duration::from_millis(now_ms().saturating_sub(file.written_at_ms));
    file.inboxes
        .into_iter()
        .map(|entry| known(entry, since))
        .collect()
}

fn entry(known: &KnownInbox) -> Entry {
    let inbox = &known.inbox;
    Entry {
        instance: known.instance.to_string(),
        id: inbox.id.to_string(),
        digest: inbox.digest_id.to_string(),
        provider: inbox.provider.as_str().to_owned(),
        secret: inbox.secret.clone(),
        previous: inbox.previous.as_ref().map(|previous| Previous {
            secret: previous.secret.clone(),
            age_ms: u64::try_from(previous.age.as_millis()).unwrap_or(u64::MAX),
        }),
    }
}

fn known(entry: Entry, since: Duration) -> io::Result<KnownInbox> {
    let provider = Provider::parse(&entry.provider).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("inbox `{}` has no known provider", entry.id),
        )
    })?;
    let previous = entry.previous.map(|previous| PreviousSecret {
        secret: previous.secret,
        age: Duration::from_millis(previous.age_ms).saturating_add(since),
    });
    // Ids this node wrote, as the store gave them.
    Ok(KnownInbox {
        instance: InstanceId::stored(entry.instance),
        inbox: InboxRow {
            id: InboxId::stored(entry.id),
            digest_id: DigestId::stored(entry.digest),
            provider,
            secret: entry.secret,
            previous,
        },
    })
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
        })
}

#[cfg(test)]
mod tests;

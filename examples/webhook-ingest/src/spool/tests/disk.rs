//! A disk that remembers what each flush made durable, and builds the files a power cut
//! would leave at any moment: the spool's power-cut test runs the spool on it.
//!
//! It writes through to the real files (so the spool reads what it wrote, as on any disk)
//! and keeps beside them, as a power cut would:
//!
//! - each file's bytes as of its last flush (`sync_data` or `sync_all`): bytes written since
//!   are lost, and a file never flushed is empty;
//! - each directory's list of files as of its last flush (`sync_dir`): a file created since
//!   is gone, and a file removed since is back, with the bytes its last flush kept.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use super::super::disk::{Disk, OsDisk};

/// How long the model's flush takes before its bytes count as durable. A real flush takes
/// milliseconds; so does this one, so that a writer that answers before its flush has ended
/// is seen answering with its bytes not yet durable (the test takes its power cut as soon as
/// the answer comes, while such a writer is still inside its flush).
const FLUSH_TAKES: Duration = Duration::from_millis(20);

/// The durable state of every file and directory the spool touched through this disk; cheap
/// to clone, every clone the same disk.
#[derive(Clone, Default)]
pub(super) struct PowerCutDisk {
    durable: Arc<Mutex<Durable>>,
}

#[derive(Default)]
struct Durable {
    /// Each file's bytes as of its last flush.
    files: BTreeMap<PathBuf, Vec<u8>>,
    /// Each directory's names as of its last flush.
    entries: BTreeMap<PathBuf, BTreeSet<OsString>>,
}

impl PowerCutDisk {
    fn durable(&self) -> MutexGuard<'_, Durable> {
        self.durable.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Writes into `to` (created) the files of `dir` that a power cut now leaves.
    pub(super) fn power_cut(&self, dir: &Path, to: &Path) {
        fs::create_dir_all(to).unwrap();
        let durable = self.durable();
        for name in durable.entries.get(dir).into_iter().flatten() {
            let bytes = durable
                .files
                .get(&dir.join(name))
                .map_or(&[][..], Vec::as_slice);
            fs::write(to.join(name), bytes).unwrap();
        }
    }

    fn flushed(&self, path: &Path) -> io::Result<()> {
        std::thread::sleep(FLUSH_TAKES);
        let bytes = fs::read(path)?;
        self.durable().files.insert(path.to_owned(), bytes);
        Ok(())
    }
}

/// The names in `dir` now.
fn listing(dir: &Path) -> io::Result<BTreeSet<OsString>> {
    fs::read_dir(dir)?
        .map(|entry| entry.map(|e| e.file_name()))
        .collect()
}

impl Disk for PowerCutDisk {
    fn open(&self, path: &Path) -> io::Result<File> {
        let dir = path.parent().expect("a spool file is in its directory");
        let mut durable = self.durable();
        // What a directory held before this disk first saw it was left by an earlier run:
        // on disk already, its list and its files' bytes.
        if !durable.entries.contains_key(dir) {
            let names = listing(dir)?;
            for name in &names {
                let file = dir.join(name);
                durable.files.insert(file.clone(), fs::read(file)?);
            }
            durable.entries.insert(dir.to_owned(), names);
        }
        drop(durable);
        OsDisk.open(path)
    }

    fn sync_data(&self, file: &File, path: &Path) -> io::Result<()> {
        OsDisk.sync_data(file, path)?;
        self.flushed(path)
    }

    fn sync_all(&self, file: &File, path: &Path) -> io::Result<()> {
        OsDisk.sync_all(file, path)?;
        self.flushed(path)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        OsDisk.remove(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        OsDisk.sync_dir(dir)?;
        self.durable().entries.insert(dir.to_owned(), listing(dir)?);
        Ok(())
    }
}

/// The model itself: what it keeps is what was flushed, file by file and entry by entry.
#[test]
fn a_power_cut_keeps_what_was_flushed_and_loses_the_rest() {
    let base = super::TempDir::new("disk-model");
    let (dir, cut) = (base.0.join("live"), base.0.join("cut"));
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("before"), b"left by an earlier run").unwrap();
    let disk = PowerCutDisk::default();
    let kept = dir.join("kept");
    let file = disk.open(&kept).unwrap();
    io::Write::write_all(&mut &file, b"flushed").unwrap();
    disk.sync_data(&file, &kept).unwrap();
    io::Write::write_all(&mut &file, b" and not").unwrap();
    disk.sync_dir(&dir).unwrap();
    disk.open(&dir.join("unlisted")).unwrap();
    disk.remove(&dir.join("before")).unwrap();
    disk.power_cut(&dir, &cut);
    assert_eq!(listing(&cut).unwrap(), listing_of(&["before", "kept"]));
    assert_eq!(fs::read(cut.join("kept")).unwrap(), b"flushed");
    assert_eq!(
        fs::read(cut.join("before")).unwrap(),
        b"left by an earlier run"
    );
    // Once the directory is flushed, the removal and the creation hold.
    disk.sync_dir(&dir).unwrap();
    fs::remove_dir_all(&cut).unwrap();
    disk.power_cut(&dir, &cut);
    assert_eq!(listing(&cut).unwrap(), listing_of(&["kept", "unlisted"]));
}

fn listing_of(names: &[&str]) -> BTreeSet<OsString> {
    names.iter().map(OsString::from).collect()
}

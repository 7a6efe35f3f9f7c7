//! The spool's file operations that decide what a crash or a power cut keeps: creating a
//! file, flushing its data, removing it, flushing a directory's list of files.
//!
//! They sit behind [`Disk`] so that a test can stand in for the disk, as vector's disk
//! buffer puts its file system behind a trait: the spool's power-cut test runs the spool on
//! a disk that remembers what each flush made durable and builds, at any moment, the files a
//! power cut would leave (`tests/disk.rs`). In-process every byte written reaches the file
//! whether flushed or not, so without that model a writer that never flushed would pass
//! every test. Reads and writes go to the [`File`]s themselves: what a write leaves before
//! its flush is exactly what the model says a power cut may drop.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;

/// The file operations of a spool that make data durable or change a directory's list.
/// Every method that takes a path takes the path of the file it acts on, so that a model
/// can tell the files apart.
pub(super) trait Disk: Send + Sync {
    /// Opens the file at `path` for reading and writing, creating it (mode 0600: records
    /// hold delivery bodies) when missing. A file created is listed durably only after
    /// [`sync_dir`](Disk::sync_dir).
    fn open(&self, path: &Path) -> io::Result<File>;

    /// Flushes the data of `file` (at `path`) to disk: a power cut from here on keeps it.
    fn sync_data(&self, file: &File, path: &Path) -> io::Result<()>;

    /// [`sync_data`](Disk::sync_data), with the file's metadata too.
    fn sync_all(&self, file: &File, path: &Path) -> io::Result<()>;

    /// Removes the file at `path`; its removal is durable only after
    /// [`sync_dir`](Disk::sync_dir).
    fn remove(&self, path: &Path) -> io::Result<()>;

    /// Makes the list of files of `dir` durable, after a file was created or removed.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
}

/// The operating system's file system: what the service runs on.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct OsDisk;

impl Disk for OsDisk {
    fn open(&self, path: &Path) -> io::Result<File> {
        let mut options = OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        options.open(path)
    }

    fn sync_data(&self, file: &File, _: &Path) -> io::Result<()> {
        file.sync_data()
    }

    fn sync_all(&self, file: &File, _: &Path) -> io::Result<()> {
        file.sync_all()
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }
}

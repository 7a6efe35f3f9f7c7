//! How a store is opened, beyond its location.

/// How to open a store, beyond its location.
#[derive(Debug, Clone, Default)]
pub struct OpenOptions {
    /// A PEM file of certificates to trust, beside the system's roots, when a PostgreSQL URL
    /// says `sslmode=verify-full`: a managed database's own CA.
    pub db_ca: Option<std::path::PathBuf>,
    /// Whether a SQLite file store's commit waits for the disk.
    pub sqlite_sync: SqliteSync,
}

/// Whether a SQLite commit, and so the answer that says stored, waits for the disk.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum SqliteSync {
    /// The WAL is fsynced after each commit and before its answers (as `synchronous=FULL`
    /// does, by a thread of its own that flushes one batch while the next is written); an
    /// acknowledged delivery survives a power cut.
    #[default]
    Full,
    /// `synchronous=NORMAL`: the WAL is fsynced only at checkpoints; a power cut or a
    /// kernel crash can lose the last acknowledged deliveries (a killed process loses none).
    Normal,
}

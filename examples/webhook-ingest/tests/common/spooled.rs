//! What the spool's tests share: a spool directory removed when done, a service beside a
//! peer on the same SQLite file, and `/health` and `/metrics` read and waited on.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;
use webhook_ingest::spool::{Spool, SpoolConfig};
use webhook_ingest::store::Store;

use super::{temp_path, Service, TEST_BODY_LIMIT};

/// How long a wait on `/health` may take: the drainer's longest backoff is 2 s, and a loaded
/// CI machine may take several of them.
pub const HEALTH_WAIT: Duration = Duration::from_secs(20);
/// How often a wait reads `/health`: often enough to add little to a test's time, seldom
/// enough not to load the service it watches.
const HEALTH_POLL: Duration = Duration::from_millis(20);

/// A spool directory, removed when dropped.
pub struct SpoolDir(pub PathBuf);

impl SpoolDir {
    /// A fresh directory in the temporary directory, named for the test.
    pub fn new(name: &str) -> Self {
        Self(temp_path(name, "spool"))
    }

    /// The spool in this directory, bounded to `max_bytes`.
    pub fn open(&self, max_bytes: u64) -> Spool {
        let config = SpoolConfig {
            max_bytes,
            ..SpoolConfig::new(&self.0)
        };
        Spool::open(config).unwrap()
    }
}

impl Drop for SpoolDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A service with a spool in `dir` on a fresh SQLite file, its config changed by `config`,
/// and a peer on the same file: another node of the fleet, through which inboxes are
/// made without the service knowing until its next refresh. Answers `(service, peer)`.
pub async fn with_peer(
    name: &str,
    dir: &Path,
    config: impl FnOnce(webhook_ingest::Config) -> webhook_ingest::Config,
) -> (Service, Service) {
    let db = temp_path(name, "db");
    let peer = Service::serve(
        Store::open(db.to_str().unwrap()).await.unwrap(),
        None,
        TEST_BODY_LIMIT,
    )
    .await;
    let config = config(webhook_ingest::Config {
        spool: Some(Spool::open(SpoolConfig::new(dir)).unwrap()),
        ..Service::config(TEST_BODY_LIMIT)
    });
    let store = Store::open(db.to_str().unwrap()).await.unwrap();
    let service = Service::serve_with(store, Some(db), config).await;
    (service, peer)
}

/// The service's `/health`, which answers 200 whether or not the store is up.
pub async fn health(service: &Service) -> Value {
    let answer = service
        .send(service.client.get(service.url("/health")))
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    answer.body
}

/// Waits until `check` holds of `/health`, and answers it; fails after `HEALTH_WAIT`.
pub async fn until(service: &Service, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    let start = Instant::now();
    loop {
        let health = health(service).await;
        if check(&health) {
            return health;
        }
        assert!(start.elapsed() < HEALTH_WAIT, "never {what}: {health}");
        tokio::time::sleep(HEALTH_POLL).await;
    }
}

/// Waits until the store is up and both spools are empty.
pub async fn drained(service: &Service) -> Value {
    until(service, "drained", |h| {
        h["store"] == "up" && h["spool"]["depth"] == 0 && h["spool"]["unverified"]["depth"] == 0
    })
    .await
}

/// The value of the `/metrics` line that starts with `series`: a name, or a name with its
/// labels.
pub async fn metric(service: &Service, series: &str) -> u64 {
    let metrics = service
        .send(service.client.get(service.url("/metrics")))
        .await;
    metrics
        .text
        .lines()
        .find_map(|line| line.strip_prefix(series)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {series} in {}", metrics.text))
}

//! A service on a real TCP port of 127.0.0.1, and the answers it gives.

use std::future::pending;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use faultline::ledger::Snapshot;
use faultline::Ledger;
use serde_json::Value;
use webhook_ingest::store::Store;

use super::{temp_path, Outage, ADMIN_TOKEN, TEST_BODY_LIMIT};

/// A running service; aborted, and its database removed, when dropped.
pub struct Service {
    pub addr: SocketAddr,
    pub ledger: Ledger,
    /// The store the service runs on, switched by [`Outage`].
    pub store: Store,
    /// Takes the service's store down and up again.
    pub outage: Outage,
    pub client: reqwest::Client,
    pub db: Option<PathBuf>,
    pub task: tokio::task::JoinHandle<()>,
    /// Starts the serve loop's shutdown ([`Service::stop`]).
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Service {
    /// On a throwaway in-memory store.
    pub async fn start() -> Self {
        Self::serve(
            Store::open(":memory:").await.unwrap(),
            None,
            TEST_BODY_LIMIT,
        )
        .await
    }

    /// On a fresh file, so reads run on the reader connections beside the writer, in WAL.
    pub async fn start_on_file(name: &str) -> Self {
        Self::start_on_file_with_limit(name, TEST_BODY_LIMIT).await
    }

    /// On a fresh file, taking webhook bodies up to `body_limit` bytes.
    pub async fn start_on_file_with_limit(name: &str, body_limit: usize) -> Self {
        let path = temp_path(name, "db");
        let store = Store::open(path.to_str().unwrap()).await.unwrap();
        Self::serve(store, Some(path), body_limit).await
    }

    /// On the PostgreSQL database at `url`, which every service started on it shares.
    pub async fn start_on_postgres(url: &str, body_limit: usize) -> Self {
        Self::serve(Store::open(url).await.unwrap(), None, body_limit).await
    }

    pub async fn serve(store: Store, db: Option<PathBuf>, body_limit: usize) -> Self {
        Self::serve_spooled(store, db, body_limit, None).await
    }

    /// With `spool` taking what the store cannot, drained by the service's drainer.
    pub async fn serve_spooled(
        store: Store,
        db: Option<PathBuf>,
        body_limit: usize,
        spool: Option<webhook_ingest::spool::Spool>,
    ) -> Self {
        let config = webhook_ingest::Config {
            spool,
            ..Self::config(body_limit)
        };
        Self::serve_with(store, db, config).await
    }

    /// The configuration the tests serve with unless they say otherwise.
    pub fn config(body_limit: usize) -> webhook_ingest::Config {
        webhook_ingest::Config {
            body_limit,
            admin_token: Some(ADMIN_TOKEN.to_owned()),
            ..webhook_ingest::Config::default()
        }
    }

    pub async fn serve_with(
        store: Store,
        db: Option<PathBuf>,
        config: webhook_ingest::Config,
    ) -> Self {
        faultline::install_panic_hook();
        // What no one could verify goes to its own small spool, inside the main one's
        // directory, as the binary opens it, unless the test opened one itself.
        let mut config = config;
        if let (Some(spool), None) = (&config.spool, &config.unverified) {
            let max_bytes = webhook_ingest::spool::unverified::DEFAULT_UNVERIFIED_MAX_BYTES;
            config.unverified =
                Some(webhook_ingest::spool::unverified::open(spool.dir(), max_bytes).unwrap());
        }
        let (store, outage) = Outage::wrap(store);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        // As the binary does: the base URL from the address bound, unless the test set one.
        config
            .public_url
            .get_or_insert_with(|| format!("http://{addr}"));
        // As the binary does: the serve loop counts into the connections `/metrics` shows.
        let connections = config.connections.clone();
        let (app, ledger) = webhook_ingest::app(store.clone(), config);
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(async move {
            let limits = webhook_ingest::serve::Limits::default();
            // Only a stop asked for shuts down: a dropped service is aborted instead.
            let shutdown = async {
                if stopped.await.is_err() {
                    pending::<()>().await;
                }
            };
            webhook_ingest::serve::serve(listener, app, limits, connections, shutdown).await;
        });
        Self {
            addr,
            ledger,
            store,
            outage,
            client: reqwest::Client::new(),
            db,
            task,
            stop: Some(stop),
        }
    }

    /// Stops the service as its binary does at a signal, and returns once it is down: its
    /// port closed and every connection to it closed, the keep-alive ones a client pooled
    /// too. Dropping a service only aborts its task, which leaves those connections
    /// answering for a moment after; a test that needs the service down uses this.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        (&mut self.task).await.unwrap();
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// Waits until no request is in flight, then takes a snapshot.
    pub async fn quiescent(&self) -> Snapshot {
        let settled = tokio::time::timeout(Duration::from_secs(10), self.ledger.quiescent()).await;
        let snapshot = self.ledger.snapshot();
        assert!(settled.is_ok(), "still in flight: {snapshot:#?}");
        snapshot
    }

    /// Waits for quiet, checks that the requests since `before` all started and ended as
    /// exactly `ok`, `rejected` (axum's) and `handled` (the handlers' own), and nothing else.
    pub async fn assert_counted(
        &self,
        before: &Snapshot,
        ok: u64,
        rejected: u64,
        handled: u64,
    ) -> Snapshot {
        let after = self.quiescent().await;
        let sent = ok + rejected + handled;
        assert_eq!(after.started - before.started, sent, "{after:#?}");
        assert_eq!(after.finished() - before.finished(), sent, "{after:#?}");
        assert_eq!(after.ok - before.ok, ok, "{after:#?}");
        assert_eq!(after.rejected - before.rejected, rejected, "{after:#?}");
        assert_eq!(after.handled - before.handled, handled, "{after:#?}");
        after
    }

    pub async fn send(&self, request: reqwest::RequestBuilder) -> Answer {
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let bytes = response.bytes().await.unwrap();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Answer {
            status,
            headers,
            body,
            text,
        }
    }

    pub async fn post_json(&self, path: &str, key: &str, body: Value) -> Answer {
        self.send(
            self.client
                .post(self.url(path))
                .bearer_auth(key)
                .header("content-type", "application/json")
                .body(body.to_string()),
        )
        .await
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        self.task.abort();
        if let Some(path) = &self.db {
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
            }
        }
    }
}

pub struct Answer {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
    pub text: String,
}

impl Answer {
    pub fn str(&self, member: &str) -> String {
        self.body[member]
            .as_str()
            .unwrap_or_else(|| panic!("no `{member}` in {}", self.text))
            .to_owned()
    }

    /// Checks a problem response: status, code, content type, and the request id echoed.
    pub fn assert_problem(&self, status: u16, code: &str) {
        assert_eq!(self.status, status, "{}", self.text);
        assert_eq!(
            self.headers["content-type"], "application/problem+json",
            "{}",
            self.text
        );
        assert_eq!(self.body["code"], code, "{}", self.text);
        assert_eq!(self.body["status"], status);
        assert_eq!(
            self.headers["x-request-id"].to_str().unwrap(),
            self.body["request_id"].as_str().unwrap()
        );
    }
}

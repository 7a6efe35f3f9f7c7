//! Catch-up: the service asks GitHub or GitLab to redeliver what failed while it could not
//! answer.
//!
//! GitHub never redelivers a failed delivery on its own, and GitLab gives up after a few
//! tries, so a push sent while every node was down is lost unless someone asks. An inbox
//! given catch-up credentials (its hook, and a token or a GitHub App's key: [`credentials`])
//! is looked after by a loop that runs at start and every `--catchup-every`: it lists the
//! hook's deliveries newer than the inbox's cursor ([`github`], [`gitlab`], one
//! [`providers`](mod@providers) in front of both), and for each that failed and whose delivery id
//! (`X-GitHub-Delivery`, GitLab's `Idempotency-Key`) the store does not hold, asks the
//! provider to send it again ([`pass`](mod@pass)). The redelivery arrives through the
//! ordinary verified path and is stored once.
//!
//! - In a fleet one node works an inbox at a time, under a lease in the database, and the
//!   cursor moves only under that lease, so a delivery is asked for once, not once per node.
//! - The providers' rate limits are kept ([`limits`]): a pass stops at a limit and the inbox
//!   waits for the reset or the `Retry-After`; a 5xx is retried with a doubling backoff
//!   ([`client`]).
//! - Credentials the provider refuses stop the inbox's catch-up until new ones are given, said once
//!   in the log and shown on `/health` and in `/metrics` ([`metrics`]).

pub mod client;
pub mod credentials;
pub mod github;
pub mod gitlab;
pub mod jwt;
pub mod limits;
pub mod metrics;
pub mod pass;
pub mod providers;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use crate::ids::InboxId;
use crate::store::{CatchUps, Store};
use metrics::CatchUpMetrics;
use providers::Providers;

/// How often the loop looks unless `--catchup-every` says otherwise: a push lost in an outage
/// is back within five minutes of the service, at one or two requests per inbox each time
/// (12 to 24 an hour of the 5,000 a token may make).
pub const DEFAULT_CATCHUP_EVERY: Duration = Duration::from_secs(5 * 60);
/// The first wait after a 5xx from GitHub, doubled at each retry.
pub const DEFAULT_BACKOFF: Duration = Duration::from_secs(1);
/// Inboxes with catch-up one node looks after at most per round: a bound on one read.
const MAX_CATCHUP_INBOXES: u32 = 10_000;

/// How catch-up runs.
#[derive(Debug, Clone)]
pub struct CatchUp {
    /// The root of GitHub's REST API ([`github::GITHUB_API`], or a GitHub Enterprise
    /// Server's `https://HOST/api/v3`).
    pub api: String,
    /// The time between two rounds over every inbox with catch-up.
    pub every: Duration,
    /// The first wait after a 5xx.
    pub backoff: Duration,
    /// What catch-up's calls to the store go through; the service's store itself when
    /// `None`.
    pub wrap_store: Option<WrapStore>,
    /// This node's name in the leases; a fresh one ([`node_name`]) when `None`. The binary
    /// names it, to give its leases back at a clean stop.
    pub node: Option<String>,
}

/// A store in front of the one catch-up works through: given the service's store (its
/// catch-up operations, [`CatchUps`]), it makes the one catch-up's loop calls instead, which
/// sees every question the loop asks (the lease, the cursor, whether a delivery is stored) and
/// may change the answer. The way in for what sits between catch-up and its store: a trace of
/// its leases, a count of its calls, or a bug put there on purpose to see the checks that must
/// catch it fail, as the service's catch-up tests and its fleet scenario do
/// (`docs/reference-service.md` says how).
///
/// ```
/// use std::sync::Arc;
/// use webhook_ingest::catchup::{CatchUp, WrapStore};
///
/// // The store as it is: what a wrapper returns when it changes nothing.
/// let unchanged = WrapStore::new(|store| store);
/// let config = CatchUp { wrap_store: Some(unchanged), ..CatchUp::default() };
/// // A function has nothing to show: the configuration's `Debug` says only that one is set.
/// assert!(format!("{config:?}").contains("wrap_store: Some(WrapStore(..))"));
/// ```
#[derive(Clone)]
pub struct WrapStore(Arc<WrapFn>);

/// What a [`WrapStore`] runs: the service's store in, the one catch-up calls out.
type WrapFn = dyn Fn(Arc<dyn CatchUps>) -> Arc<dyn CatchUps> + Send + Sync;

impl WrapStore {
    /// The wrapper `wrap` makes of the service's store.
    pub fn new(
        wrap: impl Fn(Arc<dyn CatchUps>) -> Arc<dyn CatchUps> + Send + Sync + 'static,
    ) -> Self {
        WrapStore(Arc::new(wrap))
    }
}

impl std::fmt::Debug for WrapStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WrapStore(..)")
    }
}

/// Random bytes in a node's name: a name only has to differ from the fleet's others.
const NODE_NAME_BYTES: usize = 8;

/// A fresh name for a node in the leases.
pub fn node_name() -> String {
    let mut bytes = [0; NODE_NAME_BYTES];
    getrandom::fill(&mut bytes).expect("the OS random source works");
    format!("node_{}", crate::verify::webhook::hex_encode(&bytes))
}

impl Default for CatchUp {
    fn default() -> Self {
        Self {
            api: github::GITHUB_API.to_owned(),
            every: DEFAULT_CATCHUP_EVERY,
            backoff: DEFAULT_BACKOFF,
            wrap_store: None,
            node: None,
        }
    }
}

/// What the routes share of catch-up: its metrics, and a way to start a round now (after
/// credentials are given); cheap to clone.
#[derive(Clone, Default)]
pub struct Handle {
    pub metrics: CatchUpMetrics,
    wake: Arc<Notify>,
}

impl Handle {
    /// Starts a round now, or as soon as the one running ends.
    pub fn wake(&self) {
        self.wake.notify_one();
    }
}

/// The loop of one node.
pub(crate) struct Runner {
    /// The store's catch-up operations, through [`CatchUp::wrap_store`] when one is given.
    store: Arc<dyn CatchUps>,
    providers: Providers,
    metrics: CatchUpMetrics,
    /// This node's name in the leases: random, new at each start.
    node: String,
    every: Duration,
    wake: Arc<Notify>,
    /// Inboxes waiting for a rate limit, and until when.
    wait_until: HashMap<InboxId, tokio::time::Instant>,
}

impl Runner {
    /// The loop of this node.
    pub(crate) fn new(store: Store, config: &CatchUp, handle: &Handle) -> Runner {
        let node = config.node.clone().unwrap_or_else(node_name);
        let store = match &config.wrap_store {
            Some(WrapStore(wrap)) => wrap(store.catchup_operations()),
            None => store.catchup_operations(),
        };
        Runner {
            store,
            providers: Providers::new(&config.api, config.backoff),
            metrics: handle.metrics.clone(),
            node,
            every: config.every,
            wake: handle.wake.clone(),
            wait_until: HashMap::new(),
        }
    }

    /// A round now, then one every `every` or when woken, until the task is aborted.
    pub(crate) async fn run(mut self) {
        loop {
            self.round().await;
            tokio::select! {
                () = tokio::time::sleep(self.every) => {}
                () = self.wake.notified() => {}
            }
        }
    }

    /// One pass over each inbox with catch-up that is not refused or waiting.
    async fn round(&mut self) {
        let rows = match self.store.catchups(MAX_CATCHUP_INBOXES).await {
            Ok(rows) => rows,
            Err(error) => {
                tracing::debug!(%error, "catch-up could not read its inboxes; next round");
                return;
            }
        };
        self.metrics.saw(&rows);
        let now = tokio::time::Instant::now();
        self.wait_until.retain(|_, until| *until > now);
        for row in rows.iter().filter(|row| row.failing.is_none()) {
            if self.wait_until.contains_key(&row.inbox) {
                continue;
            }
            if let Err(error) = self.pass(row).await {
                tracing::warn!(inbox = %row.inbox, %error, "catch-up's pass failed: the store failed");
            }
        }
        // What the passes changed (last success, refusals), for /metrics and /health now.
        if let Ok(rows) = self.store.catchups(MAX_CATCHUP_INBOXES).await {
            self.metrics.saw(&rows);
        }
    }
}

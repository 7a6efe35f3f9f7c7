//! The service assembled: its configuration, the router of every route behind one fault
//! layer, and the background tasks (the refresher of the known inboxes, a drainer per
//! spool).

use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use axum::Router;
use faultline::{FaultLayer, Ledger};

use crate::catchup;
use crate::manage::{self, home, observe, rotation};
use crate::pipeline::{drain, ignored, refusals, replays, Pipeline};
use crate::receive;
use crate::serve;
use crate::spool;
use crate::state::{AbortOnDrop, AppState, Shared};
use crate::store::Store;
use crate::verify::{known, refresh, secret_cache};

/// GitHub's own cap on a webhook payload: a push larger than this never reaches us.
pub const DEFAULT_BODY_LIMIT: usize = 25 * 1024 * 1024;

/// The largest `--body-limit` the service starts with. A delivery the store cannot take is
/// kept in the spool, whose records hold [`spool::MAX_PAYLOAD_BYTES`]: half of that is left
/// for the delivery's fields (its ids, event and proof, bounded by the header limits), so
/// every body accepted can be spooled and read back.
pub const MAX_BODY_LIMIT: usize = 32 * 1024 * 1024;
const _: () = assert!(MAX_BODY_LIMIT as u64 * 2 <= spool::MAX_PAYLOAD_BYTES);

/// What the service can be configured with.
#[derive(Debug, Clone)]
pub struct Config {
    /// The largest webhook body accepted; larger ones get 413. Keep it at most
    /// [`MAX_BODY_LIMIT`] (the command line refuses more): past it, a delivery the store
    /// cannot take may not fit a spool record, and gets 503 `spool-unavailable`.
    pub body_limit: usize,
    /// The bearer token `/errors` asks for. The error groups hold internal text (5xx messages,
    /// chains, panic text) that no webhook sender may read; without a token `/errors` is not
    /// served at all.
    pub admin_token: Option<String>,
    /// How long a request's body and its answer may take, once its head has arrived.
    pub deadlines: serve::Deadlines,
    /// The connection counts served at `/metrics` beside the ledger's; the serve loop keeps
    /// them.
    pub connections: serve::Connections,
    /// How long an inbox's previous secret still passes after a rotation.
    pub secret_grace: std::time::Duration,
    /// Where verified deliveries go when the store cannot take them, answered 202 queued and
    /// drained into the store once it answers. Without one, store trouble answers 503. Its
    /// directory also keeps the file of known inboxes.
    pub spool: Option<spool::Spool>,
    /// Where deliveries to inboxes unknown here go while the store is down, verified when
    /// drained (see [`spool::unverified`]). Without one they are answered 503.
    pub unverified: Option<spool::Spool>,
    /// The largest body the unverified spool takes.
    pub unverified_max_body: usize,
    /// How often the known inboxes are read again from the store.
    pub inbox_refresh: std::time::Duration,
    /// The base URL providers and people reach the service by (`https://hooks.example.com`):
    /// an inbox's callback URL and the first page are built from it, never from a request's
    /// `Host` header, which the client chooses. Without one, [`DEFAULT_PUBLIC_URL`].
    pub public_url: Option<String>,
    /// Refusals kept for the inboxes' refusal lists per second at most, over every inbox;
    /// past it a refusal is only counted.
    pub refusals_per_second: u32,
    /// How the loop that asks GitHub to redeliver failed deliveries runs.
    pub catchup: catchup::CatchUp,
}

/// The base URL when none is configured: the default listen address.
pub const DEFAULT_PUBLIC_URL: &str = "http://127.0.0.1:3000";

impl Default for Config {
    fn default() -> Self {
        Self {
            body_limit: DEFAULT_BODY_LIMIT,
            admin_token: None,
            deadlines: serve::Deadlines::default(),
            connections: serve::Connections::default(),
            secret_grace: rotation::DEFAULT_SECRET_GRACE,
            spool: None,
            unverified: None,
            unverified_max_body: spool::unverified::DEFAULT_UNVERIFIED_MAX_BODY,
            inbox_refresh: refresh::DEFAULT_INBOX_REFRESH,
            refusals_per_second: refusals::DEFAULT_REFUSALS_PER_SECOND,
            public_url: None,
            catchup: catchup::CatchUp::default(),
        }
    }
}

/// The service's router, every route behind one fault layer whose ledger is returned with it.
/// It also starts, on the current tokio runtime, the refresher of the known inboxes and a
/// drainer for each spool configured, which run until the router is dropped.
pub fn app(store: Store, config: Config) -> (Router, Ledger) {
    let (layer, ledger) = FaultLayer::pair();
    let pipeline = Pipeline {
        store,
        secret_grace: config.secret_grace,
        secrets: secret_cache::SecretCache::default(),
        refreshes: refresh::Refreshes::new(
            config
                .spool
                .as_ref()
                .map(|spool| spool.dir().join(known::KNOWN_INBOXES_FILE)),
        ),
        ignored: ignored::IgnoredEvents::default(),
        refusals: Arc::new(refusals::Refusals::new(config.refusals_per_second)),
        spool: config.spool,
        unverified: config.unverified,
        unverified_max_body: config.unverified_max_body,
        replays_refused: replays::ReplaysRefused::default(),
    };
    let handle = catchup::Handle::default();
    let mut tasks = start_tasks(&pipeline, config.inbox_refresh);
    let runner = catchup::Runner::new(pipeline.store.clone(), &config.catchup, &handle);
    tasks.push(AbortOnDrop(tokio::spawn(runner.run()).abort_handle()));
    let state = AppState::new(Shared {
        pipeline,
        public_url: config
            .public_url
            .as_deref()
            .unwrap_or(DEFAULT_PUBLIC_URL)
            .trim_end_matches('/')
            .into(),
        catchup: handle,
        _tasks: tasks,
    });
    let hooks = Router::new().route(
        "/api/{instance}/inboxes/{inbox}/commits",
        post(receive::receive).layer(DefaultBodyLimit::max(config.body_limit)),
    );
    let metrics = get(observe::metrics(ledger.clone(), config.connections, &state));
    let mut router = manage::routes()
        .merge(hooks)
        .route("/", get(home::home))
        .route("/health", get(observe::health))
        .with_state(state)
        .route("/metrics", metrics);
    if let Some(admin_token) = config.admin_token {
        // The error groups hold internal text: the JSON and the inbox page alike answer only
        // the admin token.
        router = router
            .route(
                "/errors",
                observe::admin_only(admin_token.clone(), ledger.errors_handler()),
            )
            .route(
                "/errors/inbox",
                observe::admin_only(admin_token, ledger.errors_page_handler()),
            );
    }
    let deadlines =
        axum::middleware::from_fn_with_state(config.deadlines, serve::deadline::enforce);
    (router.layer(deadlines).layer(layer), ledger)
}

/// The refresher of the known inboxes, then a drainer for each spool, on the current tokio
/// runtime. The file of known inboxes is read before this returns, so the first request
/// already finds what it holds.
fn start_tasks(pipeline: &Pipeline, inbox_refresh: std::time::Duration) -> Vec<AbortOnDrop> {
    let refresher = refresh::Refresher {
        store: pipeline.store.clone(),
        secrets: pipeline.secrets.clone(),
        every: inbox_refresh,
        refreshes: pipeline.refreshes.clone(),
    };
    refresher.load_file();
    let mut tasks = vec![AbortOnDrop(tokio::spawn(refresher.run()).abort_handle())];
    for spool in pipeline.spool.iter().chain(&pipeline.unverified) {
        let drainer = drain::Drainer {
            pipeline: pipeline.clone(),
            spool: spool.clone(),
        };
        tasks.push(AbortOnDrop(tokio::spawn(drainer.run()).abort_handle()));
    }
    tasks
}

#[cfg(test)]
mod tests;

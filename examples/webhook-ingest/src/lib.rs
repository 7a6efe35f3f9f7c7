//! The webhook ingestion service's routes, behind one fault layer: this file assembles them.
//!
//! A library so that the integration tests serve the same routes in-process; the
//! `webhook-ingest` binary serves them over TCP. Organizations ("instances") own digests; each
//! digest has inboxes; each inbox receives push webhooks from one provider and stores their
//! commits.
//!
//! The folders follow a delivery: [`receive`] takes it, [`verify`] checks it, [`store`] keeps
//! it, or [`spool`] holds it while the store is down and drains it later; [`manage`] is the
//! API that creates instances and inboxes, [`serve`] the connections under all of it.

pub mod cli;
pub mod error;
pub mod manage;
pub mod receive;
pub mod serve;
pub mod spool;
pub mod store;
pub mod verify;

use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use axum::Router;
use faultline::{FaultLayer, Ledger};

use crate::manage::{observe, rotation};
use crate::receive::{ignored, refusals};
use crate::spool::drain;
use crate::store::Store;
use crate::verify::secret_cache;

/// GitHub's own cap on a webhook payload: a push larger than this never reaches us.
pub const DEFAULT_BODY_LIMIT: usize = 25 * 1024 * 1024;

/// What the service can be configured with.
#[derive(Debug, Clone)]
pub struct Config {
    /// The largest webhook body accepted; larger ones get 413.
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
    /// drained into the store once it answers. Without one, store trouble answers 503.
    pub spool: Option<spool::Spool>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            body_limit: DEFAULT_BODY_LIMIT,
            admin_token: None,
            deadlines: serve::Deadlines::default(),
            connections: serve::Connections::default(),
            secret_grace: rotation::DEFAULT_SECRET_GRACE,
            spool: None,
        }
    }
}

#[derive(Clone)]
pub(crate) struct AppState {
    store: Store,
    secret_grace: std::time::Duration,
    refusals: Arc<refusals::RefusalCounts>,
    ignored: ignored::IgnoredEvents,
    secrets: secret_cache::SecretCache,
    spool: Option<spool::Spool>,
    spool_refused: drain::Refusals,
    /// Stops the drainer when the last router holding this state is dropped.
    _drainer: Option<Arc<AbortOnDrop>>,
}

struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The service's router, every route behind one fault layer whose ledger is returned with it.
/// With a spool configured, it also starts the drainer (on the current tokio runtime), which
/// runs until the router is dropped.
pub fn app(store: Store, config: Config) -> (Router, Ledger) {
    let (layer, ledger) = FaultLayer::pair();
    let mut state = AppState {
        store,
        secret_grace: config.secret_grace,
        refusals: Arc::default(),
        ignored: ignored::IgnoredEvents::default(),
        secrets: secret_cache::SecretCache::default(),
        spool: config.spool,
        spool_refused: drain::Refusals::default(),
        _drainer: None,
    };
    if let Some(spool) = &state.spool {
        let drainer = drain::Drainer {
            store: state.store.clone(),
            spool: spool.clone(),
            secrets: state.secrets.clone(),
            ignored: state.ignored.clone(),
            refused: state.spool_refused.clone(),
            listed: state.refusals.clone(),
            secret_grace: state.secret_grace,
        };
        let task = tokio::spawn(drainer.run());
        state._drainer = Some(Arc::new(AbortOnDrop(task.abort_handle())));
    }
    let hooks = Router::new().route(
        "/api/{instance}/inboxes/{inbox}/commits",
        post(receive::receive).layer(DefaultBodyLimit::max(config.body_limit)),
    );
    let metrics = get(observe::metrics(
        ledger.clone(),
        config.connections,
        state.clone(),
    ));
    let mut router = manage::routes()
        .merge(hooks)
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
                observe::admin_only(admin_token, ledger.inbox_handler()),
            );
    }
    let deadlines =
        axum::middleware::from_fn_with_state(config.deadlines, serve::deadline::enforce);
    (router.layer(deadlines).layer(layer), ledger)
}

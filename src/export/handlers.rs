//! What a [`Ledger`] serves over HTTP, each as an axum handler to mount on a router: the
//! Prometheus exposition, the error groups as JSON, and the errors page.

use axum::response::{IntoResponse, Response};
use http::header::CONTENT_TYPE;

use crate::count::Ledger;
use crate::export::errors_page;
use crate::export::prometheus::PROMETHEUS_TEXT;

impl Ledger {
    /// An axum handler serving the exposition, to mount at `/metrics`.
    ///
    /// ```
    /// use axum::{routing::get, Router};
    ///
    /// let (layer, ledger) = faultline::FaultLayer::pair();
    /// let app: Router = Router::new()
    ///     .route("/metrics", get(ledger.metrics_handler()))
    ///     .layer(layer);
    /// # let _ = app;
    /// ```
    pub fn metrics_handler(
        &self,
    ) -> impl FnOnce() -> std::future::Ready<Response> + Clone + Send + Sync + 'static {
        let ledger = self.clone();
        move || {
            let body = ledger.snapshot().to_prometheus();
            std::future::ready(([(CONTENT_TYPE, PROMETHEUS_TEXT)], body).into_response())
        }
    }

    /// An axum handler serving the error groups as JSON, the most frequent first.
    ///
    /// The groups hold internal text (5xx messages, panic text, source chains), which no
    /// client may read: mount it only behind whatever guards your admin routes.
    ///
    /// ```
    /// use axum::{routing::get, Router};
    ///
    /// let (layer, ledger) = faultline::FaultLayer::pair();
    /// let app: Router = Router::new()
    ///     .route("/errors", get(ledger.errors_handler()))
    ///     .layer(layer);
    /// # let _ = app;
    /// ```
    pub fn errors_handler(
        &self,
    ) -> impl FnOnce() -> std::future::Ready<Response> + Clone + Send + Sync + 'static {
        let ledger = self.clone();
        move || {
            let body = errors_json(&ledger).to_string();
            std::future::ready(([(CONTENT_TYPE, "application/json")], body).into_response())
        }
    }

    /// An axum handler serving the errors page, the error groups as HTML for a person to read,
    /// to mount next to [`errors_handler`](Ledger::errors_handler).
    ///
    /// The page shows internal text (5xx messages, panic text, source chains): mount it only
    /// behind whatever guards your admin routes, never on a public router.
    ///
    /// ```
    /// use axum::{routing::get, Router};
    ///
    /// let (layer, ledger) = faultline::FaultLayer::pair();
    /// let admin: Router = Router::new()
    ///     .route("/errors", get(ledger.errors_handler()))
    ///     .route("/errors/page", get(ledger.errors_page_handler()));
    /// // …then guard `admin` with your admin authentication, and wrap the app in `layer`.
    /// # let _ = (admin, layer);
    /// ```
    pub fn errors_page_handler(
        &self,
    ) -> impl FnOnce() -> std::future::Ready<Response> + Clone + Send + Sync + 'static {
        let ledger = self.clone();
        move || std::future::ready(errors_page::page_response(ledger.render_errors_page()))
    }

    /// The errors page, as [`errors_page_handler`](Ledger::errors_page_handler) serves it.
    pub fn render_errors_page(&self) -> String {
        let snapshot = self.snapshot();
        let groups = self.groups();
        errors_page::render(
            &snapshot,
            &errors_page::lines(self),
            &groups,
            errors_page::unix_ms(),
        )
    }
}

/// The error groups and the failure counts, as [`Ledger::errors_handler`] serves them.
fn errors_json(ledger: &Ledger) -> serde_json::Value {
    let snapshot = ledger.snapshot();
    let groups: Vec<serde_json::Value> = ledger
        .groups()
        .into_iter()
        .map(|g| {
            serde_json::json!({
                "fingerprint": g.fingerprint,
                "count": g.count,
                "first_seen_ms": g.first_seen_ms,
                "last_seen_ms": g.last_seen_ms,
                "outcome": g.outcome.as_str(),
                "status": g.status,
                "code": g.code,
                "route": g.route,
                "message": g.message,
                "chain": g.chain,
                "location": g.location,
                "per_minute": g.per_minute,
            })
        })
        .collect();
    serde_json::json!({
        "failures": snapshot.failures(),
        "reported": snapshot.reported,
        "suppressed": snapshot.suppressed,
        "groups": groups,
    })
}

use std::fmt;

use axum::body::Body;
use axum::routing::get;
use axum::Router;
use base64::Engine as _;
use http::{Request, StatusCode};
use sha2::{Digest, Sha256};
use tower::ServiceExt;

use super::*;
use crate::{Error, FaultLayer};

const PAYLOAD: &str = "<script>document.title='pwned'</script>\"quoted\" & 'single' <b>bold</b>";

/// What the page may weigh with one group of a 10 MB `Display`: the summary is bounded, so
/// the page is the skeleton, its script and style, and one bounded message.
const MAX_PAGE_BYTES: usize = 32 * 1024;

/// An error whose `Display` would write 10 MB.
#[derive(Debug)]
struct Huge;

impl fmt::Display for Huge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for _ in 0..(10 * 1024 * 1024 / 64) {
            f.write_str("<script>alert(1)</script> ten megabytes, sixty-four at a time..\n")?;
        }
        Ok(())
    }
}

impl std::error::Error for Huge {}

async fn huge() -> Result<(), Error> {
    Err(Huge)?
}

async fn get_status(app: &Router, path: &str) -> StatusCode {
    let request = Request::get(path).body(Body::empty()).unwrap();
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    status
}

fn app(layer: FaultLayer) -> Router {
    Router::new()
        .route(
            "/hostile",
            get(|| async {
                Err::<(), _>(Error::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "hostile-input",
                    PAYLOAD,
                ))
            }),
        )
        .route("/huge", get(huge))
        .layer(layer)
}

#[tokio::test]
async fn every_string_from_an_error_is_escaped_and_the_page_stays_small() {
    let (layer, ledger) = FaultLayer::pair();
    let app = app(layer);
    for _ in 0..3 {
        assert_eq!(get_status(&app, "/hostile").await, 422);
    }
    assert_eq!(get_status(&app, "/huge").await, 500);
    assert_eq!(get_status(&app, "/missing").await, 404);

    let page = ledger.render_errors_page();
    assert!(page.len() < MAX_PAGE_BYTES, "{} bytes", page.len());
    // One script element, the page's own; no tag from an error survives.
    assert_eq!(page.matches("<script").count(), 1, "{page}");
    assert!(!page.contains("<b>bold"));
    assert!(page.contains(
        "&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;&quot;quoted&quot; \
         &amp; &#39;single&#39; &lt;b&gt;bold&lt;/b&gt;"
    ));
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt; ten megabytes"));

    // Most frequent first, one row per group, with its count.
    let hostile = page.find("<td class=\"code\">hostile-input</td>").unwrap();
    let huge = page.find("<td class=\"code\">internal</td>").unwrap();
    assert!(hostile < huge);
    assert_eq!(page.matches("<tr data-outcome=").count(), 3);
    assert!(page.contains("<td class=\"count\">3</td><td class=\"code\">hostile-input"));
    // The trend: this minute holds the three failures.
    assert!(page.contains("data-max=\"3\" data-total=\"3\""));
}

#[tokio::test]
async fn the_handler_sends_a_strict_policy_that_admits_only_the_page_s_own_code() {
    let (layer, ledger) = FaultLayer::pair();
    let app = app(layer).route("/errors/page", get(ledger.errors_page_handler()));
    let request = Request::get("/errors/page").body(Body::empty()).unwrap();
    let response = app.oneshot(request).await.unwrap();
    assert_eq!(response.status(), 200);
    let headers = response.headers();
    assert_eq!(headers[CONTENT_TYPE], "text/html; charset=utf-8");
    assert_eq!(headers[CACHE_CONTROL], "no-store");
    let csp = headers[CONTENT_SECURITY_POLICY].to_str().unwrap();
    assert!(csp.starts_with("default-src 'none'; "));
    assert!(!csp.contains("unsafe"));
    for code in [SCRIPT, STYLE] {
        let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(code));
        assert!(csp.contains(&format!("'sha256-{hash}'")), "{csp}");
    }
    let body = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    let page = std::str::from_utf8(&body).unwrap();
    // The hashes cover the exact text between the tags.
    assert!(page.contains(&format!("<script>{SCRIPT}</script>")));
    assert!(page.contains(&format!("<style>{STYLE}</style>")));
    assert!(page.contains("No failures so far."));
    for external in ["src=", "href=\"http", "@import", "url("] {
        assert!(!page.contains(external), "{external}");
    }
}

#[test]
fn relative_times_read_at_a_glance() {
    assert_eq!(ago(400), "just now");
    assert_eq!(ago(12_000), "12 s ago");
    assert_eq!(ago(5 * 60_000 + 1), "5 min ago");
    assert_eq!(ago(3 * 3_600_000), "3 h ago");
    assert_eq!(ago(2 * 86_400_000), "2 d ago");
}

#[tokio::test]
async fn the_routes_burning_their_budget_fastest_come_first_with_their_figures() {
    let (layer, ledger) = FaultLayer::pair();
    let app = app(layer.clone()).merge(
        Router::new()
            .route("/fine", get(|| async { "fine" }))
            .layer(layer),
    );
    for _ in 0..7 {
        assert_eq!(get_status(&app, "/fine").await, 200);
    }
    assert_eq!(get_status(&app, "/huge").await, 500);
    // Client mistakes, a handler's 4xx or a 404 of no route, are left out of the budget, as
    // the rules leave them out.
    for _ in 0..3 {
        assert_eq!(get_status(&app, "/hostile").await, 422);
    }
    assert_eq!(get_status(&app, "/missing").await, 404);

    let page = ledger.render_errors_page();
    let budget = page.find("<section id=\"budget\">").unwrap();
    let groups = page.find("<table id=\"inbox\">").unwrap();
    assert!(budget < groups, "the budget comes above the groups");
    let huge_row = "<tr data-route=\"/huge\" data-requests=\"1\" data-failures=\"1\" \
                    data-ratio=\"1\" data-burn=\"";
    let huge = page.find(huge_row).unwrap();
    let burn: f64 = page[huge + huge_row.len()..]
        .split('"')
        .next()
        .and_then(|exact| exact.parse().ok())
        .unwrap();
    assert!((burn - 1000.0).abs() < 1e-9, "{burn}");
    let fine = page
        .find(
            "<tr data-route=\"/fine\" data-requests=\"7\" data-failures=\"0\" \
             data-ratio=\"0\" data-burn=\"0\" data-recent=\"0\" data-alert=\"none\">",
        )
        .unwrap();
    assert!(huge < fine, "the fastest burning first");
    assert!(!page.contains("data-route=\"/hostile\""));
    assert!(!page.contains("data-route=\"~unmatched\""));
    assert!(page
        .contains("<td class=\"num ratio\">100.000%</td><td class=\"num burn fast\">1000.0×</td>"));
    assert!(page.contains("<td class=\"num ratio\">0.000%</td><td class=\"num burn\">0.0×</td>"));
}

/// The budget row's `data-alert` for `route`.
fn alert_of<'a>(page: &'a str, route: &str) -> &'a str {
    let row = &page[page.find(&format!("<tr data-route=\"{route}\"")).unwrap()..];
    let at = row.find("data-alert=\"").unwrap() + "data-alert=\"".len();
    row[at..].split('"').next().unwrap()
}

#[tokio::test]
async fn a_route_pages_as_the_fast_burn_alert_would_once_past_its_traffic_guard() {
    let (layer, ledger) = FaultLayer::pair();
    let app = app(layer.clone()).merge(
        Router::new()
            .route("/fine", get(|| async { "fine" }))
            .layer(layer),
    );
    assert_eq!(get_status(&app, "/fine").await, 200);
    for _ in 0..99 {
        assert_eq!(get_status(&app, "/huge").await, 500);
    }
    // Past the guard were they counted, but the client's mistakes: they page no one.
    for _ in 0..150 {
        assert_eq!(get_status(&app, "/hostile").await, 422);
    }
    let page = ledger.render_errors_page();
    assert_eq!(alert_of(&page, "/huge"), "guard");
    assert!(page.contains("<td class=\"num alert\">too few requests</td>"));
    assert_eq!(alert_of(&page, "/fine"), "none");
    assert!(!page.contains("data-route=\"/hostile\""));

    // The hundredth request passes the rules' traffic guard.
    assert_eq!(get_status(&app, "/huge").await, 500);
    let page = ledger.render_errors_page();
    assert_eq!(alert_of(&page, "/huge"), "page");
    assert!(page.contains("<td class=\"num alert\"><strong>pages</strong></td>"));
    assert_eq!(alert_of(&page, "/fine"), "none");
    assert!(!page.contains("data-route=\"/hostile\""));
}

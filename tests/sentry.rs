//! Reporting to Sentry: a service that sets up sentry-rust the usual way (its panic
//! integration, [`faultline::install_panic_hook`] after it, sentry's tracing layer) gets one
//! Sentry event per server failure, carrying the failure's code and the request id its client
//! was shown, and a breadcrumb for each client error. Nothing in faultline knows of Sentry:
//! the failure's `tracing` event is what sentry's layer turns into an event (at ERROR, the
//! default level of a server failure) or a breadcrumb (at INFO, that of a client error).
//!
//! Sentry's test transport captures what would be sent. Its hub is the current thread's, so
//! the server and its client run on one current-thread runtime, over real TCP.

mod common;

use std::sync::Arc;

use common::Lab;
use sentry::integrations::panic::PanicIntegration;
use sentry::protocol::{Context, Event, Level};
use tracing_subscriber::layer::SubscriberExt;

/// The code of the failure lab's `/internal`.
const STORE_FAILED: &str = "store-failed";
/// The code of a panic the layer caught.
const PANIC: &str = "panic";

/// The context sentry's tracing layer puts a tracing event's fields in.
const TRACING_FIELDS: &str = "Rust Tracing Fields";

/// What a client was shown of one failure: its status, its code and its request id.
#[derive(Debug)]
struct Shown {
    status: u16,
    code: String,
    request_id: String,
}

/// Sends a GET of `path` and returns what the problem body and the header said.
async fn get(client: &reqwest::Client, lab: &Lab, path: &str) -> Shown {
    let response = client.get(lab.url(path)).send().await.unwrap();
    let status = response.status().as_u16();
    let header = response.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let body: serde_json::Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
    assert_eq!(body["request_id"], header.as_str(), "{path}: {body}");
    Shown {
        status,
        code: body["code"].as_str().unwrap().to_owned(),
        request_id: header,
    }
}

/// The requests of the test, in order: two client errors, then three server failures (a
/// handled 500, a panic, another handled 500), each from a fresh request id.
const PATHS: [&str; 5] = [
    "/handled",
    "/no-such-route",
    "/internal",
    "/panic",
    "/internal",
];

fn options() -> sentry::ClientOptions {
    sentry::ClientOptions {
        integrations: vec![Arc::new(PanicIntegration::new())],
        ..Default::default()
    }
}

/// Runs [`PATHS`] against the failure lab with sentry set up the usual way, then a panic
/// outside the layer; returns what each client was shown.
fn run() -> Vec<Shown> {
    // Sentry's panic hook is in place (the client above installed it); faultline's goes
    // after it, in `Lab::start`.
    let subscriber = tracing_subscriber::registry().with(sentry::integrations::tracing::layer());
    let _default = tracing::subscriber::set_default(subscriber);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let shown = runtime.block_on(async {
        let lab = Lab::start().await;
        let client = reqwest::Client::new();
        let mut shown = Vec::new();
        for path in PATHS {
            shown.push(get(&client, &lab, path).await);
        }
        lab.quiescent().await;
        shown
    });
    // A panic outside the layer still reaches sentry's panic integration.
    assert!(std::panic::catch_unwind(|| panic!("outside the layer")).is_err());
    shown
}

/// The value of field `name` of the tracing event an event was made from: sentry's layer
/// files the fields in a context of their own.
fn field<'a>(event: &'a Event<'static>, name: &str) -> Option<&'a str> {
    match event.contexts.get(TRACING_FIELDS) {
        Some(Context::Other(fields)) => fields.get(name).and_then(|value| value.as_str()),
        _ => None,
    }
}

#[test]
fn each_server_failure_is_one_sentry_event_with_its_code_and_request_id() {
    let mut shown = Vec::new();
    let events = sentry::test::with_captured_events_options(|| shown = run(), options());
    let (failures, outside): (Vec<&Event>, Vec<&Event>) = events
        .iter()
        .partition(|e| e.logger.as_deref() == Some("faultline"));
    // One event per server failure, in order, each with the code and request id its client
    // was shown.
    let server: Vec<&Shown> = shown.iter().filter(|s| s.status >= 500).collect();
    assert_eq!(failures.len(), server.len(), "{events:#?}");
    for (event, shown) in failures.iter().zip(&server) {
        assert_eq!(event.level, Level::Error);
        assert_eq!(
            field(event, "error.type"),
            Some(shown.code.as_str()),
            "{event:#?}"
        );
        assert_eq!(field(event, "request_id"), Some(shown.request_id.as_str()));
    }
    assert_eq!(server[0].code, STORE_FAILED);
    assert_eq!(server[1].code, PANIC);
    // A breadcrumb per client error, carried by the events that follow them.
    let crumbs: Vec<&str> = failures[0]
        .breadcrumbs
        .iter()
        .filter(|b| b.category.as_deref() == Some("faultline"))
        .filter_map(|b| b.data.get("request_id").and_then(|v| v.as_str()))
        .collect();
    let client: Vec<&str> = shown
        .iter()
        .filter(|s| s.status < 500)
        .map(|s| s.request_id.as_str())
        .collect();
    assert_eq!(crumbs, client, "{:#?}", failures[0].breadcrumbs);
    // The panic outside the layer is sentry's panic integration's own event, and the only
    // other one: the panic the layer caught was not reported twice.
    assert_eq!(outside.len(), 1, "{outside:#?}");
    let exception = &outside[0].exception.values[0];
    assert_eq!(exception.ty, "panic");
    assert_eq!(exception.value.as_deref(), Some("outside the layer"));
}

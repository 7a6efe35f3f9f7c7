//! A webhook receiver on faultline's verified intake: each inbox a sender and a secret, given
//! on the command line; `POST /hooks/{inbox}` answers 200 with what it verified, or the
//! refusal as problem+json; `/metrics` counts both.
//!
//! ```sh
//! cargo run -p webhook-intake -- --port 3000 \
//!     --inbox repo=github:"$GITHUB_WEBHOOK_SECRET" --inbox billing=stripe:"$STRIPE_WEBHOOK_SECRET"
//! ```
//!
//! Prints `listening on ADDR` first (`--port 0` picks a free port). `load-scripts/verifiers/
//! sdks.sh` sends it deliveries signed by the senders' own libraries.
//!
//! `webhook-intake sign SENDER SECRET [--id ID] [--event EVENT] < body` prints, as a JSON
//! object, every header faultline's `Signer` sends with that body, signed now: what sdks.sh
//! has each sender's own library verify. The id and the event are given only for the senders
//! that send them.

use std::collections::HashMap;
use std::io::{self, Read};
use std::time::SystemTime;

use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;
use axum::routing::{get, post};
use axum::{Json, Router};
use faultline::webhooks::{
    DeliveryId, Intake, Keys, LookupError, Outgoing, Secret, SecretSet, Secrets, Sender, Signer,
    Verified,
};
use faultline::FaultLayer;
use serde_json::{json, Value};

/// The inboxes by name: the last segment of `/hooks/{inbox}`.
struct Inboxes(HashMap<String, Keys>);

impl Secrets for Inboxes {
    async fn keys(&self, request: &mut Parts) -> Result<Keys, LookupError> {
        let Ok(Path(inbox)) = Path::<String>::from_request_parts(request, &()).await else {
            return Err(LookupError::UnknownInbox);
        };
        self.0.get(&inbox).cloned().ok_or(LookupError::UnknownInbox)
    }
}

/// Runs only for a delivery whose signature matched: here it answers what it verified; a
/// service would store the body under its delivery id first.
async fn receive(Path(inbox): Path<String>, delivery: Verified<Inboxes>) -> Json<Value> {
    Json(json!({
        "inbox": inbox,
        "sender": delivery.sender().name(),
        "id": delivery.id(),
        "event": delivery.event(),
        "bytes": delivery.body().len(),
    }))
}

#[tokio::main]
async fn main() -> io::Result<()> {
    if std::env::args().nth(1).as_deref() == Some("sign") {
        return sign();
    }
    let (port, inboxes) = arguments()?;
    let (layer, ledger) = FaultLayer::pair();
    let app = Router::new()
        .route("/hooks/{inbox}", post(receive))
        .with_state(Intake::new(inboxes))
        .route("/metrics", get(ledger.metrics_handler()))
        .layer(layer);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("listening on {}", listener.local_addr()?);
    axum::serve(listener, app).await
}

/// `--port N` and any number of `--inbox NAME=SENDER:SECRET`.
fn arguments() -> io::Result<(u16, Inboxes)> {
    let usage =
        || io::Error::other("usage: webhook-intake --port N [--inbox NAME=SENDER:SECRET]...");
    let mut port = None;
    let mut inboxes = HashMap::new();
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(usage)?;
        match flag.as_str() {
            "--port" => port = Some(value.parse().map_err(|_| usage())?),
            "--inbox" => {
                let (name, keys) = inbox(&value).ok_or_else(usage)?;
                inboxes.insert(name.to_owned(), keys);
            }
            _ => return Err(usage()),
        }
    }
    Ok((port.ok_or_else(usage)?, Inboxes(inboxes)))
}

/// `NAME=SENDER:SECRET`, the secret as the sender's settings show it.
fn inbox(text: &str) -> Option<(&str, Keys)> {
    let (name, rest) = text.split_once('=')?;
    let (sender, secret) = rest.split_once(':')?;
    let sender = Sender::from_name(sender)?;
    let secret = Secret::for_sender(sender, secret).ok()?;
    Some((
        name,
        Keys::new(sender, SecretSet::new([secret]).ok()?).ok()?,
    ))
}

/// `sign SENDER SECRET [--id ID] [--event EVENT]`, the body on standard input: the signed
/// headers as JSON.
fn sign() -> io::Result<()> {
    let usage = || {
        io::Error::other(
            "usage: webhook-intake sign SENDER SECRET [--id ID] [--event EVENT] < body",
        )
    };
    let mut args = std::env::args().skip(2);
    let (Some(sender), Some(secret)) = (args.next(), args.next()) else {
        return Err(usage());
    };
    let sender = Sender::from_name(&sender).ok_or_else(usage)?;
    let signer = Signer::for_sender(sender, &secret).map_err(io::Error::other)?;
    let (mut id, mut event) = (None, None);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(usage)?;
        match flag.as_str() {
            "--id" => id = Some(DeliveryId::parse(&value).map_err(io::Error::other)?),
            "--event" => event = Some(value),
            _ => return Err(usage()),
        }
    }
    let mut body = Vec::new();
    io::stdin().read_to_end(&mut body)?;
    let mut delivery = Outgoing::new(&body);
    if let Some(id) = &id {
        delivery = delivery.id(id);
    }
    if let Some(event) = &event {
        delivery = delivery.event(event);
    }
    let headers = signer.sign(delivery, SystemTime::now());
    let headers: serde_json::Map<String, Value> = headers
        .iter()
        .map(|(name, value)| {
            let text = value.to_str().unwrap_or_default();
            (name.as_str().to_owned(), Value::from(text))
        })
        .collect();
    println!("{}", Value::Object(headers));
    Ok(())
}

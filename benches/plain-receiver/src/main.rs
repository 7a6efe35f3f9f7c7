//! The receiver a team writes by hand, and the baseline of `load-scripts/bench/ingest.sh`:
//! axum, the HMAC of GitHub's `X-Hub-Signature-256`, the push parsed with serde, and one
//! rusqlite transaction per delivery behind a mutex on tokio's blocking pool. No faultline,
//! no spool, no group commit.
//!
//! ```text
//! plain-receiver --port 0 --db FILE --secret SECRET --synchronous normal|full
//! ```
//!
//! `POST /hook` answers 201 `{"status":"stored","delivery":ID}` (200 `duplicate` for a
//! delivery id it has), 401 for a wrong signature, 400 for a push it cannot read. Prints
//! `listening on ADDR` as its first line.

use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use hmac::{KeyInit, Mac};
use rusqlite::{params, Connection};
use serde::Deserialize;
use serde_json::json;

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

struct Receiver {
    db: Mutex<Connection>,
    secret: Vec<u8>,
}

#[derive(Deserialize)]
struct Push {
    #[serde(rename = "ref")]
    git_ref: String,
    repository: Repository,
    commits: Vec<PushCommit>,
}

#[derive(Deserialize)]
struct Repository {
    full_name: String,
}

#[derive(Deserialize)]
struct PushCommit {
    id: String,
    message: Option<String>,
    timestamp: Option<String>,
    author: Option<Author>,
}

#[derive(Deserialize)]
struct Author {
    name: Option<String>,
}

struct Args {
    port: u16,
    db: String,
    secret: String,
    synchronous: String,
}

fn args() -> Result<Args, String> {
    let mut args = Args {
        port: 0,
        db: "plain-receiver.db".into(),
        secret: String::new(),
        synchronous: "NORMAL".into(),
    };
    let mut given = std::env::args().skip(1);
    while let Some(flag) = given.next() {
        let value = given.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--port" => args.port = value.parse().map_err(|_| "--port: not a port")?,
            "--db" => args.db = value,
            "--secret" => args.secret = value,
            "--synchronous" => match value.as_str() {
                "normal" | "full" => args.synchronous = value.to_uppercase(),
                _ => return Err("--synchronous: normal or full".into()),
            },
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    Ok(args)
}

fn open(args: &Args) -> rusqlite::Result<Connection> {
    let db = Connection::open(&args.db)?;
    db.pragma_update(None, "journal_mode", "WAL")?;
    db.pragma_update(None, "synchronous", &args.synchronous)?;
    db.execute_batch(
        "CREATE TABLE IF NOT EXISTS deliveries (
             delivery_id TEXT PRIMARY KEY, repository TEXT NOT NULL, branch TEXT NOT NULL);
         CREATE TABLE IF NOT EXISTS commits (
             seq INTEGER PRIMARY KEY AUTOINCREMENT, delivery_id TEXT NOT NULL,
             sha TEXT NOT NULL, message TEXT, author TEXT, timestamp TEXT);",
    )?;
    Ok(db)
}

fn hex(text: &str) -> Option<Vec<u8>> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

fn signed(secret: &[u8], headers: &HeaderMap, body: &[u8]) -> bool {
    let Some(tag) = headers
        .get("x-hub-signature-256")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("sha256="))
        .and_then(hex)
    else {
        return false;
    };
    let mut mac = HmacSha256::new_from_slice(secret).expect("any key length");
    mac.update(body);
    mac.verify_slice(&tag).is_ok()
}

fn store(db: &mut Connection, delivery: &str, push: &Push) -> rusqlite::Result<bool> {
    let tx = db.transaction()?;
    let branch = push.git_ref.trim_start_matches("refs/heads/");
    let new = tx
        .prepare_cached(
            "INSERT OR IGNORE INTO deliveries (delivery_id, repository, branch)
             VALUES (?1, ?2, ?3)",
        )?
        .execute(params![delivery, push.repository.full_name, branch])?
        == 1;
    if new {
        let mut insert = tx.prepare_cached(
            "INSERT INTO commits (delivery_id, sha, message, author, timestamp)
             VALUES (?1, ?2, ?3, ?4, ?5)",
        )?;
        for c in &push.commits {
            let author = c.author.as_ref().and_then(|a| a.name.as_deref());
            insert.execute(params![delivery, c.id, c.message, author, c.timestamp])?;
        }
    }
    tx.commit()?;
    Ok(new)
}

async fn hook(State(receiver): State<Arc<Receiver>>, headers: HeaderMap, body: Bytes) -> Response {
    if !signed(&receiver.secret, &headers, &body) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let Some(delivery) = headers
        .get("x-github-delivery")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
    else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let Ok(push) = serde_json::from_slice::<Push>(&body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let stored = tokio::task::spawn_blocking(move || {
        let mut db = receiver.db.lock().unwrap_or_else(|e| e.into_inner());
        store(&mut db, &delivery, &push).map(|new| (new, delivery))
    })
    .await;
    match stored {
        Ok(Ok((true, delivery))) => (
            StatusCode::CREATED,
            Json(json!({ "status": "stored", "delivery": delivery })),
        )
            .into_response(),
        Ok(Ok((false, delivery))) => (
            StatusCode::OK,
            Json(json!({ "status": "duplicate", "delivery": delivery })),
        )
            .into_response(),
        _ => StatusCode::SERVICE_UNAVAILABLE.into_response(),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = args().map_err(|e| format!("plain-receiver: {e}"))?;
    let receiver = Arc::new(Receiver {
        db: Mutex::new(open(&args)?),
        secret: args.secret.clone().into_bytes(),
    });
    let app = Router::new()
        .route("/hook", post(hook))
        .with_state(receiver);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", args.port)).await?;
    println!("listening on {}", listener.local_addr()?);
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                    .expect("a SIGTERM handler");
            term.recv().await;
        })
        .await?;
    Ok(())
}

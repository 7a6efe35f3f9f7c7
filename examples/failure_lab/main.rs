//! A server with one route per kind of failure, for tests, load scripts and benchmarks.
//!
//! ```text
//! cargo run --release --example failure_lab -- --port 3001
//! ```
//!
//! It binds 127.0.0.1 on `--port` (0 picks a free port) and prints
//! `listening on 127.0.0.1:PORT` as its first line on stdout.

mod app;

use std::io;

fn port_from_args() -> io::Result<u16> {
    let mut args = std::env::args().skip(1);
    let mut port = 0;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--port" => {
                let value = args.next().unwrap_or_default();
                port = value.parse().map_err(|_| {
                    io::Error::new(io::ErrorKind::InvalidInput, format!("bad --port `{value}`"))
                })?;
            }
            other => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("unknown argument `{other}`; usage: failure_lab [--port N]"),
                ))
            }
        }
    }
    Ok(port)
}

#[tokio::main]
async fn main() -> io::Result<()> {
    let port = port_from_args()?;
    faultline::install_panic_hook();
    let (app, _ledger) = app::app();
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("listening on {}", listener.local_addr()?);
    axum::serve(listener, app).await
}

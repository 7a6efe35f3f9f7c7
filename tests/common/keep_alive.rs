//! A raw HTTP/1.1 client that sends pairs of requests on one kept-alive connection: a first
//! request answered before its body is read, then a follow-up. The follow-up must be answered
//! on the same connection, or the first answer must have said `connection: close`, and then
//! on a new one: a connection closed without a word loses it.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;

/// How a request body goes on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// `content-length: n`, sent at once.
    Length(usize),
    /// `transfer-encoding: chunked`, `n` bytes in chunks of `chunk` bytes.
    Chunked { bytes: usize, chunk: usize },
    /// `content-length: n`, sent in `pieces` parts with `gap` between them.
    Trickled {
        bytes: usize,
        pieces: usize,
        gap: Duration,
    },
    /// `content-length: n` with `Expect: 100-continue`, the body held back until the server
    /// asks for it with `100 Continue`, which it must not when it answers first.
    ExpectContinue(usize),
}

impl Framing {
    /// The body's bytes.
    pub fn bytes(self) -> usize {
        match self {
            Framing::Length(n) | Framing::ExpectContinue(n) => n,
            Framing::Chunked { bytes, .. } | Framing::Trickled { bytes, .. } => bytes,
        }
    }
}

/// A request: method, path, extra header lines (each ending in `\r\n`), and its body.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: &'static str,
    pub path: String,
    pub headers: String,
    pub framing: Framing,
}

/// The head and body of an answer.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub close: bool,
    pub body: Vec<u8>,
}

/// What one pair gave.
#[derive(Debug)]
pub struct Pair {
    pub first: Answer,
    /// The follow-up's answer.
    pub second: Answer,
    /// Whether the follow-up went on the first request's connection.
    pub reused: bool,
}

/// Sends `first`, reads its answer, then sends `second` on the same connection unless the
/// answer said `connection: close`. Panics when the follow-up is lost: the connection ended
/// under it without the first answer saying so.
pub async fn pair(addr: SocketAddr, first: &Request, second: &Request) -> Pair {
    let (read, write) = TcpStream::connect(addr).await.unwrap().into_split();
    let mut read = BufReader::new(read);
    let writing = tokio::spawn(send(write, first.clone()));
    let first_answer = read_answer(&mut read)
        .await
        .unwrap_or_else(|error| panic!("no answer to {first:?}: {error}"));
    // A server that answers `close` may reset the connection under a body still being sent.
    let write = writing.await.unwrap();
    if first_answer.close {
        // Nothing more may come on this connection.
        let mut rest = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(5), read.read_to_end(&mut rest)).await;
        let (read, write) = TcpStream::connect(addr).await.unwrap().into_split();
        let second = exchange(BufReader::new(read), write, second).await;
        let second = second.unwrap_or_else(|error| panic!("follow-up lost: {error}"));
        return Pair {
            first: first_answer,
            second,
            reused: false,
        };
    }
    let write = write.unwrap_or_else(|error| panic!("first request not sent whole: {error}"));
    let second = exchange(read, write, second)
        .await
        .unwrap_or_else(|error| panic!("follow-up lost on a kept-alive connection: {error}"));
    Pair {
        first: first_answer,
        second,
        reused: true,
    }
}

async fn exchange(
    mut read: BufReader<OwnedReadHalf>,
    write: OwnedWriteHalf,
    request: &Request,
) -> std::io::Result<Answer> {
    // Held until the answer is in: dropping the write half shuts it down, and hyper closes a
    // connection whose client half-closed.
    let _write = send(write, request.clone()).await?;
    read_answer(&mut read).await
}

/// Writes `request`, its body framed as it says; gives the write half back.
async fn send(mut write: OwnedWriteHalf, request: Request) -> std::io::Result<OwnedWriteHalf> {
    let Request {
        method,
        path,
        headers,
        framing,
    } = request;
    let framing_header = match framing {
        Framing::Chunked { .. } => "transfer-encoding: chunked\r\n".to_owned(),
        Framing::ExpectContinue(n) => format!("content-length: {n}\r\nexpect: 100-continue\r\n"),
        _ => format!("content-length: {}\r\n", framing.bytes()),
    };
    let head = format!("{method} {path} HTTP/1.1\r\nhost: test\r\n{headers}{framing_header}\r\n");
    write.write_all(head.as_bytes()).await?;
    let body = vec![b'x'; framing.bytes()];
    match framing {
        Framing::Length(_) => write.write_all(&body).await?,
        // Held back: the server answers before it asks for the body.
        Framing::ExpectContinue(_) => {}
        Framing::Chunked { chunk, .. } => {
            for part in body.chunks(chunk) {
                write
                    .write_all(format!("{:x}\r\n", part.len()).as_bytes())
                    .await?;
                write.write_all(part).await?;
                write.write_all(b"\r\n").await?;
            }
            write.write_all(b"0\r\n\r\n").await?;
        }
        Framing::Trickled { pieces, gap, .. } => {
            for part in body.chunks(body.len().div_ceil(pieces).max(1)) {
                write.write_all(part).await?;
                write.flush().await?;
                tokio::time::sleep(gap).await;
            }
        }
    }
    write.flush().await?;
    Ok(write)
}

/// Reads one answer: its head, then a body of the declared length. Interim answers
/// (`100 Continue`) are an error here: no test's server may ask for a body it answered.
pub async fn read_answer(read: &mut BufReader<OwnedReadHalf>) -> std::io::Result<Answer> {
    let mut status_line = String::new();
    if read.read_line(&mut status_line).await? == 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "connection closed before a head",
        ));
    }
    let status: u16 = status_line
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("not a status line: {status_line:?}"));
    assert!(status >= 200, "an interim answer: {status_line:?}");
    let (mut length, mut close) = (0, false);
    loop {
        let mut line = String::new();
        read.read_line(&mut line).await?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':').expect("a header line");
        let value = value.trim();
        match name.to_ascii_lowercase().as_str() {
            "content-length" => length = value.parse().expect("a length"),
            "connection" => close = value.eq_ignore_ascii_case("close"),
            "transfer-encoding" => panic!("the test's answers all have a length"),
            _ => {}
        }
    }
    let mut body = vec![0; length];
    read.read_exact(&mut body).await?;
    Ok(Answer {
        status,
        close,
        body,
    })
}

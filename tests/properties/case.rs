//! What one failing request is made of: the handler's errors, the case, and the caps of the
//! layer it meets.

use std::error::Error as StdError;
use std::fmt;

use axum::http::StatusCode;
use axum::routing::{get, MethodRouter};
use faultline::limits::{
    DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_MESSAGE_BYTES, MIN_BODY_BYTES, MIN_MESSAGE_BYTES,
};
use faultline::{Error, Fault, FaultLayer};

// The failing handler's errors.

/// One link of a `source()` chain.
#[derive(Debug)]
struct Link {
    message: String,
    next: Option<Box<Link>>,
}

impl fmt::Display for Link {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl StdError for Link {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.next.as_deref().map(|link| link as _)
    }
}

/// A chain whose links say `messages` in order; `None` when there are none.
fn build_chain(messages: &[String]) -> Option<Link> {
    let mut next: Option<Box<Link>> = None;
    for message in messages.iter().rev() {
        next = Some(Box::new(Link {
            message: message.clone(),
            next,
        }));
    }
    next.map(|head| *head)
}

/// A user error type whose `Display` writes its message in several `write_str` calls, each
/// one checked with `?` as a well-behaved `Display` does.
#[derive(Debug)]
struct PropFault {
    status: StatusCode,
    pieces: Vec<String>,
    chain: Option<Link>,
}

impl fmt::Display for PropFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for piece in &self.pieces {
            f.write_str(piece)?;
        }
        Ok(())
    }
}

impl StdError for PropFault {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.chain.as_ref().map(|link| link as _)
    }
}

impl Fault for PropFault {
    fn status(&self) -> StatusCode {
        self.status
    }

    fn code(&self) -> &'static str {
        "prop-fault"
    }
}

faultline::impl_into_response!(PropFault);

/// Which error the handler returns.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Kind {
    /// `faultline::Error::new(status, "prop-code", message)`, with the chain as its source.
    AdHoc,
    /// [`PropFault`], returned as itself through `impl_into_response!`.
    User,
}

/// Everything one failing request is made of.
#[derive(Debug, Clone)]
pub(crate) struct Case {
    pub(crate) kind: Kind,
    pub(crate) status: StatusCode,
    /// The message, split where the `Display` writes it piece by piece.
    pub(crate) pieces: Vec<String>,
    pub(crate) chain: Vec<String>,
}

impl Case {
    pub(crate) fn message(&self) -> String {
        self.pieces.concat()
    }

    pub(crate) fn code(&self) -> &'static str {
        match self.kind {
            Kind::AdHoc => "prop-code",
            Kind::User => "prop-fault",
        }
    }

    pub(crate) fn route(&self) -> MethodRouter {
        let case = self.clone();
        match self.kind {
            Kind::AdHoc => get(move || {
                let case = case.clone();
                async move {
                    let mut error = Error::new(case.status, "prop-code", case.message());
                    if let Some(chain) = build_chain(&case.chain) {
                        error = error.with_source(chain);
                    }
                    Err::<(), Error>(error)
                }
            }),
            Kind::User => get(move || {
                let case = case.clone();
                async move {
                    Err::<(), PropFault>(PropFault {
                        status: case.status,
                        pieces: case.pieces,
                        chain: build_chain(&case.chain),
                    })
                }
            }),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The layer's caps.

/// The caps a layer is built with; `None` leaves the default.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Caps {
    pub(crate) message: Option<usize>,
    pub(crate) body: Option<usize>,
    pub(crate) links: Option<usize>,
    pub(crate) development: bool,
}

impl Caps {
    pub(crate) fn layer(self) -> FaultLayer {
        let mut layer = FaultLayer::new();
        if let Some(bytes) = self.message {
            layer = layer.max_message_bytes(bytes);
        }
        if let Some(bytes) = self.body {
            layer = layer.max_body_bytes(bytes);
        }
        if let Some(links) = self.links {
            layer = layer.max_chain_links(links);
        }
        if self.development {
            layer = layer.development(true);
        }
        layer
    }

    /// The message cap in force: the builder raises values below the minimum.
    pub(crate) fn message_cap(self) -> usize {
        self.message.map_or(DEFAULT_MAX_MESSAGE_BYTES, |bytes| {
            bytes.max(MIN_MESSAGE_BYTES)
        })
    }

    /// The body cap in force: the builder raises values below the minimum.
    pub(crate) fn body_cap(self) -> usize {
        self.body
            .map_or(DEFAULT_MAX_BODY_BYTES, |bytes| bytes.max(MIN_BODY_BYTES))
    }
}

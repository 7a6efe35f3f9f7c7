//! The tower middleware, in the order a request meets it: [`layer`] builds the
//! [`FaultService`], whose `call` arms the request's [`guard`] and returns the [`future`]; the
//! future classifies the response ([`classify`]) and either passes it on with its body watched
//! ([`body`]) or answers the failure, in place of the response's own body ([`head`]). What all
//! of them share, one handle per stripe, is in [`shared`]. The request body is tapped on its
//! way in, so that what an answer leaves of it is read or the connection closed with a word
//! ([`drain`]).
//!
//! Only what the crate root names is visible outside this folder; the guard, the
//! classification, the head helpers and the shared state are the middleware's own.

mod body;
mod classify;
mod drain;
mod future;
mod guard;
mod head;
mod layer;
mod service;
mod shared;

pub use body::FaultBody;
pub use future::ResponseFuture;
pub use layer::FaultLayer;
pub use service::FaultService;

//! The tower middleware, in the order a request meets it: [`layer`] builds the
//! [`FaultService`](service::FaultService), whose `call` arms the request's [`guard`] and
//! returns the [`future`]; the future classifies the response ([`classify`]) and either
//! passes it on with its body watched ([`body`]) or answers the failure, in place of the
//! response's own body ([`head`]). What all of them
//! share, one handle per stripe, is in [`shared`].

pub(crate) mod body;
pub(crate) mod classify;
pub(crate) mod future;
pub(crate) mod guard;
mod head;
pub(crate) mod layer;
pub(crate) mod service;
pub(crate) mod shared;

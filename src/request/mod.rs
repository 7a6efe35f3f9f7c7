//! What the layer keeps of a request to describe its failure ([`RequestMeta`], `meta.rs`),
//! captured at `call` without copying bytes and without writing memory that other cores
//! write; the process-wide table its route template is interned in, once per process
//! (`route.rs`); and the ids made for the requests that bring none (`id.rs`).

mod id;
mod meta;
mod route;

pub(crate) use meta::RequestMeta;
pub(crate) use route::{interned_route, InternedRoute, RouteKey};

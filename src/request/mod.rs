//! What the layer keeps of a request to describe its failure ([`RequestMeta`], `meta.rs`),
//! captured at `call` without copying bytes and without writing memory that other cores
//! write; the process-wide table its route template is interned in, once per process
//! (`route.rs`); the ids made for the requests that bring none (`id.rs`); and the thread's
//! note of the request a layer is polling, through which code inside a request learns how
//! it was answered (`answer.rs`).

mod answer;
mod id;
mod meta;
mod route;

#[cfg(feature = "webhooks")]
pub(crate) use answer::attach;
pub(crate) use answer::{
    note_nested_route, note_waiting_fault, restore_nested_route, take_attached, take_nested_route,
    AnswerHook, CountingFor, COUNTING,
};
pub(crate) use id::RequestId;
pub(crate) use meta::RequestMeta;
pub(crate) use route::{interned_route, InternedRoute, RouteKey};

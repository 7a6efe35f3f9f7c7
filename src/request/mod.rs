//! What the layer keeps of a request.

mod meta;

pub(crate) use meta::{
    interned_route, request_id_text, InternedRoute, RequestMeta, RouteKey, MAX_INTERNED_ROUTES,
};

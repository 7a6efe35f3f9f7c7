//! Response bodies the tests serve to see how the layer counts a body that does not end.

use std::convert::Infallible;

use axum::body::Body;
use bytes::Bytes;

/// A body that sends one frame and then never ends.
pub fn endless() -> Body {
    let first = futures::stream::once(async { Ok::<_, Infallible>(Bytes::from_static(b"x")) });
    Body::from_stream(futures::StreamExt::chain(first, futures::stream::pending()))
}

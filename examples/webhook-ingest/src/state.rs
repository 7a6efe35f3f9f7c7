//! What every route shares: the pipeline, and what the management API adds to it.

use std::ops::Deref;
use std::sync::Arc;

use crate::pipeline::Pipeline;

/// The routes' state: one `Arc` around all of it. axum clones a route's state for every
/// request, twice (the router hands it to the handler, whose `State` extractor takes its
/// own); cloned part by part, that was some twenty reference counts raised and dropped per
/// request, about 2,000 instructions of a delivery (`BENCHMARKS.md`, "the 1-connection
/// figure, instructions cut"). Now it is one.
#[derive(Clone)]
pub(crate) struct AppState(Arc<Shared>);

/// The parts of [`AppState`], read through it.
pub(crate) struct Shared {
    pub(crate) pipeline: Pipeline,
    /// The configured public URL, without a trailing slash.
    pub(crate) public_url: Box<str>,
    /// Catch-up's metrics, and the wake-up of its loop.
    pub(crate) catchup: crate::catchup::Handle,
    /// Stops the drainers and the refresher when the last router holding this state is
    /// dropped.
    pub(crate) _tasks: Vec<AbortOnDrop>,
}

impl AppState {
    pub(crate) fn new(shared: Shared) -> AppState {
        AppState(Arc::new(shared))
    }
}

impl Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// A background task, aborted when dropped.
pub(crate) struct AbortOnDrop(pub(crate) tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

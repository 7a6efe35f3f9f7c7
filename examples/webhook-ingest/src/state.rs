//! What every route shares: the pipeline, and what the management API adds to it.

use std::sync::Arc;

use crate::pipeline::Pipeline;

/// The routes' state; cheap to clone.
#[derive(Clone)]
pub(crate) struct AppState {
    pub(crate) pipeline: Pipeline,
    /// The configured public URL, without a trailing slash.
    pub(crate) public_url: Arc<str>,
    /// Catch-up's metrics, and the wake-up of its loop.
    pub(crate) catchup: crate::catchup::Handle,
    /// Stops the drainers and the refresher when the last router holding this state is
    /// dropped.
    pub(crate) _tasks: Arc<Vec<AbortOnDrop>>,
}

/// A background task, aborted when dropped.
pub(crate) struct AbortOnDrop(pub(crate) tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

//! What every clone of the service, every response future and every watched body share, and
//! the stripe handles through which they hold it.
//!
//! Each request holds the shared state from `call` until its outcome is counted, and axum's
//! router clones the service for every request. Were that one `Arc`, every request on every
//! core would write its reference count: one cache line that the cores hand to each other, a
//! ceiling on the whole process. So the shared state is reached through one
//! [`StripeHandle`] per stripe ([`stripe`](crate::count::stripe)), each a counted pointer on
//! cache lines of its own: a request counts itself on its thread's handle only.

use std::ops::Deref;
use std::sync::{Arc, OnceLock, Weak};

use crate::config::Config;
use crate::count::ledger::Ledger;
use crate::count::stripe;

/// The state one [`FaultService`](crate::service::FaultService) and its clones share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) config: Config,
    pub(crate) ledger: Ledger,
    #[cfg_attr(
        not(any(feature = "opentelemetry", feature = "metrics")),
        allow(dead_code)
    )]
    pub(crate) bridges: Bridges,
    /// The handles, by stripe; weak, since each handle holds this state.
    handles: OnceLock<Box<[Weak<StripeHandle>]>>,
}

/// The metrics bridges a layer records into besides its ledger, each when configured.
#[derive(Debug, Clone, Default)]
pub(crate) struct Bridges {
    #[cfg(feature = "opentelemetry")]
    pub(crate) opentelemetry: Option<Arc<crate::export::opentelemetry::OpenTelemetryBridge>>,
    #[cfg(feature = "metrics")]
    pub(crate) metrics: Option<Arc<crate::export::metrics::MetricsBridge>>,
}

impl Bridges {
    /// Whether any bridge wants the requests' durations.
    #[cfg(any(feature = "opentelemetry", feature = "metrics"))]
    pub(crate) fn time_requests(&self) -> bool {
        #[allow(unused_mut)]
        let mut any = false;
        #[cfg(feature = "opentelemetry")]
        {
            any |= self.opentelemetry.is_some();
        }
        #[cfg(feature = "metrics")]
        {
            any |= self.metrics.is_some();
        }
        any
    }
}

/// A counted handle on the shared state, alone on its cache lines: its reference count is
/// written by the threads of one stripe only.
#[derive(Debug)]
#[repr(align(128))]
pub(crate) struct StripeHandle {
    shared: Arc<Shared>,
}

/// Every handle of one shared state. The services a layer builds hold it, so the handles live
/// as long as those do; the per-request clones hold one handle each.
pub(crate) type StripeHandles = Arc<[Arc<StripeHandle>]>;

impl Shared {
    pub(crate) fn new(config: Config, ledger: Ledger, bridges: Bridges) -> Self {
        Self {
            config,
            ledger,
            bridges,
            handles: OnceLock::new(),
        }
    }

    /// Makes one handle per stripe onto this state.
    pub(crate) fn into_handles(self) -> StripeHandles {
        let shared = Arc::new(self);
        let handles: StripeHandles = (0..stripe::count())
            .map(|_| {
                Arc::new(StripeHandle {
                    shared: shared.clone(),
                })
            })
            .collect();
        let weak = handles.iter().map(Arc::downgrade).collect();
        shared.handles.set(weak).expect("handles are made once");
        handles
    }
}

impl StripeHandle {
    /// The handle of the calling thread's stripe, counted once more; this one if the handles
    /// are gone (only per-request clones are left, which is correct, just shared again).
    pub(crate) fn here(self: &Arc<Self>) -> Arc<StripeHandle> {
        self.shared
            .handles
            .get()
            .and_then(|handles| handles[stripe::this_thread().index].upgrade())
            .unwrap_or_else(|| self.clone())
    }
}

impl Deref for StripeHandle {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.shared
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_gets_its_own_lane_and_lanes_end_with_the_services() {
        let handles =
            Shared::new(Config::default(), Ledger::new(), Bridges::default()).into_handles();
        let first = handles[0].clone();
        let here = first.here();
        assert!(Arc::ptr_eq(&here, &handles[stripe::this_thread().index]));
        assert_eq!(std::mem::align_of::<StripeHandle>(), 128);
        drop((handles, here));
        // Only a per-request clone is left: it still works, on its own handle.
        assert!(Arc::ptr_eq(&first.here(), &first));
    }
}

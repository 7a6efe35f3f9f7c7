//! What every clone of the service, every response future and every watched body share, and
//! the stripe handles through which they hold it.
//!
//! Each request holds the shared state from `call` until its outcome is counted, and axum's
//! router clones the service for every request. Were that one `Arc`, every request on every
//! core would write its reference count: one cache line that the cores hand to each other, a
//! ceiling on the whole process. So the shared state is reached through one
//! [`StripeHandle`] per stripe ([`StripedArc`]), each a counted pointer on cache lines of its
//! own: a request counts itself on its thread's handle only.

#[cfg(any(feature = "opentelemetry", feature = "metrics"))]
use std::sync::Arc;

use crate::config::Config;
use crate::count::Ledger;
use crate::stripe::{StripedArc, StripedHandles};

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
}

/// The metrics bridges a layer records into besides its ledger, each when configured.
#[derive(Debug, Clone, Default)]
pub(crate) struct Bridges {
    #[cfg(feature = "opentelemetry")]
    pub(crate) opentelemetry: Option<Arc<crate::export::OpenTelemetryBridge>>,
    #[cfg(feature = "metrics")]
    pub(crate) metrics: Option<Arc<crate::export::MetricsBridge>>,
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
pub(crate) type StripeHandle = StripedArc<Shared>;

/// Every handle of one shared state. The services a layer builds hold it, so the handles live
/// as long as those do; the per-request clones hold one handle each.
pub(crate) type StripeHandles = StripedHandles<Shared>;

impl Shared {
    pub(crate) fn new(config: Config, ledger: Ledger, bridges: Bridges) -> Self {
        Self {
            config,
            ledger,
            bridges,
        }
    }

    /// Makes one handle per stripe onto this state.
    pub(crate) fn into_handles(self) -> StripeHandles {
        StripedArc::handles(self)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::stripe::this_thread;

    #[test]
    fn a_thread_gets_its_own_handle_and_handles_end_with_the_services() {
        let handles =
            Shared::new(Config::default(), Ledger::new(), Bridges::default()).into_handles();
        let first = handles[0].clone();
        let here = first.here();
        assert!(Arc::ptr_eq(&here, &handles[this_thread().index]));
        drop((handles, here));
        // Only a per-request clone is left: it still works, on its own handle.
        assert!(Arc::ptr_eq(&first.here(), &first));
    }
}

//! What every clone of the service, every response future and every watched body share.

#[cfg(feature = "opentelemetry")]
use std::sync::Arc;

use crate::config::Config;
use crate::ledger::Ledger;

/// What every clone of the service shares: one allocation, one reference count per request.
#[derive(Clone, Debug)]
pub(crate) struct Shared {
    pub(crate) config: Config,
    pub(crate) ledger: Ledger,
    #[cfg(feature = "opentelemetry")]
    pub(crate) otel: Option<Arc<crate::otel::OtelMetrics>>,
}

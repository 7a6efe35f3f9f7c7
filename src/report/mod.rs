//! Reports: one tracing event per failure, never for a success, written by the middleware
//! when the ledger's flood control lets it through (see `count`), at the level
//! [`ReportLevels`](crate::ReportLevels) gives its outcome and status. The event carries the
//! failure's fingerprint and how many of that fingerprint were held back since the last.

mod event;

pub(crate) use self::event::emit;

//! Counters kept outside the ledger that its exposition carries beside its own: what a
//! component of the service counts (a webhook intake's replay store, its evictions), read at
//! each snapshot, so that `/metrics` needs no hand-written text.

use std::fmt;
use std::sync::Arc;

use crate::panic::lock;
use crate::sync::Mutex;

/// One counter kept outside the ledger, as a snapshot read it: a Prometheus counter's name
/// (`snake_case`, ending in `_total`), the `HELP` text that says what it counts, and its
/// value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counter {
    /// The metric name, such as `faultline_webhook_replays_evicted_total`.
    pub name: &'static str,
    /// What it counts, one line.
    pub help: &'static str,
    /// Its value when read.
    pub value: u64,
}

impl Counter {
    /// A counter's reading; panics when `name` is not a counter's name in the Prometheus
    /// text format (ASCII letters, digits and `_`, not starting with a digit, ending in
    /// `_total`) or `help` spans lines, since either would make the whole exposition invalid.
    pub fn new(name: &'static str, help: &'static str, value: u64) -> Self {
        let well_formed = name.ends_with("_total")
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        assert!(well_formed, "`{name}` is not a Prometheus counter name");
        assert!(!help.contains('\n'), "the help of `{name}` spans lines");
        Self { name, help, value }
    }
}

/// What keeps counters of its own that belong on the ledger's `/metrics`: given to
/// [`Ledger::export`](crate::Ledger::export), read at every snapshot. faultline's
/// `webhooks::ReplayMemory` is one.
pub trait ExportCounters: Send + Sync + 'static {
    /// The counters as they are now.
    fn counters(&self) -> Vec<Counter>;
}

/// The sources a ledger exports, in the order given.
#[derive(Default)]
pub(super) struct Exported(Mutex<Vec<Arc<dyn ExportCounters>>>);

impl Exported {
    pub(super) fn add(&self, source: Arc<dyn ExportCounters>) {
        lock(&self.0).push(source);
    }

    /// Every source's counters, read now; a name given by several sources once, summed, so
    /// that the exposition names each metric once.
    pub(super) fn read(&self) -> Vec<Counter> {
        let sources = lock(&self.0).clone();
        let mut counters: Vec<Counter> = Vec::new();
        for counter in sources.iter().flat_map(|source| source.counters()) {
            match counters.iter_mut().find(|seen| seen.name == counter.name) {
                Some(seen) => seen.value = seen.value.saturating_add(counter.value),
                None => counters.push(counter),
            }
        }
        counters
    }
}

impl fmt::Debug for Exported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Exported")
            .field("sources", &lock(&self.0).len())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    struct Fixed(&'static str, u64);

    impl ExportCounters for Fixed {
        fn counters(&self) -> Vec<Counter> {
            vec![Counter::new(self.0, "a count", self.1)]
        }
    }

    #[test]
    fn a_name_two_sources_give_is_read_once_summed_in_the_order_given() {
        let exported = Exported::default();
        exported.add(Arc::new(Fixed("b_total", 2)));
        exported.add(Arc::new(Fixed("a_total", 1)));
        exported.add(Arc::new(Fixed("b_total", 5)));
        let read: Vec<_> = exported
            .read()
            .into_iter()
            .map(|c| (c.name, c.value))
            .collect();
        assert_eq!(read, [("b_total", 7), ("a_total", 1)]);
        assert_eq!(format!("{exported:?}"), "Exported { sources: 3 }");
    }

    #[test]
    fn a_name_outside_the_text_format_is_refused() {
        for name in [
            "evicted",
            "9_total",
            "cache-evicted_total",
            "cache evicted_total",
        ] {
            let made = std::panic::catch_unwind(|| Counter::new(name, "help", 0));
            assert!(made.is_err(), "{name}");
        }
        assert!(std::panic::catch_unwind(|| Counter::new("a_total", "two\nlines", 0)).is_err());
        assert_eq!(Counter::new("cache_evicted_total", "help", 4).value, 4);
    }
}

//! Events the service acknowledges and does not store, counted per provider and event name.
//!
//! A hook subscribed to more than pushes (merge requests, issues, stars) sends those events
//! too. They are answered `202 {"status":"ignored"}`: a 4xx would count as a failed delivery,
//! and GitLab pauses, then disables, a hook after failures in a row, which stops its pushes
//! too. The count shows which hooks are subscribed to more than they need.
//!
//! The event name comes from a header the sender chooses, so the label set is bounded: past
//! [`MAX_EVENT_NAMES`] distinct names, or for a name longer than [`MAX_EVENT_NAME_BYTES`], the
//! count goes to the one label [`OTHER_EVENT`].
//!
//! ```
//! use webhook_ingest::pipeline::ignored::IgnoredEvents;
//! use webhook_ingest::provider::Vcs;
//!
//! let ignored = IgnoredEvents::default();
//! ignored.count(Vcs::Gitlab, "Merge Request Hook");
//! ignored.count(Vcs::Gitlab, "Merge Request Hook");
//! let mut exposition = String::new();
//! ignored.render_prometheus(&mut exposition);
//! assert!(exposition.contains(
//!     "webhook_ingest_ignored_events_total{provider=\"gitlab\",event=\"Merge Request Hook\"} 2"
//! ));
//! ```

use std::collections::HashMap;
use std::fmt::Write;
use std::sync::{Arc, Mutex};

use crate::provider::Vcs;

/// Distinct (provider, event) labels kept: GitHub has about 70 event kinds, GitLab and
/// Bitbucket a dozen or two each, so every real name fits and a forger's inventions do not.
pub const MAX_EVENT_NAMES: usize = 128;
/// Longest event name given its own label; the longest real one is well under 40 bytes.
pub const MAX_EVENT_NAME_BYTES: usize = 64;
/// The label the names past the bounds share.
pub const OTHER_EVENT: &str = "_other";

/// The counts of ignored events; cheap to clone, shared by the handlers and the drainer.
#[derive(Debug, Clone, Default)]
pub struct IgnoredEvents {
    counts: Arc<Mutex<HashMap<(Vcs, String), u64>>>,
}

impl IgnoredEvents {
    /// Counts one ignored `event` of `vcs`.
    pub fn count(&self, vcs: Vcs, event: &str) {
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        let key = (vcs, event.to_owned());
        if let Some(n) = counts.get_mut(&key) {
            *n += 1;
            return;
        }
        let own_label = event.len() <= MAX_EVENT_NAME_BYTES && counts.len() < MAX_EVENT_NAMES - 1;
        let key = if own_label {
            key
        } else {
            (vcs, OTHER_EVENT.to_owned())
        };
        *counts.entry(key).or_insert(0) += 1;
    }

    /// The count of `event` of `vcs` (of [`OTHER_EVENT`] for the names folded into it).
    pub fn get(&self, vcs: Vcs, event: &str) -> u64 {
        let counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        counts.get(&(vcs, event.to_owned())).copied().unwrap_or(0)
    }

    /// Appends the counts to a Prometheus text exposition.
    pub fn render_prometheus(&self, out: &mut String) {
        let counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        let mut rows: Vec<_> = counts.iter().collect();
        rows.sort_by(|a, b| (a.0 .0.as_str(), &a.0 .1).cmp(&(b.0 .0.as_str(), &b.0 .1)));
        out.push_str(
            "# HELP webhook_ingest_ignored_events_total Deliveries of events the service does \
             not store, answered 202.\n# TYPE webhook_ingest_ignored_events_total counter\n",
        );
        for ((vcs, event), n) in rows {
            let _ = writeln!(
                out,
                "webhook_ingest_ignored_events_total{{provider=\"{vcs}\",event=\"{}\"}} {n}",
                escape_label(event)
            );
        }
    }
}

/// A label value as the exposition format writes it: backslash, quote and newline escaped.
fn escape_label(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_past_the_bound_fold_into_one_label() {
        let ignored = IgnoredEvents::default();
        for n in 0..MAX_EVENT_NAMES * 2 {
            ignored.count(Vcs::Github, &format!("invented-{n}"));
        }
        ignored.count(Vcs::Github, &"x".repeat(MAX_EVENT_NAME_BYTES + 1));
        ignored.count(Vcs::Github, "invented-0");
        let labels = ignored.counts.lock().unwrap().len();
        assert_eq!(labels, MAX_EVENT_NAMES);
        assert_eq!(ignored.get(Vcs::Github, "invented-0"), 2);
        let folded = MAX_EVENT_NAMES * 2 - (MAX_EVENT_NAMES - 1) + 1;
        assert_eq!(ignored.get(Vcs::Github, OTHER_EVENT), folded as u64);
    }

    #[test]
    fn a_quote_in_a_name_cannot_break_the_exposition() {
        let ignored = IgnoredEvents::default();
        ignored.count(Vcs::Bitbucket, "a\"b\\c");
        let mut out = String::new();
        ignored.render_prometheus(&mut out);
        assert!(out.contains(r#"event="a\"b\\c"} 1"#), "{out}");
    }
}

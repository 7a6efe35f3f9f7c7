//! Reports: one tracing event per failure, never for a success, under flood control that
//! counts every event it holds back; and the error groups, a bounded local inbox of what
//! failed, how often and when.
//!
//! A failure's fingerprint is its outcome, code, route template and panic location. Per
//! fingerprint the first events of each window are written in full; the rest are suppressed
//! and counted, and the next event written for that fingerprint says how many were suppressed
//! since. Both tables are bounded and evict the least recently seen fingerprint, so memory
//! stays flat whatever the input. `failures == reported + suppressed` always holds at
//! quiescence.

use std::hash::{Hash, Hasher};

use rustc_hash::{FxHashMap, FxHasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use tracing::Level;

use crate::config::{ReportLevels, ReportLimits};
use crate::outcome::Outcome;
use crate::request::RequestMeta;
use crate::summary::Summary;

/// One error group: every failure with the same fingerprint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// The fingerprint, as 16 hex digits: also the `fault.fingerprint` of the events.
    pub fingerprint: String,
    /// Failures seen since the group was created.
    pub count: u64,
    /// When the group's first failure was seen, in milliseconds since the Unix epoch.
    pub first_seen_ms: u64,
    /// When its latest failure was seen, in milliseconds since the Unix epoch.
    pub last_seen_ms: u64,
    /// The outcome of its failures.
    pub outcome: Outcome,
    /// The status of its latest failure.
    pub status: u16,
    /// The code of its failures.
    pub code: String,
    /// The route template of its failures.
    pub route: String,
    /// The bounded internal message of its latest failure.
    pub message: String,
    /// The bounded source chain of its latest failure.
    pub chain: String,
    /// `file:line` of the panic, for panics seen with the panic hook installed.
    pub location: Option<String>,
}

/// Flood control and error groups; lives in the ledger, shared by every clone of a layer.
#[derive(Debug)]
pub(crate) struct Reporter {
    reported: AtomicU64,
    suppressed: AtomicU64,
    tables: Mutex<Tables>,
}

#[derive(Debug)]
struct Tables {
    limits: ReportLimits,
    /// A logical clock for "least recently seen".
    tick: u64,
    floods: FxHashMap<u64, Flood>,
    groups: FxHashMap<u64, GroupEntry>,
}

#[derive(Debug)]
struct Flood {
    window_start: Instant,
    written_in_window: u32,
    suppressed_since_written: u64,
    last_seen: u64,
}

#[derive(Debug)]
struct GroupEntry {
    group: Group,
    last_seen: u64,
}

/// What flood control decided for one failure.
enum Verdict {
    /// Write the event; this many were suppressed since the last one written.
    Write {
        suppressed_since: u64,
    },
    Suppress,
}

impl Reporter {
    pub(crate) fn new(limits: ReportLimits) -> Self {
        Self {
            reported: AtomicU64::new(0),
            suppressed: AtomicU64::new(0),
            tables: Mutex::new(Tables {
                limits,
                tick: 0,
                floods: FxHashMap::default(),
                groups: FxHashMap::default(),
            }),
        }
    }

    fn tables(&self) -> std::sync::MutexGuard<'_, Tables> {
        self.tables.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn limits(&self) -> ReportLimits {
        self.tables().limits
    }

    pub(crate) fn set_limits(&self, limits: ReportLimits) {
        self.tables().limits = limits;
    }

    /// Events written and suppressed so far.
    pub(crate) fn counts(&self) -> (u64, u64) {
        (
            self.reported.load(Ordering::Relaxed),
            self.suppressed.load(Ordering::Relaxed),
        )
    }

    /// The error groups, the most frequent first.
    pub(crate) fn groups(&self) -> Vec<Group> {
        let tables = self.tables();
        let mut groups: Vec<Group> = tables.groups.values().map(|e| e.group.clone()).collect();
        groups.sort_by(|a, b| {
            b.count
                .cmp(&a.count)
                .then_with(|| b.last_seen_ms.cmp(&a.last_seen_ms))
        });
        groups
    }

    /// Reports one failure: updates its group, and writes its event unless flood control
    /// holds it back.
    pub(crate) fn report(
        &self,
        summary: &Summary,
        meta: &RequestMeta,
        request_id: &str,
        levels: &ReportLevels,
    ) {
        let fingerprint = fingerprint(summary, meta.route());
        let verdict = {
            let mut tables = self.tables();
            tables.tick += 1;
            let tick = tables.tick;
            tables.record_group(fingerprint, tick, summary, meta);
            tables.judge(fingerprint, tick)
        };
        match verdict {
            Verdict::Suppress => {
                self.suppressed.fetch_add(1, Ordering::Relaxed);
            }
            Verdict::Write { suppressed_since } => {
                self.reported.fetch_add(1, Ordering::Relaxed);
                emit(
                    levels.of(summary.outcome, summary.status),
                    summary,
                    meta,
                    request_id,
                    fingerprint,
                    suppressed_since,
                );
            }
        }
    }
}

impl Tables {
    fn judge(&mut self, fingerprint: u64, tick: u64) -> Verdict {
        let limits = self.limits;
        let now = Instant::now();
        if !self.floods.contains_key(&fingerprint) && self.floods.len() >= limits.max_fingerprints {
            evict_least_recent(&mut self.floods, |f| f.last_seen);
        }
        let flood = self.floods.entry(fingerprint).or_insert(Flood {
            window_start: now,
            written_in_window: 0,
            suppressed_since_written: 0,
            last_seen: tick,
        });
        flood.last_seen = tick;
        if now.duration_since(flood.window_start) >= limits.window {
            flood.window_start = now;
            flood.written_in_window = 0;
        }
        if flood.written_in_window < limits.per_window {
            flood.written_in_window += 1;
            let suppressed_since = std::mem::take(&mut flood.suppressed_since_written);
            Verdict::Write { suppressed_since }
        } else {
            flood.suppressed_since_written += 1;
            Verdict::Suppress
        }
    }

    fn record_group(&mut self, fingerprint: u64, tick: u64, summary: &Summary, meta: &RequestMeta) {
        let limits = self.limits;
        if limits.max_groups == 0 {
            return;
        }
        let now_ms = unix_ms();
        if let Some(entry) = self.groups.get_mut(&fingerprint) {
            let group = &mut entry.group;
            entry.last_seen = tick;
            group.count += 1;
            group.last_seen_ms = now_ms;
            group.status = summary.status.as_u16();
            // `clone_from` reuses the strings' buffers: no allocation once a group exists.
            group.message.clone_from(&summary.message);
            group.chain.clone_from(&summary.chain);
            return;
        }
        if self.groups.len() >= limits.max_groups {
            evict_least_recent(&mut self.groups, |e| e.last_seen);
        }
        let group = Group {
            fingerprint: format!("{fingerprint:016x}"),
            count: 1,
            first_seen_ms: now_ms,
            last_seen_ms: now_ms,
            outcome: summary.outcome,
            status: summary.status.as_u16(),
            code: summary.code.to_owned(),
            route: meta.route().to_owned(),
            message: summary.message.clone(),
            chain: summary.chain.clone(),
            location: summary
                .site
                .as_ref()
                .map(|site| format!("{}:{}", site.file, site.line)),
        };
        self.groups.insert(
            fingerprint,
            GroupEntry {
                group,
                last_seen: tick,
            },
        );
    }
}

/// Removes the entry seen least recently. A scan, not a list: it runs only when a new
/// fingerprint meets a full table, and fingerprints come from the application's own routes,
/// codes and panic sites, not from raw input.
fn evict_least_recent<V>(table: &mut FxHashMap<u64, V>, last_seen: impl Fn(&V) -> u64) {
    if let Some(oldest) = table
        .iter()
        .min_by_key(|(_, v)| last_seen(v))
        .map(|(k, _)| *k)
    {
        table.remove(&oldest);
    }
}

/// Outcome, code, route template and panic location: what makes two failures the same.
/// FxHash is enough: none of these comes from raw input.
fn fingerprint(summary: &Summary, route: &str) -> u64 {
    let mut hasher = FxHasher::default();
    summary.outcome.hash(&mut hasher);
    summary.code.hash(&mut hasher);
    route.hash(&mut hasher);
    if let Some(site) = &summary.site {
        site.file.hash(&mut hasher);
        site.line.hash(&mut hasher);
    }
    hasher.finish()
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Writes the event of one failure.
fn emit(
    level: Level,
    summary: &Summary,
    meta: &RequestMeta,
    request_id: &str,
    fingerprint: u64,
    suppressed_since: u64,
) {
    macro_rules! emit_at {
        ($level:expr) => {
            tracing::event!(
                target: "faultline",
                $level,
                "error.type" = summary.code,
                "http.route" = meta.route(),
                "http.request.method" = meta.method(),
                "http.response.status_code" = summary.status.as_u16(),
                request_id,
                "fault.outcome" = summary.outcome.as_str(),
                "fault.fingerprint" = tracing::field::display(format_args!("{fingerprint:016x}")),
                "fault.suppressed" = suppressed_since,
                "fault.chain" = summary.chain.as_str(),
                "code.filepath" = summary.site.as_ref().map(|site| site.file.as_str()),
                "code.lineno" = summary.site.as_ref().map(|site| site.line),
                "{}",
                summary.message
            )
        };
    }
    match level {
        Level::ERROR => emit_at!(Level::ERROR),
        Level::WARN => emit_at!(Level::WARN),
        Level::INFO => emit_at!(Level::INFO),
        Level::DEBUG => emit_at!(Level::DEBUG),
        _ => emit_at!(Level::TRACE),
    }
}

#[cfg(test)]
mod tests {
    use std::io;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use http::{HeaderName, Request, StatusCode};

    use super::*;
    use crate::panic_hook::PanicSite;

    /// Collects what a fmt subscriber writes.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Captured {
        fn lines(&self) -> Vec<String> {
            String::from_utf8(self.0.lock().unwrap().clone())
                .unwrap()
                .lines()
                .map(str::to_owned)
                .collect()
        }
    }

    fn meta(path: &str) -> RequestMeta {
        let request = Request::get(path).body(()).unwrap();
        RequestMeta::capture(&request, &HeaderName::from_static("x-request-id"))
    }

    fn summary(code: &'static str, message: &str, line: Option<u32>) -> Summary {
        let mut summary = Summary::cancelled();
        summary.outcome = Outcome::Handled;
        summary.status = StatusCode::UNPROCESSABLE_ENTITY;
        summary.code = code;
        summary.message = message.to_owned();
        summary.site = line.map(|line| PanicSite {
            file: "src/hook.rs".to_owned(),
            line,
        });
        summary
    }

    fn limits(per_window: u32, window: Duration) -> ReportLimits {
        ReportLimits {
            per_window,
            window,
            ..ReportLimits::default()
        }
    }

    #[test]
    fn a_flood_is_held_back_counted_and_summed_up_in_the_next_event() {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        let reporter = Reporter::new(limits(3, Duration::from_millis(50)));
        let levels = ReportLevels::default();
        let (meta, failure) = (meta("/hook"), summary("unsupported-event", "nope", None));
        tracing::subscriber::with_default(subscriber, || {
            for _ in 0..10 {
                reporter.report(&failure, &meta, "rid", &levels);
            }
            assert_eq!(reporter.counts(), (3, 7));
            std::thread::sleep(Duration::from_millis(60));
            reporter.report(&failure, &meta, "rid", &levels);
        });
        assert_eq!(reporter.counts(), (4, 7));
        let lines = captured.lines();
        assert_eq!(lines.len(), 4, "{lines:#?}");
        assert!(lines[..3].iter().all(|l| l.contains("fault.suppressed=0")));
        assert!(lines[3].contains("fault.suppressed=7"), "{}", lines[3]);
        assert!(lines[3].contains("INFO"), "{}", lines[3]);
        assert!(
            lines[3].contains("error.type=\"unsupported-event\""),
            "{}",
            lines[3]
        );
    }

    #[test]
    fn fingerprints_are_separate_and_the_table_stays_bounded() {
        let reporter = Reporter::new(ReportLimits {
            per_window: 1,
            window: Duration::from_secs(60),
            max_fingerprints: 4,
            max_groups: 4,
        });
        let levels = ReportLevels::default();
        let meta = meta("/hook");
        // 100 panic sites: each new one is written once, and the tables never pass 4.
        for line in 0..100 {
            let failure = summary("panic", "boom", Some(line));
            reporter.report(&failure, &meta, "rid", &levels);
            reporter.report(&failure, &meta, "rid", &levels);
            let tables = reporter.tables.lock().unwrap();
            assert!(tables.floods.len() <= 4 && tables.groups.len() <= 4);
        }
        assert_eq!(reporter.counts(), (100, 100));
    }

    #[test]
    fn groups_keep_count_first_and_last_seen_and_the_latest_summary() {
        let reporter = Reporter::new(ReportLimits::default());
        let levels = ReportLevels::default();
        let meta = meta("/hook");
        for n in 0..5 {
            let message = format!("attempt {n}");
            reporter.report(&summary("often", &message, None), &meta, "rid", &levels);
        }
        reporter.report(&summary("rare", "once", Some(7)), &meta, "rid", &levels);
        let groups = reporter.groups();
        assert_eq!(groups.len(), 2);
        assert_eq!((groups[0].code.as_str(), groups[0].count), ("often", 5));
        assert_eq!(groups[0].message, "attempt 4");
        assert!(groups[0].first_seen_ms <= groups[0].last_seen_ms);
        assert_eq!(groups[0].route, crate::UNMATCHED_ROUTE);
        assert_eq!(groups[1].location.as_deref(), Some("src/hook.rs:7"));
        assert_ne!(groups[0].fingerprint, groups[1].fingerprint);
    }
}

//! The errors page's error budget section: the routes burning their budget fastest first, each
//! with its error ratio and burn rate over the last hour and, as its trend, the burn rate
//! over the last five minutes beside it; and whether the paging alert judges it a fast burn.

use std::fmt::Write as _;
use std::time::Duration;

use super::escape_into;
use crate::count::{Ledger, RouteBudget};

/// The objective the page judges by: the default of the Prometheus rules
/// (`deploy/prometheus/generate.py`), so that the page and the alerts agree.
pub(super) const PAGE_SLO: f64 = 0.999;

/// The long window, as the paging alert's, and the short one the trend compares with it.
const LONG: Duration = Duration::from_secs(3600);
const SHORT: Duration = Duration::from_secs(300);
const SHORT_MINUTES: u64 = SHORT.as_secs() / 60;

/// The paging alert's judgement, as `FaultlineFastBurn` makes it: the burn rate above this
/// over the hour and over five minutes, with at least [`MIN_REQUESTS`] in the hour.
/// `deploy/prometheus/check.sh` checks these against the rules' settings.
const FAST_BURN: f64 = 14.4;
/// The rules' traffic guard: fewer requests than this in the hour cannot page.
const MIN_REQUESTS: u64 = 100;

/// Routes shown: the fastest burning; the rest are in `/metrics` and [`Ledger::budget`].
const MAX_ROUTES_SHOWN: usize = 10;

/// One route's line: its budget over the hour, and its burn rate over five minutes with the
/// minutes that figure really covers.
pub(in crate::export) struct Line {
    pub(super) hour: RouteBudget,
    pub(super) recent: f64,
    pub(super) recent_minutes: u64,
}

/// The lines of the routes with requests in the last hour, the fastest burning first.
pub(in crate::export) fn lines(ledger: &Ledger) -> Vec<Line> {
    let recent = ledger.budget(PAGE_SLO, SHORT);
    ledger
        .budget(PAGE_SLO, LONG)
        .into_iter()
        .take(MAX_ROUTES_SHOWN)
        .map(|hour| {
            let short = recent.iter().find(|r| r.route == hour.route);
            Line {
                recent: short.map_or(0.0, |r| r.burn_rate),
                recent_minutes: short.map_or(SHORT_MINUTES, |r| r.minutes),
                hour,
            }
        })
        .collect()
}

/// Whether the short window's figure is recent: the history has a sample near its start. A
/// minute with neither a failure nor a read has no sample, so after a quiet spell the
/// "last 5 min" reaches back to the last failure, which the rule's 5m window would not see.
fn recent_is_fresh(line: &Line) -> bool {
    line.recent_minutes <= SHORT_MINUTES + 1
}

/// What the fast-burn alert makes of `line`, on this node's counts: it pages; it would,
/// but the route has too few requests; or the route burns slower, or its short window is not
/// recent. As a `data-alert` value and as the cell's text.
fn fast_burn(line: &Line) -> (&'static str, &'static str) {
    let burning =
        line.hour.burn_rate > FAST_BURN && line.recent > FAST_BURN && recent_is_fresh(line);
    match (burning, line.hour.requests >= MIN_REQUESTS) {
        (true, true) => ("page", "<strong>pages</strong>"),
        (true, false) => ("guard", "too few requests"),
        (false, _) => ("none", ""),
    }
}

pub(super) fn push_section(page: &mut String, lines: &[Line]) {
    let _ = write!(
        page,
        "<section id=\"budget\"><h2>Error budget, last hour, against {}%</h2>",
        PAGE_SLO * 100.0
    );
    if lines.is_empty() {
        page.push_str("<p class=\"empty\">No requests in the last hour.</p></section>\n");
        return;
    }
    page.push_str(
        "<table id=\"budgets\"><thead><tr><th>route</th><th>requests</th><th>failures</th>\
         <th>error ratio</th><th>burn rate</th><th>last 5 min</th>\
         <th>fast burn alert, this node</th></tr></thead><tbody>\n",
    );
    for line in lines {
        let Line { hour, recent, .. } = line;
        let (alert, alert_text) = fast_burn(line);
        page.push_str("<tr data-route=\"");
        escape_into(page, &hour.route);
        // The exact figures, for scripts and the browser check; the cells round them.
        let _ = write!(
            page,
            "\" data-requests=\"{}\" data-failures=\"{}\" data-ratio=\"{}\" data-burn=\"{}\" \
             data-recent=\"{recent}\" data-alert=\"{alert}\"><td class=\"route\">",
            hour.requests, hour.failures, hour.ratio, hour.burn_rate
        );
        escape_into(page, &hour.route);
        let arrow = match recent.partial_cmp(&hour.burn_rate) {
            Some(std::cmp::Ordering::Greater) => "rising",
            Some(std::cmp::Ordering::Less) => "falling",
            _ => "steady",
        };
        let _ = writeln!(
            page,
            "</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num ratio\">{:.3}%</td><td class=\"num burn{}\">{:.1}×</td>\
             <td class=\"num {arrow}\">{recent:.1}× {arrow}{}</td>\
             <td class=\"num alert\">{alert_text}</td></tr>",
            hour.requests,
            hour.failures,
            hour.ratio * 100.0,
            if hour.burn_rate > FAST_BURN {
                " fast"
            } else {
                ""
            },
            hour.burn_rate,
            if recent_is_fresh(line) {
                String::new()
            } else {
                format!(" over {} min", line.recent_minutes)
            },
        );
    }
    page.push_str("</tbody></table></section>\n");
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn line(requests: u64, burn_rate: f64, recent: f64) -> Line {
        stale_line(requests, burn_rate, recent, SHORT_MINUTES)
    }

    fn stale_line(requests: u64, burn_rate: f64, recent: f64, recent_minutes: u64) -> Line {
        Line {
            hour: RouteBudget {
                route: "/r".to_owned(),
                requests,
                failures: 0,
                ratio: 0.0,
                burn_rate,
                minutes: 60,
            },
            recent,
            recent_minutes,
        }
    }

    #[test]
    fn the_fast_burn_needs_both_windows_over_the_factor_and_the_traffic_guard() {
        let judged = |l: Line| fast_burn(&l).0;
        assert_eq!(judged(line(100, 20.0, 20.0)), "page");
        assert_eq!(judged(line(99, 20.0, 20.0)), "guard");
        // Burned fast over the hour, but no longer: the short window ends the page.
        assert_eq!(judged(line(1000, 20.0, 10.0)), "none");
        // Burning fast right now, but not yet over the hour.
        assert_eq!(judged(line(1000, 10.0, 20.0)), "none");
        // At exactly the factor, the rules' `>` does not fire.
        assert_eq!(judged(line(1000, FAST_BURN, FAST_BURN)), "none");
        // No sample for 40 minutes: the short window reaches back to a burst long over.
        assert_eq!(judged(stale_line(1000, 20.0, 20.0, 6)), "page");
        assert_eq!(judged(stale_line(1000, 20.0, 20.0, 40)), "none");
    }
}

//! The inbox's error budget section: the routes burning their budget fastest first, each
//! with its error ratio and burn rate over the last hour and, as its trend, the burn rate
//! over the last five minutes beside it.

use std::fmt::Write as _;
use std::time::Duration;

use super::escape_into;
use crate::count::{Ledger, RouteBudget};

/// The objective the page judges by: the default of the Prometheus rules
/// (`deploy/prometheus/generate.py`), so that the page and the alerts agree.
pub(super) const INBOX_SLO: f64 = 0.999;

/// The long window, as the paging alert's, and the short one the trend compares with it.
const LONG: Duration = Duration::from_secs(3600);
const SHORT: Duration = Duration::from_secs(300);

/// Routes shown: the fastest burning; the rest are in `/metrics` and [`Ledger::budget`].
const MAX_ROUTES_SHOWN: usize = 10;

/// One route's line: its budget over the hour, and its burn rate over five minutes.
pub(in crate::export) struct Line {
    pub(super) hour: RouteBudget,
    pub(super) recent: f64,
}

/// The lines of the routes with requests in the last hour, the fastest burning first.
pub(in crate::export) fn lines(ledger: &Ledger) -> Vec<Line> {
    let recent = ledger.budget(INBOX_SLO, SHORT);
    ledger
        .budget(INBOX_SLO, LONG)
        .into_iter()
        .take(MAX_ROUTES_SHOWN)
        .map(|hour| Line {
            recent: recent
                .iter()
                .find(|r| r.route == hour.route)
                .map_or(0.0, |r| r.burn_rate),
            hour,
        })
        .collect()
}

pub(super) fn push_section(page: &mut String, lines: &[Line]) {
    let _ = write!(
        page,
        "<section id=\"budget\"><h2>Error budget, last hour, against {}%</h2>",
        INBOX_SLO * 100.0
    );
    if lines.is_empty() {
        page.push_str("<p class=\"empty\">No requests in the last hour.</p></section>\n");
        return;
    }
    page.push_str(
        "<table id=\"budgets\"><thead><tr><th>route</th><th>requests</th><th>failures</th>\
         <th>error ratio</th><th>burn rate</th><th>last 5 min</th></tr></thead><tbody>\n",
    );
    for Line { hour, recent } in lines {
        page.push_str("<tr data-route=\"");
        escape_into(page, &hour.route);
        // The exact figures, for scripts and the browser check; the cells round them.
        let _ = write!(
            page,
            "\" data-requests=\"{}\" data-failures=\"{}\" data-ratio=\"{}\" data-burn=\"{}\" \
             data-recent=\"{recent}\"><td class=\"route\">",
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
             <td class=\"num {arrow}\">{recent:.1}× {arrow}</td></tr>",
            hour.requests,
            hour.failures,
            hour.ratio * 100.0,
            if hour.burn_rate >= 14.4 { " fast" } else { "" },
            hour.burn_rate,
        );
    }
    page.push_str("</tbody></table></section>\n");
}

//! The errors page: one self-contained HTML page over the error groups, for the person on
//! call who opens a browser, not `jq`.
//!
//! Above the groups, the error budget of the routes burning it fastest ([`Ledger::budget`](crate::Ledger::budget)
//! against the Prometheus rules' default objective). One row per group, the most frequent
//! first: code, status, outcome, route template, count,
//! first and last seen, the last hour per minute as inline SVG, and the latest bounded
//! summary behind a disclosure. Filters by outcome and status class and a search over code
//! and route run in a few lines of plain script. The page loads nothing (no script, font or
//! style from elsewhere) and its `Content-Security-Policy` allows only its own script and
//! style, by hash: an error message is attacker-influenced text, and every one is
//! HTML-escaped, so that it is shown, never run.

use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::response::{IntoResponse, Response};
use http::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, REFERRER_POLICY, X_CONTENT_TYPE_OPTIONS,
};

use crate::count::Group;
use crate::count::Snapshot;
use crate::outcome::Outcome;

/// The page's only script: the filters. `hidden` toggles rows, so no inline style is set.
const SCRIPT: &str = include_str!("errors_page/page.js");
/// The page's only style sheet.
const STYLE: &str = include_str!("errors_page/page.css");

/// The Content-Security-Policy: nothing but the page's own script and style, by their
/// SHA-256 (base64), which a test recomputes from [`SCRIPT`] and [`STYLE`]. After editing
/// either: `printf %s "$(openssl dgst -sha256 -binary page.css | base64 -w0)" > page.css.sha256`.
const CSP: &str = concat!(
    "default-src 'none'; ",
    "script-src 'sha256-",
    include_str!("errors_page/page.js.sha256"),
    "'; style-src 'sha256-",
    include_str!("errors_page/page.css.sha256"),
    "'; img-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
);

/// The trend's drawing: one bar per minute, this wide and this tall, in SVG units.
const BAR_WIDTH: f64 = 2.0;
const TREND_HEIGHT: f64 = 24.0;

pub(super) fn page_response(page: String) -> Response {
    (
        [
            (CONTENT_TYPE, "text/html; charset=utf-8"),
            (CONTENT_SECURITY_POLICY, CSP),
            (CACHE_CONTROL, "no-store"),
            (X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (REFERRER_POLICY, "no-referrer"),
        ],
        page,
    )
        .into_response()
}

pub(super) fn render(
    snapshot: &Snapshot,
    budget: &[budget::Line],
    groups: &[Group],
    now_ms: u64,
) -> String {
    let mut page = String::with_capacity(4096 + groups.len() * 2048);
    // The page's title and the groups table's id (`#inbox`) are the page as it was first
    // served: scripts and the browser checks of `load-scripts/errors-page/` read them, so the
    // rename to "errors page" stops at the code.
    page.push_str(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>Error inbox</title><style>",
    );
    page.push_str(STYLE);
    page.push_str("</style></head><body>\n<header><h1>Error inbox</h1><p class=\"totals\">");
    let _ = write!(
        page,
        "<span>failures <b id=\"failures\">{}</b></span> <span>groups <b id=\"groups\">{}</b></span> \
         <span>events reported <b>{}</b></span> <span>held back by flood control <b>{}</b></span> \
         <span>in flight <b>{}</b></span> <a href=\"\">reload</a>",
        snapshot.failures(),
        groups.len(),
        snapshot.reported,
        snapshot.suppressed,
        snapshot.in_flight,
    );
    page.push_str("</p>\n");
    push_filters(&mut page);
    page.push_str("</header>\n<main>");
    budget::push_section(&mut page, budget);
    if groups.is_empty() {
        page.push_str("<p class=\"empty\">No failures so far.</p>");
    }
    page.push_str(
        "<table id=\"inbox\"><thead><tr><th>count</th><th>code</th><th>status</th>\
         <th>outcome</th><th>route</th><th>first seen</th><th>last seen</th>\
         <th>last hour</th><th>latest</th></tr></thead><tbody>\n",
    );
    for group in groups {
        push_row(&mut page, group, now_ms);
    }
    page.push_str("</tbody></table><p id=\"shown\" aria-live=\"polite\"></p></main>\n<script>");
    page.push_str(SCRIPT);
    page.push_str("</script></body></html>\n");
    page
}

fn push_filters(page: &mut String) {
    page.push_str(
        "<form id=\"filters\" role=\"search\"><label>outcome <select id=\"outcome\">\
         <option value=\"\">all</option>",
    );
    for outcome in Outcome::ALL.iter().filter(|&&o| o != Outcome::Ok) {
        let _ = write!(page, "<option>{}</option>", outcome.as_str());
    }
    page.push_str(
        "</select></label> <label>status <select id=\"status\"><option value=\"\">all</option>\
         <option>4xx</option><option>5xx</option></select></label> \
         <label>search <input id=\"q\" type=\"search\" placeholder=\"code or route\" \
         autocomplete=\"off\"></label></form>\n",
    );
}

fn push_row(page: &mut String, group: &Group, now_ms: u64) {
    page.push_str("<tr data-outcome=\"");
    page.push_str(group.outcome.as_str());
    let _ = write!(page, "\" data-status=\"{}\" data-search=\"", group.status);
    escape_into(page, &group.code.to_lowercase());
    page.push(' ');
    escape_into(page, &group.route.to_lowercase());
    let _ = write!(
        page,
        "\" data-fingerprint=\"{}\"><td class=\"count\">{}</td><td class=\"code\">",
        group.fingerprint, group.count
    );
    escape_into(page, &group.code);
    let _ = write!(
        page,
        "</td><td class=\"status s{}\">{}</td><td class=\"outcome\">{}</td><td class=\"route\">",
        group.status / 100,
        group.status,
        group.outcome.as_str()
    );
    escape_into(page, &group.route);
    page.push_str("</td>");
    push_time(page, "first", group.first_seen_ms, now_ms);
    push_time(page, "last", group.last_seen_ms, now_ms);
    page.push_str("<td class=\"minutes\">");
    push_trend(page, &group.per_minute);
    page.push_str("</td><td class=\"latest\"><details><summary>");
    match group.message.lines().next() {
        Some(first_line) if !first_line.trim().is_empty() => escape_into(page, first_line),
        _ => page.push_str("<span class=\"none\">no message</span>"),
    }
    page.push_str("</summary><pre class=\"message\">");
    escape_into(page, &group.message);
    page.push_str("</pre>");
    if !group.chain.is_empty() {
        page.push_str("<p>caused by</p><pre class=\"chain\">");
        escape_into(page, &group.chain);
        page.push_str("</pre>");
    }
    if let Some(location) = &group.location {
        page.push_str("<p class=\"location\">panicked at ");
        escape_into(page, location);
        page.push_str("</p>");
    }
    page.push_str("</details></td></tr>\n");
}

fn push_time(page: &mut String, class: &str, at_ms: u64, now_ms: u64) {
    let _ = write!(
        page,
        "<td class=\"{class}\"><time data-ms=\"{at_ms}\">{}</time></td>",
        ago(now_ms.saturating_sub(at_ms))
    );
}

/// "12 s ago", "5 min ago", "3 h ago", "2 d ago": what a glance needs; the script adds the
/// exact time as a tooltip.
fn ago(ms: u64) -> String {
    let seconds = ms / 1000;
    match seconds {
        0 => "just now".to_owned(),
        1..=59 => format!("{seconds} s ago"),
        60..=3_599 => format!("{} min ago", seconds / 60),
        3_600..=86_399 => format!("{} h ago", seconds / 3_600),
        _ => format!("{} d ago", seconds / 86_400),
    }
}

/// The per-minute counts as bars, scaled to the busiest minute of the hour.
fn push_trend(page: &mut String, per_minute: &[u32]) {
    let max = per_minute.iter().copied().max().unwrap_or(0);
    let width = BAR_WIDTH * per_minute.len() as f64;
    let _ = write!(
        page,
        "<svg class=\"trend\" viewBox=\"0 0 {width} {TREND_HEIGHT}\" width=\"{width}\" \
         height=\"{TREND_HEIGHT}\" role=\"img\" data-max=\"{max}\" data-total=\"{}\">\
         <title>per minute, last hour: at most {max}</title><path d=\"",
        per_minute.iter().map(|&n| u64::from(n)).sum::<u64>()
    );
    for (minute, &count) in per_minute.iter().enumerate().filter(|(_, &n)| n > 0) {
        // At least one unit tall, so a single failure is visible beside a flood.
        let height = (f64::from(count) / f64::from(max) * TREND_HEIGHT).max(1.0);
        let _ = write!(
            page,
            "M{:.1} {TREND_HEIGHT}h{:.1}v-{height:.1}h-{:.1}z",
            minute as f64 * BAR_WIDTH,
            BAR_WIDTH * 0.8,
            BAR_WIDTH * 0.8
        );
    }
    let _ = write!(
        page,
        "\"/></svg> <span class=\"hour\">{}</span>",
        per_minute.iter().map(|&n| u64::from(n)).sum::<u64>()
    );
}

/// Escapes text for HTML element content and quoted attribute values.
fn escape_into(page: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => page.push_str("&amp;"),
            '<' => page.push_str("&lt;"),
            '>' => page.push_str("&gt;"),
            '"' => page.push_str("&quot;"),
            '\'' => page.push_str("&#39;"),
            c => page.push(c),
        }
    }
}

pub(super) fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

mod budget;

pub(super) use budget::lines;

#[cfg(all(test, not(loom)))]
mod tests;

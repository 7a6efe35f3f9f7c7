use prometheus_client::encoding::prometheus_text;

use super::*;

fn exposition(ignored: &IgnoredEvents) -> String {
    let mut registry = Registry::default();
    ignored.register(&mut registry);
    let mut out = String::new();
    prometheus_text::encode(&mut out, &registry).unwrap();
    out
}

#[test]
fn names_past_the_bound_fold_into_one_label() {
    let ignored = IgnoredEvents::default();
    for n in 0..MAX_EVENT_NAMES * 2 {
        ignored.count(Provider::Github, &format!("invented-{n}"));
    }
    ignored.count(Provider::Github, &"x".repeat(MAX_EVENT_NAME_BYTES + 1));
    ignored.count(Provider::Github, "invented-0");
    let labels = exposition(&ignored)
        .lines()
        .filter(|line| line.starts_with("webhook_ingest_ignored_events_total{"))
        .count();
    assert_eq!(labels, MAX_EVENT_NAMES);
    assert_eq!(ignored.get(Provider::Github, "invented-0"), 2);
    let folded = MAX_EVENT_NAMES * 2 - (MAX_EVENT_NAMES - 1) + 1;
    assert_eq!(ignored.get(Provider::Github, OTHER_EVENT), folded as u64);
}

#[test]
fn a_quote_in_a_name_cannot_break_the_exposition() {
    let ignored = IgnoredEvents::default();
    ignored.count(Provider::Bitbucket, "a\"b\\c");
    let out = exposition(&ignored);
    assert!(out.contains(r#"event="a\"b\\c"} 1"#), "{out}");
}

use prometheus_client::encoding::prometheus_text;

use super::*;

#[test]
fn the_gauge_follows_the_guards() {
    let connections = Connections::default();
    connections.set_limit(8);
    let first = connections.opened();
    let second = connections.opened();
    drop(first);
    assert_eq!((connections.open(), connections.accepted()), (1, 2));
    drop(second);
    let mut registry = Registry::default();
    connections.register(&mut registry);
    let mut text = String::new();
    prometheus_text::encode(&mut text, &registry).unwrap();
    assert!(
        text.contains("\nwebhook_ingest_open_connections 0\n"),
        "{text}"
    );
    assert!(
        text.contains("\nwebhook_ingest_connection_limit 8\n"),
        "{text}"
    );
    assert!(
        text.contains("\nwebhook_ingest_connections_accepted_total 2\n"),
        "{text}"
    );
}

#[test]
fn the_default_bound_leaves_descriptors_for_the_rest() {
    let bound = default_max_connections();
    assert!((1..=MAX_DEFAULT_CONNECTIONS).contains(&bound));
    if let Some(limit) = descriptor_limit() {
        assert!(bound + RESERVED_DESCRIPTORS <= limit.max(RESERVED_DESCRIPTORS + 1));
    }
}

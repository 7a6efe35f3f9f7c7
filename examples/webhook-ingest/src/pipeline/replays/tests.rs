use prometheus_client::encoding::prometheus_text;

use super::*;

/// Each provider's count is its own, read back as `/metrics` shows it: one never counted
/// reads 0, not the count of another.
#[test]
fn each_provider_reads_its_own_count() {
    let refused = ReplaysRefused::default();
    refused.count(Provider::Github);
    refused.count(Provider::Github);
    refused.count(Provider::Gitlab);
    assert_eq!(refused.get(Provider::Github), 2);
    assert_eq!(refused.get(Provider::Gitlab), 1);
    assert_eq!(refused.get(Provider::Bitbucket), 0);

    let mut registry = Registry::default();
    refused.register(&mut registry);
    let mut exposition = String::new();
    prometheus_text::encode(&mut exposition, &registry).unwrap();
    for (provider, count) in [("github", 2), ("gitlab", 1)] {
        let line =
            format!("webhook_ingest_replays_refused_total{{provider=\"{provider}\"}} {count}");
        assert!(exposition.lines().any(|l| l == line), "{exposition}");
    }
    assert!(!exposition.contains("bitbucket"), "{exposition}");
}

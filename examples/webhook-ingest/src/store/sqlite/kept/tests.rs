use super::*;
use crate::provider::Provider;

fn row(secret: &str) -> InboxRow {
    InboxRow {
        id: "ib".into(),
        digest_id: "dg".into(),
        provider: Provider::Github,
        secret: secret.into(),
        previous: None,
    }
}

/// A row read before a rotation, kept after the rotation forgot the inbox, would serve
/// the replaced secret for good; the generation refuses it.
#[test]
fn a_row_read_before_a_forget_is_not_kept_after_it() {
    let inboxes = KeptInboxes::default();
    let generation = inboxes.get("in", "ib").err().unwrap();
    inboxes.forget("in", "ib");
    inboxes.keep("in", &row("old"), generation, Instant::now());
    let generation = inboxes.get("in", "ib").err().unwrap();
    inboxes.keep("in", &row("new"), generation, Instant::now());
    assert_eq!(inboxes.get("in", "ib").unwrap().secret, "new");
    inboxes.forget("in", "ib");
    assert!(inboxes.get("in", "ib").is_err());
}

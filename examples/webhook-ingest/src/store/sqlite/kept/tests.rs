use super::*;
use crate::ids::DigestId;
use crate::provider::Provider;

fn row(secret: &str) -> InboxRow {
    InboxRow {
        id: InboxId::stored("ib".into()),
        digest_id: DigestId::stored("dg".into()),
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
    let (instance, inbox) = (
        &InstanceId::stored("in".into()),
        &InboxId::stored("ib".into()),
    );
    let generation = inboxes.get(instance, inbox).err().unwrap();
    inboxes.forget(instance, inbox);
    inboxes.keep(instance, &row("old"), generation, Instant::now());
    let generation = inboxes.get(instance, inbox).err().unwrap();
    inboxes.keep(instance, &row("new"), generation, Instant::now());
    assert_eq!(inboxes.get(instance, inbox).unwrap().secret, "new");
    inboxes.forget(instance, inbox);
    assert!(inboxes.get(instance, inbox).is_err());
}

use super::*;
use crate::ids::{DigestId, InboxId, InstanceId};

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("known-{name}-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn rotated(age: Duration) -> KnownInbox {
    KnownInbox {
        instance: InstanceId::stored("in_a".into()),
        inbox: InboxRow {
            id: InboxId::stored("ib_a".into()),
            digest_id: DigestId::stored("dg_a".into()),
            provider: Provider::Bitbucket,
            secret: "whs_new".into(),
            previous: Some(PreviousSecret {
                secret: "whs_old".into(),
                age,
            }),
        },
    }
}

#[test]
fn the_file_is_private_and_a_previous_secret_keeps_ageing() {
    let dir = temp_dir("private");
    let path = dir.join(KNOWN_INBOXES_FILE);
    save(&path, &[rotated(Duration::from_secs(60))]).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    }
    assert!(!path.with_extension("json.tmp").exists());
    std::thread::sleep(Duration::from_millis(20));
    let loaded = load(&path).unwrap();
    let previous = loaded[0].inbox.previous.as_ref().unwrap();
    assert_eq!(previous.secret, "whs_old");
    assert!(
        previous.age >= Duration::from_millis(60_020),
        "{:?}",
        previous.age
    );
    assert_eq!(loaded[0].inbox.provider, Provider::Bitbucket);
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_save_replaces_the_whole_file_and_no_file_is_no_inbox() {
    let dir = temp_dir("replace");
    let path = dir.join(KNOWN_INBOXES_FILE);
    assert!(load(&path).unwrap().is_empty());
    save(&path, &[rotated(Duration::ZERO), rotated(Duration::ZERO)]).unwrap();
    save(&path, &[rotated(Duration::ZERO)]).unwrap();
    assert_eq!(load(&path).unwrap().len(), 1);
    fs::write(&path, b"{\"version\":1,\"writ").unwrap();
    let damaged = load(&path).err().map(|e| e.kind());
    assert_eq!(damaged, Some(io::ErrorKind::InvalidData));
    fs::remove_dir_all(&dir).unwrap();
}

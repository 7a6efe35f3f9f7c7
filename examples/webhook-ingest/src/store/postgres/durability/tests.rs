use super::judge;

#[test]
fn only_off_and_local_before_standbys_lose_acknowledged_commits() {
    assert!(judge("off", "", false).is_some());
    assert!(judge("local", "FIRST 1 (s1)", false).is_some());
    assert!(judge("local", "", false).is_none());
    assert!(judge("local", "FIRST 1 (s1)", true).is_none());
    for waits in ["on", "remote_write", "remote_apply"] {
        assert!(judge(waits, "FIRST 1 (s1)", false).is_none());
    }
}

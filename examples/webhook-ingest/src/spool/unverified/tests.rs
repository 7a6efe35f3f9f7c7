use super::*;
use crate::spool::SpoolError;

/// A payload of a megabyte: nine of them take more than one of the unverified spool's
/// segments, and less than one of the main spool's.
const MEGABYTE: usize = 1 << 20;

#[tokio::test]
async fn the_unverified_spool_has_small_segments_within_its_own_directory() {
    let main_dir =
        std::env::temp_dir().join(format!("webhook-ingest-unverified-{}", std::process::id()));
    let spool = open(&main_dir, 16 * MEGABYTE as u64).unwrap();
    assert_eq!(spool.dir(), main_dir.join(UNVERIFIED_DIR));
    for _ in 0..9 {
        spool.append(vec![0; MEGABYTE]).await.unwrap();
    }
    let segments = std::fs::read_dir(spool.dir())
        .unwrap()
        .filter(|entry| {
            let name = entry.as_ref().unwrap().file_name();
            name.to_string_lossy().ends_with(".seg")
        })
        .count();
    // A drained segment is deleted whole: small ones keep the disk it takes near the bound.
    assert_eq!(segments, 2);
    // The bound is its own, not the main spool's gigabyte.
    let refused = spool.append(vec![0; 8 * MEGABYTE]).await;
    assert!(matches!(refused, Err(SpoolError::Full)), "{refused:?}");
    drop(spool);
    let _ = std::fs::remove_dir_all(&main_dir);
}

use super::*;

/// Whether a request for a checkpoint is waiting, taking it.
fn asked(requests: &Receiver<()>) -> bool {
    requests.try_recv().is_ok()
}

/// A checkpoint is asked for once per `CHECKPOINT_FRAMES` written since one was last asked
/// for, a WAL written again from its start counting from there.
#[test]
fn a_checkpoint_is_asked_for_once_per_threshold_of_frames_written() {
    let (checkpointer, requests) = Checkpointer::new();
    checkpointer.note(CHECKPOINT_FRAMES - 1);
    assert!(!asked(&requests), "below the threshold");
    checkpointer.note(CHECKPOINT_FRAMES);
    assert!(asked(&requests), "at the threshold");
    checkpointer.note(CHECKPOINT_FRAMES + CHECKPOINT_FRAMES / 2);
    assert!(!asked(&requests), "half a threshold since the last request");
    checkpointer.note(2 * CHECKPOINT_FRAMES - 1);
    assert!(
        !asked(&requests),
        "one frame short of a threshold since the last request"
    );
    checkpointer.note(2 * CHECKPOINT_FRAMES);
    assert!(asked(&requests), "a threshold since the last request");
    // A commit that left the WAL as long as at the last request wrote nothing since.
    checkpointer.note(2 * CHECKPOINT_FRAMES);
    assert!(!asked(&requests), "nothing written since the last request");
    // The WAL was written again from its start: its length counts from there.
    checkpointer.note(CHECKPOINT_FRAMES / 2);
    assert!(
        !asked(&requests),
        "half a threshold into a WAL written again"
    );
    checkpointer.note(CHECKPOINT_FRAMES + 1);
    assert!(asked(&requests), "a threshold into a WAL written again");
    // Written again, and past the length it had when last asked: a threshold since then.
    checkpointer.note(10);
    assert!(!asked(&requests), "a WAL written again");
    checkpointer.note(CHECKPOINT_FRAMES + 5);
    assert!(
        asked(&requests),
        "a threshold written since the last request, past its length then"
    );
}

/// Past `CATCH_UP_FRAMES` every commit asks, so that a checkpoint can end between two commits
/// and the WAL be written again from its start before it reaches its limit.
#[test]
fn past_the_catch_up_mark_every_commit_asks_for_a_checkpoint() {
    const { assert!(CATCH_UP_FRAMES > 2 * CHECKPOINT_FRAMES) };
    const { assert!(CATCH_UP_FRAMES < WAL_LIMIT_FRAMES) };
    let (checkpointer, requests) = Checkpointer::new();
    checkpointer.note(CATCH_UP_FRAMES - CHECKPOINT_FRAMES);
    assert!(asked(&requests));
    checkpointer.note(CATCH_UP_FRAMES - 1);
    assert!(
        !asked(&requests),
        "below the mark, less than a threshold written"
    );
    for frames in CATCH_UP_FRAMES..CATCH_UP_FRAMES + 3 {
        checkpointer.note(frames);
        assert!(asked(&requests), "at {frames} frames");
    }
}

/// A request not yet taken covers the commits after it: asking never waits.
#[test]
fn asking_never_waits_for_the_checkpointer() {
    let (checkpointer, requests) = Checkpointer::new();
    for frames in CATCH_UP_FRAMES..CATCH_UP_FRAMES + 10 {
        checkpointer.note(frames);
    }
    assert!(asked(&requests));
    assert!(!asked(&requests), "one request waits at most");
}

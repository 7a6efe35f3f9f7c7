//! Per-thread buffers for the bytes of an answer, so that a failure does not allocate for
//! its problem body or its request id.
//!
//! Bytes are copied into a thread's current chunk and split off it: every `Bytes` made from it
//! shares the chunk, which a thread replaces when it is full and which is freed when the last
//! answer made from it is dropped. A chunk holds dozens of problem bodies, so an answer costs
//! a fraction of an allocation instead of two (the buffer and `Bytes`'s own header).

use std::cell::RefCell;

use bytes::{Bytes, BytesMut};

/// A chunk's size: some fifty problem bodies of the usual size, or hundreds of request ids.
const CHUNK_BYTES: usize = 16 * 1024;

thread_local! {
    static CHUNK: RefCell<BytesMut> = RefCell::new(BytesMut::new());
}

/// A chunk with at least `room` bytes free: this thread's, or a new one when it is full.
fn make_room(chunk: &mut BytesMut, room: usize) {
    if chunk.capacity() - chunk.len() < room {
        *chunk = BytesMut::with_capacity(CHUNK_BYTES.max(room));
    }
}

/// `bytes` as a `Bytes` that shares this thread's chunk.
pub(crate) fn freeze(bytes: &[u8]) -> Bytes {
    freeze_written(bytes.len(), |chunk| chunk.extend_from_slice(bytes))
}

/// What `write` writes, straight into this thread's chunk with at least `room` bytes free
/// (more grows it), as shared bytes. `write` must not call back into this module.
///
/// A request can end in a thread-local destructor (a runtime kept in one drops its tasks
/// there) after this thread's chunk is gone: then the bytes get an allocation of their own.
pub(crate) fn freeze_written(room: usize, write: impl FnOnce(&mut BytesMut)) -> Bytes {
    let mut write = Some(write);
    let shared = CHUNK.try_with(|chunk| {
        let mut chunk = chunk.try_borrow_mut().ok()?;
        make_room(&mut chunk, room);
        (write.take()?)(&mut chunk);
        Some(chunk.split().freeze())
    });
    if let Ok(Some(bytes)) = shared {
        return bytes;
    }
    // The chunk is gone or in use, so `write` has not run: an allocation of its own.
    let mut own = BytesMut::with_capacity(room);
    if let Some(write) = write {
        write(&mut own);
    }
    own.freeze()
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn frozen_bytes_are_whole_and_independent_across_chunks() {
        let all: Vec<Bytes> = (0..2000)
            .map(|n| {
                let text = format!("answer {n} {}", "x".repeat(n % 50));
                // Less room than it writes now and then: the chunk grows for it.
                freeze_written(n % 40, |out| out.extend_from_slice(text.as_bytes()))
            })
            .collect();
        for (n, bytes) in all.iter().enumerate() {
            assert_eq!(
                &bytes[..],
                format!("answer {n} {}", "x".repeat(n % 50)).as_bytes()
            );
        }
        let big = freeze(&[7; CHUNK_BYTES * 2]);
        assert_eq!(big.len(), CHUNK_BYTES * 2);
        assert!(freeze(b"").is_empty());
    }
}

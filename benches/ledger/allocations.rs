//! Heap allocations per request, counted by a global allocator that counts only outside the
//! timed runs, so that counting cannot disturb the scaling.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Counts heap allocations, only while [`COUNTING`] is on. The timed rounds leave it off:
/// they pay one relaxed load of a line nobody writes per allocation, and share nothing.
struct CountingAllocator;

static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static REALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static ALLOCATED_BYTES: AtomicU64 = AtomicU64::new(0);

impl CountingAllocator {
    fn note(counter: &AtomicU64, bytes: usize) {
        if COUNTING.load(Ordering::Relaxed) {
            counter.fetch_add(1, Ordering::Relaxed);
            ALLOCATED_BYTES.fetch_add(bytes as u64, Ordering::Relaxed);
        }
    }
}

// SAFETY: every method forwards its arguments unchanged to `System`, so the caller's
// obligations pass to it as they are; counting only touches atomics and never allocates.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        Self::note(&ALLOCATIONS, layout.size());
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        Self::note(&ALLOCATIONS, layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        Self::note(&REALLOCATIONS, new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// Heap operations counted by [`CountingAllocator`].
#[derive(Clone, Copy)]
pub(crate) struct Allocations {
    pub(crate) allocations: u64,
    pub(crate) reallocations: u64,
    pub(crate) bytes: u64,
}

impl Allocations {
    /// Counts the allocations of `work`, run on this thread while no other thread runs.
    pub(crate) fn of(work: impl FnOnce()) -> Self {
        let read =
            || [&ALLOCATIONS, &REALLOCATIONS, &ALLOCATED_BYTES].map(|c| c.load(Ordering::SeqCst));
        let before = read();
        COUNTING.store(true, Ordering::SeqCst);
        work();
        COUNTING.store(false, Ordering::SeqCst);
        let after = read();
        Self {
            allocations: after[0] - before[0],
            reallocations: after[1] - before[1],
            bytes: after[2] - before[2],
        }
    }
}

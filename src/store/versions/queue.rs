//! What the kept versions' queue counts against its byte bound.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Bytes counted against the queue's bound for as long as a version waits
/// (or is being written).
pub(super) struct Waiting {
    queued: Arc<AtomicUsize>,
    bytes: usize,
}

impl Waiting {
    /// Counts `bytes` against `bound`, unless it would pass it (one
    /// version alone always fits).
    pub(super) fn reserve(
        queued: &Arc<AtomicUsize>,
        bytes: usize,
        bound: usize,
    ) -> Option<Waiting> {
        let before = queued.fetch_add(bytes, Ordering::Relaxed);
        let waiting = Waiting {
            queued: Arc::clone(queued),
            bytes,
        };
        (before == 0 || before + bytes <= bound).then_some(waiting)
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        self.queued.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

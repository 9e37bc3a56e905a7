//! Resource governance: the primitives that bound what the API may take of a
//! host gateway's machine. They know nothing of boards, the provider or
//! HTTP; the store and the provider client are built on them.
//!
//! - **Work pool** ([`WorkPool`]): a fixed number of plain OS threads
//!   (default half the cores) runs every CPU-heavy step: inflating gzip,
//!   parsing and merging the provider's JSON, normalizing and sanitizing,
//!   selecting, serializing and hashing a render, compressing it. The async
//!   worker threads only do I/O and headers, so a cached answer never waits
//!   behind a 5 MB parse. Jobs hand their result back through a oneshot
//!   channel; a job that panics is an error for its request, not a hung one.
//!   Work no request waits on (sealing a kept version, comparing a watched
//!   board's versions) lets the waited-on jobs go first, for at most 100 ms
//!   (`pool::BACKGROUND_YIELDS`).
//!   Plain threads rather than `spawn_blocking`: the pool's size is a hard
//!   bound the host can plan for, independent of whichever runtime calls.
//!   Pool threads run at a lower scheduling priority (Linux nice 10), so the
//!   async threads answering cached requests get the CPU first; the heap a
//!   cold load frees is kept warm for the next one, and handed back to the
//!   OS only once the process is over the cache's budget plus a headroom
//!   ([`trim_heap`]).
//! - **Admission** ([`Admission`]): at most `max_cold_loads` loads run at
//!   once; up to `cold_queue` more wait in arrival order, and past that a
//!   caller is refused at once; a queued caller gives up at its own
//!   deadline.
//! - **Limits** ([`Limits`]): `board_api.limits`, the sizes of both and the
//!   cap on requests in flight to the provider (which the provider client
//!   enforces with a semaphore of its own).

mod admission;
mod pool;

pub use admission::{Admission, Refused};
pub use pool::{trim_heap, WorkPool};

/// `board_api.limits`, validated by the config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Threads of the work pool (default half the cores, at least 1).
    pub work_threads: usize,
    /// Jobs waiting for a pool thread beyond the running ones (default 256);
    /// callers past it wait asynchronously.
    pub work_queue: usize,
    /// Cold loads running at once (default `work_threads`: a load is almost
    /// all pool work, so more at once only adds memory, tens of MB each for
    /// a large board, without finishing sooner).
    pub max_cold_loads: usize,
    /// Cold loads waiting for a slot (default 32); past it, `503`.
    pub cold_queue: usize,
    /// Requests in flight to the provider at once (default 32).
    pub max_upstream_requests: usize,
}

impl Default for Limits {
    fn default() -> Self {
        let work_threads = WorkPool::default_threads();
        Limits {
            work_threads,
            work_queue: 256,
            max_cold_loads: work_threads,
            cold_queue: 32,
            max_upstream_requests: 32,
        }
    }
}

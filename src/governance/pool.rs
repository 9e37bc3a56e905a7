//! The work pool: a fixed set of plain OS threads that run the CPU-heavy
//! steps (gzip decoding, JSON parsing, normalizing, sanitizing, selecting,
//! serializing, hashing, compressing) so the async worker threads only move
//! bytes and headers. Callers `await` a result delivered through a oneshot
//! channel; a job that panics becomes [`PoolError::Panicked`], never a hung
//! request.
//!
//! The threads start with the first job, not when the pool is made: a
//! binary that makes its API before Pingora daemonizes (`-d` forks, and
//! threads do not survive a fork) must still have workers in the daemon.
//! A pool whose threads were started in another process (its parent before
//! a fork) starts them again in this one.

use crate::metrics::Metrics;
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use tokio::sync::{oneshot, Semaphore};

/// How much lower than the async threads pool threads are scheduled (Linux
/// nice value): the pool soaks up spare CPU, cached answers go first.
const POOL_NICE: i32 = 10;

/// Stack size of a pool thread: serde and the normalizer recurse over the
/// document tree, so give them room beyond the 2 MiB default.
const STACK_BYTES: usize = 8 << 20;

/// Why a job produced no value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolError {
    /// The job panicked (a bug); the pool thread survives.
    Panicked,
    /// The pool is gone (process shutting down), or no thread of it could
    /// be started.
    Closed,
}

impl std::fmt::Display for PoolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PoolError::Panicked => f.write_str("work pool job panicked"),
            PoolError::Closed => f.write_str("work pool closed"),
        }
    }
}

impl std::error::Error for PoolError {}

type Job = Box<dyn FnOnce() + Send + 'static>;

struct Queue {
    jobs: Mutex<VecDeque<Job>>,
    ready: Condvar,
    busy: AtomicUsize,
    /// Set (under the `jobs` lock) when the last handle is dropped: the
    /// workers finish what is queued and exit.
    closed: AtomicBool,
    /// The process id the workers were started in; 0 before the first job.
    started_in: AtomicU32,
    /// Held while workers are being started, so two first jobs start one
    /// set of threads.
    starting: Mutex<()>,
    /// The API's pool gauges; `None` for a pool that reports nowhere.
    metrics: Option<Metrics>,
}

/// Closes the queue when the last [`WorkPool`] handle goes. The workers
/// hold the queue but not this, so they never keep the pool alive.
struct Closer(Arc<Queue>);

impl Drop for Closer {
    fn drop(&mut self) {
        {
            let _jobs = lock(&self.0.jobs);
            self.0.closed.store(true, Ordering::Relaxed);
        }
        self.0.ready.notify_all();
    }
}

/// A bounded pool of worker threads. Cheap to clone; the threads park on a
/// condition variable when idle and exit once every handle is dropped (after
/// the jobs already queued), so a host that rebuilds the API leaks none.
#[derive(Clone)]
pub struct WorkPool {
    queue: Arc<Queue>,
    _closer: Arc<Closer>,
    /// Jobs accepted but not finished (queued or running) are bounded by
    /// this: a caller past it waits asynchronously for room instead of
    /// growing the queue without bound.
    room: Arc<Semaphore>,
    threads: usize,
}

impl std::fmt::Debug for WorkPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkPool")
            .field("threads", &self.threads)
            .finish_non_exhaustive()
    }
}

impl WorkPool {
    /// A pool of `threads` workers (at least 1) whose queue holds at most
    /// `queue` jobs beyond the running ones. The workers start with the
    /// first job (see the module's doc).
    ///
    /// # Errors
    /// None today; kept so that a pool that cannot be made is reported at
    /// start-up by the callers that already handle it.
    #[cfg(any(test, feature = "internals"))]
    pub fn new(threads: usize, queue: usize) -> std::io::Result<Self> {
        Self::reporting(threads, queue, None)
    }

    /// As [`WorkPool::new`], reporting its queued jobs and busy threads to
    /// `metrics`.
    ///
    /// # Errors
    /// As [`WorkPool::new`].
    pub(crate) fn reporting(
        threads: usize,
        queue: usize,
        metrics: Option<Metrics>,
    ) -> std::io::Result<Self> {
        let threads = threads.max(1);
        let shared = Arc::new(Queue {
            jobs: Mutex::new(VecDeque::new()),
            ready: Condvar::new(),
            busy: AtomicUsize::new(0),
            closed: AtomicBool::new(false),
            started_in: AtomicU32::new(0),
            starting: Mutex::new(()),
            metrics,
        });
        let closer = Arc::new(Closer(Arc::clone(&shared)));
        Ok(WorkPool {
            queue: shared,
            _closer: closer,
            room: Arc::new(Semaphore::new(threads + queue.max(1))),
            threads,
        })
    }

    /// Starts the workers unless they run in this process already. `false`
    /// when not one thread could be started.
    fn ensure_started(&self) -> bool {
        let pid = std::process::id();
        if self.queue.started_in.load(Ordering::Acquire) == pid {
            return true;
        }
        let _starting = lock(&self.queue.starting);
        if self.queue.started_in.load(Ordering::Acquire) == pid {
            return true;
        }
        let mut started = 0;
        for i in 0..self.threads {
            let shared = Arc::clone(&self.queue);
            match std::thread::Builder::new()
                .name(format!("board-api-work-{i}"))
                .stack_size(STACK_BYTES)
                .spawn(move || worker(&shared))
            {
                Ok(_) => started += 1,
                Err(e) => log::warn!("work pool: cannot start thread {i}: {e}"),
            }
        }
        if started == 0 {
            return false;
        }
        self.queue.started_in.store(pid, Ordering::Release);
        true
    }

    /// The default size: half the machine's cores (at least one), leaving
    /// the rest to the host's own threads.
    pub fn default_threads() -> usize {
        std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1))
    }

    /// Runs `job` on a pool thread and waits (asynchronously) for its value.
    /// Dropping the returned future before the job starts drops the job
    /// unrun (a job already running finishes, its value unread).
    ///
    /// # Errors
    /// [`PoolError::Panicked`] when the job panicked.
    pub async fn run<T, F>(&self, job: F) -> Result<T, PoolError>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        if !self.ensure_started() {
            return Err(PoolError::Closed);
        }
        let permit = Arc::clone(&self.room)
            .acquire_owned()
            .await
            .map_err(|_| PoolError::Closed)?;
        let (tx, rx) = oneshot::channel();
        let boxed: Job = Box::new(move || {
            // The caller went away while the job was queued (its load was
            // cancelled): nobody would read the value, so the job is dropped
            // unrun.
            if tx.is_closed() {
                return;
            }
            let out = catch_unwind(AssertUnwindSafe(job)).map_err(|_| PoolError::Panicked);
            // The caller may have gone away; nothing to do then.
            let _ = tx.send(out);
            drop(permit);
        });
        {
            let mut jobs = lock(&self.queue.jobs);
            jobs.push_back(boxed);
            if let Some(m) = &self.queue.metrics {
                m.pool_queued().set(jobs.len());
            }
        }
        self.queue.ready.notify_one();
        rx.await.map_err(|_| PoolError::Closed)?
    }

    /// Jobs waiting for a thread right now.
    #[cfg(any(test, feature = "internals"))]
    pub fn queued(&self) -> usize {
        lock(&self.queue.jobs).len()
    }

    /// Threads running a job right now.
    #[cfg(any(test, feature = "internals"))]
    pub fn busy(&self) -> usize {
        self.queue.busy.load(Ordering::Relaxed)
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn threads(&self) -> usize {
        self.threads
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Jobs run outside the lock, so a poisoned lock still holds a valid queue.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Lowers the calling thread's priority; on Linux `setpriority` with
/// `who = 0` applies to the calling thread only.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: a plain system call on the calling thread, no pointers.
        let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, POOL_NICE) };
        if rc != 0 {
            log::debug!("work pool: could not lower thread priority");
        }
    }
}

/// Returns freed heap to the operating system once the process holds more
/// than `retain` bytes resident, at most once a second unless `now` (the
/// last load of a burst: nothing after it would trim).
///
/// glibc keeps what a cold load frees (tens of MB of small objects for a
/// large board) in its free lists, and `malloc_trim` hands those pages
/// back: the next load then faults every one of them in again and has them
/// zeroed. So the pages are kept warm for the next load while the process
/// stays under `retain` (the cache's byte budget plus room for loads:
/// what the operator already set aside), and trimmed only past it.
pub fn trim_heap(retain: usize, now: bool) {
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = (retain, now);
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use std::sync::atomic::AtomicU64;
        static LAST: AtomicU64 = AtomicU64::new(0);
        if resident_bytes().is_some_and(|rss| rss <= retain) {
            return;
        }
        let second = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        if LAST.swap(second, Ordering::Relaxed) != second || now {
            // SAFETY: malloc_trim only walks the allocator's own free lists.
            unsafe {
                libc::malloc_trim(0);
            }
        }
    }
}

/// The process's resident set in bytes (`/proc/self/statm`, in pages).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn resident_bytes() -> Option<usize> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: usize = statm.split_ascii_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf reads a constant of the system, no pointers.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages.saturating_mul(usize::try_from(page).ok()?))
}

fn worker(queue: &Queue) {
    lower_priority();
    loop {
        let job = {
            let mut jobs = lock(&queue.jobs);
            loop {
                if let Some(job) = jobs.pop_front() {
                    if let Some(m) = &queue.metrics {
                        m.pool_queued().set(jobs.len());
                    }
                    break job;
                }
                if queue.closed.load(Ordering::Relaxed) {
                    return;
                }
                jobs = queue.ready.wait(jobs).unwrap_or_else(|e| e.into_inner());
            }
        };
        queue.busy.fetch_add(1, Ordering::Relaxed);
        if let Some(m) = &queue.metrics {
            m.pool_busy().add(1);
        }
        // `job` catches its own panic, so the thread always comes back here.
        job();
        queue.busy.fetch_sub(1, Ordering::Relaxed);
        if let Some(m) = &queue.metrics {
            m.pool_busy().add(-1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn runs_jobs_off_the_caller_and_returns_their_values() {
        let pool = WorkPool::new(2, 4).expect("threads");
        let caller = std::thread::current().id();
        let (value, ran_on) = pool
            .run(move || (6 * 7, std::thread::current().id()))
            .await
            .expect("ran");
        assert_eq!(value, 42);
        assert_ne!(ran_on, caller);
    }

    #[tokio::test]
    async fn a_panicking_job_is_an_error_and_the_pool_keeps_working() {
        let pool = WorkPool::new(1, 1).expect("threads");
        let failed = pool.run(|| -> u8 { panic!("bug in a job") }).await;
        assert_eq!(failed, Err(PoolError::Panicked));
        // The only thread survived the panic.
        assert_eq!(pool.run(|| 1).await, Ok(1));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_job_whose_caller_left_while_it_was_queued_never_runs() {
        let pool = WorkPool::new(1, 4).expect("threads");
        let (started_tx, started) = std::sync::mpsc::channel();
        let (release, wait) = std::sync::mpsc::channel::<()>();
        // The only thread is held by a first job...
        let holder = tokio::spawn({
            let pool = pool.clone();
            async move {
                pool.run(move || {
                    let _ = started_tx.send(());
                    let _ = wait.recv();
                })
                .await
            }
        });
        tokio::task::spawn_blocking(move || started.recv())
            .await
            .expect("join")
            .expect("the first job started");
        // ...a second one is queued behind it, and its caller goes away.
        let ran = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&ran);
        let queued = pool.run(move || flag.store(true, Ordering::SeqCst));
        assert!(
            tokio::time::timeout(std::time::Duration::from_millis(1), queued)
                .await
                .is_err()
        );
        assert_eq!(pool.queued(), 1);
        let _ = release.send(());
        assert_eq!(holder.await.expect("join"), Ok(()));
        // A job queued after it runs, so the dropped one has been taken.
        assert_eq!(pool.run(|| 3).await, Ok(3));
        assert_eq!(pool.queued(), 0);
        assert!(!ran.load(Ordering::SeqCst), "a job nobody waited for ran");
    }

    #[tokio::test]
    async fn the_threads_exit_when_the_last_handle_is_dropped() {
        let pool = WorkPool::new(3, 4).expect("threads");
        let clone = pool.clone();
        assert_eq!(clone.run(|| 1).await, Ok(1));
        let queue = Arc::downgrade(&pool.queue);
        drop(pool);
        // A clone keeps the pool open.
        assert!(!clone.queue.closed.load(Ordering::Relaxed));
        drop(clone);
        // Each exiting worker drops its reference to the queue; the queue
        // is freed once all three have returned.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while queue.strong_count() > 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "workers still running"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn at_most_threads_jobs_run_at_once() {
        let pool = WorkPool::new(2, 8).expect("threads");
        let running = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let mut jobs = tokio::task::JoinSet::new();
        for _ in 0..8 {
            let (pool, running, peak) = (pool.clone(), Arc::clone(&running), Arc::clone(&peak));
            jobs.spawn(async move {
                pool.run(move || {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    running.fetch_sub(1, Ordering::SeqCst);
                })
                .await
            });
        }
        while let Some(done) = jobs.join_next().await {
            assert_eq!(done.expect("task"), Ok(()));
        }
        let peak = peak.load(Ordering::SeqCst);
        assert!((1..=2).contains(&peak), "{peak} jobs ran at once");
    }
}

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
//!
//! Jobs come in two kinds. Most have a caller waiting on them ([`WorkPool::run`]):
//! a request's load or render. Some do work nobody waits on
//! ([`WorkPool::run_background`]): sealing a kept version, comparing a
//! watched board's versions. A free thread takes a waited-on job first, so
//! an answer does not wait behind background work queued just before it: a
//! cold `/api/search` used to wait for the seal of the version its own load
//! made (with one pool thread, the seal was queued between the build and
//! the render). A background job also starts no sooner than
//! [`BACKGROUND_SETTLES`] after it was queued, so the request whose load
//! made it has time to queue its render first, and it yields for at most
//! [`BACKGROUND_YIELDS`]: one that has waited that long is taken before any
//! other, so a steady flow of requests delays it by that much and never
//! starves it.

use crate::metrics::Metrics;
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
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

/// How long a background job lets waited-on jobs go first: a few cold
/// builds of a large board (about 25 ms each), far below any bound on how
/// long a version may take to be kept.
pub const BACKGROUND_YIELDS: Duration = Duration::from_millis(100);

/// How long a background job waits before it starts on an idle pool: the
/// few task switches between a load's end and its request queuing its
/// render, with room for a busy machine.
pub const BACKGROUND_SETTLES: Duration = Duration::from_millis(2);

type Job = Box<dyn FnOnce() + Send + 'static>;

/// The queued jobs of both kinds, each kind first in, first out.
#[derive(Default)]
struct Jobs {
    /// Jobs a caller waits on.
    waited: VecDeque<Job>,
    /// Jobs nobody waits on, with when each was queued.
    background: VecDeque<(Instant, Job)>,
}

/// What a free thread does next.
enum Next {
    Run(Job),
    /// Wait to be told of a new job, or at most this long (a background
    /// job settling).
    Wait(Option<Duration>),
}

/// How background jobs give way ([`BACKGROUND_YIELDS`], [`BACKGROUND_SETTLES`]).
#[derive(Clone, Copy)]
struct GiveWay {
    yields: Duration,
    settles: Duration,
}

impl Jobs {
    fn len(&self) -> usize {
        self.waited.len() + self.background.len()
    }

    /// The job a free thread takes at `now`: a background job that has
    /// yielded long enough, else the first waited-on job, else the first
    /// background job once it has settled. When the pool is `closing`,
    /// nothing is waited for.
    fn next(&mut self, now: Instant, give: GiveWay, closing: bool) -> Next {
        let Some(age) = self
            .background
            .front()
            .map(|(queued, _)| now.saturating_duration_since(*queued))
        else {
            return self.waited.pop_front().map_or(Next::Wait(None), Next::Run);
        };
        if age < give.yields {
            if let Some(job) = self.waited.pop_front() {
                return Next::Run(job);
            }
        }
        if age < give.settles && !closing {
            return Next::Wait(Some(give.settles - age));
        }
        self.background
            .pop_front()
            .map_or(Next::Wait(None), |(_, job)| Next::Run(job))
    }
}

/// Which kind of job [`WorkPool::submit`] queues.
#[derive(Clone, Copy)]
enum Kind {
    Waited,
    Background,
}

struct Queue {
    jobs: Mutex<Jobs>,
    give: GiveWay,
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
        let give = GiveWay {
            yields: BACKGROUND_YIELDS,
            settles: BACKGROUND_SETTLES,
        };
        Ok(Self::made(threads, queue, metrics, give))
    }

    /// A pool whose background jobs give way as `give` says, for tests
    /// whose order must not hang on the machine's speed.
    #[cfg(test)]
    fn giving_way(threads: usize, queue: usize, give: GiveWay) -> Self {
        Self::made(threads, queue, None, give)
    }

    fn made(threads: usize, queue: usize, metrics: Option<Metrics>, give: GiveWay) -> Self {
        let threads = threads.max(1);
        let shared = Arc::new(Queue {
            jobs: Mutex::new(Jobs::default()),
            give,
            ready: Condvar::new(),
            busy: AtomicUsize::new(0),
            closed: AtomicBool::new(false),
            started_in: AtomicU32::new(0),
            starting: Mutex::new(()),
            metrics,
        });
        let closer = Arc::new(Closer(Arc::clone(&shared)));
        WorkPool {
            queue: shared,
            _closer: closer,
            room: Arc::new(Semaphore::new(threads + queue.max(1))),
            threads,
        }
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
        self.submit(Kind::Waited, job).await
    }

    /// [`WorkPool::run`] for work no request waits on: started no sooner
    /// than [`BACKGROUND_SETTLES`] after it is queued, and behind the
    /// waited-on jobs for at most [`BACKGROUND_YIELDS`] (see the module's
    /// doc). Its caller still gets its value.
    ///
    /// # Errors
    /// As [`WorkPool::run`].
    pub async fn run_background<T, F>(&self, job: F) -> Result<T, PoolError>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        self.submit(Kind::Background, job).await
    }

    async fn submit<T, F>(&self, kind: Kind, job: F) -> Result<T, PoolError>
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
            match kind {
                Kind::Waited => jobs.waited.push_back(boxed),
                Kind::Background => jobs.background.push_back((Instant::now(), boxed)),
            }
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
                let now = Instant::now();
                let closing = queue.closed.load(Ordering::Relaxed);
                match jobs.next(now, queue.give, closing) {
                    Next::Run(job) => {
                        if let Some(m) = &queue.metrics {
                            m.pool_queued().set(jobs.len());
                        }
                        break job;
                    }
                    Next::Wait(None) if closing => return,
                    Next::Wait(None) => {
                        jobs = queue.ready.wait(jobs).unwrap_or_else(|e| e.into_inner());
                    }
                    Next::Wait(Some(settling)) => {
                        jobs = match queue.ready.wait_timeout(jobs, settling) {
                            Ok((jobs, _)) => jobs,
                            Err(e) => e.into_inner().0,
                        };
                    }
                }
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
mod tests;

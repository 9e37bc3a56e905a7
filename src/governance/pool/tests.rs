//! The work pool's tests.

use super::*;

/// Holds a one-thread `pool`'s thread with a job that runs until the
/// sender is dropped or sent to; returns once that job has started.
async fn hold(
    pool: &WorkPool,
) -> (
    tokio::task::JoinHandle<Result<(), PoolError>>,
    std::sync::mpsc::Sender<()>,
) {
    let (started_tx, started) = std::sync::mpsc::channel();
    let (release, wait) = std::sync::mpsc::channel::<()>();
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
        .expect("the holding job started");
    (holder, release)
}

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
    // The only thread is held by a first job...
    let (holder, release) = hold(&pool).await;
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

/// Runs the jobs `next` hands out at the offsets `at` (from when the
/// first was queued) and names them, for jobs queued as `queued`
/// (name, background, queued at).
fn taken(queued: &[(&'static str, bool, u64)], at: &[(u64, bool)]) -> Vec<String> {
    let give = GiveWay {
        yields: Duration::from_millis(100),
        settles: Duration::from_millis(2),
    };
    let t0 = Instant::now();
    let ms = |n: u64| t0 + Duration::from_millis(n);
    let ran = Arc::new(Mutex::new(Vec::new()));
    let mut jobs = Jobs::default();
    for &(name, background, queued_at) in queued {
        let ran = Arc::clone(&ran);
        let job: Job = Box::new(move || lock(&ran).push(name.to_owned()));
        if background {
            jobs.background.push_back((ms(queued_at), job));
        } else {
            jobs.waited.push_back(job);
        }
    }
    let mut seen = Vec::new();
    for &(now, closing) in at {
        match jobs.next(ms(now), give, closing) {
            Next::Run(job) => {
                job();
                seen.push(lock(&ran).pop().unwrap_or_default());
            }
            Next::Wait(None) => seen.push("wait".to_owned()),
            Next::Wait(Some(d)) => seen.push(format!("wait {}ms", d.as_millis())),
        }
    }
    seen
}

#[test]
fn waited_on_jobs_go_first_and_background_ones_settle() {
    let queued = [
        ("seal", true, 0),
        ("render", false, 0),
        ("compare", true, 1),
    ];
    let at = [
        (1, false),
        (1, false),
        (1, false),
        (2, false),
        (2, false),
        (3, false),
    ];
    // The render first, though queued after the seal; the seal 2 ms after
    // it was queued, the compare 2 ms after its own; then nothing.
    let expected = [
        "render", "wait 1ms", "wait 1ms", "seal", "wait 1ms", "compare",
    ];
    assert_eq!(taken(&queued, &at), expected);
    assert_eq!(
        taken(&queued, &[(9, false), (9, false), (9, false), (9, false)])[3],
        "wait"
    );
}

#[test]
fn background_work_yields_for_a_bounded_time_only() {
    // A flow of requests: at 100 ms the seal goes before the rest.
    let queued = [
        ("seal", true, 0),
        ("a", false, 0),
        ("b", false, 0),
        ("c", false, 0),
    ];
    let at = [(50, false), (100, false), (100, false), (100, false)];
    assert_eq!(taken(&queued, &at), ["a", "seal", "b", "c"]);
}

#[test]
fn a_closing_pool_runs_background_work_at_once() {
    let queued = [("seal", true, 0)];
    assert_eq!(taken(&queued, &[(0, true), (0, true)]), ["seal", "wait"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_thread_takes_a_waited_on_job_before_a_background_one() {
    // Its only thread held while a seal (background) and then a render
    // are queued: the render runs first, the seal after it.
    // Yielding for an hour, so that however slow the machine, the seal
    // is not yet due when the thread comes free.
    let give = GiveWay {
        yields: Duration::from_secs(3600),
        settles: Duration::ZERO,
    };
    let pool = WorkPool::giving_way(1, 8, give);
    let (holder, release) = hold(&pool).await;
    let ran = Arc::new(Mutex::new(Vec::new()));
    let mut queued = Vec::new();
    for (name, background) in [("seal", true), ("render", false)] {
        let (pool, ran) = (pool.clone(), Arc::clone(&ran));
        let job = move || lock(&ran).push(name);
        let mut task = Box::pin(async move {
            if background {
                pool.run_background(job).await
            } else {
                pool.run(job).await
            }
        });
        // One poll queues the job (there is room) and parks on its value.
        tokio::select! {
            biased;
            _ = &mut task => panic!("ran while the only thread was held"),
            () = std::future::ready(()) => {}
        }
        queued.push(tokio::spawn(task));
    }
    assert_eq!(pool.queued(), 2);
    let _ = release.send(());
    assert_eq!(holder.await.expect("join"), Ok(()));
    for task in queued {
        assert_eq!(task.await.expect("join"), Ok(()));
    }
    assert_eq!(*lock(&ran), ["render", "seal"]);
}

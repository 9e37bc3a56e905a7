//! A host that rebuilds the API (a gateway reloading its plugins) leaks
//! nothing: a dropped `BoardApi` ends its work-pool threads and frees its
//! cache. One test in its own binary, so no other test's threads are counted.

use crate::common::*;
use http::{HeaderMap, Method};
use shared_board_api::config::Settings;
use shared_board_api::{BoardApi, RequestParts};
use std::time::{Duration, Instant};

/// Threads of this process right now.
fn threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .count()
}

/// Resident set size in KiB.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

/// Waits until the thread count is at most `target`; exiting threads leave
/// `/proc/self/task` a moment after they return.
fn settle(target: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let now = threads();
        if now <= target || Instant::now() > deadline {
            return now;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits until no thread's name starts with `prefix`.
fn settle_named(prefix: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while thread_names().iter().any(|n| n.starts_with(prefix)) {
        assert!(Instant::now() < deadline, "{prefix} threads still running");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn thread_names() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .map(|n| n.trim().to_string())
        .collect()
}

#[test]
fn fifty_apis_built_used_and_dropped_leave_no_threads_and_bounded_memory() {
    // It counts the process's threads and memory: it runs alone in a child.
    if !in_own_process(
        module_path!(),
        "fifty_apis_built_used_and_dropped_leave_no_threads_and_bounded_memory",
    ) {
        return;
    }
    const ROUNDS: usize = 50;
    const WORK_THREADS: usize = 4;
    sample();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_keep_alive(Duration::from_millis(50))
        .enable_all()
        .build()
        .expect("runtime");
    let text = config(
        0,
        "",
        &format!("  limits:\n    work_threads: {WORK_THREADS}\n"),
    );
    let settings = Settings::from_yaml(&text).expect("config").api().clone();
    let query = format!("url={}", link(BOARD, PERMISSION));
    let headers = HeaderMap::new();
    // The first API starts what a process starts once, whoever uses it
    // (Pingora's timer thread): the count is taken after it.
    runtime.block_on(async {
        let api = BoardApi::new(&settings).expect("api");
        let parts = RequestParts::new(&Method::GET, "/api/detail", Some(&query), &headers);
        assert_eq!(api.respond(parts).await.expect("our path").status, 200);
    });
    settle_named("board-api-work");
    let before = threads();
    let mut rss_early = 0;
    for round in 0..ROUNDS {
        // The last round's pool threads end once its API is dropped (within
        // settle_named's deadline, or the test fails: a leak).
        settle_named("board-api-work");
        let api = BoardApi::new(&settings).expect("api");
        // The pool starts its threads with its first job (so that a process
        // that forks after making the API still has them).
        // (Counted by name: the runtime's own blocking threads come and go
        // on their keep-alive, so the process's total is no measure here.)
        assert!(
            !thread_names()
                .iter()
                .any(|n| n.starts_with("board-api-work")),
            "no pool thread before the first job"
        );
        runtime.block_on(async {
            for _ in 0..2 {
                // A cold load fills the cache; the second is a hit from it.
                let parts = RequestParts::new(&Method::GET, "/api/detail", Some(&query), &headers);
                let answer = api.respond(parts).await.expect("our path");
                assert_eq!(answer.status, 200);
            }
        });
        // A new thread takes its name once it first runs: on a busy machine
        // some are still unnamed right after the jobs, so wait (bounded).
        let deadline = Instant::now() + Duration::from_secs(60);
        let workers = loop {
            let workers = thread_names()
                .iter()
                .filter(|n| n.starts_with("board-api-work"))
                .count();
            if workers >= WORK_THREADS || Instant::now() > deadline {
                break workers;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        assert_eq!(workers, WORK_THREADS, "the pool's threads run");
        drop(api);
        if round == 4 {
            settle(before);
            rss_early = rss_kib();
        }
    }
    let after = settle(before);
    let rss_late = rss_kib();
    let names = thread_names();
    println!(
        "threads: {before} before, {after} after {ROUNDS} APIs of {WORK_THREADS} pool threads; \
         RSS {rss_early} KiB after 5, {rss_late} KiB after {ROUNDS}"
    );
    assert!(
        after <= before,
        "{} threads left over after {ROUNDS} APIs: {names:?}",
        after - before
    );
    // Each API cached the board and its renders: 45 more of them kept alive
    // grew RSS by 53 MB when tried, dropped ones by under 2 MB.
    assert!(
        rss_late < rss_early + 24 * 1024,
        "RSS grew from {rss_early} KiB to {rss_late} KiB"
    );
}

//! Nothing promised is lost: deliveries and kept versions
//! survive crashes, forks, reloads, rolling deploys and a slow Redis.
//!
//! The instrument: the real binary, started as docs/operations.md starts
//! it (a daemon, `-d`, with its pid file and upgrade socket; upgraded with
//! `-t -u`, `SIGQUIT`, `-u -d`), one node on a SQLite file or on Redis, or
//! a fleet of three on a real `redis-server`; a sample upstream whose board
//! the test edits; a webhook receiver that verifies every signature and
//! records every `webhook-id` and the `from` and `to` of every body. While
//! the test makes changes (one edit, then a wait until the watch has seen
//! it), each scenario injects its faults ([`faults`]: seeded, the seed is
//! printed); then the faults stop and the system quiesces (bounded), and
//! [`ledger`] counts: changes made, deliveries received (distinct ids),
//! **lost** (a change no accepted delivery covers; goal 0), duplicates
//! (an id accepted again: allowed), **two ids for one change** (goal 0),
//! and `PRAGMA integrity_check` of the SQLite file after every kill and
//! upgrade (read-only; goal: ok).
//!
//! - `cargo test --test it durability::` runs the small variant: one run
//!   of every scenario, 3 changes (5 for `sqlite_upgrade`), asserting every
//!   goal.
//! - `scripts/fault-injection.sh` (or `cargo test --test it
//!   durability::full -- --ignored --exact --nocapture`) runs every
//!   scenario `SBAPI_FAULT_RUNS` times with `SBAPI_FAULT_CHANGES` changes
//!   and prints the table; `SBAPI_FAULT_SEED` replays a plan,
//!   `SBAPI_FAULT_SCENARIOS` (names, comma-separated) picks scenarios,
//!   `SBAPI_FAULT_ASSERT=1` makes a run that misses a goal fail the test,
//!   `SBAPI_FAULT_KEEP=1` keeps each run's folder (the nodes' error logs,
//!   the SQLite file) and prints its path.
//!
//! Each scenario's CI variant failed on the code before the durability fixes
//! (benches/README.md, "Durability", has the figures before and after):
//! - `sqlite_upgrade`: the connection was opened before Pingora's daemon
//!   fork and leases were per process, so across an upgrade the old and the
//!   new process both ran the job (one change under two ids) and the file's
//!   indexes broke from the fourth upgrade on;
//! - `fleet_roll_add`, `fleet_roll_back`: a node without the job dropped the
//!   job's pending deliveries;
//! - `redis_kill`, `fleet_kill`, `redis_slow`, `fleet_slow`: a node killed
//!   during a run, or a Redis slower than the tier's timeout, left a 120 s
//!   run lease that stopped the job, and a read that timed out deleted a
//!   delivery.

mod faults;
mod ledger;
mod node;
mod receiver;
mod scenario;

use ledger::{table, Tally};
use scenario::{Fault, Scenario, Size, Store};
use std::time::Duration;

/// Every scenario, as the full run runs them.
pub const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "sqlite_kill",
        store: Store::Sqlite,
        nodes: 1,
        fault: Fault::Kill,
    },
    Scenario {
        name: "sqlite_upgrade",
        store: Store::Sqlite,
        nodes: 1,
        fault: Fault::Upgrade,
    },
    Scenario {
        name: "redis_kill",
        store: Store::Redis,
        nodes: 1,
        fault: Fault::Kill,
    },
    Scenario {
        name: "redis_kill_holder",
        store: Store::Redis,
        nodes: 1,
        fault: Fault::KillHolder,
    },
    Scenario {
        name: "redis_slow",
        store: Store::Redis,
        nodes: 1,
        fault: Fault::SlowRedis,
    },
    Scenario {
        name: "fleet_kill",
        store: Store::Redis,
        nodes: 3,
        fault: Fault::Kill,
    },
    Scenario {
        name: "fleet_kill_holder",
        store: Store::Redis,
        nodes: 3,
        fault: Fault::KillHolder,
    },
    Scenario {
        name: "fleet_roll_add",
        store: Store::Redis,
        nodes: 3,
        fault: Fault::RollAdd,
    },
    Scenario {
        name: "fleet_roll_back",
        store: Store::Redis,
        nodes: 3,
        fault: Fault::RollBack,
    },
    Scenario {
        name: "fleet_slow",
        store: Store::Redis,
        nodes: 3,
        fault: Fault::SlowRedis,
    },
];

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

/// `SBAPI_FAULT_SEED`, or one from the clock (printed either way).
fn base_seed() -> u64 {
    env_u64("SBAPI_FAULT_SEED").unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(45, |d| d.as_nanos() as u64)
    })
}

fn scenario(name: &str) -> &'static Scenario {
    SCENARIOS
        .iter()
        .find(|s| s.name == name)
        .expect("a scenario")
}

/// The small variant of scenario `name`: one run of 3 changes; asserts the
/// goals.
fn ci(name: &str) {
    ci_sized(name, 3);
}

/// [`ci`] with `changes` changes.
fn ci_sized(name: &str, changes: usize) {
    let s = scenario(name);
    let base = base_seed();
    let seed = faults::seed_for(base, name, 0);
    eprintln!("durability::{name}: SBAPI_FAULT_SEED={base} (run seed {seed})");
    let size = Size {
        changes,
        seen_within: Duration::from_secs(20),
        quiesce_within: Duration::from_secs(75),
    };
    let tally = scenario::run(s, &size, seed);
    let rows = vec![(name.to_owned(), vec![(seed, tally.clone())])];
    eprintln!("{}", table(&rows));
    assert_holds(name, &tally);
}

fn assert_holds(name: &str, t: &Tally) {
    assert!(
        t.holds(),
        "{name}: lost {} of {} changes, {} under two ids, {} bad signatures, integrity_check bad {} of {}; {} duplicates\n{}",
        t.lost,
        t.changes,
        t.two_ids,
        t.unverified,
        t.integrity_bad,
        t.integrity_checked,
        t.duplicates,
        t.notes.join("\n")
    );
}

#[test]
fn sqlite_kill() {
    ci("sqlite_kill");
}

#[test]
fn sqlite_upgrade() {
    // On main the file's indexes break from the fourth upgrade on.
    ci_sized("sqlite_upgrade", 5);
}

#[test]
fn redis_kill() {
    ci("redis_kill");
}

#[test]
fn redis_kill_holder() {
    ci("redis_kill_holder");
}

#[test]
fn redis_slow() {
    ci("redis_slow");
}

#[test]
fn fleet_kill() {
    ci("fleet_kill");
}

#[test]
fn fleet_kill_holder() {
    ci("fleet_kill_holder");
}

#[test]
fn fleet_roll_add() {
    ci("fleet_roll_add");
}

#[test]
fn fleet_roll_back() {
    ci("fleet_roll_back");
}

#[test]
fn fleet_slow() {
    ci("fleet_slow");
}

/// The full run (scripts/fault-injection.sh): every scenario (or those
/// of `SBAPI_FAULT_SCENARIOS`) `SBAPI_FAULT_RUNS` times (default 3) with
/// `SBAPI_FAULT_CHANGES` changes (default 6); prints the table. Asserts
/// the goals only with `SBAPI_FAULT_ASSERT=1`: it measures.
#[test]
#[ignore = "the full fault-injection run: scripts/fault-injection.sh"]
fn full() {
    let runs = env_u64("SBAPI_FAULT_RUNS").unwrap_or(3) as usize;
    let changes = env_u64("SBAPI_FAULT_CHANGES").unwrap_or(6) as usize;
    let only = std::env::var("SBAPI_FAULT_SCENARIOS").unwrap_or_default();
    let base = base_seed();
    eprintln!("durability::full: SBAPI_FAULT_SEED={base} SBAPI_FAULT_RUNS={runs} SBAPI_FAULT_CHANGES={changes}");
    let size = Size {
        changes,
        seen_within: Duration::from_secs(30),
        // Well past a run's lease (30 s, renewed while the run goes on): a
        // lease a dead node left behind delays a change; only what never
        // comes is lost.
        quiesce_within: Duration::from_secs(150),
    };
    let mut rows: Vec<(String, Vec<(u64, Tally)>)> = Vec::new();
    for s in SCENARIOS {
        if !only.is_empty() && !only.split(',').any(|n| n.trim() == s.name) {
            continue;
        }
        let mut runs_of = Vec::new();
        for run in 0..runs {
            let seed = faults::seed_for(base, s.name, run);
            let started = std::time::Instant::now();
            let t = scenario::run(s, &size, seed);
            eprintln!(
                "{} run {} (seed {seed}): {} changes, {} delivered, {} lost, {} dups, {} two-ids, integrity {}/{} bad, {:.0?}{}",
                s.name,
                run + 1,
                t.changes,
                t.delivered,
                t.lost,
                t.duplicates,
                t.two_ids,
                t.integrity_bad,
                t.integrity_checked,
                started.elapsed(),
                if t.notes.is_empty() { String::new() } else { format!("\n    {}", t.notes.join("\n    ")) }
            );
            runs_of.push((seed, t));
        }
        rows.push((s.name.to_owned(), runs_of));
    }
    eprintln!("\n{}", table(&rows));
    if std::env::var("SBAPI_FAULT_ASSERT").as_deref() == Ok("1") {
        for (name, runs) in &rows {
            for (_, t) in runs {
                assert_holds(name, t);
            }
        }
    }
}

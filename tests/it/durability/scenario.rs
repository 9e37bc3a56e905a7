//! One run of one scenario: a sample upstream, an oracle gateway (no
//! cache: the board's version now), the receiver, Redis when the store is
//! `redis`, and the nodes; then the changes, each with its planned fault,
//! then a quiet time, then the count.

use super::faults::plan;
use super::ledger::Tally;
use super::node::{Jobs, Node, LINK_VAR, SECRET_VAR, URL_VAR};
use super::receiver::{secret, Receiver};
use crate::common::redis::{Proxy, Redis};
use crate::common::{encode, request, start_gateway_at, BOARD};
use shared_board_api::demo::SampleUpstream;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The permission id of the watched share link.
const PERMISSION: &str = "permFaults45";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Store {
    Sqlite,
    Redis,
}

/// What goes wrong while the changes are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// SIGKILL of a node at a random moment after each change (during a
    /// run, a delivery, or idle), and a start again.
    Kill,
    /// SIGKILL of the node whose delivery attempt the receiver holds
    /// unanswered (its attempt's lease held), and a start again.
    KillHolder,
    /// The documented upgrade (`-t -u`, `SIGQUIT`, `-u -d`) after each
    /// change.
    Upgrade,
    /// A rolling deploy that adds the job: node a has it, b and c start
    /// without it and are upgraded to it one by one.
    RollAdd,
    /// All nodes have the job; b is upgraded to a configuration without it
    /// while deliveries are pending, then back.
    RollBack,
    /// Bursts of `CLIENT PAUSE 300` and `DEBUG SLEEP 0.3` during deliveries.
    SlowRedis,
}

#[derive(Debug, Clone, Copy)]
pub struct Scenario {
    pub name: &'static str,
    pub store: Store,
    pub nodes: usize,
    pub fault: Fault,
}

/// How big a run is.
#[derive(Debug, Clone, Copy)]
pub struct Size {
    pub changes: usize,
    /// How long the test waits for the watch to see a change before it
    /// makes the next.
    pub seen_within: Duration,
    /// How long the quiet time after the faults may last at most.
    pub quiesce_within: Duration,
}

/// What the fault threads share with the driver.
pub struct World {
    pub nodes: Vec<Mutex<Node>>,
    pub receiver: Receiver,
    pub redis: Option<Redis>,
    pub sqlite: Option<PathBuf>,
    pub tally: Mutex<Tally>,
}

impl World {
    pub fn note(&self, what: String) {
        eprintln!("  note: {what}");
        self.tally.lock().unwrap().notes.push(what);
    }

    /// Starts node `i` (after a kill), retrying once.
    pub fn restart(&self, node: &mut Node) {
        if let Err(first) = node.start() {
            self.note(format!("restart failed, retrying: {first}"));
            node.kill();
            if let Err(e) = node.start() {
                self.note(format!("restart failed again: {e}"));
            }
        }
    }

    pub fn integrity(&self, when: &str) {
        if let Some(path) = &self.sqlite {
            self.tally.lock().unwrap().check_integrity(path, when);
        }
    }
}

fn temp_dir(name: &str, seed: u64) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("sba-faults-{}-{name}-{seed:x}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    dir
}

fn share_link() -> String {
    format!("https://app.milanote.com/{BOARD}/trip?p={PERMISSION}")
}

/// The board's version now, from a gateway without a cache.
fn version_now(oracle: std::net::SocketAddr) -> String {
    let r = request(
        oracle,
        "GET",
        &format!("/api/detail?url={}", encode(&share_link())),
        &[],
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    r.header("board-version")
        .expect("a Board-Version header")
        .to_owned()
}

/// One run of `s`; its figures.
pub fn run(s: &Scenario, size: &Size, seed: u64) -> Tally {
    let dir = temp_dir(s.name, seed);
    let upstream = SampleUpstream::start_in_thread(([127, 0, 0, 1], 0).into()).expect("upstream");
    let oracle = start_gateway_at(
        &upstream.origin(),
        "",
        "  cache:\n    ttl_seconds: 0\n  changes:\n    store: memory\n",
    );
    let receiver = Receiver::start();
    let redis =
        (s.store == Store::Redis).then(|| Redis::start_with(&["--enable-debug-command", "local"]));
    // The nodes reach Redis over loopback TCP (the proxy of common/redis.rs).
    let proxy = redis.as_ref().map(|r| Proxy::start(&r.socket()));
    let sqlite = dir.join("versions.sqlite");
    let store = match &proxy {
        None => format!(
            "  cache:\n    ttl_seconds: 1\n  changes:\n    store: sqlite\n    path: {}\n",
            sqlite.display()
        ),
        Some(proxy) => format!(
            "  cache:\n    ttl_seconds: 1\n    shared:\n      url: {}\n      secret_env: {}\n  changes:\n    store: redis\n",
            proxy.url(),
            crate::common::redis::fleet_key_var()
        ),
    };
    let names = ["a", "b", "c", "d", "e"];
    let nodes: Vec<Mutex<Node>> = (0..s.nodes)
        .map(|i| {
            let jobs = match (s.fault, i) {
                (Fault::RollAdd, 0) | (Fault::RollBack, _) => Jobs::OtherAndTrip,
                (Fault::RollAdd, _) => Jobs::Other,
                _ => Jobs::Trip,
            };
            let env = vec![
                (LINK_VAR.to_owned(), share_link()),
                (URL_VAR.to_owned(), receiver.url(names[i])),
                (SECRET_VAR.to_owned(), secret()),
                (
                    crate::common::redis::fleet_key_var().to_owned(),
                    String::from_utf8_lossy(crate::common::redis::FLEET_KEY).into_owned(),
                ),
            ];
            Mutex::new(Node::new(
                names[i],
                &dir,
                &upstream.origin(),
                &store,
                env,
                jobs,
            ))
        })
        .collect();
    let world = World {
        nodes,
        receiver,
        redis,
        sqlite: (s.store == Store::Sqlite).then_some(sqlite),
        tally: Mutex::new(Tally::default()),
    };
    for node in &world.nodes {
        let mut node = node.lock().unwrap();
        node.start()
            .unwrap_or_else(|e| panic!("{}: a node does not start: {e}", s.name));
    }
    let mut versions = vec![version_now(oracle.addr)];
    if !wait_seen(&world, &versions[0], Duration::from_secs(60)) {
        world.note("the first run was not seen".into());
    }

    let mut rng = super::faults::Rng::new(seed);
    let steps = plan(s, size.changes, &mut rng);
    for (k, step) in steps.iter().enumerate() {
        let k = k + 1;
        if let Some(d) = step.fail {
            world.receiver.fail_for(d);
        }
        let r = request(upstream.addr(), "POST", &format!("/demo/edit/{BOARD}"), &[]);
        assert_eq!(r.status, 200, "the upstream edits the board");
        let v = version_now(oracle.addr);
        assert!(!versions.contains(&v), "each edit makes a new version");
        versions.push(v.clone());
        let seen = std::thread::scope(|scope| {
            let (w, v) = (&world, v.as_str());
            let fault = step
                .action
                .clone()
                .map(|a| scope.spawn(move || super::faults::act(w, a, k, v)));
            let seen = wait_seen(&world, v, size.seen_within);
            if let Some(f) = fault {
                f.join().expect("a fault thread");
            }
            seen
        });
        if seen {
            world.tally.lock().unwrap().seen += 1;
        } else {
            world.note(format!("change {k} not seen within {:?}", size.seen_within));
        }
    }

    // The faults stop: the receiver accepts, every node runs with the
    // final configuration, and the test waits until nothing is pending.
    world.receiver.fail_for(Duration::ZERO);
    world.receiver.hang_next(false);
    for node in &world.nodes {
        let mut node = node.lock().unwrap();
        let wanted = if node.jobs == Jobs::Other {
            Some(Jobs::OtherAndTrip)
        } else {
            None
        };
        if let Some(jobs) = wanted {
            node.jobs = jobs;
            if node.is_up() {
                if let Err(e) = node.upgrade() {
                    world.note(format!("final upgrade: {e}"));
                }
            }
        }
        if !node.is_up() {
            world.restart(&mut node);
        }
    }
    let last = versions.last().cloned().unwrap_or_default();
    if !quiesce(&world, &last, size.quiesce_within) {
        let jobs: Vec<String> = world
            .nodes
            .iter()
            .map(|n| {
                let n = n.lock().unwrap();
                format!("{}: {}", n.name, n.job().unwrap_or_default())
            })
            .collect();
        world.note(format!(
            "not quiet within {:?} (pending, or behind the last version {last}); /watch: {}",
            size.quiesce_within,
            jobs.join("; ")
        ));
    }
    for node in &world.nodes {
        node.lock().unwrap().kill();
    }
    world.integrity("at the end, every node down");
    let mut tally = world.tally.lock().unwrap().clone();
    tally.count(&versions, &world.receiver.got());
    drop(world);
    drop(proxy);
    drop(oracle);
    if std::env::var_os("SBAPI_FAULT_KEEP").is_some() {
        eprintln!("  kept: {}", dir.display());
    } else {
        let _ = std::fs::remove_dir_all(&dir);
    }
    tally
}

/// Asks every node that is up for runs until one of them, or the
/// receiver, shows `version`; false after `within`.
fn wait_seen(world: &World, version: &str, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if world.receiver.got().iter().any(|g| g.to == version) {
            return true;
        }
        for node in &world.nodes {
            // A node a fault is working on is skipped.
            let Ok(node) = node.try_lock() else { continue };
            if !node.is_up() {
                continue;
            }
            if node.job().is_some_and(|j| j["lastVersion"] == version) {
                return true;
            }
            node.run_now();
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    false
}

/// Waits until every node has the last version and nothing pending, for
/// longer than a delivery scan's longest pause (5 s); false after `within`.
fn quiesce(world: &World, last: &str, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    let mut quiet_since: Option<Instant> = None;
    while Instant::now() < deadline {
        let quiet = world.nodes.iter().all(|node| {
            let node = node.lock().unwrap();
            node.run_now();
            node.job().is_some_and(|j| {
                j["pendingDeliveries"] == 0 && j["lastVersion"].as_str() == Some(last)
            })
        });
        if quiet {
            let since = *quiet_since.get_or_insert_with(Instant::now);
            if since.elapsed() >= Duration::from_secs(7) {
                return true;
            }
        } else {
            quiet_since = None;
        }
        std::thread::sleep(Duration::from_millis(1000));
    }
    false
}

//! The faults: a plan drawn from a seeded generator before the run (one
//! step per change: whether the receiver fails for a while, and what
//! happens to the nodes or Redis, when), and the thread that acts it out
//! while the test waits for the change to be seen.

use super::node::Jobs;
use super::scenario::{Fault, Scenario, World};
use std::time::{Duration, Instant};

/// SplitMix64: the same plan for the same seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    pub fn coin(&mut self) -> bool {
        self.next_u64() & 1 == 1
    }

    /// A duration of `lo..hi` milliseconds.
    pub fn ms(&mut self, lo: u64, hi: u64) -> Duration {
        Duration::from_millis(lo + self.below(hi - lo))
    }
}

/// A seed of its own for each scenario and run, from the base seed.
pub fn seed_for(base: u64, name: &str, run: usize) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    Rng::new(base ^ h ^ (run as u64).wrapping_mul(0x9e37_79b9)).next_u64()
}

#[derive(Debug, Clone)]
pub enum Action {
    /// SIGKILL of node `node` `after` the edit; started again `down` later.
    Kill {
        node: usize,
        after: Duration,
        down: Duration,
    },
    /// The receiver hangs up on the next attempt and the node that made
    /// it is killed (`fallback` when no attempt comes within 8 s).
    KillHolder { fallback: usize, down: Duration },
    /// The documented upgrade of `node`, `after` the edit.
    Upgrade { node: usize, after: Duration },
    /// An upgrade of `node` to a configuration with `jobs`.
    Roll {
        node: usize,
        jobs: Jobs,
        after: Duration,
    },
    /// Redis paused at these offsets from the change's first attempt
    /// (the delivery queued; the receiver fails it, so it is pending):
    /// `true` is `DEBUG SLEEP 0.3`, else `CLIENT PAUSE 300`.
    Pauses(Vec<(Duration, bool)>),
}

/// What happens with one change.
#[derive(Debug, Clone)]
pub struct Step {
    /// The receiver answers `503` for this long from just before the edit.
    pub fail: Option<Duration>,
    pub action: Option<Action>,
}

/// The steps of one run: one per change.
pub fn plan(s: &Scenario, changes: usize, rng: &mut Rng) -> Vec<Step> {
    let n = s.nodes as u64;
    // The changes (1-based) at which a rolling deploy moves on.
    let (first, second) = (changes.div_ceil(3).max(1), (2 * changes).div_ceil(3).max(2));
    (1..=changes)
        .map(|k| {
            let fail = rng.coin().then(|| rng.ms(300, 2500));
            let action = match s.fault {
                Fault::KillHolder => Some(Action::KillHolder {
                    fallback: rng.below(n) as usize,
                    down: rng.ms(0, 800),
                }),
                Fault::Kill => Some(Action::Kill {
                    node: rng.below(n) as usize,
                    after: rng.ms(0, 1500),
                    down: rng.ms(0, 800),
                }),
                Fault::Upgrade => Some(Action::Upgrade {
                    node: rng.below(n) as usize,
                    after: rng.ms(0, 1000),
                }),
                Fault::RollAdd => {
                    let after = rng.ms(0, 1500);
                    let node = if k == first {
                        Some(1)
                    } else if k == second {
                        Some(2.min(s.nodes - 1))
                    } else {
                        None
                    };
                    node.map(|node| Action::Roll {
                        node,
                        jobs: Jobs::OtherAndTrip,
                        after,
                    })
                }
                Fault::RollBack => {
                    let after = rng.ms(0, 1000);
                    let jobs = if k == first {
                        Some(Jobs::Other)
                    } else if k == second {
                        Some(Jobs::OtherAndTrip)
                    } else {
                        None
                    };
                    jobs.map(|jobs| Action::Roll {
                        node: 1,
                        jobs,
                        after,
                    })
                }
                Fault::SlowRedis => {
                    let count = 3 + rng.below(4);
                    let mut at: Vec<(Duration, bool)> =
                        (0..count).map(|_| (rng.ms(0, 3000), rng.coin())).collect();
                    at.sort();
                    Some(Action::Pauses(at))
                }
            };
            // Deliveries kept pending across the fault: in a rolling
            // deploy long enough for a node without the job to scan them
            // (every 5 s when idle) while they are due again; with a slow
            // Redis across the pauses.
            let fail = match s.fault {
                Fault::RollAdd | Fault::RollBack => Some(rng.ms(4000, 10_000)),
                Fault::SlowRedis => Some(rng.ms(2000, 5000)),
                _ => fail,
            };
            Step { fail, action }
        })
        .collect()
}

/// Acts out `action` for change `k`.
pub fn act(world: &World, action: Action, k: usize, version: &str) {
    let count = |n: usize| world.tally.lock().unwrap().faults += n;
    match action {
        Action::Kill { node, after, down } => {
            std::thread::sleep(after);
            kill_and_restart(world, node, down, k);
            count(1);
        }
        Action::KillHolder { fallback, down } => {
            world.receiver.hang_next(true);
            let deadline = Instant::now() + Duration::from_secs(8);
            let mut holder = None;
            while holder.is_none() && Instant::now() < deadline {
                holder = world.receiver.take_hung();
                std::thread::sleep(Duration::from_millis(20));
            }
            world.receiver.hang_next(false);
            // The run that queued the delivery has released its lease.
            std::thread::sleep(Duration::from_millis(300));
            let node = holder
                .and_then(|name| {
                    world
                        .nodes
                        .iter()
                        .position(|n| n.lock().unwrap().name == name)
                })
                .unwrap_or(fallback);
            kill_and_restart(world, node, down, k);
            count(1);
        }
        Action::Upgrade { node, after } => {
            std::thread::sleep(after);
            let mut n = world.nodes[node].lock().unwrap();
            if let Err(e) = n.upgrade() {
                world.note(format!("change {k}: upgrade: {e}"));
                n.kill();
                world.restart(&mut n);
            }
            drop(n);
            world.integrity(&format!("after upgrade {k} (the old process gone)"));
            count(1);
        }
        Action::Roll { node, jobs, after } => {
            std::thread::sleep(after);
            let mut n = world.nodes[node].lock().unwrap();
            n.jobs = jobs;
            let done = if n.is_up() { n.upgrade() } else { n.start() };
            if let Err(e) = done {
                world.note(format!("change {k}: rolling node {}: {e}", n.name));
                n.kill();
                world.restart(&mut n);
            }
            count(1);
        }
        Action::Pauses(at) => {
            let Some(redis) = &world.redis else { return };
            // From the change's first attempt (bounded).
            let deadline = Instant::now() + Duration::from_secs(15);
            while Instant::now() < deadline && !world.receiver.got().iter().any(|g| g.to == version)
            {
                std::thread::sleep(Duration::from_millis(20));
            }
            let start = Instant::now();
            for (offset, debug_sleep) in &at {
                if let Some(wait) = offset.checked_sub(start.elapsed()) {
                    std::thread::sleep(wait);
                }
                if *debug_sleep {
                    redis.cli(&["DEBUG", "SLEEP", "0.3"]);
                } else {
                    redis.cli(&["CLIENT", "PAUSE", "300"]);
                }
            }
            count(at.len());
        }
    }
}

fn kill_and_restart(world: &World, node: usize, down: Duration, k: usize) {
    let mut n = world.nodes[node].lock().unwrap();
    n.kill();
    drop(n);
    world.integrity(&format!("after kill {k}"));
    std::thread::sleep(down);
    let mut n = world.nodes[node].lock().unwrap();
    world.restart(&mut n);
}

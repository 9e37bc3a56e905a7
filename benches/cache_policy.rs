//! Which weighted cache for the byte budget: our `store::Budget` (Pingora's
//! TinyUfo with exact byte accounting) beside `moka::sync::Cache` with a
//! weigher, on the same workload, in one run.
//!
//!     cargo bench --bench cache_policy
//!
//! Workload: 20,000 distinct boards whose sizes spread from 2 KB to 2 MB
//! (most small, a few large, as rendered bodies are), requested with a
//! Zipf-like popularity (s = 1.0), a budget of 64 MiB (a fraction of the
//! total), every miss followed by a put, as the service does. Reported:
//! byte hit ratio and request hit ratio over 400,000 requests after a
//! warm-up, then criterion timings of the same loop (gets and puts),
//! single-threaded and with 2 threads.

use criterion::{criterion_group, criterion_main, Criterion};
use shared_board_api::internals::store::Budget;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

const BOARDS: usize = 20_000;
const BUDGET: usize = 64 << 20;
const MAX_ENTRY: usize = 8 << 20;
const TTL: Duration = Duration::from_secs(3600);

/// A deterministic generator (xorshift), so both caches see the same requests.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Board sizes: log-uniform between 2 KB and 2 MB.
fn sizes() -> Vec<usize> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    (0..BOARDS)
        .map(|_| (2048.0 * 1000f64.powf(rng.unit())) as usize)
        .collect()
}

/// Request keys with Zipf(1.0) popularity over the boards (rank order shuffled
/// against size, so popularity and size are independent).
fn requests(n: usize, seed: u64) -> Vec<usize> {
    let harmonic: Vec<f64> = (1..=BOARDS)
        .scan(0.0, |acc, k| {
            *acc += 1.0 / k as f64;
            Some(*acc)
        })
        .collect();
    let total = harmonic[BOARDS - 1];
    let mut rng = Rng(seed);
    (0..n)
        .map(|_| {
            let u = rng.unit() * total;
            let rank = harmonic.partition_point(|&h| h < u).min(BOARDS - 1);
            (rank * 7919) % BOARDS
        })
        .collect()
}

trait Weighted: Sync {
    fn get(&self, key: usize) -> bool;
    fn put(&self, key: usize, size: usize);
}

struct Ufo(Budget<usize, Arc<[u8]>>);

impl Weighted for Ufo {
    fn get(&self, key: usize) -> bool {
        self.0.get(&key).is_some()
    }
    fn put(&self, key: usize, size: usize) {
        self.0.put(key, Arc::from(vec![0u8; 64]), size, TTL);
    }
}

struct Moka(moka::sync::Cache<usize, Arc<[u8]>>);

impl Weighted for Moka {
    fn get(&self, key: usize) -> bool {
        self.0.get(&key).is_some()
    }
    fn put(&self, key: usize, _size: usize) {
        self.0.insert(key, Arc::from(vec![0u8; 64]));
    }
}

fn moka(sizes: &[usize]) -> Moka {
    let by_key = sizes.to_vec();
    let cache = moka::sync::Cache::builder()
        .max_capacity(BUDGET as u64)
        .weigher(move |k: &usize, _v: &Arc<[u8]>| u32::try_from(by_key[*k]).unwrap_or(u32::MAX))
        .time_to_live(TTL)
        .build();
    Moka(cache)
}

fn run(cache: &dyn Weighted, sizes: &[usize], keys: &[usize]) -> (u64, u64, u64, u64) {
    let (mut hits, mut hit_bytes, mut bytes) = (0u64, 0u64, 0u64);
    for &k in keys {
        bytes += sizes[k] as u64;
        if cache.get(k) {
            hits += 1;
            hit_bytes += sizes[k] as u64;
        } else {
            cache.put(k, sizes[k]);
        }
    }
    (hits, keys.len() as u64, hit_bytes, bytes)
}

fn bench(c: &mut Criterion) {
    let sizes = sizes();
    let warm = requests(200_000, 7);
    let measured = requests(400_000, 11);
    let ufo = Ufo(Budget::new(BUDGET, MAX_ENTRY));
    let moka = moka(&sizes);
    for (name, cache) in [
        ("tinyufo", &ufo as &dyn Weighted),
        ("moka", &moka as &dyn Weighted),
    ] {
        run(cache, &sizes, &warm);
        let (hits, n, hit_bytes, bytes) = run(cache, &sizes, &measured);
        eprintln!(
            "policy {name}: request hit ratio {:.3}, byte hit ratio {:.3}",
            hits as f64 / n as f64,
            hit_bytes as f64 / bytes as f64
        );
    }
    moka.0.run_pending_tasks();
    eprintln!(
        "held: tinyufo {} bytes (budget {BUDGET}), moka {} weighted bytes",
        ufo.0.bytes(),
        moka.0.weighted_size()
    );

    let loop_keys = requests(20_000, 23);
    let mut group = c.benchmark_group("cache_policy");
    for (name, cache) in [
        ("tinyufo", &ufo as &dyn Weighted),
        ("moka", &moka as &dyn Weighted),
    ] {
        group.bench_function(format!("{name}/1-thread"), |b| {
            b.iter(|| run(cache, &sizes, black_box(&loop_keys)))
        });
        group.bench_function(format!("{name}/2-threads"), |b| {
            b.iter(|| {
                std::thread::scope(|s| {
                    let (a, z) = loop_keys.split_at(loop_keys.len() / 2);
                    let sizes = &sizes;
                    s.spawn(move || run(cache, sizes, a));
                    run(cache, sizes, z)
                })
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

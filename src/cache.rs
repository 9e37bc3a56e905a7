//! The byte-budgeted store of pipeline results and the coalescing of loads.
//! It knows nothing of HTTP or of boards: the API stores documents, rendered
//! bodies and their compressed variants in one [`Budget`], each weighed by
//! its size in memory, and funnels concurrent loads of one key through one
//! [`Coalescer`].
//!
//! - [`Budget`]: Pingora's `TinyUfo` (TinyLFU admission, S3-FIFO eviction)
//!   with one weight per entry, so the sum of what is kept stays under a
//!   configured number of bytes whatever mix of small and large entries
//!   arrives; entries carry their own expiry, checked on read. An entry too
//!   heavy for the budget is not kept at all (its caller still uses it).
//! - [`Coalescer`]: the first caller for a key starts the load in a task of
//!   its own, later callers wait for that task's result. The task, not any
//!   caller, owns the load: a caller that goes away (a host's timeout drops
//!   our future) neither cancels it nor leaves the key behind, and the key's
//!   in-flight entry is removed by a drop guard even when the load panics.

use crate::metrics;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tinyufo::TinyUfo;
use tokio::sync::watch;
use tokio::time::Instant;

/// Cache limits, validated by the config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheSettings {
    /// How long a fetched document (and what is rendered from it) is served
    /// (default 60 s, the success `max-age`).
    pub ttl: Duration,
    /// How long a failed fetch is remembered (default 5 s).
    pub error_ttl: Duration,
    /// One budget in bytes over documents, rendered bodies and compressed
    /// variants (default 128 MiB).
    pub budget_bytes: usize,
    /// The heaviest single entry kept (default a quarter of the budget);
    /// anything heavier is served but not kept.
    pub max_entry_bytes: usize,
    /// How many failures are remembered at most (default 1024), apart from
    /// the byte budget so that a flood of bad links cannot push good boards
    /// out.
    pub max_error_entries: usize,
}

impl Default for CacheSettings {
    fn default() -> Self {
        CacheSettings {
            ttl: Duration::from_secs(60),
            error_ttl: Duration::from_secs(5),
            budget_bytes: DEFAULT_BUDGET_BYTES,
            max_entry_bytes: DEFAULT_BUDGET_BYTES / 4,
            max_error_entries: 1024,
        }
    }
}

/// 128 MiB: with a few cold loads in flight (each holds the raw answer,
/// its parse and the document being built) the process stays near 300 MB.
pub const DEFAULT_BUDGET_BYTES: usize = 128 << 20;

/// What a typical entry weighs, to size TinyUfo's frequency sketch.
const TYPICAL_ENTRY_BYTES: usize = 16 * 1024;

/// What TinyUfo holds. The value sits in a shared cell that is emptied the
/// moment the entry leaves the budget: TinyUfo's concurrent maps reclaim
/// removed buckets lazily (epoch-based), so without the cell an evicted
/// document would stay alive, uncounted, until reclamation caught up
/// (measured: RSS grew by one document per eviction).
#[derive(Clone)]
struct Slot<K, V> {
    key: K,
    cell: Arc<Mutex<Option<V>>>,
    expires: Instant,
    units: u16,
}

impl<K, V: Clone> Slot<K, V> {
    fn value(&self) -> Option<V> {
        self.cell.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Drops the value now, whoever still holds a copy of the slot.
    fn release(&self) {
        let value = self.cell.lock().unwrap_or_else(|e| e.into_inner()).take();
        drop(value);
    }
}

/// A byte-budgeted cache with per-entry expiry; `get` is lock-free, `put`
/// is serialized so the accounting stays exact.
pub struct Budget<K, V> {
    store: TinyUfo<K, Slot<K, V>>,
    /// Bytes per TinyUfo weight unit: TinyUfo weighs in `u16`, so the unit
    /// grows with the heaviest entry allowed.
    unit: usize,
    limit_units: usize,
    max_entry_bytes: usize,
    /// Units and entries currently held, kept exact by serializing puts.
    units: AtomicUsize,
    entries: AtomicUsize,
    writes: Mutex<()>,
    /// Whether this budget reports to the process-wide cache gauges.
    report: bool,
}

impl<K, V> Budget<K, V>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    /// A budget of `budget_bytes` (at least one unit) keeping entries of at
    /// most `max_entry_bytes` each.
    pub fn new(budget_bytes: usize, max_entry_bytes: usize) -> Self {
        let max_entry_bytes = max_entry_bytes.min(budget_bytes).max(1);
        let unit = max_entry_bytes.div_ceil(usize::from(u16::MAX)).max(1);
        let limit_units = (budget_bytes / unit).max(1);
        let estimated = (budget_bytes / TYPICAL_ENTRY_BYTES).clamp(16, 1 << 20);
        Budget {
            store: TinyUfo::new(limit_units, estimated),
            unit,
            limit_units,
            max_entry_bytes,
            units: AtomicUsize::new(0),
            entries: AtomicUsize::new(0),
            writes: Mutex::new(()),
            report: false,
        }
    }

    /// A count-bounded cache: every entry weighs 1.
    pub fn counted(max_entries: usize) -> Self {
        let mut budget = Self::new(max_entries.max(1), 1);
        budget.unit = 1;
        budget
    }

    /// Report bytes, entries and evictions to the Prometheus gauges.
    pub fn reporting(mut self) -> Self {
        self.report = true;
        self
    }

    /// The value under `key` unless it expired.
    pub fn get(&self, key: &K) -> Option<V> {
        let slot = self.store.get(key)?;
        if slot.key != *key {
            // A 64-bit hash collision: not ours.
            return None;
        }
        if slot.expires <= Instant::now() {
            let _writes = self.lock();
            if let Some(gone) = self.store.remove(key) {
                gone.release();
                self.forget(usize::from(gone.units), 0);
            }
            return None;
        }
        slot.value()
    }

    /// Keeps `value` for `ttl` if `bytes` fits; returns whether it was kept
    /// (TinyLFU may also decide a newcomer is less popular than what it
    /// would evict).
    pub fn put(&self, key: K, value: V, bytes: usize, ttl: Duration) -> bool {
        if bytes > self.max_entry_bytes || ttl.is_zero() {
            return false;
        }
        let units = bytes.div_ceil(self.unit).max(1);
        let Ok(units) = u16::try_from(units) else {
            return false;
        };
        let slot = Slot {
            key: key.clone(),
            cell: Arc::new(Mutex::new(Some(value))),
            expires: Instant::now() + ttl,
            units,
        };
        let _writes = self.lock();
        // A replaced entry's weight would be lost to the accounting: take it
        // out first.
        if let Some(old) = self.store.remove(&key) {
            old.release();
            self.forget(usize::from(old.units), 0);
        }
        self.units.fetch_add(usize::from(units), Ordering::Relaxed);
        self.entries.fetch_add(1, Ordering::Relaxed);
        let evicted = self.store.put(key.clone(), slot, units);
        let mut kept = true;
        let mut freed = 0;
        for gone in &evicted {
            freed += usize::from(gone.weight);
            if gone.data.key == key && gone.data.units == units {
                kept = false;
            }
            gone.data.release();
        }
        self.forget(freed, evicted.len());
        // TinyUfo's own weight counters can drift when a key is removed and
        // put again (its queues keep the old key); whatever it did, the
        // budget holds: a newcomer that would pass it is dropped.
        if kept && self.units.load(Ordering::Relaxed) > self.limit_units {
            if let Some(gone) = self.store.remove(&key) {
                gone.release();
                self.forget(usize::from(gone.units), 1);
            }
            kept = false;
        }
        kept
    }

    fn forget(&self, units: usize, evicted: usize) {
        let (units_now, entries_now) = if units > 0 {
            let u = self.units.fetch_sub(units, Ordering::Relaxed) - units;
            let e = self.entries.fetch_sub(evicted.max(1), Ordering::Relaxed) - evicted.max(1);
            (u, e)
        } else {
            (
                self.units.load(Ordering::Relaxed),
                self.entries.load(Ordering::Relaxed),
            )
        };
        if self.report {
            metrics::cache_size(units_now * self.unit, entries_now);
            if evicted > 0 {
                metrics::evictions(evicted);
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ()> {
        self.writes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Bytes accounted now (each entry rounded up to whole units).
    pub fn bytes(&self) -> usize {
        self.units.load(Ordering::Relaxed) * self.unit
    }

    /// The most [`Budget::bytes`] can reach.
    pub fn limit_bytes(&self) -> usize {
        self.limit_units * self.unit
    }

    pub fn entries(&self) -> usize {
        self.entries.load(Ordering::Relaxed)
    }
}

/// A caller's share of one load.
pub struct Joined<V> {
    rx: watch::Receiver<Option<V>>,
    /// Whether the load was already in flight (this caller started none).
    pub joined: bool,
}

impl<V: Clone> Joined<V> {
    /// The load's value; `None` when the load task panicked or was aborted.
    pub async fn value(mut self) -> Option<V> {
        match self.rx.wait_for(Option::is_some).await {
            Ok(value) => value.clone(),
            Err(_) => None,
        }
    }
}

type Waiters<K, V> = Arc<Mutex<HashMap<K, watch::Receiver<Option<V>>>>>;

/// One load per key at a time, owned by a task of its own.
pub struct Coalescer<K, V> {
    in_flight: Waiters<K, V>,
}

impl<K, V> Default for Coalescer<K, V> {
    fn default() -> Self {
        Coalescer {
            in_flight: Arc::new(Mutex::new(HashMap::new())),
        }
    }
}

/// Removes the key's in-flight entry when the load task ends, however it
/// ends (value sent, panic, runtime shutting down).
struct InFlight<K: Hash + Eq, V> {
    map: Waiters<K, V>,
    key: K,
    rx: watch::Receiver<Option<V>>,
}

impl<K: Hash + Eq, V> Drop for InFlight<K, V> {
    fn drop(&mut self) {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        if map
            .get(&self.key)
            .is_some_and(|rx| rx.same_channel(&self.rx))
        {
            map.remove(&self.key);
        }
    }
}

impl<K, V> Coalescer<K, V>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    /// Joins the load of `key` in flight, or starts `load` now in its own
    /// task; then [`Joined::value`] waits for the result.
    ///
    /// `load` should store its result where the next caller looks first,
    /// before returning: the key leaves the in-flight map right after.
    pub fn join<F>(&self, key: K, load: impl FnOnce() -> F) -> Joined<V>
    where
        F: std::future::Future<Output = V> + Send + 'static,
    {
        let mut map = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(rx) = map.get(&key) {
            return Joined {
                rx: rx.clone(),
                joined: true,
            };
        }
        let (tx, rx) = watch::channel(None);
        map.insert(key.clone(), rx.clone());
        let guard = InFlight {
            map: Arc::clone(&self.in_flight),
            key,
            rx: rx.clone(),
        };
        let load = load();
        tokio::spawn(async move {
            let _guard = guard;
            let value = load.await;
            // Nobody waiting is fine: the value is stored by `load`.
            let _ = tx.send(Some(value));
        });
        Joined { rx, joined: false }
    }

    /// Joins the load of `key` if one is in flight.
    pub fn joining(&self, key: &K) -> Option<Joined<V>> {
        let map = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
        map.get(key).map(|rx| Joined {
            rx: rx.clone(),
            joined: true,
        })
    }

    /// Loads in flight now.
    pub fn in_flight(&self) -> usize {
        self.in_flight
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;
    use tokio::sync::Notify;

    #[test]
    fn the_budget_holds_when_more_is_inserted_than_fits() {
        let budget: Budget<u32, Arc<Vec<u8>>> = Budget::new(1 << 20, 256 << 10);
        let ttl = Duration::from_secs(60);
        let mut kept = 0;
        for i in 0..2000u32 {
            // A mix of small and large entries, 40 times the budget in all.
            let bytes = if i % 10 == 0 {
                200 << 10
            } else {
                1 + (i as usize * 37) % 4096
            };
            if budget.put(i, Arc::new(Vec::new()), bytes, ttl) {
                kept += 1;
            }
            assert!(
                budget.bytes() <= budget.limit_bytes(),
                "{} > {} after {i}",
                budget.bytes(),
                budget.limit_bytes()
            );
        }
        assert!(budget.limit_bytes() <= 1 << 20);
        assert!(kept > 0 && budget.entries() > 0);
        // Something recent is readable; the accounting matches what is held.
        let held: usize = (0..2000u32).filter(|i| budget.get(i).is_some()).count();
        assert_eq!(held, budget.entries());
    }

    #[test]
    fn evicted_values_are_dropped_at_once() {
        let budget: Budget<u32, Arc<u8>> = Budget::new(1 << 20, 1 << 18);
        let values: Vec<Arc<u8>> = (0..64).map(|_| Arc::new(0)).collect();
        for (i, v) in values.iter().enumerate() {
            budget.put(i as u32, Arc::clone(v), 200 << 10, Duration::from_secs(60));
        }
        // Whatever the budget no longer holds, it no longer keeps alive.
        let alive = values.iter().filter(|v| Arc::strong_count(v) > 1).count();
        assert_eq!(alive, budget.entries());
        assert!(alive <= 5, "{alive} values held by a 1 MiB budget");
    }

    #[test]
    fn too_heavy_is_not_kept_and_expired_is_gone() {
        let budget: Budget<&'static str, u8> = Budget::new(1 << 20, 1 << 18);
        assert!(!budget.put("big", 1, (1 << 18) + 1, Duration::from_secs(60)));
        assert_eq!(budget.get(&"big"), None);
        assert!(budget.put("brief", 2, 100, Duration::from_millis(1)));
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(budget.get(&"brief"), None);
        assert_eq!((budget.bytes(), budget.entries()), (0, 0));
        assert!(budget.put("kept", 3, 100, Duration::from_secs(60)));
        assert!(budget.put("kept", 4, 5000, Duration::from_secs(60)));
        assert_eq!(budget.get(&"kept"), Some(4));
        assert_eq!(budget.entries(), 1);
        assert!(budget.bytes() >= 5000);
    }

    #[test]
    fn a_counted_budget_caps_the_number_of_entries() {
        let budget: Budget<u32, ()> = Budget::counted(8);
        for i in 0..100 {
            budget.put(i, (), 1, Duration::from_secs(60));
            assert!(budget.entries() <= 8);
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_cancelled_caller_neither_cancels_nor_wedges_the_load() {
        let coalescer: Coalescer<&'static str, u32> = Coalescer::default();
        let loads = Arc::new(AtomicU32::new(0));
        let release = Arc::new(Notify::new());
        let start = |loads: Arc<AtomicU32>, release: Arc<Notify>| {
            move || async move {
                loads.fetch_add(1, Ordering::SeqCst);
                release.notified().await;
                7
            }
        };
        // The first caller is dropped while its load is in flight...
        let first = coalescer.join("k", start(loads.clone(), release.clone()));
        assert!(!first.joined);
        let first = tokio::time::timeout(Duration::ZERO, first.value()).await;
        assert!(first.is_err());
        assert_eq!(coalescer.in_flight(), 1);
        // ...and N later callers join that same load instead of starting theirs.
        let waiters: Vec<_> = (0..16)
            .map(|_| coalescer.join("k", start(loads.clone(), release.clone())))
            .collect();
        assert!(waiters.iter().all(|w| w.joined));
        release.notify_one();
        for waiter in waiters {
            assert_eq!(waiter.value().await, Some(7));
        }
        assert_eq!(loads.load(Ordering::SeqCst), 1);
        while coalescer.in_flight() != 0 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn a_panicking_load_is_none_and_frees_its_key() {
        let coalescer: Coalescer<u8, u8> = Coalescer::default();
        let failed = coalescer.join(1, || async { panic!("bug in a load") });
        assert_eq!(failed.value().await, None);
        // The guard runs as the task unwinds; wait for it by polling the map.
        while coalescer.in_flight() != 0 {
            tokio::task::yield_now().await;
        }
        let again = coalescer.join(1, || async { 5 });
        assert!(!again.joined);
        assert_eq!(again.value().await, Some(5));
    }
}

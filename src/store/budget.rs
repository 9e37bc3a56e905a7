//! The process cache: one byte budget over everything the store keeps in
//! memory (documents, rendered bodies and their compressed variants), each
//! entry weighed by its size, with a per-entry expiry.
//!
//! [`Budget`] is Pingora's `TinyUfo` (TinyLFU admission, S3-FIFO eviction)
//! with one weight per entry, so the sum of what is kept stays under a
//! configured number of bytes whatever mix of small and large entries
//! arrives; entries carry their own expiry, checked on read. An entry too
//! heavy for the budget is not kept at all (its caller still uses it). It
//! knows nothing of boards or HTTP.
use crate::metrics::Metrics;
use std::hash::Hash;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tinyufo::TinyUfo;
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
/// (measured: RSS grew by one document per eviction). The key (checked on
/// every read against a 64-bit hash collision) shares the cell's
/// allocation: TinyUfo hands out a clone of the slot on each read, and a
/// document's key is two strings, which a clone would copy.
#[derive(Clone)]
struct Slot<K, V> {
    held: Arc<Held<K, V>>,
    expires: Instant,
    units: u16,
}

struct Held<K, V> {
    key: K,
    value: Mutex<Option<V>>,
}

impl<K, V: Clone> Slot<K, V> {
    fn value(&self) -> Option<V> {
        self.held
            .value
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Drops the value now, whoever still holds a copy of the slot.
    fn release(&self) {
        let value = self
            .held
            .value
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
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
    /// The API's cache gauges, when this budget reports to them.
    metrics: Option<Metrics>,
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
            metrics: None,
        }
    }

    /// A count-bounded cache: every entry weighs 1.
    pub fn counted(max_entries: usize) -> Self {
        let mut budget = Self::new(max_entries.max(1), 1);
        budget.unit = 1;
        budget
    }

    /// Report bytes, entries and evictions to the API's cache gauges, if any.
    pub(crate) fn reporting(mut self, metrics: Option<Metrics>) -> Self {
        self.metrics = metrics;
        self
    }

    /// The value under `key` unless it expired.
    pub fn get(&self, key: &K) -> Option<V> {
        let slot = self.store.get(key)?;
        if slot.held.key != *key {
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
            held: Arc::new(Held {
                key: key.clone(),
                value: Mutex::new(Some(value)),
            }),
            expires: Instant::now() + ttl,
            units,
        };
        let mine = Arc::clone(&slot.held);
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
            if Arc::ptr_eq(&gone.data.held, &mine) {
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
        if let Some(m) = &self.metrics {
            m.cache_size(units_now * self.unit, entries_now);
            if evicted > 0 {
                m.evictions(evicted);
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ()> {
        self.writes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Bytes accounted now (each entry rounded up to whole units).
    #[cfg(any(test, feature = "internals"))]
    pub fn bytes(&self) -> usize {
        self.units.load(Ordering::Relaxed) * self.unit
    }

    /// The most [`Budget::bytes`] can reach.
    #[cfg(any(test, feature = "internals"))]
    pub fn limit_bytes(&self) -> usize {
        self.limit_units * self.unit
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn entries(&self) -> usize {
        self.entries.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            let put = budget.put(i, Arc::new(Vec::new()), bytes, ttl);
            // `put` says whether the newcomer itself was kept, whatever
            // else it evicted.
            assert_eq!(put, budget.get(&i).is_some(), "put {i}");
            kept += usize::from(put);
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

    /// Expiry reads tokio's clock: paused here, and moved by the test.
    #[tokio::test(start_paused = true)]
    async fn too_heavy_is_not_kept_and_expired_is_gone() {
        let budget: Budget<&'static str, u8> = Budget::new(1 << 20, 1 << 18);
        assert!(!budget.put("big", 1, (1 << 18) + 1, Duration::from_secs(60)));
        assert_eq!(budget.get(&"big"), None);
        assert!(budget.put("brief", 2, 100, Duration::from_secs(30)));
        tokio::time::advance(Duration::from_secs(29)).await;
        assert_eq!(budget.get(&"brief"), Some(2), "kept until its TTL");
        tokio::time::advance(Duration::from_secs(1)).await;
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
}

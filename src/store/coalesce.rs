//! Coalescing of loads: the first caller for a key starts the load in a
//! task of its own, later callers wait for that task's result.
//!
//! The task, not any caller, owns the load: a caller that goes away (a
//! host's timeout drops our future) neither cancels it nor leaves the key
//! behind, and the key's in-flight entry is removed by a drop guard even
//! when the load panics.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

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
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::Duration;
    use tokio::sync::Notify;

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

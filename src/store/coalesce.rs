//! Coalescing of loads: the first caller for a key starts the load in a
//! task of its own, later callers wait for that task's result.
//!
//! The task, not any caller, owns the load: a caller that goes away (its
//! client disconnected, a host's timeout dropped our future) leaves the
//! load to the others. When the last caller goes before the value is
//! there, nobody waits for it any more: the task is aborted (its requests
//! to the provider end, its queued pool jobs are dropped) and the key is
//! freed for the next caller, who starts afresh. The key's in-flight entry
//! is also removed by a drop guard when the load ends or panics.

use std::collections::HashMap;
use std::convert::Infallible;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use tokio::sync::watch;
use tokio::task::AbortHandle;
use tracing::instrument::WithSubscriber as _;

/// A caller's share of one load. Dropping it before the value came says
/// this caller no longer waits; the last one to go aborts the load.
pub struct Joined<K: Hash + Eq, V> {
    rx: watch::Receiver<Option<V>>,
    /// Whether the load was already in flight (this caller started none).
    pub joined: bool,
    key: K,
    map: Waiters<K, V>,
}

impl<K: Hash + Eq, V: Clone> Joined<K, V> {
    /// The load's value; `None` when the load task panicked or was aborted.
    pub async fn value(mut self) -> Option<V> {
        match self.rx.wait_for(Option::is_some).await {
            Ok(value) => value.clone(),
            Err(_) => None,
        }
    }
}

impl<K: Hash + Eq, V> Drop for Joined<K, V> {
    fn drop(&mut self) {
        let abort = {
            let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
            let Some(load) = map
                .get_mut(&self.key)
                .filter(|load| load.rx.same_channel(&self.rx))
            else {
                return;
            };
            load.waiters = load.waiters.saturating_sub(1);
            if load.waiters > 0 || self.rx.borrow().is_some() {
                return;
            }
            // Under the lock, so nobody joins a load about to be aborted.
            map.remove(&self.key).map(|load| load.abort)
        };
        if let Some(abort) = abort {
            abort.abort();
        }
    }
}

/// What [`Coalescer::join_or_stored`] found stored instead of a load.
#[derive(Debug, PartialEq, Eq)]
pub struct Stored<S>(pub S);

/// One load in flight: its result channel, how many callers wait for it,
/// and how to stop it.
struct Load<V> {
    rx: watch::Receiver<Option<V>>,
    waiters: usize,
    abort: AbortHandle,
}

type Waiters<K, V> = Arc<Mutex<HashMap<K, Load<V>>>>;

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
            .is_some_and(|load| load.rx.same_channel(&self.rx))
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
    pub fn join<F>(&self, key: K, load: impl FnOnce() -> F) -> Joined<K, V>
    where
        F: std::future::Future<Output = V> + Send + 'static,
    {
        match self.join_or_stored(key, || None::<Infallible>, load) {
            Ok(joined) => joined,
            Err(Stored(never)) => match never {},
        }
    }

    /// As [`Coalescer::join`], but when no load of `key` is in flight,
    /// `stored` is asked first, under the lock a load's end takes to leave
    /// the in-flight map, for what a load stored before leaving it. A caller
    /// that looked where loads store their results before a load ended,
    /// and for the load after it ended, gets the result here (`Err`) rather
    /// than starting the same load again.
    pub fn join_or_stored<F, S>(
        &self,
        key: K,
        stored: impl FnOnce() -> Option<S>,
        load: impl FnOnce() -> F,
    ) -> Result<Joined<K, V>, Stored<S>>
    where
        F: std::future::Future<Output = V> + Send + 'static,
    {
        let mut map = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(joined) = self.share(&mut map, &key) {
            return Ok(joined);
        }
        if let Some(value) = stored() {
            return Err(Stored(value));
        }
        let (tx, rx) = watch::channel(None);
        let guard = InFlight {
            map: Arc::clone(&self.in_flight),
            key: key.clone(),
            rx: rx.clone(),
        };
        let load = load();
        // Spawned and entered under the lock: the task's guard cannot look
        // for the entry before it is there.
        // Under the caller's subscriber, which a host may have scoped to
        // its requests: the load's spans go where the request's go.
        let task = tokio::spawn(
            async move {
                let _guard = guard;
                let value = load.await;
                // Nobody waiting is fine: the value is stored by `load`.
                let _ = tx.send(Some(value));
            }
            .with_current_subscriber(),
        );
        map.insert(
            key.clone(),
            Load {
                rx: rx.clone(),
                waiters: 1,
                abort: task.abort_handle(),
            },
        );
        Ok(Joined {
            rx,
            joined: false,
            key,
            map: Arc::clone(&self.in_flight),
        })
    }

    /// Joins the load of `key` if one is in flight.
    pub fn joining(&self, key: &K) -> Option<Joined<K, V>> {
        let mut map = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
        self.share(&mut map, key)
    }

    /// A new waiter's share of the load of `key` in `map`, if any.
    fn share(&self, map: &mut HashMap<K, Load<V>>, key: &K) -> Option<Joined<K, V>> {
        let load = map.get_mut(key)?;
        load.waiters += 1;
        Some(Joined {
            rx: load.rx.clone(),
            joined: true,
            key: key.clone(),
            map: Arc::clone(&self.in_flight),
        })
    }

    /// Loads in flight now.
    #[cfg(any(test, feature = "internals"))]
    pub fn in_flight(&self) -> usize {
        self.in_flight
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }
}

/// Aborts the task when dropped: the caller of an uncached load went away.
pub(super) struct AbortOnDrop<T>(pub(super) tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::Duration;
    use tokio::sync::Notify;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_caller_that_leaves_others_waiting_neither_cancels_nor_wedges_the_load() {
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
        let first = coalescer.join("k", start(loads.clone(), release.clone()));
        assert!(!first.joined);
        let second = coalescer.join("k", start(loads.clone(), release.clone()));
        assert!(second.joined);
        // The first caller is dropped while its load is in flight...
        let first = tokio::time::timeout(Duration::ZERO, first.value()).await;
        assert!(first.is_err());
        assert_eq!(coalescer.in_flight(), 1);
        // ...and N later callers join that same load instead of starting theirs.
        let waiters: Vec<_> = (0..16)
            .map(|_| coalescer.join("k", start(loads.clone(), release.clone())))
            .collect();
        assert!(waiters.iter().all(|w| w.joined));
        release.notify_one();
        assert_eq!(second.value().await, Some(7));
        for waiter in waiters {
            assert_eq!(waiter.value().await, Some(7));
        }
        assert_eq!(loads.load(Ordering::SeqCst), 1);
        while coalescer.in_flight() != 0 {
            tokio::task::yield_now().await;
        }
    }

    /// Sets its flag when dropped: the load's future was dropped.
    struct Dropped(Arc<std::sync::atomic::AtomicBool>);

    impl Drop for Dropped {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_load_stops_when_its_last_caller_leaves() {
        let coalescer: Coalescer<&'static str, u32> = Coalescer::default();
        let dropped = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = Dropped(Arc::clone(&dropped));
        let first = coalescer.join("k", move || async move {
            let _flag = flag;
            std::future::pending::<u32>().await
        });
        let second = coalescer.joining(&"k").expect("in flight");
        drop(first);
        // One caller still waits: the load goes on.
        assert_eq!(coalescer.in_flight(), 1);
        assert!(!dropped.load(Ordering::SeqCst));
        drop(second);
        // Nobody waits: the key is free at once, the task is dropped soon.
        assert_eq!(coalescer.in_flight(), 0);
        while !dropped.load(Ordering::SeqCst) {
            tokio::task::yield_now().await;
        }
        // The next caller starts a load of its own.
        let again = coalescer.join("k", || async { 5 });
        assert!(!again.joined);
        assert_eq!(again.value().await, Some(5));
    }

    /// A caller that missed the stored result before a load ended, and
    /// the load after it ended (the two looks are not one step), finds the
    /// result under the in-flight lock and starts no second load.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_load_that_ended_between_a_look_and_a_join_is_not_repeated() {
        let coalescer: Coalescer<&'static str, u32> = Coalescer::default();
        let store = Arc::new(Mutex::new(None::<u32>));
        let loads = Arc::new(AtomicU32::new(0));
        let start = |store: Arc<Mutex<Option<u32>>>, loads: Arc<AtomicU32>| {
            move || async move {
                loads.fetch_add(1, Ordering::SeqCst);
                // A load stores its result before it leaves the map.
                *store.lock().unwrap() = Some(7);
                7
            }
        };
        let stored = || *store.lock().unwrap();
        // The caller's look: nothing stored yet.
        assert_eq!(stored(), None);
        // Meanwhile a load starts and ends.
        let first = coalescer
            .join_or_stored("k", stored, start(store.clone(), loads.clone()))
            .expect("nothing stored, nothing in flight: a load");
        assert_eq!(first.value().await, Some(7));
        while coalescer.in_flight() != 0 {
            tokio::task::yield_now().await;
        }
        // The caller joins after the load left the map: it gets the result.
        let late = coalescer.join_or_stored("k", stored, start(store.clone(), loads.clone()));
        assert_eq!(late.err(), Some(Stored(7)));
        assert_eq!(loads.load(Ordering::SeqCst), 1);
        assert_eq!(coalescer.in_flight(), 0);
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

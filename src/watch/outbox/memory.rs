//! The `memory` outbox: in the process, bounded, lost with it (for hosts
//! that keep no files; a restart forgets what was pending).

use super::{Delivery, JobState, Lease, LocalLeases, Unavailable, MAX_PENDING, MAX_PENDING_BYTES};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

#[derive(Default)]
pub struct Memory {
    states: Mutex<HashMap<(String, String), JobState>>,
    deliveries: Mutex<HashMap<String, Delivery>>,
    leases: LocalLeases,
}

impl Memory {
    pub async fn state(&self, job: &str, board: &str) -> Result<Option<JobState>, Unavailable> {
        let states = self.states.lock().unwrap_or_else(|e| e.into_inner());
        Ok(states.get(&(job.to_owned(), board.to_owned())).cloned())
    }

    pub async fn set_state(
        &self,
        job: &str,
        board: &str,
        state: &JobState,
    ) -> Result<(), Unavailable> {
        let mut states = self.states.lock().unwrap_or_else(|e| e.into_inner());
        // One board per job in practice (a link's board changes only with
        // its variable); bounded all the same.
        if states.len() >= 1000 {
            states.clear();
        }
        states.insert((job.to_owned(), board.to_owned()), state.clone());
        Ok(())
    }

    pub async fn add(&self, delivery: &Delivery) -> Result<bool, Unavailable> {
        let mut all = self.deliveries.lock().unwrap_or_else(|e| e.into_inner());
        let held: usize = all.values().map(|d| d.body.len()).sum();
        if all.contains_key(&delivery.id)
            || all.len() >= MAX_PENDING
            || held + delivery.body.len() > MAX_PENDING_BYTES
        {
            return Ok(false);
        }
        all.insert(delivery.id.clone(), delivery.clone());
        Ok(true)
    }

    pub async fn pending(&self, limit: usize) -> Result<Vec<Delivery>, Unavailable> {
        let all = self.deliveries.lock().unwrap_or_else(|e| e.into_inner());
        // The first due first: one receiver's backed-off deliveries never
        // hide another's due ones.
        let mut due: Vec<&Delivery> = all.values().collect();
        due.sort_by(|a, b| (a.next_at_ms, &a.id).cmp(&(b.next_at_ms, &b.id)));
        Ok(due.into_iter().take(limit).cloned().collect())
    }

    pub async fn get(&self, job: &str, id: &str) -> Result<Option<Delivery>, Unavailable> {
        let all = self.deliveries.lock().unwrap_or_else(|e| e.into_inner());
        Ok(all.get(id).filter(|d| d.job == job).cloned())
    }

    pub async fn count(&self) -> Result<usize, Unavailable> {
        Ok(self
            .deliveries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len())
    }

    pub async fn update(&self, delivery: &Delivery) -> Result<(), Unavailable> {
        let mut all = self.deliveries.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(d) = all.get_mut(&delivery.id) {
            *d = delivery.clone();
        }
        Ok(())
    }

    pub async fn remove(&self, delivery: &Delivery) -> Result<(), Unavailable> {
        let mut all = self.deliveries.lock().unwrap_or_else(|e| e.into_inner());
        all.remove(&delivery.id);
        Ok(())
    }

    pub async fn lease(&self, name: &str, life: Duration) -> Option<Lease> {
        self.leases.take(name, life)
    }

    pub async fn renew(&self, lease: &Lease, life: Duration) -> bool {
        self.leases.renew(lease, life)
    }

    pub async fn release(&self, lease: &Lease) {
        self.leases.release(lease);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delivery(id: char, job: &str) -> Delivery {
        Delivery {
            id: format!("msg_{}", id.to_string().repeat(32)),
            job: job.into(),
            body: "{}".into(),
            attempts: 0,
            next_at_ms: 0,
            created_ms: 0,
        }
    }

    #[tokio::test]
    async fn a_delivery_is_kept_once_until_removed() {
        let memory = Memory::default();
        assert_eq!(memory.add(&delivery('a', "j")).await, Ok(true));
        assert_eq!(memory.add(&delivery('a', "j")).await, Ok(false));
        assert_eq!(memory.count().await, Ok(1));
        let mut d = delivery('a', "j");
        d.attempts = 2;
        memory.update(&d).await.expect("updated");
        assert_eq!(memory.get("j", &d.id).await, Ok(Some(d.clone())));
        assert_eq!(memory.get("other", &d.id).await, Ok(None));
        assert_eq!(memory.pending(10).await, Ok(vec![d.clone()]));
        memory.remove(&d).await.expect("removed");
        assert_eq!(memory.count().await, Ok(0));
        assert_eq!(memory.state("j", "b").await, Ok(None));
    }
}

//! The fleet's announcements on this node: one task per API instance reads
//! the versions other nodes (and this one) announce through the fleet
//! tier's pub/sub, keeps those that verify, and hands each to the poller
//! of the board it names, when this node follows it. Started with the
//! first board followed; stopped with the API.

use super::HubInner;
use std::sync::{Arc, PoisonError, Weak};
use tokio::sync::broadcast::error::RecvError;

/// Starts the hub's listener, once, when the fleet tier is configured.
pub(super) fn listen(inner: &Arc<HubInner>) {
    let Some(fleet) = inner.boards.fleet_live().cloned() else {
        return;
    };
    inner.listener.get_or_init(|| {
        let hub = Arc::downgrade(inner);
        tokio::spawn(run(hub, fleet)).abort_handle()
    });
}

async fn run(hub: Weak<HubInner>, fleet: Arc<crate::store::shared::live::FleetLive>) {
    let mut rx = fleet.listen().await;
    loop {
        let message = match rx.recv().await {
            Ok(message) => message,
            Err(RecvError::Lagged(n)) => {
                // Missed while this task was busy: the pollers catch up at
                // their next attempt at the lease, which reads the board's
                // last version.
                log::debug!("fleet tier: {n} live announcements skipped");
                continue;
            }
            Err(RecvError::Closed) => return,
        };
        let Some(inner) = hub.upgrade() else { return };
        let bytes = match &message.value {
            fred::types::Value::Bytes(b) => b.clone(),
            fred::types::Value::String(s) => s.inner().clone(),
            _ => bytes::Bytes::new(),
        };
        let Some(announced) = fleet.read(&bytes) else {
            inner.metrics.live_message("ignored");
            continue;
        };
        inner.metrics.live_message("received");
        let watched = inner.watched.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(board) = watched.get(&announced.tag) {
            board
                .heard
                .send_replace(Some(Arc::from(announced.version.as_str())));
        }
    }
}

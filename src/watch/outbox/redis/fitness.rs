//! Whether the Redis for deliveries keeps what it is given, checked at
//! start and kept for the operator's warnings.

use super::RedisOutbox;
use fred::prelude::ClientLike;
use std::collections::HashMap;
use std::time::Duration;

impl RedisOutbox {
    /// Whether the server keeps what it is given: a server that evicts
    /// keys (`maxmemory-policy` other than `noeviction`) or keeps nothing
    /// on disk (neither AOF nor RDB snapshots) can lose deliveries. One
    /// line per finding; kept for [`RedisOutbox::warnings`].
    pub async fn fitness(&self) -> Vec<String> {
        let mut found = Vec::new();
        // Connected through the tier (its first call waits for it); the
        // checks themselves bypass its breaker: a refused `CONFIG` is an
        // answer, not a failing tier.
        let _ = self.count().await;
        let config = |name: &'static str| async move {
            let cmd = fred::types::CustomCommand::new_static(
                "CONFIG",
                fred::types::ClusterHash::Random,
                false,
            );
            let call = self
                .tier
                .client()
                .custom::<HashMap<String, String>, _>(cmd, vec!["GET", name]);
            match tokio::time::timeout(Duration::from_secs(2), call).await {
                Ok(Ok(mut map)) => map.remove(name),
                _ => None,
            }
        };
        match config("maxmemory-policy").await {
            Some(policy) if policy == "noeviction" => {}
            Some(policy) => found.push(format!(
                "the Redis for deliveries evicts keys (maxmemory-policy {policy}): pending \
                 deliveries can be lost; use noeviction"
            )),
            None => found.push(
                "could not check the Redis for deliveries (CONFIG GET maxmemory-policy refused \
                 or unanswered): it needs maxmemory-policy noeviction"
                    .to_owned(),
            ),
        }
        match (config("appendonly").await, config("save").await) {
            (Some(aof), Some(save)) => {
                if aof != "yes" && save.trim().is_empty() {
                    found.push(
                        "the Redis for deliveries keeps nothing on disk (appendonly no, save \
                         \"\"): pending deliveries are lost with it; turn on AOF or RDB"
                            .to_owned(),
                    );
                }
            }
            _ => found.push(
                "could not check the Redis for deliveries (CONFIG GET appendonly/save refused \
                 or unanswered): it needs AOF or RDB persistence"
                    .to_owned(),
            ),
        }
        *self.warnings.lock().unwrap_or_else(|e| e.into_inner()) = found.clone();
        found
    }

    /// What [`RedisOutbox::fitness`] found last.
    pub fn warnings(&self) -> Vec<String> {
        self.warnings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

//! The fleet tier: the second level of the store, documents shared by every
//! node of a fleet through Redis or Valkey (`board_api.cache.shared`).
//!
//! Without it, N nodes cost the provider N loads per board per TTL, and a
//! restarted node starts cold. With it:
//!
//! - **Read path**: process cache, then this tier, then the provider. A
//!   document found here fills the process cache for the time it has left
//!   here, so every node serves the same `fetchedAt` and ETag.
//! - **One load per board per TTL, fleet-wide**: on a miss a node takes the
//!   board's lock (`SET NX PX lock_ms`), loads, stores the document and
//!   releases the lock only if it is still its own (a compare-and-delete
//!   script). Other nodes wait for the document within their deadline,
//!   polling with backoff; when the lock goes without a document (the
//!   holder died and the lock expired), one of them loads.
//! - **Failures shared briefly**: the provider's `403` and `404` are stored
//!   for `error_ttl`; `502`, `503` and `504` are this node's and are not.
//! - **Never a failure of its own**: every call is bounded by `timeout_ms`;
//!   an error or timeout counts as a miss and the node goes on as if there
//!   were no tier; after repeated errors the breaker skips the tier for a
//!   few seconds, then probes it. One warning per opening.
//! - **No secret in a key**: keys are named by a SHA-256 of (board id,
//!   permission id) inside a cluster hash tag ([`keys`]), so a board's
//!   document, lock and failure share one slot.
//! - **Stored format** ([`format`]): a header (version, coverage, expiry,
//!   `fetchedAt`), the zstd-compressed document and an HMAC-SHA256 tag
//!   ([`seal`]) made with the fleet key for the value's own key name.
//! - **Nothing read back is trusted**: a value whose tag does not verify,
//!   whose document is not what this service writes ([`check`]: compact
//!   JSON, depth, node count, size, no sensitive field, the key's own
//!   board), or whose side keys are out of range (a lock or failure with no
//!   expiry or too long a one, a budget counter out of its range) is a
//!   miss, deleted, counted, and logged at most once a minute. A node keeps
//!   a shared document no longer than its own TTL nor past the Redis key's
//!   own expiry.
//!
//! The tier needs the `fleet` feature (on for the binary); the settings
//! below are parsed and checked either way, so a file means the same thing
//! to every build.

#[cfg(feature = "fleet")]
pub mod breaker;
#[cfg(feature = "fleet")]
pub mod check;
#[cfg(feature = "fleet")]
pub mod format;
#[cfg(feature = "fleet")]
pub mod keys;
#[cfg(feature = "fleet")]
pub(crate) mod level;
#[cfg(feature = "fleet")]
pub(crate) mod live;
pub mod seal;
#[cfg(feature = "fleet")]
mod tier;

#[cfg(feature = "fleet")]
pub(crate) use tier::{SharedTier, TierLimits};

pub use seal::Secret;
use std::fmt;
use std::time::Duration;

/// Where the tier's server is.
#[derive(Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// One server (or a primary behind a proxy): `redis://` or `rediss://`.
    Server(String),
    /// Redis Cluster: any reachable nodes, all `redis://` or all `rediss://`.
    Cluster(Vec<String>),
}

/// `board_api.cache.shared`, validated.
#[derive(Clone, PartialEq, Eq)]
pub struct SharedSettings {
    pub endpoint: Endpoint,
    /// Read from the environment variable `password_env` at start-up;
    /// replaces a password in the URL.
    pub password: Option<String>,
    /// The fleet key every value is sealed with, from the environment
    /// variable `secret_env`.
    pub secret: Secret,
    /// The key before a rotation (`previous_secret_env`): values it sealed
    /// still open.
    pub previous_secret: Option<Secret>,
    /// Put before every key (default `sbapi:`).
    pub key_prefix: String,
    /// The bound of every call to the tier (default 100 ms).
    pub timeout: Duration,
    /// How long a load's lock lives if its holder dies (default the fetch
    /// deadline).
    pub lock: Duration,
    /// `provider.fleet_requests_per_second`: the fleet's shared budget of
    /// requests toward the provider, when set.
    pub fleet_requests_per_second: Option<u32>,
}

impl fmt::Debug for Endpoint {
    /// Never prints a password inside a URL.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let redact = |u: &str| match url::Url::parse(u) {
            Ok(mut u) if u.password().is_some() => {
                let _ = u.set_password(Some("redacted"));
                u.to_string()
            }
            _ => u.to_string(),
        };
        match self {
            Endpoint::Server(u) => write!(f, "Server({})", redact(u)),
            Endpoint::Cluster(us) => {
                let nodes: Vec<String> = us.iter().map(|u| redact(u)).collect();
                write!(f, "Cluster({})", nodes.join(", "))
            }
        }
    }
}

impl fmt::Debug for SharedSettings {
    /// Never prints a password.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedSettings")
            .field("endpoint", &self.endpoint)
            .field("password", &self.password.as_ref().map(|_| "[redacted]"))
            .field("secret", &self.secret)
            .field("previous_secret", &self.previous_secret)
            .field("key_prefix", &self.key_prefix)
            .field("timeout", &self.timeout)
            .field("lock", &self.lock)
            .field("fleet_requests_per_second", &self.fleet_requests_per_second)
            .finish()
    }
}

impl SharedSettings {
    /// The default bound of one call.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(100);
    /// The default key prefix.
    pub const DEFAULT_PREFIX: &'static str = "sbapi:";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_a_password() {
        let s = SharedSettings {
            endpoint: Endpoint::Cluster(vec![
                "redis://app:hunter2@127.0.0.1:7000".into(),
                "redis://127.0.0.1:7001".into(),
            ]),
            password: Some("s3cret".into()),
            secret: Secret::new(b"fleet-key-fleet-key-fleet-key-32".to_vec()).expect("key"),
            previous_secret: None,
            key_prefix: "sbapi:".into(),
            timeout: SharedSettings::DEFAULT_TIMEOUT,
            lock: Duration::from_secs(15),
            fleet_requests_per_second: None,
        };
        let text = format!("{s:?}");
        assert!(
            !text.contains("hunter2") && !text.contains("s3cret") && !text.contains("fleet-key"),
            "{text}"
        );
        assert!(text.contains("127.0.0.1:7001"));
    }
}

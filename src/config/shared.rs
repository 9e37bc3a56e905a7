//! `board_api.cache.shared`: the fleet tier on Redis or Valkey. Every value
//! is checked here, at start-up (and by `-t`), including that the password
//! variable is set and the fleet key is (`secret_env`, at least 32 bytes),
//! so nothing about the tier fails later but the server.

use super::{fail, millis, ConfigError};
use crate::store::shared::seal::MIN_SECRET_BYTES;
use crate::store::shared::Secret;
use crate::store::{Endpoint, SharedSettings};
use serde::Deserialize;
use std::time::Duration;

const KEY: &str = "board_api.cache.shared";

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SharedConf {
    /// One server: `redis://[user:password@]host[:port][/db]`, or
    /// `rediss://` for TLS (`valkey://`, `valkeys://` too).
    pub url: Option<String>,
    /// Redis Cluster instead of `url`: any reachable nodes.
    pub cluster: Option<Vec<String>>,
    /// Put before every key (default `sbapi:`).
    pub key_prefix: Option<String>,
    /// The bound of every call (default 100 ms).
    pub timeout_ms: Option<u64>,
    /// How long a load's lock lives if its holder dies (default
    /// `provider.fetch_deadline_ms`).
    pub lock_ms: Option<u64>,
    /// The name of an environment variable holding the password.
    pub password_env: Option<String>,
    /// The name of an environment variable holding the fleet key (at least
    /// 32 bytes), which seals every value the tier holds. Required.
    pub secret_env: Option<String>,
    /// During a rotation, the variable holding the key before it: values
    /// it sealed are still read.
    pub previous_secret_env: Option<String>,
}

impl SharedConf {
    /// The tier's settings; `fetch_deadline` is the lock's default life.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the first bad key.
    pub(crate) fn validate(
        self,
        fetch_deadline: Duration,
        fleet_requests_per_second: Option<u32>,
    ) -> Result<SharedSettings, ConfigError> {
        self.validate_at(KEY, fetch_deadline, fleet_requests_per_second)
    }

    /// As [`SharedConf::validate`], for the section at `key` (the fleet
    /// tier's, or `board_api.changes.redis`, a server of the state's own).
    ///
    /// # Errors
    /// A [`ConfigError`] naming the first bad key under `key`.
    pub(crate) fn validate_at(
        self,
        key: &str,
        fetch_deadline: Duration,
        fleet_requests_per_second: Option<u32>,
    ) -> Result<SharedSettings, ConfigError> {
        let endpoint = match (self.url, self.cluster) {
            (Some(_), Some(_)) => return fail(key, "set url or cluster, not both"),
            (None, None) => return fail(key, "url (one server) or cluster (nodes) is required"),
            (Some(url), None) => Endpoint::Server(server_url(&format!("{key}.url"), &url)?),
            (None, Some(nodes)) => {
                let key = format!("{key}.cluster");
                if nodes.is_empty() {
                    return fail(&key, "at least one node URL is required");
                }
                let mut urls = Vec::with_capacity(nodes.len());
                for node in &nodes {
                    urls.push(server_url(&key, node)?);
                }
                let tls = |u: &String| u.starts_with("rediss") || u.starts_with("valkeys");
                if urls.iter().any(tls) != urls.iter().all(tls) {
                    return fail(&key, "all nodes use TLS (rediss://) or none does");
                }
                Endpoint::Cluster(urls)
            }
        };
        let key_prefix = self
            .key_prefix
            .unwrap_or_else(|| SharedSettings::DEFAULT_PREFIX.to_owned());
        let prefix_ok = !key_prefix.is_empty()
            && key_prefix.len() <= 64
            && key_prefix
                .bytes()
                .all(|b| b.is_ascii_graphic() && b != b'{' && b != b'}');
        if !prefix_ok {
            return fail(
                &format!("{key}.key_prefix"),
                "1 to 64 printable characters, no space, `{` or `}`",
            );
        }
        let password = match self.password_env {
            None => None,
            Some(name) => match std::env::var(&name) {
                Ok(p) if !p.is_empty() => {
                    crate::logging::redact_everywhere(&p);
                    Some(p)
                }
                _ => {
                    return fail(
                        &format!("{key}.password_env"),
                        format!("environment variable {name:?} is not set"),
                    )
                }
            },
        };
        let Some(secret_env) = self.secret_env else {
            return fail(
                &format!("{key}.secret_env"),
                "required: the name of an environment variable holding the fleet key (at least 32 bytes, e.g. `openssl rand -base64 48`), the same on every node",
            );
        };
        let secret = fleet_key(&format!("{key}.secret_env"), &secret_env)?;
        let previous_secret = match self.previous_secret_env {
            None => None,
            Some(name) => Some(fleet_key(&format!("{key}.previous_secret_env"), &name)?),
        };
        let timeout = millis(
            &format!("{key}.timeout_ms"),
            self.timeout_ms,
            SharedSettings::DEFAULT_TIMEOUT,
        )?;
        let lock = millis(&format!("{key}.lock_ms"), self.lock_ms, fetch_deadline)?;
        Ok(SharedSettings {
            endpoint,
            password,
            secret,
            previous_secret,
            key_prefix,
            timeout,
            lock,
            fleet_requests_per_second,
        })
    }
}

/// The fleet key in the environment variable `name`. The message names the
/// variable, never its value.
fn fleet_key(key: &str, name: &str) -> Result<Secret, ConfigError> {
    let value = std::env::var_os(name).unwrap_or_default();
    if let Some(text) = value.to_str() {
        crate::logging::redact_everywhere(text);
    }
    let bytes = value.into_encoded_bytes();
    if bytes.is_empty() {
        return fail(key, format!("environment variable {name:?} is not set"));
    }
    Secret::new(bytes).map_or_else(
        || {
            fail(
                key,
                format!("environment variable {name:?} holds fewer than {MIN_SECRET_BYTES} bytes"),
            )
        },
        Ok,
    )
}

/// A `redis://`, `rediss://`, `valkey://` or `valkeys://` URL with a host.
/// The message never repeats the URL: it may hold a password.
fn server_url(key: &str, text: &str) -> Result<String, ConfigError> {
    let Ok(url) = url::Url::parse(text.trim()) else {
        return fail(key, "not a URL such as redis://127.0.0.1:6379/0");
    };
    if !matches!(url.scheme(), "redis" | "rediss" | "valkey" | "valkeys") {
        return fail(
            key,
            "the scheme must be redis://, rediss:// (TLS), valkey:// or valkeys://",
        );
    }
    if url.host_str().is_none_or(str::is_empty) {
        return fail(key, "the URL has no host");
    }
    // From the parsed URL, not a pattern: whatever characters it holds.
    if let Some(password) = url.password() {
        crate::logging::redact_everywhere(password);
    }
    Ok(url.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fleet key for these tests, and one too short.
    const KEY_VAR: &str = "SBAPI_CONFIG_TEST_FLEET_KEY";
    const SHORT_VAR: &str = "SBAPI_CONFIG_TEST_SHORT_KEY";

    /// `yaml` with the fleet key named, unless it names one itself.
    fn conf(yaml: &str) -> Result<SharedSettings, ConfigError> {
        std::env::set_var(KEY_VAR, "0123456789abcdef0123456789abcdef");
        std::env::set_var(SHORT_VAR, "0123456789abcdef0123456789abcde");
        let yaml = if yaml.contains("secret_env") || yaml == "{}" {
            yaml.to_owned()
        } else {
            format!("{yaml}\nsecret_env: {KEY_VAR}")
        };
        let c: SharedConf = serde_yaml::from_str(&yaml).expect("yaml");
        c.validate(Duration::from_secs(15), None)
    }

    #[test]
    fn defaults_and_the_two_endpoints() {
        let s = conf("url: redis://127.0.0.1:6379/0").expect("valid");
        assert_eq!(
            s.endpoint,
            Endpoint::Server("redis://127.0.0.1:6379/0".into())
        );
        assert_eq!(
            (s.key_prefix.as_str(), s.timeout),
            ("sbapi:", SharedSettings::DEFAULT_TIMEOUT)
        );
        assert_eq!(s.lock, Duration::from_secs(15));
        let s = conf("cluster: [redis://127.0.0.1:7000, redis://127.0.0.1:7001]\nkey_prefix: 'edge:'\ntimeout_ms: 50\nlock_ms: 2000")
            .expect("valid");
        assert!(matches!(s.endpoint, Endpoint::Cluster(ref n) if n.len() == 2));
        assert_eq!(
            (s.timeout, s.lock),
            (Duration::from_millis(50), Duration::from_secs(2))
        );
    }

    #[test]
    fn bad_values_name_their_key_and_never_echo_a_password() {
        let cases = [
            ("{}", "board_api.cache.shared"),
            (
                "url: redis://a:1\ncluster: [redis://b:1]",
                "board_api.cache.shared",
            ),
            ("url: http://127.0.0.1:6379", "board_api.cache.shared.url"),
            ("url: 'redis://user:hunter2@'", "board_api.cache.shared.url"),
            ("cluster: []", "board_api.cache.shared.cluster"),
            (
                "cluster: [redis://a:1, rediss://b:1]",
                "board_api.cache.shared.cluster",
            ),
            (
                "url: redis://a:1\nkey_prefix: 'a{b}'",
                "board_api.cache.shared.key_prefix",
            ),
            (
                "url: redis://a:1\ntimeout_ms: 0",
                "board_api.cache.shared.timeout_ms",
            ),
            (
                "url: redis://a:1\npassword_env: SBAPI_TEST_UNSET_VARIABLE",
                "board_api.cache.shared.password_env",
            ),
            (
                "url: redis://a:1\nsecret_env: SBAPI_TEST_UNSET_VARIABLE",
                "board_api.cache.shared.secret_env",
            ),
            (
                "url: redis://a:1\nsecret_env: SBAPI_CONFIG_TEST_SHORT_KEY",
                "board_api.cache.shared.secret_env",
            ),
            (
                "url: redis://a:1\nsecret_env: SBAPI_CONFIG_TEST_FLEET_KEY\nprevious_secret_env: SBAPI_CONFIG_TEST_SHORT_KEY",
                "board_api.cache.shared.previous_secret_env",
            ),
        ];
        for (yaml, key) in cases {
            let err = conf(yaml).expect_err(yaml);
            assert_eq!(err.key, key, "{yaml}");
            assert!(!err.message.contains("hunter2"), "{}", err.message);
            assert!(!err.message.contains("0123456789abcdef"), "{}", err.message);
        }
        // No fleet key named at all: `-t` refuses the tier.
        let c: SharedConf = serde_yaml::from_str("url: redis://a:1").expect("yaml");
        let err = c
            .validate(Duration::from_secs(15), None)
            .expect_err("no secret_env");
        assert_eq!(err.key, "board_api.cache.shared.secret_env");
        let s = conf(&format!(
            "url: redis://a:1\nsecret_env: {KEY_VAR}\nprevious_secret_env: {KEY_VAR}"
        ))
        .expect("valid");
        assert!(s.previous_secret.is_some());
    }
}

//! `board_api.watch`: jobs that load a board on a schedule and post a signed
//! webhook when it changed. The share link, the webhook URL and its secret
//! are read from environment variables named here, never from the file:
//! the file can be shared, a link or a secret cannot. Every variable is
//! checked at start-up (and by `-t`): set, and well formed.

use super::{fail, ConfigError};
use serde::Deserialize;
use std::collections::HashSet;
use std::time::Duration;

/// The shortest interval between two runs of a job.
pub const MIN_EVERY: Duration = Duration::from_secs(10);
/// The longest interval between two runs of a job.
pub const MAX_EVERY: Duration = Duration::from_secs(24 * 3600);
/// The interval of a job that names none: 5 minutes.
pub const DEFAULT_EVERY: Duration = Duration::from_secs(300);
/// Attempts at one delivery when the job names no number.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 8;
/// The most jobs one file may configure.
pub const MAX_JOBS: usize = 100;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct WatchConf {
    #[serde(default)]
    pub jobs: Vec<JobConf>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct JobConf {
    pub id: String,
    /// The variable holding the board's share link.
    pub url_env: String,
    /// `10s`, `5m`, `1h` (default 5m, at least 10s).
    #[serde(default)]
    pub every: Option<String>,
    pub webhook: WebhookConf,
    /// Attempts at one delivery (default 8, 1 to 50).
    #[serde(default)]
    pub max_attempts: Option<u32>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct WebhookConf {
    /// The variable holding the receiver's `http(s)` URL.
    pub url_env: String,
    /// The variable holding the Standard Webhooks secret (`whsec_...`).
    pub secret_env: String,
}

/// One watch job, validated. Its `Debug` shows no link, URL or secret.
#[derive(Clone, PartialEq, Eq)]
pub struct JobSettings {
    /// Names the job in the payload, the metrics and `/watch`.
    pub id: String,
    /// The share link, as read from `url_env` (checked as a share link when
    /// the service is built).
    pub link: String,
    pub every: Duration,
    /// The receiver.
    pub webhook: url::Url,
    /// The signing key: the bytes the `whsec_` secret encodes.
    pub key: Vec<u8>,
    pub max_attempts: u32,
}

impl std::fmt::Debug for JobSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobSettings")
            .field("id", &self.id)
            .field("every", &self.every)
            .field("max_attempts", &self.max_attempts)
            .finish_non_exhaustive()
    }
}

/// `board_api.watch`, validated: no jobs when the section is absent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WatchSettings {
    pub jobs: Vec<JobSettings>,
}

impl WatchConf {
    /// Checks every job, reading its variables from the environment;
    /// `freshest` is the longest a loaded board is served from a cache
    /// (`board_api.cache.ttl`): a run could not see a board younger than
    /// its interval with a shorter one.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the job's key: an id that is empty, too long,
    /// of other characters than letters, digits, `-`, `_` and `.`, or used
    /// twice; an interval out of range or shorter than the cache's TTL; a
    /// variable unset or not well formed; `max_attempts` out of range.
    pub(crate) fn validate(
        conf: Option<WatchConf>,
        freshest: Duration,
    ) -> Result<WatchSettings, ConfigError> {
        let conf = conf.unwrap_or_default();
        if conf.jobs.len() > MAX_JOBS {
            return fail("board_api.watch.jobs", format!("at most {MAX_JOBS} jobs"));
        }
        let mut seen = HashSet::new();
        let mut jobs = Vec::with_capacity(conf.jobs.len());
        for (at, job) in conf.jobs.into_iter().enumerate() {
            let key = |name: &str| format!("board_api.watch.jobs[{at}].{name}");
            if !valid_id(&job.id) {
                return fail(&key("id"), "1 to 64 letters, digits, '-', '_' or '.'");
            }
            if !seen.insert(job.id.clone()) {
                return fail(&key("id"), format!("{:?} is used by two jobs", job.id));
            }
            let every = match job.every.as_deref() {
                None => DEFAULT_EVERY,
                Some(text) => parse_duration(text).ok_or_else(|| {
                    ConfigError::new(
                        key("every"),
                        format!("{text:?} is not a duration such as 10s, 5m or 1h"),
                    )
                })?,
            };
            if !(MIN_EVERY..=MAX_EVERY).contains(&every) {
                return fail(&key("every"), "must be between 10s and 24h");
            }
            if every < freshest {
                return fail(
                    &key("every"),
                    format!(
                        "shorter than board_api.cache.ttl ({} s): a run would see a cached board older than its interval",
                        freshest.as_secs()
                    ),
                );
            }
            let link = variable(&key("url_env"), &job.url_env)?;
            let webhook = variable(&key("webhook.url_env"), &job.webhook.url_env)?;
            let webhook = receiver(&webhook).map_err(|m| {
                ConfigError::new(
                    key("webhook.url_env"),
                    format!("{}: {m}", job.webhook.url_env),
                )
            })?;
            let secret = variable(&key("webhook.secret_env"), &job.webhook.secret_env)?;
            let key_bytes = secret_key(&secret).map_err(|m| {
                ConfigError::new(
                    key("webhook.secret_env"),
                    format!("{}: {m}", job.webhook.secret_env),
                )
            })?;
            let max_attempts = match job.max_attempts {
                None => DEFAULT_MAX_ATTEMPTS,
                Some(n) if (1..=50).contains(&n) => n,
                Some(_) => return fail(&key("max_attempts"), "must be between 1 and 50"),
            };
            jobs.push(JobSettings {
                id: job.id,
                link,
                every,
                webhook,
                key: key_bytes,
                max_attempts,
            });
        }
        Ok(WatchSettings { jobs })
    }
}

fn valid_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
}

/// The value of the environment variable `name`, trimmed; its value is
/// never part of an error.
pub(crate) fn variable(key: &str, name: &str) -> Result<String, ConfigError> {
    if name.is_empty() {
        return fail(key, "names no environment variable");
    }
    match std::env::var(name) {
        Ok(v) if !v.trim().is_empty() => Ok(v.trim().to_owned()),
        Ok(_) => fail(key, format!("the environment variable {name} is empty")),
        Err(std::env::VarError::NotPresent) => {
            fail(key, format!("the environment variable {name} is not set"))
        }
        Err(std::env::VarError::NotUnicode(_)) => {
            fail(key, format!("the environment variable {name} is not UTF-8"))
        }
    }
}

/// `10s`, `5m`, `2h`: a whole number and a unit.
pub fn parse_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit())?;
    let (digits, unit) = text.split_at(split);
    if digits.is_empty() || digits.len() > 9 {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    let seconds = match unit {
        "s" => n,
        "m" => n.checked_mul(60)?,
        "h" => n.checked_mul(3600)?,
        _ => return None,
    };
    Some(Duration::from_secs(seconds))
}

/// A receiver URL: `http` or `https` with a host, no fragment. The message
/// never quotes the URL (it may carry a token of the receiver's).
fn receiver(text: &str) -> Result<url::Url, &'static str> {
    let url = url::Url::parse(text).map_err(|_| "not a URL")?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err("the webhook URL must be http or https");
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err("the webhook URL has no host");
    }
    if url.fragment().is_some() {
        return Err("the webhook URL has a fragment");
    }
    Ok(url)
}

/// The signing key of a Standard Webhooks secret: `whsec_` and the
/// standard base64 of 24 to 64 random bytes.
pub fn secret_key(secret: &str) -> Result<Vec<u8>, &'static str> {
    use base64::Engine as _;
    let Some(encoded) = secret.strip_prefix("whsec_") else {
        return Err("a webhook secret starts with whsec_");
    };
    let key = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|_| "the part after whsec_ is not base64")?;
    if !(24..=64).contains(&key.len()) {
        return Err("the key after whsec_ must be 24 to 64 bytes");
    }
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        let cases = [
            ("10s", Some(10)),
            ("5m", Some(300)),
            ("1h", Some(3600)),
            (" 30s ", Some(30)),
            ("10", None),
            ("s", None),
            ("1.5m", None),
            ("-1s", None),
            ("10d", None),
            ("9999999999s", None),
        ];
        for (text, want) in cases {
            assert_eq!(
                parse_duration(text),
                want.map(Duration::from_secs),
                "{text}"
            );
        }
    }

    #[test]
    fn secrets_follow_standard_webhooks() {
        use base64::Engine as _;
        let b64 = |n: usize| base64::engine::general_purpose::STANDARD.encode(vec![7u8; n]);
        assert_eq!(secret_key(&format!("whsec_{}", b64(24))), Ok(vec![7; 24]));
        assert!(secret_key(&format!("whsec_{}", b64(23))).is_err());
        assert!(secret_key(&format!("whsec_{}", b64(65))).is_err());
        assert!(secret_key(&b64(32)).is_err());
        assert!(secret_key("whsec_***").is_err());
    }

    #[test]
    fn receivers() {
        assert!(receiver("https://hooks.example.com/in?t=1").is_ok());
        assert!(receiver("http://127.0.0.1:9/x").is_ok());
        for bad in ["ftp://x/", "https:///", "not a url", "https://x/#f"] {
            assert!(receiver(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn ids() {
        assert!(valid_id("trip-plan_2.v1"));
        for bad in ["", "a b", "é", &"x".repeat(65)] {
            assert!(!valid_id(bad), "{bad}");
        }
    }

    #[test]
    fn a_job_is_checked_key_by_key() {
        let conf = |every: &str| WatchConf {
            jobs: vec![JobConf {
                id: "j".into(),
                url_env: "SBAPI_TEST_WATCH_UNSET_LINK".into(),
                every: Some(every.into()),
                webhook: WebhookConf {
                    url_env: "SBAPI_TEST_WATCH_UNSET_URL".into(),
                    secret_env: "SBAPI_TEST_WATCH_UNSET_SECRET".into(),
                },
                max_attempts: None,
            }],
        };
        let e = WatchConf::validate(Some(conf("5s")), Duration::from_secs(1)).unwrap_err();
        assert_eq!(e.key, "board_api.watch.jobs[0].every");
        let e = WatchConf::validate(Some(conf("30s")), Duration::from_secs(60)).unwrap_err();
        assert_eq!(e.key, "board_api.watch.jobs[0].every");
        let e = WatchConf::validate(Some(conf("30s")), Duration::from_secs(1)).unwrap_err();
        assert_eq!(e.key, "board_api.watch.jobs[0].url_env");
        assert!(e.message.contains("not set"), "{e}");
        assert_eq!(
            WatchConf::validate(None, Duration::from_secs(60)),
            Ok(WatchSettings::default())
        );
    }
}

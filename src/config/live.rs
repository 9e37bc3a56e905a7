//! `board_api.live`: changes as they happen (`/changes` as Server-Sent
//! Events, the long poll, feeds): how often a board someone waits on is
//! loaded fresh, and how many streams a node and a client may hold.

use super::{fail, within, ConfigError};
use serde::Deserialize;
use std::time::Duration;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LiveConf {
    /// Seconds between fresh loads of a board someone waits on (default
    /// 15, 10 to 3600).
    #[serde(default)]
    pub every: Option<u64>,
    /// Seconds a stream stays open (default 3600, 10 to 86400).
    #[serde(default)]
    pub max_stream_seconds: Option<u64>,
    /// Streams and long polls open at once on a node (default 1000).
    #[serde(default)]
    pub max_streams: Option<usize>,
    /// Streams and long polls open at once per client address (default 10).
    #[serde(default)]
    pub max_streams_per_client: Option<usize>,
    /// Entries in a feed (default 20, 1 to 1000).
    #[serde(default)]
    pub feed_entries: Option<usize>,
}

/// What the live endpoints run on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveSettings {
    /// Between fresh loads of a board someone waits on.
    pub every: Duration,
    /// How long a stream stays open.
    pub max_stream: Duration,
    /// Streams and waits at once on a node.
    pub max_streams: usize,
    /// Streams and waits at once per client address.
    pub max_streams_per_client: usize,
    /// Entries in a feed.
    pub feed_entries: usize,
}

/// Seconds between fresh loads by default.
pub const DEFAULT_EVERY: u64 = 15;
/// The shortest interval between fresh loads: the provider is not polled
/// faster than this for anyone.
pub const MIN_EVERY: u64 = 10;

impl Default for LiveSettings {
    fn default() -> Self {
        LiveSettings {
            every: Duration::from_secs(DEFAULT_EVERY),
            max_stream: Duration::from_secs(3600),
            max_streams: 1000,
            max_streams_per_client: 10,
            feed_entries: 20,
        }
    }
}

impl LiveConf {
    /// The settings of `conf` (`None`: the section is absent, defaults).
    ///
    /// # Errors
    /// A [`ConfigError`] naming the first value out of its range.
    pub(crate) fn validate(conf: Option<LiveConf>) -> Result<LiveSettings, ConfigError> {
        let d = LiveSettings::default();
        let Some(c) = conf else {
            return Ok(d);
        };
        let seconds =
            |key: &str, value: Option<u64>, default: Duration, min: u64, max: u64| match value {
                None => Ok(default),
                Some(s) if (min..=max).contains(&s) => Ok(Duration::from_secs(s)),
                Some(_) => fail(key, format!("must be between {min} and {max} seconds")),
            };
        Ok(LiveSettings {
            every: seconds("board_api.live.every", c.every, d.every, MIN_EVERY, 3600)?,
            max_stream: seconds(
                "board_api.live.max_stream_seconds",
                c.max_stream_seconds,
                d.max_stream,
                10,
                86_400,
            )?,
            max_streams: within(
                "board_api.live.max_streams",
                c.max_streams,
                d.max_streams,
                1,
                1_000_000,
            )?,
            max_streams_per_client: within(
                "board_api.live.max_streams_per_client",
                c.max_streams_per_client,
                d.max_streams_per_client,
                1,
                1_000_000,
            )?,
            feed_entries: within(
                "board_api.live.feed_entries",
                c.feed_entries,
                d.feed_entries,
                1,
                1000,
            )?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(yaml: &str) -> Result<LiveSettings, ConfigError> {
        let conf: LiveConf = serde_yaml::from_str(yaml).expect("parses");
        LiveConf::validate(Some(conf))
    }

    #[test]
    fn defaults_and_bounds() {
        assert_eq!(LiveConf::validate(None), Ok(LiveSettings::default()));
        let s = conf("every: 10\nmax_streams: 2\nmax_streams_per_client: 1").expect("valid");
        assert_eq!(s.every, Duration::from_secs(10));
        assert_eq!((s.max_streams, s.max_streams_per_client), (2, 1));
        for (bad, key) in [
            ("every: 9", "board_api.live.every"),
            ("max_stream_seconds: 1", "board_api.live.max_stream_seconds"),
            ("max_streams: 0", "board_api.live.max_streams"),
            (
                "max_streams_per_client: 0",
                "board_api.live.max_streams_per_client",
            ),
            ("feed_entries: 0", "board_api.live.feed_entries"),
        ] {
            assert_eq!(conf(bad).map_err(|e| e.key), Err(key.to_owned()), "{bad}");
        }
    }
}

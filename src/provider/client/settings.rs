//! `ProviderSettings`: the provider client's validated runtime settings. The
//! config module builds them from the YAML `board_api.provider` section.

use std::path::PathBuf;
use std::time::Duration;

/// Settings of the provider client. [`ProviderSettings::default`] targets the
/// real Milanote with the documented defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderSettings {
    /// Where upstream requests go. Default `https://app.milanote.com`;
    /// `http://127.0.0.1:PORT` in tests. Scheme `http` or `https`, no path,
    /// query, fragment or user info.
    pub origin: url::Url,
    /// The `User-Agent` sent to the provider. Default `shared-board-api/<version>`.
    pub user_agent: String,
    /// PEM file of CA certificates trusted for the origin instead of the system
    /// roots (set per peer, so the rest of the process keeps the system store).
    /// Default `None`.
    pub ca_file: Option<PathBuf>,
    /// TCP connect timeout; the TLS handshake may take as long again. Default 3 s.
    pub connect_timeout: Duration,
    /// Timeout of each read or write on an upstream connection. Default 10 s.
    pub read_timeout: Duration,
    /// The whole fetch (token, root board, nested boards). Default 15 s.
    pub fetch_deadline: Duration,
    /// Largest upstream response body, counted while reading and again after
    /// gzip decoding. Default 32 MiB.
    pub max_response_bytes: usize,
    /// Most boards fetched for one share link, the root included. Default 100.
    pub max_boards: usize,
    /// Most board ids in one `/api/boards` request. Default 50.
    pub batch_size: usize,
    /// Most nested-board requests in flight for one fetch. Default 4.
    pub concurrency: usize,
    /// Most merged elements for one share link. Default 200 000.
    pub max_elements: usize,
    /// Requests in flight to the provider at once, across every fetch of
    /// this client (token, root and nested boards alike); further ones wait
    /// for a turn within their deadline. Default 32.
    pub max_in_flight: usize,
}

impl Default for ProviderSettings {
    fn default() -> Self {
        ProviderSettings {
            origin: url::Url::parse("https://app.milanote.com").unwrap_or_else(|_| unreachable!()),
            user_agent: format!("shared-board-api/{}", env!("CARGO_PKG_VERSION")),
            ca_file: None,
            connect_timeout: Duration::from_secs(3),
            read_timeout: Duration::from_secs(10),
            fetch_deadline: Duration::from_secs(15),
            max_response_bytes: 32 * 1024 * 1024,
            max_boards: 100,
            batch_size: 50,
            concurrency: 4,
            max_elements: 200_000,
            max_in_flight: 32,
        }
    }
}

impl ProviderSettings {
    /// Check every value once, at start-up.
    ///
    /// # Errors
    ///
    /// A message naming the first invalid setting: an origin that is not a bare
    /// `http(s)://host[:port]`, an empty or non-visible-ASCII user agent, a zero
    /// timeout, limit, batch size or concurrency.
    pub fn validate(&self) -> Result<(), String> {
        let o = &self.origin;
        if o.scheme() != "http" && o.scheme() != "https" {
            return Err(format!(
                "origin: scheme must be http or https, not {:?}",
                o.scheme()
            ));
        }
        if o.host_str().is_none_or(str::is_empty) {
            return Err("origin: a host is required".into());
        }
        if !o.username().is_empty() || o.password().is_some() {
            return Err("origin: user info is not allowed".into());
        }
        if o.path() != "/" && !o.path().is_empty() {
            return Err("origin: a path is not allowed".into());
        }
        if o.query().is_some() || o.fragment().is_some() {
            return Err("origin: a query or fragment is not allowed".into());
        }
        let ua_ok = !self.user_agent.trim().is_empty()
            && self.user_agent.len() <= 512
            && self.user_agent.bytes().all(|b| (0x20..0x7f).contains(&b));
        if !ua_ok {
            return Err("user_agent: 1 to 512 visible ASCII characters".into());
        }
        let positive = [
            ("connect_timeout", self.connect_timeout.is_zero()),
            ("read_timeout", self.read_timeout.is_zero()),
            ("fetch_deadline", self.fetch_deadline.is_zero()),
            ("max_response_bytes", self.max_response_bytes == 0),
            ("max_boards", self.max_boards == 0),
            ("batch_size", self.batch_size == 0),
            ("concurrency", self.concurrency == 0),
            ("max_elements", self.max_elements == 0),
            ("max_in_flight", self.max_in_flight == 0),
        ];
        if let Some((name, _)) = positive.iter().find(|(_, zero)| *zero) {
            return Err(format!("{name}: must be greater than zero"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_match_the_design() {
        let s = ProviderSettings::default();
        assert_eq!(s.validate(), Ok(()));
        assert_eq!(s.origin.as_str(), "https://app.milanote.com/");
        assert_eq!(s.fetch_deadline, Duration::from_secs(15));
        assert_eq!(s.max_response_bytes, 33_554_432);
        assert_eq!((s.max_boards, s.batch_size, s.concurrency), (100, 50, 4));
    }

    #[test]
    fn invalid_settings_are_named() {
        let with = |f: fn(&mut ProviderSettings)| {
            let mut s = ProviderSettings::default();
            f(&mut s);
            s.validate().unwrap_err()
        };
        let url = |u: &str| url::Url::parse(u).unwrap();
        assert!(with(|s| s.origin = url::Url::parse("ftp://x").unwrap()).starts_with("origin"));
        let cases: Vec<(ProviderSettings, &str)> = vec![
            (
                ProviderSettings {
                    origin: url("https://u:p@x"),
                    ..Default::default()
                },
                "origin",
            ),
            (
                ProviderSettings {
                    origin: url("https://x/a"),
                    ..Default::default()
                },
                "origin",
            ),
            (
                ProviderSettings {
                    origin: url("https://x/?q"),
                    ..Default::default()
                },
                "origin",
            ),
            (
                ProviderSettings {
                    user_agent: " ".into(),
                    ..Default::default()
                },
                "user_agent",
            ),
            (
                ProviderSettings {
                    user_agent: "a\nb".into(),
                    ..Default::default()
                },
                "user_agent",
            ),
            (
                ProviderSettings {
                    batch_size: 0,
                    ..Default::default()
                },
                "batch_size",
            ),
            (
                ProviderSettings {
                    read_timeout: Duration::ZERO,
                    ..Default::default()
                },
                "read_timeout",
            ),
        ];
        for (s, name) in cases {
            let err = s.validate().unwrap_err();
            assert!(err.starts_with(name), "{err}");
        }
    }
}

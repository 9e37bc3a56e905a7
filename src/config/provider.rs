//! `board_api.provider`: the provider's name, the share-link host and where
//! and how upstream requests go (timeouts, size and fan-out limits).

use super::{fail, millis, within, ConfigError};
use crate::provider::client::ProviderSettings;
use serde::Deserialize;
use std::path::PathBuf;

/// `board_api.provider:` as written; the section and its three names may be
/// left out, and then are Milanote's.
/// Milanote's name, share-link host and origin: the defaults.
const MILANOTE: (&str, &str, &str) = ("milanote", "app.milanote.com", "https://app.milanote.com");

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ProviderConf {
    /// `source.provider` in documents (default `milanote`).
    pub name: Option<String>,
    /// The host accepted in `url=` share links (default `app.milanote.com`).
    pub share_host: Option<String>,
    /// Where upstream requests go (default `https://app.milanote.com`).
    pub origin: Option<String>,
    pub user_agent: Option<String>,
    /// PEM CA bundle for the origin instead of the system roots.
    pub ca_file: Option<PathBuf>,
    pub connect_timeout_ms: Option<u64>,
    pub read_timeout_ms: Option<u64>,
    pub fetch_deadline_ms: Option<u64>,
    pub max_response_bytes: Option<usize>,
    pub max_boards: Option<usize>,
    pub batch_size: Option<usize>,
    pub concurrency: Option<usize>,
    pub max_elements: Option<usize>,
    /// A budget of requests per second toward the provider shared by the
    /// whole fleet (needs `cache.shared`).
    pub fleet_requests_per_second: Option<u32>,
}

/// `board_api.provider`, validated: the provider's name, the share-link
/// host (lower case) and the client's settings.
pub(crate) struct ValidProvider {
    pub name: String,
    pub share_host: String,
    pub settings: ProviderSettings,
    pub fleet_requests_per_second: Option<u32>,
}

impl ProviderConf {
    /// Checks every value and applies the client's defaults.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the first bad key.
    pub(crate) fn validate(self) -> Result<ValidProvider, ConfigError> {
        let p = self;
        let name = p.name.unwrap_or_else(|| MILANOTE.0.to_owned());
        let share_host = p.share_host.unwrap_or_else(|| MILANOTE.1.to_owned());
        let origin = p.origin.unwrap_or_else(|| MILANOTE.2.to_owned());
        if name.trim().is_empty() {
            return fail("board_api.provider.name", "must not be empty");
        }
        let share_host = share_host.trim().to_ascii_lowercase();
        match url::Url::parse(&format!("https://{share_host}/")) {
            Ok(u) if u.host_str() == Some(share_host.as_str()) && u.port().is_none() => {}
            _ => {
                return fail(
                    "board_api.provider.share_host",
                    "must be a bare host name such as app.milanote.com",
                )
            }
        }
        let origin = url::Url::parse(&origin).or_else(|e| {
            fail(
                "board_api.provider.origin",
                format!("not a URL ({e}); e.g. https://app.milanote.com"),
            )
        })?;
        let defaults = ProviderSettings::default();
        let user_agent = p.user_agent.unwrap_or(defaults.user_agent.clone());
        if let Some(ca) = &p.ca_file {
            if !ca.is_file() {
                return fail(
                    "board_api.provider.ca_file",
                    format!("{} is not a readable file", ca.display()),
                );
            }
            // Read and parsed as the client will, so a bad bundle is refused
            // here (and by `-t`), not when the API is built.
            if let Err(e) = crate::provider::client::load_ca_file(ca) {
                return fail(
                    "board_api.provider.ca_file",
                    format!("{}: {e}", ca.display()),
                );
            }
        }
        let provider = ProviderSettings {
            origin,
            user_agent,
            ca_file: p.ca_file,
            connect_timeout: millis(
                "board_api.provider.connect_timeout_ms",
                p.connect_timeout_ms,
                defaults.connect_timeout,
            )?,
            read_timeout: millis(
                "board_api.provider.read_timeout_ms",
                p.read_timeout_ms,
                defaults.read_timeout,
            )?,
            fetch_deadline: millis(
                "board_api.provider.fetch_deadline_ms",
                p.fetch_deadline_ms,
                defaults.fetch_deadline,
            )?,
            max_response_bytes: within(
                "board_api.provider.max_response_bytes",
                p.max_response_bytes,
                defaults.max_response_bytes,
                1024,
                1 << 30,
            )?,
            max_boards: within(
                "board_api.provider.max_boards",
                p.max_boards,
                defaults.max_boards,
                1,
                10_000,
            )?,
            batch_size: within(
                "board_api.provider.batch_size",
                p.batch_size,
                defaults.batch_size,
                1,
                50,
            )?,
            concurrency: within(
                "board_api.provider.concurrency",
                p.concurrency,
                defaults.concurrency,
                1,
                64,
            )?,
            max_elements: within(
                "board_api.provider.max_elements",
                p.max_elements,
                defaults.max_elements,
                1,
                10_000_000,
            )?,
            // Set from `limits.max_upstream_requests` when the API is built.
            max_in_flight: defaults.max_in_flight,
        };
        // The client's own rules (origin shape, user agent, positive limits);
        // its messages start with the setting's name.
        provider.validate().or_else(|message| {
            let setting = message.split(':').next().unwrap_or("");
            fail(&format!("board_api.provider.{setting}"), message.clone())
        })?;
        let fleet_requests_per_second = match p.fleet_requests_per_second {
            Some(n) if !(1..=1_000_000).contains(&n) => {
                return fail(
                    "board_api.provider.fleet_requests_per_second",
                    "must be between 1 and 1000000",
                )
            }
            n => n,
        };
        Ok(ValidProvider {
            name,
            share_host,
            settings: provider,
            fleet_requests_per_second,
        })
    }
}

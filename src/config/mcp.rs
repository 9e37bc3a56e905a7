//! `board_api.mcp`: the Model Context Protocol endpoint at `{prefix}/mcp`
//! (on by default), which origins a browser may call it from, and how large
//! a request body it reads.

use super::{fail, ConfigError};
use serde::Deserialize;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct McpConf {
    /// Answer `POST {prefix}/mcp` (default true).
    #[serde(default)]
    pub enabled: Option<bool>,
    /// Origins (`https://host[:port]`, or `*` for any) whose browser
    /// requests are answered; a request with any other `Origin` is `403`
    /// (default none: only clients that send no `Origin`, as agents do).
    #[serde(default)]
    pub allowed_origins: Option<Vec<String>>,
    /// Largest request body read, in bytes (default 65536).
    #[serde(default)]
    pub max_body_bytes: Option<usize>,
}

/// What the MCP endpoint runs on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpSettings {
    pub enabled: bool,
    /// Exact origins, lower-cased, without a trailing `/`.
    pub allowed_origins: Vec<String>,
    /// `allowed_origins` held `*`.
    pub any_origin: bool,
    pub max_body_bytes: usize,
}

/// Request bodies read by default: a `tools/call` is a few hundred bytes (a
/// share link is at most 2048 characters, selector lists a few KiB).
pub const DEFAULT_MAX_BODY_BYTES: usize = 64 << 10;

impl Default for McpSettings {
    fn default() -> Self {
        McpSettings {
            enabled: true,
            allowed_origins: Vec::new(),
            any_origin: false,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
        }
    }
}

impl McpConf {
    /// # Errors
    /// A [`ConfigError`] for an origin that is not `scheme://host[:port]`
    /// or `*`, or a body limit outside 1 KiB to 1 MiB.
    pub(crate) fn validate(conf: Option<McpConf>) -> Result<McpSettings, ConfigError> {
        let conf = conf.unwrap_or_default();
        let mut settings = McpSettings {
            enabled: conf.enabled.unwrap_or(true),
            ..McpSettings::default()
        };
        for origin in conf.allowed_origins.unwrap_or_default() {
            if origin == "*" {
                settings.any_origin = true;
                continue;
            }
            settings
                .allowed_origins
                .push(origin_key(&origin).ok_or_else(|| {
                    ConfigError::new(
                        "board_api.mcp.allowed_origins",
                        format!(
                            "{origin:?} is not an origin such as https://agent.example.com or *"
                        ),
                    )
                })?);
        }
        if let Some(bytes) = conf.max_body_bytes {
            if !(1024..=1 << 20).contains(&bytes) {
                return fail(
                    "board_api.mcp.max_body_bytes",
                    "must be between 1024 and 1048576",
                );
            }
            settings.max_body_bytes = bytes;
        }
        Ok(settings)
    }
}

/// An origin as browsers send it (`scheme://host[:port]`, nothing else),
/// lower-cased; `None` for anything else.
fn origin_key(origin: &str) -> Option<String> {
    let trimmed = origin.trim().trim_end_matches('/');
    let url = url::Url::parse(trimmed).ok()?;
    let plain = matches!(url.scheme(), "http" | "https")
        && url.host_str().is_some()
        && url.username().is_empty()
        && url.password().is_none()
        && url.path() == "/"
        && url.query().is_none()
        && url.fragment().is_none();
    plain.then(|| url.origin().ascii_serialization())
}

impl McpSettings {
    /// Whether a request with this `Origin` header value may be answered.
    pub fn allows_origin(&self, origin: &[u8]) -> bool {
        if self.any_origin {
            return true;
        }
        let Ok(text) = std::str::from_utf8(origin) else {
            return false;
        };
        origin_key(text).is_some_and(|o| self.allowed_origins.contains(&o))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(origins: &[&str]) -> Result<McpSettings, ConfigError> {
        McpConf::validate(Some(McpConf {
            allowed_origins: Some(origins.iter().map(|s| s.to_string()).collect()),
            ..McpConf::default()
        }))
    }

    #[test]
    fn defaults_are_on_with_no_origin_allowed() {
        let s = McpConf::validate(None).expect("defaults");
        assert!(s.enabled && !s.any_origin && s.allowed_origins.is_empty());
        assert_eq!(s.max_body_bytes, DEFAULT_MAX_BODY_BYTES);
        assert!(!s.allows_origin(b"https://evil.example"));
    }

    #[test]
    fn origins_are_compared_as_browsers_send_them() {
        let s = with(&["https://Agent.Example.com/", "http://localhost:6274"]).expect("valid");
        for (origin, allowed) in [
            ("https://agent.example.com", true),
            ("https://AGENT.example.com", true),
            ("https://agent.example.com:443", true),
            ("http://localhost:6274", true),
            ("http://agent.example.com", false),
            ("https://agent.example.com:8443", false),
            ("http://localhost:6275", false),
            ("null", false),
            ("", false),
        ] {
            assert_eq!(s.allows_origin(origin.as_bytes()), allowed, "{origin}");
        }
        assert!(with(&["*"])
            .expect("star")
            .allows_origin(b"https://x.example"));
    }

    #[test]
    fn bad_origins_and_limits_are_refused() {
        for bad in [
            "agent.example.com",
            "https://a.example/path",
            "ftp://a.example",
            "https://u@a.example",
            "",
        ] {
            let e = with(&[bad]).expect_err(bad);
            assert_eq!(e.key, "board_api.mcp.allowed_origins");
        }
        for bytes in [0, 1023, (1 << 20) + 1] {
            let e = McpConf::validate(Some(McpConf {
                max_body_bytes: Some(bytes),
                ..McpConf::default()
            }))
            .expect_err("limit");
            assert_eq!(e.key, "board_api.mcp.max_body_bytes");
        }
    }
}

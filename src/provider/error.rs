//! What a provider fetch can fail with, and the redaction that keeps secrets
//! out of the log text.
//!
//! The provider knows nothing of HTTP answers to our own clients: the API
//! maps each variant to its status and code (`From<&FetchError> for
//! ApiError`), in the one place that holds the error catalogue.

use std::fmt;

/// Why [`ProviderClient::fetch`](super::client::ProviderClient::fetch) produced no board.
///
/// The text inside [`FetchError::Upstream`] is meant for the log only. It is
/// built by this crate, never copied from a provider body, and passed through
/// [`redact`] so it never carries the permission id, the provider token or the
/// share link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FetchError {
    /// The provider refuses the permission (revoked link, password protected,
    /// token `null`, HTTP 401/403).
    AccessDenied,
    /// The provider says the board does not exist or was deleted.
    NotFound,
    /// Anything else that went wrong upstream (unreachable, 5xx, malformed
    /// or oversized body). The text is for the log only.
    Upstream(String),
    /// The provider's bot wall (AWS WAF) answered instead of the provider:
    /// `x-amzn-waf-action: challenge` (HTTP 202) or `captcha` (HTTP 405).
    /// Its body is never read.
    Challenged,
    /// The overall fetch deadline passed before the root board was loaded.
    Timeout,
    /// The fleet-wide budget of requests toward the provider had no room
    /// within the deadline; nothing was sent.
    OverBudget,
}

impl FetchError {
    /// Build an [`FetchError::Upstream`] from any displayable cause.
    pub(crate) fn upstream(msg: impl fmt::Display) -> Self {
        FetchError::Upstream(msg.to_string())
    }

    /// The same error with every secret in `secrets` removed from its text.
    pub(crate) fn redacted(self, secrets: &[&str]) -> Self {
        match self {
            FetchError::Upstream(msg) => FetchError::Upstream(redact(&msg, secrets)),
            other => other,
        }
    }
}

impl fmt::Display for FetchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FetchError::AccessDenied => f.write_str("provider denied access to the board"),
            FetchError::NotFound => f.write_str("provider says the board does not exist"),
            FetchError::Upstream(msg) => write!(f, "provider error: {msg}"),
            FetchError::Challenged => {
                f.write_str("the provider's bot wall asked for a challenge (x-amzn-waf-action)")
            }
            FetchError::Timeout => f.write_str("provider fetch passed its deadline"),
            FetchError::OverBudget => f.write_str("the fleet's provider budget is spent"),
        }
    }
}

impl std::error::Error for FetchError {}

/// Replace every occurrence of each non-empty secret in `text` with `[redacted]`.
///
/// A second line of defence: messages are built without secrets in the first
/// place, but a lower layer (an I/O error, a Pingora error context) might echo
/// a request target, so every upstream message passes through here.
pub fn redact(text: &str, secrets: &[&str]) -> String {
    let mut out = text.to_owned();
    for secret in secrets.iter().filter(|s| !s.is_empty()) {
        if out.contains(secret) {
            out = out.replace(secret, "[redacted]");
        }
    }
    out
}

/// A short, non-reversible label for a permission id, for log lines: 32 bits
/// of its xxh3 hash (`p#1a2b3c4d`), enough to tell requests apart in a log,
/// never any character of the id itself.
pub fn redact_permission(permission_id: &str) -> String {
    let hash = xxhash_rust::xxh3::xxh3_64(permission_id.as_bytes());
    format!("p#{:08x}", hash >> 32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redact_removes_every_secret() {
        let text = "GET /api/permissions/token/TjNXxqcH5oo?x=1 tok=abc.def failed";
        let out = redact(text, &["TjNXxqcH5oo", "abc.def"]);
        assert!(!out.contains("TjNXxqcH5oo"));
        assert!(!out.contains("abc.def"));
        assert_eq!(out.matches("[redacted]").count(), 2);
    }

    #[test]
    fn redact_ignores_empty_secrets() {
        assert_eq!(redact("plain", &["", ""]), "plain");
    }

    #[test]
    fn redacted_only_touches_upstream_text() {
        let e = FetchError::Upstream("bad p=SECRET1".into()).redacted(&["SECRET1"]);
        assert_eq!(e, FetchError::Upstream("bad p=[redacted]".into()));
        assert_eq!(
            FetchError::Timeout.redacted(&["SECRET1"]),
            FetchError::Timeout
        );
    }

    #[test]
    fn permission_label_hides_the_id() {
        let label = redact_permission("TjNXxqcH5oo");
        assert!(!label.contains("TjNXxqcH5oo") && !label.contains("Tj"));
        assert!(label.starts_with("p#") && label.len() == 10, "{label}");
        // Stable, and different ids get different labels.
        assert_eq!(label, redact_permission("TjNXxqcH5oo"));
        assert_ne!(label, redact_permission("TjNXxqcH5op"));
    }
}

//! `board_api.rate_limit`: the optional per-client request budget.

use super::{fail, ConfigError};
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RateLimitConf {
    /// Requests per second allowed per client address on the two endpoints.
    pub requests_per_second: u32,
}

impl RateLimitConf {
    /// Requests per second per client address.
    ///
    /// # Errors
    /// A [`ConfigError`] when the rate is 0.
    pub(crate) fn validate(&self) -> Result<u32, ConfigError> {
        if self.requests_per_second == 0 {
            return fail(
                "board_api.rate_limit.requests_per_second",
                "must be at least 1",
            );
        }
        Ok(self.requests_per_second)
    }
}

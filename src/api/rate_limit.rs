//! The optional per-client request budget (`board_api.rate_limit`):
//! [`super::BoardApi`] checks it before it reads a query, and answers
//! `429 RATE_LIMITED` past it.

use super::error::ApiError;
use pingora_limits::rate::Rate;
use std::net::IpAddr;
use std::time::Duration;

/// A per-client-address request budget per second (`board_api.rate_limit`).
pub(super) struct RateLimiter {
    rate: Rate,
    per_second: u32,
}

impl RateLimiter {
    pub(super) fn new(per_second: u32) -> Self {
        RateLimiter {
            rate: Rate::new(Duration::from_secs(1)),
            per_second,
        }
    }

    pub(super) fn check(&self, ip: IpAddr) -> Result<(), ApiError> {
        // `observe` returns the count of the current window; `rate()` would
        // report the previous one.
        let seen = self.rate.observe(&ip, 1);
        if seen > self.per_second as isize {
            return Err(ApiError::RateLimited {
                retry_after: Duration::from_secs(1),
            });
        }
        Ok(())
    }
}

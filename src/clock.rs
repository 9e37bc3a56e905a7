//! The wall clock in epoch milliseconds, for every module that stamps,
//! schedules or expires something by it (the provider client's fetch time,
//! the fleet tier's reject warnings and lock lives, the capture's time,
//! watch runs and deliveries, kept versions). One reading of
//! `SystemTime`, so no two modules disagree on what "now" is.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch (0 before it).
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// [`now_ms`] as the signed milliseconds that `chrono`, JavaScript and the
/// provider's answers use.
pub fn now_ms_i64() -> i64 {
    i64::try_from(now_ms()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_two_readings_agree_and_are_after_2020() {
        let (a, b) = (now_ms(), now_ms_i64());
        assert!(a > 1_577_836_800_000, "{a}");
        assert!(u64::try_from(b).is_ok_and(|b| b >= a && b - a < 60_000));
    }
}

//! Warnings at most once a minute: a store or a tier that fails on every
//! request is one `WARN` line a minute, the rest at `DEBUG` (with a count
//! of what was not warned about). Each call site keeps its own
//! [`Throttle`] in a `static`, so one noisy failure does not hide another.
//! Used by the fleet tier's rejected values, the kept versions' store and
//! the watches' outbox.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often a [`Throttle`] lets a line through at `WARN`.
pub const EVERY: Duration = Duration::from_secs(60);

/// When a line was last let through, and how many were held back since.
#[derive(Debug)]
pub struct Throttle {
    last: Mutex<Option<Instant>>,
    held: AtomicU64,
}

impl Throttle {
    /// A throttle that has let nothing through yet (the first line is).
    pub const fn new() -> Self {
        Throttle {
            last: Mutex::new(None),
            held: AtomicU64::new(0),
        }
    }

    /// `Some(n)` when a line may be logged at `WARN` now (none in the last
    /// [`EVERY`]), `n` being how many were held back since the last one;
    /// else `None`, and this one is counted.
    pub fn due(&self) -> Option<u64> {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if last.is_some_and(|t| t.elapsed() < EVERY) {
            self.held.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        *last = Some(Instant::now());
        Some(self.held.swap(0, Ordering::Relaxed))
    }

    /// Logs `line` at `WARN` when [`Throttle::due`] (saying how many were
    /// held back since the last), else at `DEBUG`.
    pub fn warn(&self, line: &str) {
        match self.due() {
            Some(0) => log::warn!("{line}"),
            Some(held) => log::warn!("{line} ({held} more since the last such line, at DEBUG)"),
            None => log::debug!("{line}"),
        }
    }
}

impl Default for Throttle {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_a_minute_goes_through_and_the_rest_are_counted() {
        let t = Throttle::new();
        assert_eq!(t.due(), Some(0));
        assert_eq!(t.due(), None);
        assert_eq!(t.due(), None);
        // A minute later (moved back by hand), the next one goes through
        // with the count of those held back.
        *t.last.lock().unwrap() = Instant::now().checked_sub(EVERY);
        assert_eq!(t.due(), Some(2));
        assert_eq!(t.due(), None);
    }
}

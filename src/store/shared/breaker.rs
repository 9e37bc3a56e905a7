//! The fleet tier's circuit breaker: after a run of failed calls the tier
//! is skipped for a while, so a tier that is down or slow costs requests
//! nothing (not even its timeout); then one call probes it, and a success
//! closes the breaker again.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Consecutive failures that open the breaker.
pub const THRESHOLD: u32 = 5;
/// How long an open breaker skips the tier before a probe.
pub const COOLDOWN: Duration = Duration::from_secs(5);

/// Closed, open or half-open, decided without a lock.
#[derive(Debug)]
pub struct Breaker {
    failures: AtomicU32,
    /// When the breaker opened, in milliseconds since `epoch`; 0 when closed.
    opened_ms: AtomicU64,
    /// A probe is under way (half-open): other calls still skip.
    probing: AtomicBool,
    epoch: Instant,
    cooldown: Duration,
}

/// What a caller may do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Permit {
    /// Closed: call the tier.
    Call,
    /// Half-open: this call is the probe.
    Probe,
    /// Open: skip the tier.
    Skip,
}

/// What [`Breaker::failed`] did, so the caller logs one line per opening.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opened {
    Now,
    Already,
    No,
}

impl Breaker {
    pub fn new(cooldown: Duration) -> Self {
        Breaker {
            failures: AtomicU32::new(0),
            opened_ms: AtomicU64::new(0),
            probing: AtomicBool::new(false),
            epoch: Instant::now(),
            cooldown,
        }
    }

    fn now_ms(&self) -> u64 {
        // Never 0, which means closed.
        self.epoch.elapsed().as_millis() as u64 + 1
    }

    /// Whether a call may go to the tier.
    pub fn permit(&self) -> Permit {
        let opened = self.opened_ms.load(Ordering::Acquire);
        if opened == 0 {
            return Permit::Call;
        }
        if self.now_ms().saturating_sub(opened) < self.cooldown.as_millis() as u64 {
            return Permit::Skip;
        }
        // One probe at a time; the others keep skipping until it reports.
        if self
            .probing
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            Permit::Probe
        } else {
            Permit::Skip
        }
    }

    /// A call (or probe) that answered: the breaker closes.
    pub fn succeeded(&self) {
        self.failures.store(0, Ordering::Relaxed);
        self.opened_ms.store(0, Ordering::Release);
        self.probing.store(false, Ordering::Release);
    }

    /// A call that failed or timed out.
    pub fn failed(&self) -> Opened {
        let was_probe = self.probing.swap(false, Ordering::AcqRel);
        if was_probe {
            // Still down: another cooldown.
            self.opened_ms.store(self.now_ms(), Ordering::Release);
            return Opened::Already;
        }
        let failures = self.failures.fetch_add(1, Ordering::Relaxed) + 1;
        if failures < THRESHOLD {
            return Opened::No;
        }
        match self
            .opened_ms
            .compare_exchange(0, self.now_ms(), Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => Opened::Now,
            Err(_) => Opened::Already,
        }
    }

    /// Whether the tier is being skipped now.
    pub fn is_open(&self) -> bool {
        self.opened_ms.load(Ordering::Acquire) != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_after_the_threshold_then_probes_once_and_closes() {
        let b = Breaker::new(Duration::ZERO);
        for _ in 1..THRESHOLD {
            assert_eq!(b.permit(), Permit::Call);
            assert_eq!(b.failed(), Opened::No);
        }
        assert_eq!(b.failed(), Opened::Now);
        assert!(b.is_open());
        // Cooldown zero: the next call probes, the one after it skips.
        assert_eq!(b.permit(), Permit::Probe);
        assert_eq!(b.permit(), Permit::Skip);
        // The probe fails: open again, without a second "opened" line.
        assert_eq!(b.failed(), Opened::Already);
        assert_eq!(b.permit(), Permit::Probe);
        b.succeeded();
        assert!(!b.is_open());
        assert_eq!(b.permit(), Permit::Call);
        assert_eq!(b.failed(), Opened::No);
    }

    #[test]
    fn an_open_breaker_skips_during_its_cooldown() {
        let b = Breaker::new(Duration::from_secs(3600));
        for _ in 0..THRESHOLD {
            b.failed();
        }
        assert_eq!(b.permit(), Permit::Skip);
        assert_eq!(b.permit(), Permit::Skip);
    }

    #[test]
    fn a_success_resets_the_run_of_failures() {
        let b = Breaker::new(Duration::ZERO);
        for _ in 1..THRESHOLD {
            b.failed();
        }
        b.succeeded();
        for _ in 1..THRESHOLD {
            assert_eq!(b.failed(), Opened::No);
        }
    }
}

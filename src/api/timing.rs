//! `Server-Timing` (W3C Server Timing): which level of the store answered
//! and where a request's time went, for a browser's network panel and a
//! host's logs. No secret goes into it: level names and durations only.

use crate::store::LoadTiming;
use http::header::{HeaderName, HeaderValue};
use std::fmt::Write as _;
use std::time::Duration;

pub const SERVER_TIMING: HeaderName = HeaderName::from_static("server-timing");

/// `cache;desc=<level>`, then for a load `upstream;dur=` and `build;dur=`,
/// then `total;dur=`, in milliseconds with up to three decimals.
pub fn server_timing(level: &str, load: Option<LoadTiming>, total: Duration) -> HeaderValue {
    let mut value = String::with_capacity(96);
    value.push_str("cache;desc=");
    value.push_str(level);
    if let Some(load) = load {
        metric(&mut value, "upstream", load.upstream);
        metric(&mut value, "build", load.build);
    }
    metric(&mut value, "total", total);
    // Built from level names and digits only: always a valid value.
    HeaderValue::from_str(&value).unwrap_or(HeaderValue::from_static("cache;desc=miss"))
}

fn metric(out: &mut String, name: &str, d: Duration) {
    let micros = d.as_micros();
    let _ = write!(out, ", {name};dur={}", micros / 1000);
    let frac = micros % 1000;
    if frac != 0 {
        let _ = write!(out, ".{frac:03}");
        while out.ends_with('0') {
            out.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(level: &str, load: Option<(u64, u64)>, total_us: u64) -> String {
        let load = load.map(|(u, b)| LoadTiming {
            upstream: Duration::from_micros(u),
            build: Duration::from_micros(b),
        });
        server_timing(level, load, Duration::from_micros(total_us))
            .to_str()
            .expect("ascii")
            .to_owned()
    }

    #[test]
    fn values() {
        assert_eq!(text("hit", None, 250), "cache;desc=hit, total;dur=0.25");
        assert_eq!(text("hit", None, 3000), "cache;desc=hit, total;dur=3");
        assert_eq!(
            text("miss", Some((12_345, 2_001)), 15_000),
            "cache;desc=miss, upstream;dur=12.345, build;dur=2.001, total;dur=15"
        );
        assert_eq!(
            text("coalesced", None, 0),
            "cache;desc=coalesced, total;dur=0"
        );
        assert_eq!(
            text("shared", None, 1_100),
            "cache;desc=shared, total;dur=1.1"
        );
    }
}

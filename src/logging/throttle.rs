//! Log lines a client can make the server write: each such kind is written
//! at most once a minute, with the count of those held back since, and every
//! one is counted (`board_api_client_log_lines_total{kind}`). Called by
//! [`Redacting`](super::Redacting) for every record.
//!
//! Pingora 0.9's compression module logs `WARN Failed to parse
//! accept-encoding "<the header>"` for every request whose `Accept-Encoding`
//! it cannot parse, and offers no switch: a client could write a line per
//! request (a fuzz run wrote 82,894).

use log::{Level, Record};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::LazyLock;
use std::time::Instant;

/// At most one line of a kind per this many seconds.
pub(crate) const WINDOW_SECS: u64 = 60;

/// A kind of record a client can cause, with its state.
struct Kind {
    name: &'static str,
    /// Seconds since [`START`] (plus one, 0 = never) of the last line written.
    last: AtomicU64,
    /// Lines held back since the last one written.
    held: AtomicU64,
}

static START: LazyLock<Instant> = LazyLock::new(Instant::now);

static ACCEPT_ENCODING: Kind = Kind {
    name: "accept_encoding",
    last: AtomicU64::new(0),
    held: AtomicU64::new(0),
};

/// Which kind `record` is, if a client can cause it.
fn kind(record: &Record, text: &str) -> Option<&'static Kind> {
    let target = record.target();
    if record.level() == Level::Warn
        && target.starts_with("pingora_core::protocols::http::compression")
        && text.starts_with("Failed to parse accept-encoding")
    {
        return Some(&ACCEPT_ENCODING);
    }
    None
}

/// What to do with a record.
pub(crate) enum Verdict {
    /// Not a client's: write it as it is.
    Write,
    /// A client's, the first in its window: write it, saying how many were
    /// held back before it.
    WriteCounting(u64),
    /// A client's, within the window of one written: drop it.
    Hold,
}

/// Counts `record` if a client can cause it and says whether to write it.
pub(crate) fn verdict(record: &Record, text: &str) -> Verdict {
    let Some(kind) = kind(record, text) else {
        return Verdict::Write;
    };
    crate::metrics::client_log_line(kind.name);
    let now = START.elapsed().as_secs() + 1;
    let last = kind.last.load(Ordering::Relaxed);
    if last != 0 && now < last + WINDOW_SECS {
        kind.held.fetch_add(1, Ordering::Relaxed);
        return Verdict::Hold;
    }
    // One thread wins the window; the others hold theirs back.
    if kind
        .last
        .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
        .is_err()
    {
        kind.held.fetch_add(1, Ordering::Relaxed);
        return Verdict::Hold;
    }
    Verdict::WriteCounting(kind.held.swap(0, Ordering::Relaxed))
}

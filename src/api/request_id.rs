//! `X-Request-Id`: the id every answer of the API carries, so a client
//! reporting a failure has something to quote and an operator something to
//! find in the access log. [`BoardApi::respond`](crate::BoardApi::respond)
//! takes it from the request ([`for_request`]) and stamps it on the answer.
//!
//! The client's own id is kept when it is 1 to 128 characters of
//! `[A-Za-z0-9._:-]` (what tracing systems and other gateways send);
//! anything else, or a header sent twice, is replaced by a new one, so an id
//! never carries markup, spaces or a share link into a log line. An id in
//! the shape this server mints (`<12 hex>-<hex>`, [`mint`]) is replaced
//! too: the prefix is in every answer, so a client could otherwise claim the
//! id the server will give another request next, and an operator would find
//! two requests under it.

use super::RequestParts;
use crate::trace::TraceContext;
use http::header::{HeaderMap, HeaderName, HeaderValue};
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::LazyLock;

/// The header, in both directions.
pub const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The longest client id kept, in bytes (all allowed characters are ASCII).
pub const MAX_LEN: usize = 128;

/// What names one request: its `X-Request-Id` and its trace (the
/// caller's `traceparent` continued, or a new trace).
#[derive(Debug, Clone)]
pub struct RequestIds {
    pub request_id: HeaderValue,
    pub trace: TraceContext,
}

impl RequestIds {
    /// Both ids of a request, from its headers.
    pub fn for_request(headers: &HeaderMap) -> Self {
        RequestIds {
            request_id: for_request(headers),
            trace: TraceContext::for_request(headers),
        }
    }

    /// Both ids of a request, its trace continuing the host's span when
    /// the host gave one ([`RequestParts::with_trace_parent`]). The
    /// caller's `tracestate` went with the caller's parent, which the host
    /// replaced: it is not passed on.
    pub fn for_parts(req: &RequestParts<'_>) -> Self {
        let trace = match req.trace_parent {
            Some(parent) => TraceContext::child_of(parent, None),
            None => TraceContext::for_request(req.headers),
        };
        RequestIds {
            request_id: for_request(req.headers),
            trace,
        }
    }
}

/// The client's id when it is acceptable, else a new one. Cheap: a client
/// id is the request's own value (shared bytes, no copy).
pub fn for_request(headers: &HeaderMap) -> HeaderValue {
    let mut sent = headers.get_all(&X_REQUEST_ID).iter();
    match (sent.next(), sent.next()) {
        (Some(id), None) if is_valid(id.as_bytes()) && !is_minted_shape(id.as_bytes()) => {
            id.clone()
        }
        _ => mint(),
    }
}

/// Whether `id` is 1 to [`MAX_LEN`] characters of `[A-Za-z0-9._:-]`.
pub fn is_valid(id: &[u8]) -> bool {
    (1..=MAX_LEN).contains(&id.len())
        && id
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'))
}

/// Whether `id` has the shape of a minted id: 12 lower-case hex digits, `-`,
/// and at least one more. Such a client id is never kept, whatever its
/// prefix (another node of a fleet mints with its own).
pub fn is_minted_shape(id: &[u8]) -> bool {
    let hex = |b: &u8| b.is_ascii_digit() || (b'a'..=b'f').contains(b);
    id.len() > 13 && id[12] == b'-' && id[..12].iter().all(hex) && id[13..].iter().all(hex)
}

/// 48 random bits per process, so two nodes of a fleet (or a restarted
/// process) do not mint the same ids; std's hasher keys are the process's
/// random source, which spares a dependency for one number.
static PREFIX: LazyLock<u64> = LazyLock::new(|| {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    hasher.finish() & 0xffff_ffff_ffff
});

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A new id: the process's prefix and a counter, `<12 hex>-<hex>`
/// (`3f9a1c0b7d2e-1a`). Unique within the process, and across processes
/// unless two draw the same 48-bit prefix; not secret and not meant to be.
pub fn mint() -> HeaderValue {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let text = format!("{:012x}-{n:x}", *PREFIX);
    // Hex digits and `-`: always a valid header value.
    HeaderValue::from_str(&text).unwrap_or_else(|_| HeaderValue::from_static("0"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_ids_kept_or_replaced() {
        let long = "a".repeat(MAX_LEN);
        let too_long = "a".repeat(MAX_LEN + 1);
        let cases: [(&[u8], bool); 12] = [
            (b"abc", true),
            (b"A.b_c:d-9", true),
            (b"0", true),
            (long.as_bytes(), true),
            (too_long.as_bytes(), false),
            (b"", false),
            (b"a b", false),
            (b"a/b", false),
            (b"<script>", false),
            (b"p=secret&x", false),
            (b"caf\xc3\xa9", false),
            (b"tab\there", false),
        ];
        for (id, kept) in cases {
            assert_eq!(is_valid(id), kept, "{:?}", String::from_utf8_lossy(id));
            let mut headers = HeaderMap::new();
            if let Ok(value) = HeaderValue::from_bytes(id) {
                headers.insert(X_REQUEST_ID, value);
            }
            let answered = for_request(&headers);
            assert_eq!(answered.as_bytes() == id, kept, "{answered:?}");
            assert!(is_valid(answered.as_bytes()), "{answered:?}");
        }
    }

    #[test]
    fn an_id_in_the_minted_shape_is_never_kept() {
        let next = mint();
        let text = next.to_str().unwrap().to_owned();
        // One this process will mint soon (not this very call: that one is
        // the request's own), and other prefixes' too.
        let (prefix, n) = text.split_once('-').unwrap();
        let claimed = format!("{prefix}-{:x}", u64::from_str_radix(n, 16).unwrap() + 1000);
        for id in [claimed.as_str(), "000000000000-0", "abcdef012345-ff"] {
            assert!(is_minted_shape(id.as_bytes()), "{id}");
            let mut headers = HeaderMap::new();
            headers.insert(X_REQUEST_ID, HeaderValue::from_str(id).unwrap());
            assert_ne!(for_request(&headers), id);
        }
        // Near misses are ordinary client ids.
        for id in [
            "ABCDEF012345-ff",
            "abcdef01234-ff",
            "abcdef012345-",
            "abcdef012345-fg",
            "abcdef012345_1",
        ] {
            assert!(!is_minted_shape(id.as_bytes()), "{id}");
            let mut headers = HeaderMap::new();
            headers.insert(X_REQUEST_ID, HeaderValue::from_str(id).unwrap());
            assert_eq!(for_request(&headers), id);
        }
    }

    #[test]
    fn two_headers_are_replaced_and_minted_ids_differ() {
        let mut headers = HeaderMap::new();
        headers.append(X_REQUEST_ID, HeaderValue::from_static("a"));
        headers.append(X_REQUEST_ID, HeaderValue::from_static("b"));
        let answered = for_request(&headers);
        assert!(answered != "a" && answered != "b");
        let (a, b) = (mint(), mint());
        assert_ne!(a, b);
        assert!(is_valid(a.as_bytes()) && a.len() >= 14, "{a:?}");
        assert_eq!(a.as_bytes()[..13], b.as_bytes()[..13], "one prefix");
    }
}

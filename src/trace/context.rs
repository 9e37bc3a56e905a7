//! W3C Trace Context (<https://www.w3.org/TR/trace-context/>): the
//! `traceparent` and `tracestate` a request arrives with, read strictly, and
//! the context this service continues or starts from them. Pure: header
//! values in, ids out; the API, the watches and MCP call it.
//!
//! A `traceparent` is kept only when it is exactly one header of the shape
//! the specification gives (lower-case hex, version `00` exactly 55
//! characters, a later version at least that with `-` after it, never
//! version `ff`, neither id all zeros); anything else starts a new trace, and
//! its `tracestate` goes with it. The raw values are never written anywhere:
//! only the ids parsed out of them, as hex this module formats.

use crate::random;
use http::header::{HeaderMap, HeaderName, HeaderValue};
use std::sync::atomic::{AtomicU64, Ordering};

pub const TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");
pub const TRACESTATE: HeaderName = HeaderName::from_static("tracestate");

/// The `sampled` bit of `trace-flags`.
const SAMPLED: u8 = 0x01;
/// List members of a `tracestate` kept at most (the specification's bound).
const MAX_STATE_MEMBERS: usize = 32;
/// The longest `tracestate` kept, in bytes: 32 members of the longest key
/// and value, with commas (the specification's own bound is on members).
const MAX_STATE_LEN: usize = 8192;

/// The trace a piece of work belongs to and its own span in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    pub trace_id: [u8; 16],
    /// This hop's span: the parent of whatever it calls.
    pub span_id: [u8; 8],
    /// The caller's span, when the trace was continued.
    pub parent_id: Option<[u8; 8]>,
    /// Whether the trace is recorded: the caller's decision when it sent
    /// one, else this process's sample ratio ([`set_sample_ratio`]).
    pub sampled: bool,
    /// The caller's `tracestate`, checked, passed on unchanged.
    pub state: Option<HeaderValue>,
}

/// A `traceparent` as read: its ids and flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parent {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    pub flags: u8,
}

impl TraceContext {
    /// The context of a request: the caller's trace continued when its
    /// `traceparent` is valid, else a new one.
    pub fn for_request(headers: &HeaderMap) -> Self {
        let mut sent = headers.get_all(&TRACEPARENT).iter();
        let parent = match (sent.next(), sent.next()) {
            (Some(value), None) => parse_traceparent(value.as_bytes()),
            _ => None,
        };
        match parent {
            Some(parent) => Self::child_of(parent, tracestate(headers.get_all(&TRACESTATE).iter())),
            None => Self::start(),
        }
    }

    /// The context of an MCP request whose `params._meta.traceparent` is
    /// `value`; the HTTP request's own context when `value` is not valid.
    #[cfg(test)]
    pub fn for_meta(value: Option<&str>, request: &TraceContext) -> Self {
        match value.and_then(|v| parse_traceparent(v.as_bytes())) {
            Some(parent) => Self::child_of(parent, None),
            None => request.clone(),
        }
    }

    /// A new span in `parent`'s trace.
    pub fn child_of(parent: Parent, state: Option<HeaderValue>) -> Self {
        TraceContext {
            trace_id: parent.trace_id,
            span_id: span_id(),
            parent_id: Some(parent.span_id),
            sampled: parent.flags & SAMPLED != 0,
            state,
        }
    }

    /// A new trace: random ids, sampled by this process's ratio.
    pub fn start() -> Self {
        let mut trace_id = fresh::<16>();
        if trace_id == [0; 16] {
            trace_id[15] = 1;
        }
        TraceContext {
            sampled: ratio_samples(&trace_id, sample_ratio()),
            trace_id,
            span_id: span_id(),
            parent_id: None,
            state: None,
        }
    }

    /// A trace whose ids are read from `digest` (at least 24 bytes of a
    /// cryptographic hash): trace id, then span id; sampled by this
    /// process's ratio, as a new trace is. For work whose trace must be
    /// found again from what it left behind (a watch run, from its
    /// delivery).
    pub fn derived(digest: &[u8]) -> Self {
        let mut trace_id = [0; 16];
        let mut span_id = [0; 8];
        trace_id.copy_from_slice(&digest[..16]);
        span_id.copy_from_slice(&digest[16..24]);
        if trace_id == [0; 16] {
            trace_id[15] = 1;
        }
        if span_id == [0; 8] {
            span_id[7] = 1;
        }
        TraceContext {
            sampled: ratio_samples(&trace_id, sample_ratio()),
            trace_id,
            span_id,
            parent_id: None,
            state: None,
        }
    }

    /// A new span in this context's trace, with this span as its parent.
    pub fn child(&self) -> Self {
        TraceContext {
            trace_id: self.trace_id,
            span_id: span_id(),
            parent_id: Some(self.span_id),
            sampled: self.sampled,
            state: self.state.clone(),
        }
    }

    /// The `traceparent` that makes a callee a child of this span: version
    /// `00`, only the flags this version defines.
    pub fn traceparent(&self) -> String {
        format!(
            "00-{}-{}-{:02x}",
            self.trace_id_hex(),
            self.span_id_hex(),
            u8::from(self.sampled)
        )
    }

    /// The trace id as 32 lower-case hex digits (the access log's and the
    /// error body's `traceId`).
    pub fn trace_id_hex(&self) -> String {
        random::hex(&self.trace_id)
    }

    pub fn span_id_hex(&self) -> String {
        random::hex(&self.span_id)
    }

    pub fn parent_id_hex(&self) -> Option<String> {
        self.parent_id.map(|p| random::hex(&p))
    }
}

/// A random span id, never all zeros.
pub fn span_id() -> [u8; 8] {
    let mut id = fresh::<8>();
    if id == [0; 8] {
        id[7] = 1;
    }
    id
}

thread_local! {
    /// Each thread's generator state, seeded once from the system's.
    static STATE: std::cell::Cell<u64> = std::cell::Cell::new(random::u64());
}

/// `N` bytes of SplitMix64 from this thread's state. Ids must be unique and
/// unpredictable enough to not collide across processes, not secret: a
/// system call per request (the system's generator) would cost a cached
/// answer more than the whole trace context.
fn fresh<const N: usize>() -> [u8; N] {
    let mut out = [0; N];
    STATE.with(|state| {
        for chunk in out.chunks_mut(8) {
            let s = state.get().wrapping_add(0x9e37_79b9_7f4a_7c15);
            state.set(s);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            chunk.copy_from_slice(&z.to_le_bytes()[..chunk.len()]);
        }
    });
    out
}

/// `N` bytes written as `2N` lower-case hex digits, not all zeros: a
/// trace or span id as `traceparent` writes it.
pub fn hex_id<const N: usize>(text: &[u8]) -> Option<[u8; N]> {
    if text.len() != 2 * N {
        return None;
    }
    let mut id = [0; N];
    for (slot, pair) in id.iter_mut().zip(text.chunks(2)) {
        *slot = hex_byte(pair)?;
    }
    (id != [0; N]).then_some(id)
}

/// Reads one `traceparent` value; `None` when the specification says to
/// ignore it. Optional whitespace around the value (HTTP's `OWS`) is
/// allowed; nothing else is.
pub fn parse_traceparent(value: &[u8]) -> Option<Parent> {
    let ows = |b: &u8| *b == b' ' || *b == b'\t';
    let start = value.iter().position(|b| !ows(b)).unwrap_or(value.len());
    let end = value.iter().rposition(|b| !ows(b)).map_or(start, |i| i + 1);
    let value = &value[start..end];
    if value.len() < 55 {
        return None;
    }
    let version = hex_byte(&value[0..2])?;
    if version == 0xff || value[2] != b'-' || value[35] != b'-' || value[52] != b'-' {
        return None;
    }
    // Version 00 is exactly this long; a later version may add fields
    // after a `-`, which a reader of 00 skips.
    match (version, value.len()) {
        (0, 55) => {}
        (0, _) => return None,
        (_, 55) => {}
        (_, _) if value[55] == b'-' => {}
        _ => return None,
    }
    let trace_id = hex_id::<16>(&value[3..35])?;
    let span_id = hex_id::<8>(&value[36..52])?;
    let flags = hex_byte(&value[53..55])?;
    Some(Parent {
        trace_id,
        span_id,
        flags,
    })
}

/// Two lower-case hex digits.
fn hex_byte(pair: &[u8]) -> Option<u8> {
    let digit = |b: u8| match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        _ => None,
    };
    Some(digit(pair[0])? << 4 | digit(pair[1])?)
}

/// The `tracestate` of one or more headers (joined with `,` as HTTP
/// combines them), when every list member is well-formed, no key repeats
/// and there are at most 32; else none (the specification lets a receiver
/// drop a value it cannot read).
pub fn tracestate<'a>(values: impl Iterator<Item = &'a HeaderValue>) -> Option<HeaderValue> {
    let mut members: Vec<&[u8]> = Vec::new();
    for value in values {
        for member in value.as_bytes().split(|&b| b == b',') {
            let member = member.trim_ascii();
            if !member.is_empty() {
                members.push(member);
            }
        }
    }
    if members.is_empty() || members.len() > MAX_STATE_MEMBERS {
        return None;
    }
    let mut keys: Vec<&[u8]> = Vec::with_capacity(members.len());
    for member in &members {
        let eq = member.iter().position(|&b| b == b'=')?;
        let (key, value) = (&member[..eq], &member[eq + 1..]);
        if !state_key(key) || !state_value(value) || keys.contains(&key) {
            return None;
        }
        keys.push(key);
    }
    let joined = members.join(&b","[..]);
    if joined.len() > MAX_STATE_LEN {
        return None;
    }
    HeaderValue::from_bytes(&joined).ok()
}

/// `simple-key` or `tenant-id@system-id` of the specification.
fn state_key(key: &[u8]) -> bool {
    let rest = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_-*/".contains(b);
    match key.iter().position(|&b| b == b'@') {
        None => {
            (1..=256).contains(&key.len())
                && key[0].is_ascii_lowercase()
                && key[1..].iter().all(rest)
        }
        Some(at) => {
            let (tenant, system) = (&key[..at], &key[at + 1..]);
            (1..=241).contains(&tenant.len())
                && (tenant[0].is_ascii_lowercase() || tenant[0].is_ascii_digit())
                && tenant[1..].iter().all(rest)
                && (1..=14).contains(&system.len())
                && system[0].is_ascii_lowercase()
                && system[1..].iter().all(rest)
        }
    }
}

/// 1 to 256 printable ASCII characters but `,` and `=`, not ending in a
/// space.
fn state_value(value: &[u8]) -> bool {
    (1..=256).contains(&value.len())
        && value
            .iter()
            .all(|&b| (0x20..=0x7e).contains(&b) && b != b',' && b != b'=')
        && value.last() != Some(&b' ')
}

/// The ratio of new traces sampled, as `f64` bits (default 1.0).
static SAMPLE_RATIO: AtomicU64 = AtomicU64::new(0x3ff0_0000_0000_0000);

/// Sets the share of traces that start here which are recorded
/// (`board_api.server.otlp.sample_ratio`, clamped to 0..=1). A trace
/// continued from a caller follows the caller's decision.
pub fn set_sample_ratio(ratio: f64) {
    let ratio = if ratio.is_nan() {
        1.0
    } else {
        ratio.clamp(0.0, 1.0)
    };
    SAMPLE_RATIO.store(ratio.to_bits(), Ordering::Relaxed);
}

fn sample_ratio() -> f64 {
    f64::from_bits(SAMPLE_RATIO.load(Ordering::Relaxed))
}

/// Whether a trace of this id is in the sampled `ratio`: its last 8 bytes
/// below the ratio's share of their range, as OpenTelemetry's
/// `TraceIdRatioBased` decides, so every process with one ratio agrees.
fn ratio_samples(trace_id: &[u8; 16], ratio: f64) -> bool {
    if ratio >= 1.0 {
        return true;
    }
    let mut low = [0; 8];
    low.copy_from_slice(&trace_id[8..]);
    let bound = (ratio * (1u64 << 63) as f64) as u64;
    (u64::from_be_bytes(low) >> 1) < bound
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALID: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn traceparent_values() {
        let cases: [(&str, bool); 24] = [
            (VALID, true),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00",
                true,
            ),
            (
                " \t00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 ",
                true,
            ),
            // A later version: longer, with a `-` after the flags.
            (
                "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                true,
            ),
            (
                "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what",
                true,
            ),
            (
                "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01what",
                false,
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
                false,
            ),
            (
                "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                false,
            ),
            (
                "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
                false,
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00F067AA0BA902B7-01",
                false,
            ),
            (
                "0A-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                false,
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0G",
                false,
            ),
            (
                "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
                false,
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
                false,
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",
                false,
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
                false,
            ),
            (
                "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",
                false,
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
                false,
            ),
            ("", false),
            ("00", false),
            (
                "00-zzf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                false,
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\n",
                false,
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\x00",
                false,
            ),
            (
                "00-+bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                false,
            ),
        ];
        for (value, kept) in cases {
            assert_eq!(
                parse_traceparent(value.as_bytes()).is_some(),
                kept,
                "{value:?}"
            );
        }
    }

    #[test]
    fn a_request_continues_a_valid_trace_and_starts_one_otherwise() {
        let mut headers = HeaderMap::new();
        headers.insert(TRACEPARENT, HeaderValue::from_static(VALID));
        headers.insert(
            TRACESTATE,
            HeaderValue::from_static("rojo=00f067aa0ba902b7"),
        );
        let ctx = TraceContext::for_request(&headers);
        assert_eq!(ctx.trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(ctx.parent_id_hex().as_deref(), Some("00f067aa0ba902b7"));
        assert_ne!(ctx.span_id_hex(), "00f067aa0ba902b7");
        assert!(ctx.sampled);
        assert_eq!(ctx.state.as_ref().unwrap(), "rojo=00f067aa0ba902b7");
        let next = ctx.traceparent();
        assert_eq!(
            next,
            format!(
                "00-4bf92f3577b34da6a3ce929d0e0e4736-{}-01",
                ctx.span_id_hex()
            )
        );
        assert_eq!(
            parse_traceparent(next.as_bytes()).unwrap().span_id,
            ctx.span_id
        );

        // Two headers: a new trace, its tracestate dropped.
        headers.append(TRACEPARENT, HeaderValue::from_static(VALID));
        let fresh = TraceContext::for_request(&headers);
        assert_ne!(fresh.trace_id, ctx.trace_id);
        assert_eq!((fresh.parent_id, fresh.state), (None, None));
        assert!(fresh.trace_id != [0; 16] && fresh.span_id != [0; 8]);

        // None at all.
        let none = TraceContext::for_request(&HeaderMap::new());
        assert!(none.parent_id.is_none() && none.sampled);
    }

    #[test]
    fn unknown_flags_are_not_passed_on() {
        let mut headers = HeaderMap::new();
        headers.insert(
            TRACEPARENT,
            HeaderValue::from_static("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-fe"),
        );
        let ctx = TraceContext::for_request(&headers);
        assert!(!ctx.sampled);
        assert!(ctx.traceparent().ends_with("-00"), "{}", ctx.traceparent());
    }

    #[test]
    fn tracestate_values() {
        let many = (0..33)
            .map(|i| format!("k{i}=v"))
            .collect::<Vec<_>>()
            .join(",");
        let cases: [(&[&str], Option<&str>); 12] = [
            (&["rojo=00f067aa0ba902b7"], Some("rojo=00f067aa0ba902b7")),
            (
                &["rojo=1, congo=t61rcWkgMzE"],
                Some("rojo=1,congo=t61rcWkgMzE"),
            ),
            (&["rojo=1", "congo=2"], Some("rojo=1,congo=2")),
            (&["a@b-c=x,,  ,z=y"], Some("a@b-c=x,z=y")),
            (&["1tenant@sys=v"], Some("1tenant@sys=v")),
            (&["Rojo=1"], None),
            (&["rojo=1,rojo=2"], None),
            (&["rojo"], None),
            (&["rojo=a,b"], None),
            (&["rojo=end "], Some("rojo=end")),
            (&[""], None),
            (&[many.as_str()], None),
        ];
        for (values, kept) in cases {
            let values: Vec<HeaderValue> = values
                .iter()
                .map(|v| HeaderValue::from_str(v).unwrap())
                .collect();
            let got = tracestate(values.iter());
            assert_eq!(
                got.as_ref().map(|v| v.to_str().unwrap()),
                kept,
                "{values:?}"
            );
        }
    }

    #[test]
    fn mcp_meta_continues_its_own_trace_or_the_requests() {
        let request = TraceContext::start();
        let meta = TraceContext::for_meta(Some(VALID), &request);
        assert_eq!(meta.trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(TraceContext::for_meta(Some("00-bad"), &request), request);
        assert_eq!(TraceContext::for_meta(None, &request), request);
    }

    #[test]
    fn hex_ids_and_fresh_ones() {
        assert_eq!(hex_id::<2>(b"0a1b"), Some([0x0a, 0x1b]));
        for bad in [&b"0A1B"[..], b"0000", b"0a1", b"0a1bc", b"0g1b", b""] {
            assert_eq!(hex_id::<2>(bad), None, "{bad:?}");
        }
        let ids: std::collections::HashSet<[u8; 8]> = (0..10_000).map(|_| span_id()).collect();
        assert_eq!(ids.len(), 10_000);
        let other = std::thread::spawn(span_id).join().unwrap();
        assert!(!ids.contains(&other));
    }

    #[test]
    fn the_ratio_samples_its_share_of_ids() {
        let ids: Vec<[u8; 16]> = (0..2000).map(|_| random::bytes::<16>()).collect();
        let share = |r| ids.iter().filter(|id| ratio_samples(id, r)).count();
        assert_eq!(share(1.0), 2000);
        assert_eq!(share(0.0), 0);
        let half = share(0.5);
        assert!((800..1200).contains(&half), "{half}");
    }
}

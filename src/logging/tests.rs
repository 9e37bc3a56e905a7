//! The scrubber and the redacting logger.

use super::*;
use proptest::prelude::*;
use std::sync::Mutex;

/// Keeps the level and text of every record it is given.
struct Collect(Mutex<Vec<(Level, String)>>);

impl Log for Collect {
    fn enabled(&self, metadata: &Metadata) -> bool {
        metadata.level() <= Level::Info
    }
    fn log(&self, record: &Record) {
        let mut seen = self.0.lock().unwrap();
        seen.push((record.level(), record.args().to_string()));
    }
    fn flush(&self) {}
}

/// Writes `text` to `logger` at `Error` under `target`, as a dependency would.
fn log_error(logger: &impl Log, target: &str, text: &str) {
    logger.log(
        &Record::builder()
            .level(Level::Error)
            .target(target)
            .args(format_args!("{text}"))
            .build(),
    );
}

#[test]
fn a_clients_bad_accept_encoding_is_written_once_a_minute() {
    let logger = Redacting::new(Collect(Mutex::new(Vec::new())));
    for i in 0..1000 {
        logger.log(
            &Record::builder()
                .level(Level::Warn)
                .target("pingora_core::protocols::http::compression")
                .args(format_args!(
                    "Failed to parse accept-encoding \"x{i}\", bad"
                ))
                .build(),
        );
    }
    let seen = logger.inner.0.lock().unwrap().clone();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(seen[0].1.contains("at most once a minute"), "{seen:?}");
}

#[test]
fn pingoras_pool_reuse_race_is_debug_other_errors_stay() {
    let logger = Redacting::new(Collect(Mutex::new(Vec::new())));
    let record = |target: &str, text: &str| log_error(&logger, target, text);
    record(
        "pingora_core::connectors",
        "failed to acquire reusable stream",
    );
    record("pingora_core::connectors", "connect failed");
    record("host", "failed to acquire reusable stream");
    record(
        "pingora_core::services::listening",
        "Downstream handshake error from 127.0.0.1:5: TLSHandshakeFailure",
    );
    record(
        "pingora_core::services::listening",
        "Downstream handshake timeout",
    );
    record(
        "pingora_core::services::listening",
        "Accept() failed EMFILE",
    );
    let seen = logger.inner.0.lock().unwrap().clone();
    // The race went to DEBUG, below the Info filter; the rest are errors.
    assert_eq!(
        seen,
        [
            (Level::Error, "connect failed".to_owned()),
            (Level::Error, "failed to acquire reusable stream".to_owned()),
            (Level::Error, "Accept() failed EMFILE".to_owned()),
        ]
    );
}

#[test]
fn an_upgrades_wait_for_the_sockets_is_info_giving_up_stays_an_error() {
    let logger = Redacting::new(Collect(Mutex::new(Vec::new())));
    for (target, text) in [
        (
            "pingora_core::server::transfer_fd",
            "No incoming socket transfer, sleep 1s and try again",
        ),
        (
            "pingora_core::server::transfer_fd",
            "Giving up reading socket from: /run/x.sock, error: EAGAIN",
        ),
        (
            "host",
            "No incoming socket transfer, sleep 1s and try again",
        ),
    ] {
        log_error(&logger, target, text);
    }
    let seen = logger.inner.0.lock().unwrap().clone();
    assert_eq!(
        seen,
        [
            (
                Level::Info,
                "No incoming socket transfer, sleep 1s and try again".to_owned()
            ),
            (
                Level::Error,
                "Giving up reading socket from: /run/x.sock, error: EAGAIN".to_owned()
            ),
            (
                Level::Error,
                "No incoming socket transfer, sleep 1s and try again".to_owned()
            ),
        ]
    );
}

#[test]
fn every_marker_and_query_start_begins_where_the_scanners_look() {
    assert!(MARKERS
        .iter()
        .all(|m| matches!(m.as_bytes()[0], b'u' | b'p' | b't')));
    assert!(QUERY_STARTS
        .iter()
        .all(|m| matches!(m.as_bytes()[0], b'?' | b'%')));
}

#[test]
fn a_registered_secret_goes_in_every_spelling() {
    redact_everywhere("s3'cr%40t\"x");
    for line in [
        "url: redis://a:s3'cr%40t\"x@h",
        "url: 'redis://a:s3''cr%40t\"x@h'",
        "Config { password: Some(\"s3'cr@t\\\"x\") }",
        "decoded s3'cr@t\"x here",
    ] {
        let clean = scrub(line);
        assert!(
            !clean.contains("cr%40t") && !clean.contains("cr@t"),
            "{line} -> {clean}"
        );
    }
    assert_eq!(percent_decoded("a%40b%zz"), Some("a@b%zz".to_owned()));
    assert_eq!(percent_decoded("plain"), None);
}

#[test]
fn scrubs_share_link_material() {
    let cases = [
        (
            "uri: /api/search?url=https%3A%2F%2Fapp.milanote.com%2Fb%3Fp%3DSECRET&view=full, version",
            "uri: /api/search?[redacted] version",
        ),
        (
            "GET /api/permissions/token/SECRET?elementId=b",
            "GET /api/permissions/token/[redacted]?[redacted]",
        ),
        ("/api/boards?ids=a,b&tokens=tok.SECRET&x=1", "/api/boards?[redacted]"),
        (
            "link https://app.milanote.com/b?p=SECRET done",
            "link https://app.milanote.com/b?[redacted] done",
        ),
        ("p%3DSECRET", "p%3D[redacted]"),
        (
            "/api/search/https%3A%2F%2Fapp.milanote.com%2Fb%3Fp%3DSECRET2 x",
            "/api/search/https%3A%2F%2Fapp.milanote.com%2Fb%3F[redacted] x",
        ),
        ("/x%253Fp%253DSECRET", "/x%253F[redacted]"),
        ("x%26p%3dSECRET&y", "x%26p%3d[redacted]&y"),
        ("headers: {\"referer\": \"https://h/b?p=SECRET\"}", "headers: {\"referer\": \"https://h/b?[redacted]"),
        ("stop=1 top=2", "stop=1 top=2"),
        ("what? nothing here?", "what? nothing here?"),
        ("nothing here", "nothing here"),
        ("url=", "url="),
        ("ünïcode url=ßecret&x", "ünïcode url=[redacted]&x"),
        ("ünï?ßecret\tend", "ünï?[redacted]\tend"),
    ];
    for (input, want) in cases {
        assert_eq!(scrub(input), want, "{input}");
        assert!(!scrub(input).contains("SECRET"));
        assert!(!scrub(input).contains("ecret"));
    }
}

/// Ways a client can spell a parameter, a separator or a value.
fn encodings() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("p=".to_string()),
        Just("%70=".to_string()),
        Just("%2570=".to_string()),
        Just("P%3d".to_string()),
        Just("%75rl=".to_string()),
        Just("%55RL%3D".to_string()),
        Just("url=https%3A%2F%2Fapp.milanote.com%2Fb%3Fp%3D".to_string()),
        Just("url=https%253A%252F%252Fapp.milanote.com%252Fb%253Fp%253D".to_string()),
        Just("x=1;%70=".to_string()),
        Just("a=b+c&p=".to_string()),
        "[a-zA-Z%0-9]{0,6}=".prop_map(|s| s),
    ]
}

proptest! {
    #[test]
    fn no_encoding_of_a_query_keeps_the_secret(
        before in "[ -~&&[^?]]{0,20}",
        path in "/[a-z/]{0,12}",
        sep in prop_oneof![Just("?"), Just("?x=1&"), Just("?x=1;"), Just("?%26"), Just("%3F"), Just("%253f")],
        name in encodings(),
        case in any::<bool>(),
        plus in any::<bool>(),
        after in "( [a-z ]{0,10}|[\t\"',}][ -~]{0,10})?",
    ) {
        let secret = if case { "SeCrEtPerm42" } else { "secretperm42" };
        let value = if plus { format!("+{secret}+") } else { secret.to_string() };
        let line = format!("{before}{path}{sep}{name}{value}{after}");
        let out = scrub(&line);
        prop_assert!(!out.to_ascii_lowercase().contains("secretperm42"), "{line} -> {out}");
        // Whatever follows the query's end is kept.
        if let Some(rest) = after.strip_prefix(' ') {
            prop_assert!(out.ends_with(rest), "{line} -> {out}");
        }
    }

    #[test]
    fn text_without_queries_or_markers_is_unchanged(text in "[a-oq-z0-9 .,:/-]{0,60}") {
        prop_assert_eq!(scrub(&text), text);
    }
}

//! The JSON-RPC reader's tests: what a message may be and what is refused.

use super::*;
use serde_json::json;

fn code(body: &str) -> (i64, Option<String>) {
    let e = parse(body.as_bytes()).expect_err(body);
    (e.code, e.id.map(|i| i.json().to_owned()))
}

#[test]
fn envelopes_that_are_refused() {
    let cases: &[(&str, i64, Option<&str>)] = &[
        ("", PARSE_ERROR, None),
        ("{", PARSE_ERROR, None),
        ("{\"jsonrpc\":\"2.0\",}", PARSE_ERROR, None),
        ("\u{feff}{}", PARSE_ERROR, None),
        ("[]", INVALID_REQUEST, None),
        (
            r#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]"#,
            INVALID_REQUEST,
            None,
        ),
        ("\"tools/list\"", INVALID_REQUEST, None),
        ("null", INVALID_REQUEST, None),
        ("{}", INVALID_REQUEST, None),
        (
            r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#,
            INVALID_REQUEST,
            None,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#,
            INVALID_REQUEST,
            None,
        ),
        (
            r#"{"jsonrpc":"2.0","id":true,"method":"x"}"#,
            INVALID_REQUEST,
            None,
        ),
        (
            r#"{"jsonrpc":"2.0","id":{},"method":"x"}"#,
            INVALID_REQUEST,
            None,
        ),
        (
            r#"{"jsonrpc":"1.0","id":7,"method":"x"}"#,
            INVALID_REQUEST,
            Some("7"),
        ),
        (r#"{"id":7,"method":"x"}"#, INVALID_REQUEST, Some("7")),
        (
            r#"{"jsonrpc":"2.0","id":"a","method":3}"#,
            INVALID_REQUEST,
            Some("\"a\""),
        ),
        (
            r#"{"jsonrpc":"2.0","id":"a"}"#,
            INVALID_REQUEST,
            Some("\"a\""),
        ),
        (
            r#"{"jsonrpc":"2.0","id":2,"result":{}}"#,
            INVALID_REQUEST,
            Some("2"),
        ),
        (
            r#"{"jsonrpc":"2.0","id":2,"method":"m","params":[1]}"#,
            INVALID_PARAMS,
            Some("2"),
        ),
        (
            r#"{"jsonrpc":"2.0","id":2,"method":"m","params":null}"#,
            INVALID_PARAMS,
            Some("2"),
        ),
    ];
    for (body, want, id) in cases {
        assert_eq!(code(body), (*want, id.map(str::to_owned)), "{body}");
    }
    // Nesting is skipped without recursion: a deep array is a batch, a
    // deep member the method never reads is no error.
    let deep = "[".repeat(100_000) + &"]".repeat(100_000);
    assert_eq!(code(&deep).0, INVALID_REQUEST);
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"x":{}}}}}"#,
        deep
    );
    assert_eq!(parse(body.as_bytes()).expect("message").method, "m");
    // A string id must decode; a number must be an integer of 64 bits.
    for body in [
        r#"{"jsonrpc":"2.0","id":"\ud800","method":"m"}"#,
        r#"{"jsonrpc":"2.0","id":18446744073709551616,"method":"m"}"#,
        r#"{"jsonrpc":"2.0","id":1e2,"method":"m"}"#,
    ] {
        assert_eq!(code(body), (INVALID_REQUEST, None), "{body}");
    }
}

#[test]
fn names_are_decoded_and_the_last_of_a_repeated_name_wins() {
    let m = parse(
        br#"{"jsonrpc":"2.0","id":-0,"met\u0068od":"tools/list","method":"tools/call","params":{"name":"a","name":"read_\u0062oard"}}"#,
    )
    .expect("request");
    assert_eq!(m.id.as_ref().map(Id::json), Some("-0"));
    assert_eq!(m.method, "tools/call");
    assert_eq!(m.name(), Some("read_board"));
    let m = parse(
        br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"arguments":{"a":1,"a":"x","b":null}}}"#,
    )
    .expect("request");
    let args = m
        .params
        .and_then(|p| p.arguments)
        .expect("arguments")
        .expect("an object");
    assert_eq!(args.names().collect::<Vec<_>>(), ["a", "a", "b"]);
    assert_eq!(args.text("a").as_deref(), Some("x"));
}

#[test]
fn requests_and_notifications() {
    let m = parse(
        br#"{"jsonrpc":"2.0","id":"r-1","method":"tools/call","params":{"name":"read_board"}}"#,
    )
    .expect("request");
    assert_eq!(m.id.as_ref().map(Id::json), Some("\"r-1\""));
    assert_eq!(m.method, "tools/call");
    assert_eq!(m.name(), Some("read_board"));
    assert!(matches!(m.method, Cow::Borrowed(_)), "read without a copy");
    let n = parse(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).expect("note");
    assert_eq!((n.id, n.params), (None, None));
    let big = parse(br#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"m"}"#).expect("u64");
    assert_eq!(big.id.as_ref().map(Id::json), Some("18446744073709551615"));
}

#[test]
fn bodies_echo_the_id_and_escape_the_message() {
    let raw = serde_json::value::to_raw_value(&json!("a\"b")).expect("raw");
    let id = Id::of(&raw).expect("id");
    let ok = result_body(&id, &[br#"{"tools":"#, b"[]}"]);
    // Allocated at its final length, never grown (a grown body copies
    // the cached tool result a second time).
    assert_eq!(ok.capacity(), ok.len());
    let v: Value = serde_json::from_slice(&ok).expect("JSON");
    assert_eq!(
        v,
        json!({"jsonrpc": "2.0", "id": "a\"b", "result": {"tools": []}})
    );
    let err = error_body(None, METHOD_NOT_FOUND, "no \"x\"\n", Some(&json!({"k": 1})));
    let v: Value = serde_json::from_slice(&err).expect("JSON");
    assert_eq!(
        v,
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32601, "message": "no \"x\"\n", "data": {"k": 1}}})
    );
}

//! The Milanote protocol rules, as pure functions, so each can be tested without a socket:
//! request targets, the token answer, the root-board verdict and which nested
//! boards an answer loaded.

use super::transport::Response;
use crate::document::UnloadedReason;
use crate::provider::answer::{Answer, AnswerError};
use crate::provider::error::FetchError;
use serde_json::{Map, Value};

/// Longest token accepted from the provider.
pub const MAX_TOKEN_BYTES: usize = 8192;

const DENIED_CODES: &[&str] = &["BOARD_ACCESS_DENIED", "ACCESS_DENIED", "PASSWORD_PROTECTED"];
const MISSING_CODES: &[&str] = &["BOARD_NOT_FOUND", "NOT_FOUND", "DELETED", "BOARD_DELETED"];

/// Percent-encode everything but RFC 3986 unreserved characters.
pub fn encode_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `/api/permissions/token/{p}?elementId={boardId}`.
pub fn token_target(board_id: &str, permission_id: &str) -> String {
    format!(
        "/api/permissions/token/{}?elementId={}",
        encode_component(permission_id),
        encode_component(board_id)
    )
}

/// `/api/boards?ids=a,b&tokens=T&excludeSelf=false&loadAncestors=false&canvasOrder=true`.
pub fn boards_target(ids: &[String], token: &str) -> String {
    let ids: Vec<String> = ids.iter().map(|id| encode_component(id)).collect();
    format!(
        "/api/boards?ids={}&tokens={}&excludeSelf=false&loadAncestors=false&canvasOrder=true",
        ids.join(","),
        encode_component(token)
    )
}

/// Whether `id` is a board id this client will ask for: `^[A-Za-z0-9_-]{1,256}$`.
pub fn is_board_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 256
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// HTTP statuses both endpoints map the same way.
fn status_verdict(what: &str, status: u16) -> Result<(), FetchError> {
    match status {
        200..=299 => Ok(()),
        401 | 403 => Err(FetchError::AccessDenied),
        404 => Err(FetchError::NotFound),
        _ => Err(FetchError::upstream(format!(
            "{what} answered HTTP {status}"
        ))),
    }
}

fn json_object(what: &str, body: &[u8]) -> Result<Map<String, Value>, FetchError> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(FetchError::upstream(format!(
            "{what} body is not a JSON object"
        ))),
        Err(_) => Err(FetchError::upstream(format!("{what} body is not JSON"))),
    }
}

/// The token from the token endpoint's answer.
///
/// # Errors
///
/// `AccessDenied` for 401/403 or a `null`/missing token, `NotFound` for 404,
/// `Upstream` for other statuses, a non-JSON body, or a token that is not a
/// string, is empty, longer than [`MAX_TOKEN_BYTES`], or has control
/// characters or surrounding whitespace.
pub fn parse_token(response: &Response) -> Result<String, FetchError> {
    status_verdict("token endpoint", response.status)?;
    let body = json_object("token", &response.body)?;
    let token = match body.get("token") {
        None | Some(Value::Null) => return Err(FetchError::AccessDenied),
        Some(Value::String(t)) => t,
        Some(_) => return Err(FetchError::upstream("token is not a string")),
    };
    if token.is_empty() {
        return Err(FetchError::upstream("token is empty"));
    }
    if token.len() > MAX_TOKEN_BYTES {
        return Err(FetchError::upstream(format!(
            "token is longer than {MAX_TOKEN_BYTES} bytes"
        )));
    }
    if token.chars().any(char::is_control) {
        return Err(FetchError::upstream("token has control characters"));
    }
    if token.trim() != token {
        return Err(FetchError::upstream("token has surrounding whitespace"));
    }
    Ok(token.clone())
}

/// The boards endpoint's answer, read in one pass ([`Answer`]), unless the
/// transport read it as it arrived.
///
/// # Errors
///
/// `AccessDenied` for 401/403, `NotFound` for 404, `Upstream` for other
/// non-2xx statuses and bodies that are not a JSON object.
pub fn parse_boards(response: Response) -> Result<Answer, FetchError> {
    status_verdict("boards endpoint", response.status)?;
    let answer = match response.answer {
        Some(answer) => *answer,
        None => Answer::parse_bytes(&response.body),
    };
    answer.map_err(|e| match e {
        AnswerError::NotObject => FetchError::upstream("boards body is not a JSON object"),
        AnswerError::NotJson => FetchError::upstream("boards body is not JSON"),
    })
}

/// `errors[id].error.code`, when present.
fn error_code<'a>(body: &'a Answer, id: &str) -> Option<Option<&'a str>> {
    let entry = body.fields.get("errors")?.get(id)?;
    // `null` or an empty entry reports nothing. The code is read from
    // `{"error":{"code"}}` (what Milanote sends), a flat `{"code"}`, or a
    // plain string; an entry with none of these is an error without a code.
    match entry {
        Value::Null => None,
        Value::Object(o) if o.is_empty() => None,
        Value::String(code) => Some(Some(code.as_str())),
        _ => Some(
            entry
                .get("error")
                .and_then(|e| e.get("code"))
                .or_else(|| entry.get("code"))
                .and_then(Value::as_str),
        ),
    }
}

/// `childrenReturned[id] == true`.
fn children_returned(body: &Answer, id: &str) -> bool {
    body.fields
        .get("childrenReturned")
        .and_then(|c| c.get(id))
        .and_then(Value::as_bool)
        == Some(true)
}

/// The element of `elements` that is `id`: the rule merging applies, shared
/// so that the root checked here is the root that is normalized.
pub use crate::provider::head::find_element;

/// A provider error code is logged only when it looks like one (`[A-Z_]{1,64}`):
/// never arbitrary provider text.
fn loggable_code(code: &str) -> &str {
    let ok = !code.is_empty()
        && code.len() <= 64
        && code.bytes().all(|b| b.is_ascii_alphabetic() || b == b'_');
    if ok {
        code
    } else {
        "(unrecognized)"
    }
}

/// The verdict on the root board's answer: usable, refused, missing or broken.
///
/// # Errors
///
/// `AccessDenied` when the root's error code is a denial, its children were not
/// returned, or it is a `SKELETON`; `NotFound` when the code says missing or
/// deleted (case-insensitive); `Upstream` for any other code, no `elements`, or
/// a root element that is missing or not a `BOARD`.
pub fn check_root(body: &Answer, root_id: &str) -> Result<(), FetchError> {
    if let Some(code) = error_code(body, root_id) {
        let upper = code.unwrap_or_default().to_ascii_uppercase();
        if DENIED_CODES.contains(&upper.as_str()) {
            return Err(FetchError::AccessDenied);
        }
        if MISSING_CODES.contains(&upper.as_str()) {
            return Err(FetchError::NotFound);
        }
        return Err(FetchError::upstream(format!(
            "root board error code {}",
            loggable_code(code.unwrap_or_default())
        )));
    }
    if body.elements.is_none() {
        return Err(FetchError::upstream("boards answer has no elements"));
    }
    if !children_returned(body, root_id) {
        return Err(FetchError::AccessDenied);
    }
    let Some(root) = find_element(body.element_heads(), root_id) else {
        return Err(FetchError::upstream(
            "root element missing from the boards answer",
        ));
    };
    match root.element_type() {
        "BOARD" => Ok(()),
        "SKELETON" => Err(FetchError::AccessDenied),
        _ => Err(FetchError::upstream("root element is not a BOARD")),
    }
}

/// Whether nested board `id` was loaded by this answer, read with the
/// root's rules ([`check_root`]): `Ok` when it was, else why not. A denial
/// code, its children not returned, or only a `SKELETON` of it is
/// `ACCESS_DENIED`; a missing-board code is `NOT_FOUND`; any other code, an
/// answer without `elements`, or one where it is missing or not a `BOARD`
/// is `UPSTREAM_ERROR`.
///
/// # Errors
/// The [`UnloadedReason`] of a board the answer did not load.
pub fn nested_verdict(body: &Answer, id: &str) -> Result<(), UnloadedReason> {
    check_root(body, id).map_err(|e| request_failed(&e))
}

/// The reason a nested board is not loaded when its request failed with
/// `error`: the statuses and bodies that would refuse a root, mapped to
/// the same answer (`403`: `ACCESS_DENIED`, `404`: `NOT_FOUND`); anything
/// else failed the request (`UPSTREAM_ERROR`), a read or connect timeout
/// included; a request the fleet's budget held back until the deadline is
/// `DEADLINE`.
pub fn request_failed(error: &FetchError) -> UnloadedReason {
    match error {
        FetchError::AccessDenied => UnloadedReason::AccessDenied,
        FetchError::NotFound => UnloadedReason::NotFound,
        FetchError::Upstream(_) | FetchError::Challenged | FetchError::Timeout => {
            UnloadedReason::UpstreamError
        }
        // Never sent: the fleet's budget toward the provider had no room
        // before the deadline.
        FetchError::OverBudget => UnloadedReason::Deadline,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn resp(status: u16, body: &str) -> Response {
        Response {
            status,
            body: body.as_bytes().to_vec().into(),
            answer: None,
        }
    }

    fn obj(v: Value) -> Answer {
        Answer::from_value(v.as_object().unwrap_or(&Map::new()))
    }

    #[test]
    fn encodes_components() {
        assert_eq!(encode_component("aZ9-._~"), "aZ9-._~");
        assert_eq!(encode_component("a b/c?d&e,f"), "a%20b%2Fc%3Fd%26e%2Cf");
        assert_eq!(encode_component("é"), "%C3%A9");
        assert_eq!(
            token_target("b1", "p/1"),
            "/api/permissions/token/p%2F1?elementId=b1"
        );
        assert_eq!(
            boards_target(&["a".into(), "b c".into()], "t&k"),
            "/api/boards?ids=a,b%20c&tokens=t%26k&excludeSelf=false&loadAncestors=false&canvasOrder=true"
        );
    }

    proptest::proptest! {
        #[test]
        fn encoding_round_trips_and_is_safe(s in "\\PC{0,40}") {
            let encoded = encode_component(&s);
            proptest::prop_assert!(encoded.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~%".contains(&b)));
            let decoded: String = url::form_urlencoded::parse(format!("k={encoded}").as_bytes())
                .next()
                .map(|(_, v)| v.into_owned())
                .unwrap_or_default();
            proptest::prop_assert_eq!(decoded, s);
        }
    }

    #[test]
    fn token_table() {
        let up = |r: Result<String, FetchError>| matches!(r, Err(FetchError::Upstream(_)));
        assert_eq!(
            parse_token(&resp(200, r#"{"token":"abc"}"#)),
            Ok("abc".into())
        );
        assert_eq!(
            parse_token(&resp(200, r#"{"token":null}"#)),
            Err(FetchError::AccessDenied)
        );
        assert_eq!(
            parse_token(&resp(200, r#"{}"#)),
            Err(FetchError::AccessDenied)
        );
        assert_eq!(parse_token(&resp(401, "")), Err(FetchError::AccessDenied));
        assert_eq!(parse_token(&resp(403, "")), Err(FetchError::AccessDenied));
        assert_eq!(parse_token(&resp(404, "")), Err(FetchError::NotFound));
        assert!(up(parse_token(&resp(500, r#"{"token":"abc"}"#))));
        assert!(up(parse_token(&resp(200, "<html>"))));
        assert!(up(parse_token(&resp(200, "[1]"))));
        assert!(up(parse_token(&resp(200, r#"{"token":""}"#))));
        assert!(up(parse_token(&resp(200, r#"{"token":" a"}"#))));
        assert!(up(parse_token(&resp(200, r#"{"token":"a\t"}"#))));
        assert!(up(parse_token(&resp(200, r#"{"token":"a\u0001b"}"#))));
        assert!(up(parse_token(&resp(200, r#"{"token":42}"#))));
        let long = format!(r#"{{"token":"{}"}}"#, "t".repeat(MAX_TOKEN_BYTES + 1));
        assert!(up(parse_token(&resp(200, &long))));
        let max = format!(r#"{{"token":"{}"}}"#, "t".repeat(MAX_TOKEN_BYTES));
        assert!(parse_token(&resp(200, &max)).is_ok());
    }

    fn root(code: Option<&str>, returned: Value, el_type: &str) -> Answer {
        let mut v = json!({
            "elements": {"r": {"elementType": el_type}},
            "childrenReturned": {"r": returned}
        });
        if let Some(code) = code {
            v["errors"] = json!({"r": {"error": {"code": code}}});
        }
        obj(v)
    }

    #[test]
    fn root_table() {
        use FetchError::*;
        let up = |r: Result<(), FetchError>| matches!(r, Err(Upstream(_)));
        assert_eq!(check_root(&root(None, json!(true), "BOARD"), "r"), Ok(()));
        for code in [
            "BOARD_ACCESS_DENIED",
            "ACCESS_DENIED",
            "PASSWORD_PROTECTED",
            "access_denied",
        ] {
            assert_eq!(
                check_root(&root(Some(code), json!(false), "SKELETON"), "r"),
                Err(AccessDenied),
                "{code}"
            );
        }
        for code in [
            "BOARD_NOT_FOUND",
            "NOT_FOUND",
            "DELETED",
            "board_deleted",
            "Deleted",
        ] {
            assert_eq!(
                check_root(&root(Some(code), json!(false), "BOARD"), "r"),
                Err(NotFound),
                "{code}"
            );
        }
        assert!(up(check_root(
            &root(Some("WEIRD"), json!(true), "BOARD"),
            "r"
        )));
        assert_eq!(
            check_root(&root(None, json!(false), "BOARD"), "r"),
            Err(AccessDenied)
        );
        assert_eq!(
            check_root(&root(None, json!("yes"), "BOARD"), "r"),
            Err(AccessDenied)
        );
        assert_eq!(
            check_root(&root(None, json!(true), "SKELETON"), "r"),
            Err(AccessDenied)
        );
        assert!(up(check_root(&root(None, json!(true), "CARD"), "r")));
        assert!(up(check_root(
            &obj(json!({"childrenReturned": {"r": true}})),
            "r"
        )));
        assert!(up(check_root(
            &obj(json!({"elements": {}, "childrenReturned": {"r": true}})),
            "r"
        )));
        // The root found by its `id` field when keyed differently.
        let by_field = obj(
            json!({"elements": {"k": {"id": "r", "elementType": "BOARD"}}, "childrenReturned": {"r": true}}),
        );
        assert_eq!(check_root(&by_field, "r"), Ok(()));
    }

    /// The map key and the `id` field disagree: the root the check accepts
    /// is the root the normalizer builds, and a root the check would accept
    /// by its map key alone is refused.
    #[test]
    fn root_check_and_normalizer_find_one_root() {
        use crate::provider::normalize::normalize;
        use crate::provider::Fetched;
        let answer =
            |elements: Value| obj(json!({"elements": elements, "childrenReturned": {"r": true}}));
        // Key "r" holds board "x"; the element whose id is "r" is under "k".
        let body = answer(json!({
            "r": {"id": "x", "elementType": "BOARD", "content": {"title": "Not me"}},
            "k": {"id": "r", "elementType": "BOARD", "content": {"title": "Root"}}
        }));
        assert_eq!(check_root(&body, "r"), Ok(()));
        let mut fetched = Fetched::new("r", 0);
        fetched.merge_answer(body);
        let doc = normalize(&fetched, "m").expect("the checked root normalizes");
        assert_eq!(doc.board.id, "r");
        assert_eq!(
            serde_json::to_value(&doc).unwrap()["board"]["title"],
            json!("Root")
        );
        // Key "r" holds a BOARD, but the element whose id is "r" is a card
        // or a skeleton: refused, as the normalizer would refuse it.
        let card = answer(json!({
            "r": {"id": "x", "elementType": "BOARD"},
            "k": {"_id": "r", "elementType": "CARD"}
        }));
        assert!(matches!(
            check_root(&card, "r"),
            Err(FetchError::Upstream(_))
        ));
        let mut fetched = Fetched::new("r", 0);
        fetched.merge_answer(card);
        assert!(normalize(&fetched, "m").is_err());
        let skeleton = answer(json!({
            "r": {"id": "x", "elementType": "BOARD"},
            "k": {"id": "r", "elementType": "SKELETON"}
        }));
        assert_eq!(check_root(&skeleton, "r"), Err(FetchError::AccessDenied));
    }

    #[test]
    fn error_code_text_is_never_logged_raw() {
        let body = root(Some("secret text from provider"), json!(true), "BOARD");
        let Err(FetchError::Upstream(msg)) = check_root(&body, "r") else {
            panic!("expected an upstream error");
        };
        assert!(!msg.contains("secret"));
    }

    #[test]
    fn error_entry_shapes() {
        let body = |errors: Value| obj(json!({"errors": errors}));
        assert_eq!(error_code(&body(json!({"r": null})), "r"), None);
        assert_eq!(error_code(&body(json!({"r": {}})), "r"), None);
        assert_eq!(error_code(&body(json!({})), "r"), None);
        let nested = body(json!({"r": {"error": {"code": "ACCESS_DENIED"}}}));
        assert_eq!(error_code(&nested, "r"), Some(Some("ACCESS_DENIED")));
        let flat = body(json!({"r": {"code": "NOT_FOUND"}}));
        assert_eq!(error_code(&flat, "r"), Some(Some("NOT_FOUND")));
        assert_eq!(
            error_code(&body(json!({"r": "DELETED"})), "r"),
            Some(Some("DELETED"))
        );
        assert_eq!(
            error_code(&body(json!({"r": {"message": "x"}})), "r"),
            Some(None)
        );
        // A null entry does not turn a good root into an error.
        let good = obj(
            json!({"errors": {"r": null}, "elements": {"r": {"elementType": "BOARD"}}, "childrenReturned": {"r": true}}),
        );
        assert_eq!(check_root(&good, "r"), Ok(()));
        let flat_denied = obj(json!({"errors": {"r": {"code": "ACCESS_DENIED"}}, "elements": {}}));
        assert_eq!(check_root(&flat_denied, "r"), Err(FetchError::AccessDenied));
    }

    #[test]
    fn nested_verdict_table() {
        use UnloadedReason::*;
        let board = json!({"n": {"elementType": "BOARD"}});
        let cases: Vec<(Value, Result<(), UnloadedReason>)> = vec![
            (
                json!({"elements": board, "childrenReturned": {"n": true}}),
                Ok(()),
            ),
            (
                json!({"elements": {"n": {"elementType": "SKELETON"}}, "childrenReturned": {"n": true}}),
                Err(AccessDenied),
            ),
            (
                json!({"elements": board, "errors": {"n": {"error": {"code": "ACCESS_DENIED"}}}, "childrenReturned": {"n": true}}),
                Err(AccessDenied),
            ),
            (
                json!({"elements": board, "errors": {"n": {"error": {"code": "password_protected"}}}}),
                Err(AccessDenied),
            ),
            (
                json!({"elements": board, "childrenReturned": {}}),
                Err(AccessDenied),
            ),
            (
                json!({"elements": board, "childrenReturned": {"n": "true"}}),
                Err(AccessDenied),
            ),
            (
                json!({"errors": {"n": {"error": {"code": "BOARD_NOT_FOUND"}}}, "childrenReturned": {"n": false}}),
                Err(NotFound),
            ),
            (json!({"errors": {"n": "deleted"}}), Err(NotFound)),
            (
                json!({"elements": board, "errors": {"n": {"error": {"code": "RATE"}}}}),
                Err(UpstreamError),
            ),
            (json!({"childrenReturned": {"n": true}}), Err(UpstreamError)),
            (
                json!({"elements": {}, "childrenReturned": {"n": true}}),
                Err(UpstreamError),
            ),
            (
                json!({"elements": {"n": {"elementType": "CARD"}}, "childrenReturned": {"n": true}}),
                Err(UpstreamError),
            ),
        ];
        for (answer, want) in cases {
            assert_eq!(nested_verdict(&obj(answer.clone()), "n"), want, "{answer}");
        }
    }

    #[test]
    fn failed_requests_table() {
        use UnloadedReason::*;
        for (error, want) in [
            (FetchError::AccessDenied, AccessDenied),
            (FetchError::NotFound, NotFound),
            (FetchError::upstream("HTTP 500"), UpstreamError),
            (FetchError::Timeout, UpstreamError),
            (FetchError::OverBudget, Deadline),
        ] {
            assert_eq!(request_failed(&error), want, "{error}");
        }
    }
}

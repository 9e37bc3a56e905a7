//! The sample upstream's routes: the token and boards endpoints over the
//! embedded fixtures, and the fault scenarios (see the table in `sample/mod.rs`).

use super::boards::boards_body;
use super::captured::Captured;
use super::edits::Edits;
use super::wire::RequestHead;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::Write as _;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// How long `fault-slow` waits before answering.
pub const SLOW_DELAY: Duration = Duration::from_secs(30);
/// Size of the `fault-huge*` bodies and of the inflated `fault-gzip-bomb` body.
pub const HUGE_BYTES: usize = 64 * 1024 * 1024;

/// What to send back for one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// A whole response with `Content-Length`.
    Full {
        status: u16,
        headers: Vec<(&'static str, String)>,
        body: Vec<u8>,
    },
    /// Wait, then send the inner reply.
    Slow(Duration, Box<Reply>),
    /// Close the connection without answering.
    Reset,
    /// `len` bytes of JSON-looking filler, streamed; `chunked` hides the length.
    Huge { len: usize, chunked: bool },
}

/// Per-token behaviour, remembered by the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct TokenMode {
    gzip: bool,
}

/// Tokens the sample issued; boards requests must carry one of them.
#[derive(Debug, Default)]
pub struct TokenRegistry {
    issued: Mutex<HashMap<String, TokenMode>>,
    counter: Mutex<u64>,
}

impl TokenRegistry {
    fn issue(&self, permission_id: &str, mode: TokenMode) -> String {
        let n = {
            let mut c = self.counter.lock().unwrap_or_else(|e| e.into_inner());
            *c += 1;
            *c
        };
        let mut h = DefaultHasher::new();
        permission_id.hash(&mut h);
        // Derived from the permission id but never containing it, so tests can
        // check that neither appears in error texts.
        let token = format!("smpl.{:016x}.{n}", h.finish());
        self.issued
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(token.clone(), mode);
        token
    }

    fn mode(&self, token: &str) -> Option<TokenMode> {
        self.issued
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(token)
            .copied()
    }
}

/// Route one request; `origin` is the sample's own (`http://127.0.0.1:PORT`).
pub fn route(
    tokens: &TokenRegistry,
    origin: &str,
    captured: &Captured,
    edits: &Edits,
    head: &RequestHead,
) -> Reply {
    if head.method == "POST" {
        return edit_reply(origin, captured, edits, &head.target);
    }
    if head.method != "GET" && head.method != "HEAD" {
        return status_reply(405, "method not allowed");
    }
    let Ok(url) = url::Url::parse(&format!("http://sample{}", head.target)) else {
        return status_reply(400, "bad request target");
    };
    let accepts_gzip = head
        .header("accept-encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("gzip"));
    let query: HashMap<String, String> = url.query_pairs().into_owned().collect();
    let segments: Vec<String> = url
        .path_segments()
        .map(|s| s.map(percent_decode).collect())
        .unwrap_or_default();
    let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
    if let Some(image) = super::images::route(&segments) {
        return image;
    }
    match segments.as_slice() {
        ["api", "permissions", "token", permission_id] => {
            token_reply(tokens, permission_id, query.get("elementId"), accepts_gzip)
        }
        ["api", "boards"] => boards_reply(tokens, origin, captured, edits, &query, accepts_gzip),
        _ => status_reply(404, "no such route"),
    }
}

fn percent_decode(segment: &str) -> String {
    url::form_urlencoded::parse(format!("x={}", segment.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

/// A fault shared by both endpoints, selected by a permission id or a board id.
fn common_fault(id: &str) -> Option<Reply> {
    Some(match id {
        "fault-401" => status_reply(401, "unauthorized"),
        "fault-403" => status_reply(403, "forbidden"),
        "fault-404" => status_reply(404, "not found"),
        "fault-500" => status_reply(500, "internal error"),
        "fault-challenge" | "fault-waf-challenge" => waf_reply(202, "challenge"),
        "fault-waf-captcha" => waf_reply(405, "captcha"),
        "fault-garbage" => Reply::Full {
            status: 200,
            headers: vec![("Content-Type", "text/html".into())],
            body: b"<html>this is not JSON</html>".to_vec(),
        },
        "fault-huge" => Reply::Huge {
            len: HUGE_BYTES,
            chunked: false,
        },
        "fault-huge-chunked" => Reply::Huge {
            len: HUGE_BYTES,
            chunked: true,
        },
        "fault-gzip-bomb" => Reply::Full {
            status: 200,
            headers: vec![
                ("Content-Type", "application/json".into()),
                ("Content-Encoding", "gzip".into()),
            ],
            body: gzip_bomb().to_vec(),
        },
        "fault-slow" => Reply::Slow(SLOW_DELAY, Box::new(status_reply(404, "too late"))),
        "fault-reset" => Reply::Reset,
        _ => return None,
    })
}

/// What AWS WAF in front of Milanote answers instead of it: a page for a
/// browser to prove itself on (a JavaScript challenge with 202, a CAPTCHA
/// with 405), marked by `x-amzn-waf-action`.
fn waf_reply(status: u16, action: &str) -> Reply {
    Reply::Full {
        status,
        headers: vec![
            ("x-amzn-waf-action", action.into()),
            ("Content-Type", "text/html; charset=utf-8".into()),
            ("Cache-Control", "no-store, max-age=0".into()),
        ],
        body: b"<!DOCTYPE html><html><head><title>Human Verification</title></head><body><div id=\"challenge-container\"></div><script src=\"https://token.awswaf.com/challenge.js\"></script></body></html>".to_vec(),
    }
}

fn token_reply(
    tokens: &TokenRegistry,
    permission_id: &str,
    element_id: Option<&String>,
    accepts_gzip: bool,
) -> Reply {
    if element_id.is_none_or(|e| e.is_empty()) {
        return status_reply(400, "elementId is required");
    }
    if let Some(fault) = common_fault(permission_id) {
        return fault;
    }
    let gzip = permission_id == "fault-gzip" && accepts_gzip;
    let token = match permission_id {
        "fault-denied" => Value::Null,
        "fault-missing" => return json_reply(200, &json!({}), false),
        "fault-wrong-token" => json!("smpl.not-issued-by-this-server"),
        "fault-token-empty" => json!(""),
        "fault-token-space" => json!(" smpl.padded "),
        "fault-token-ctrl" => json!("smpl.\u{7}bell"),
        "fault-token-long" => json!("t".repeat(9000)),
        "fault-token-number" => json!(42),
        _ => json!(tokens.issue(permission_id, TokenMode { gzip })),
    };
    json_reply(200, &json!({ "token": token }), gzip)
}

fn boards_reply(
    tokens: &TokenRegistry,
    origin: &str,
    captured: &Captured,
    edits: &Edits,
    query: &HashMap<String, String>,
    accepts_gzip: bool,
) -> Reply {
    let ids: Vec<&str> = query
        .get("ids")
        .map(|ids| ids.split(',').filter(|id| !id.is_empty()).collect())
        .unwrap_or_default();
    if ids.is_empty() {
        return status_reply(400, "ids is required");
    }
    if let Some(fault) = ids.iter().find_map(|id| common_fault(id)) {
        return fault;
    }
    let mode = query.get("tokens").and_then(|t| tokens.mode(t));
    let gzip = mode.is_some_and(|m| m.gzip) && accepts_gzip;
    let mut body = boards_body(&ids, mode.is_some(), origin, captured);
    if mode.is_some() {
        edits.apply(&mut body, &ids);
    }
    json_reply(200, &body, gzip)
}

/// `POST /demo/edit/{boardId}`: one more edit of a board that has a
/// fixture (bundled or captured).
fn edit_reply(origin: &str, captured: &Captured, edits: &Edits, target: &str) -> Reply {
    let path = target.split('?').next().unwrap_or_default();
    let Some(id) = path.strip_prefix("/demo/edit/") else {
        return status_reply(405, "method not allowed");
    };
    let known = captured.fixture(id).is_some()
        || super::fixtures::fixture(id, origin).is_some()
        || super::big::big_board(id).is_some();
    if !known {
        return status_reply(404, "no such board");
    }
    let n = edits.bump(id);
    json_reply(200, &json!({"board": id, "edits": n}), false)
}

fn status_reply(status: u16, message: &str) -> Reply {
    json_reply(status, &json!({"error": {"message": message}}), false)
}

fn json_reply(status: u16, body: &Value, gzip: bool) -> Reply {
    let mut headers = vec![("Content-Type", "application/json; charset=utf-8".into())];
    let mut bytes = body.to_string().into_bytes();
    if gzip {
        bytes = gzip_bytes(&bytes);
        headers.push(("Content-Encoding", "gzip".into()));
    }
    Reply::Full {
        status,
        headers,
        body: bytes,
    }
}

fn gzip_bytes(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    // Writing into a Vec cannot fail.
    let _ = enc.write_all(data);
    enc.finish().unwrap_or_default()
}

/// A small gzip body that inflates to [`HUGE_BYTES`] of JSON-looking bytes; built once.
fn gzip_bomb() -> &'static [u8] {
    static BOMB: OnceLock<Vec<u8>> = OnceLock::new();
    BOMB.get_or_init(|| {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        let _ = enc.write_all(b"{\"elements\":{},\"pad\":\"");
        let spaces = vec![b' '; 1024 * 1024];
        for _ in 0..HUGE_BYTES / spaces.len() {
            let _ = enc.write_all(&spaces);
        }
        let _ = enc.write_all(b"\"}");
        enc.finish().unwrap_or_default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::demo::wire::parse_head;

    fn get(tokens: &TokenRegistry, target: &str) -> Reply {
        let raw = format!("GET {target} HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip");
        route(
            tokens,
            "http://127.0.0.1:1",
            &Captured::default(),
            &Edits::default(),
            &parse_head(raw.as_bytes()).unwrap(),
        )
    }

    fn body_json(reply: &Reply) -> (u16, Value) {
        match reply {
            Reply::Full { status, body, .. } => {
                (*status, serde_json::from_slice(body).unwrap_or(Value::Null))
            }
            other => panic!("not a full reply: {other:?}"),
        }
    }

    fn issue(tokens: &TokenRegistry, p: &str) -> String {
        let (_, v) = body_json(&get(
            tokens,
            &format!("/api/permissions/token/{p}?elementId=t-root"),
        ));
        v["token"].as_str().unwrap().to_owned()
    }

    #[test]
    fn issued_tokens_unlock_boards_and_do_not_contain_the_permission() {
        let tokens = TokenRegistry::default();
        let token = issue(&tokens, "perm123");
        assert!(!token.contains("perm123"));
        let (status, v) = body_json(&get(
            &tokens,
            &format!("/api/boards?ids=t-root,t-mid-a&tokens={token}"),
        ));
        assert_eq!(status, 200);
        assert_eq!(
            v["childrenReturned"],
            json!({"t-root": true, "t-mid-a": true})
        );
        assert!(v["elements"]["t-card-2"].is_object());
        assert_eq!(v["boardIds"], json!(["t-root", "t-mid-a"]));
    }

    #[test]
    fn wrong_token_and_unknown_board_are_errors_in_a_200() {
        let tokens = TokenRegistry::default();
        let (status, v) = body_json(&get(&tokens, "/api/boards?ids=t-root&tokens=nope"));
        assert_eq!(status, 200);
        assert_eq!(v["errors"]["t-root"]["error"]["code"], "ACCESS_DENIED");
        assert_eq!(v["childrenReturned"]["t-root"], false);
        let token = issue(&tokens, "p");
        let (_, v) = body_json(&get(
            &tokens,
            &format!("/api/boards?ids=nope&tokens={token}"),
        ));
        assert_eq!(v["errors"]["nope"]["error"]["code"], "BOARD_NOT_FOUND");
    }

    #[test]
    fn token_faults() {
        let tokens = TokenRegistry::default();
        let t = |p: &str| get(&tokens, &format!("/api/permissions/token/{p}?elementId=b"));
        assert_eq!(body_json(&t("fault-denied")).1, json!({"token": null}));
        assert_eq!(body_json(&t("fault-401")).0, 401);
        assert_eq!(t("fault-reset"), Reply::Reset);
        assert!(matches!(t("fault-slow"), Reply::Slow(..)));
        assert!(matches!(
            t("fault-huge"),
            Reply::Huge { chunked: false, .. }
        ));
        for (id, status, action) in [
            ("fault-waf-challenge", 202, "challenge"),
            ("fault-waf-captcha", 405, "captcha"),
        ] {
            match t(id) {
                Reply::Full {
                    status: s, headers, ..
                } => {
                    assert_eq!(s, status, "{id}");
                    assert!(headers
                        .iter()
                        .any(|(n, v)| *n == "x-amzn-waf-action" && v == action));
                }
                other => panic!("{other:?}"),
            }
        }
        match t("fault-challenge") {
            Reply::Full { headers, .. } => {
                assert!(headers
                    .iter()
                    .any(|(n, v)| *n == "x-amzn-waf-action" && v == "challenge"));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(body_json(&get(&tokens, "/api/permissions/token/p")).0, 400);
    }

    #[test]
    fn gzip_bomb_is_small() {
        assert!(gzip_bomb().len() < 1024 * 1024);
    }
}

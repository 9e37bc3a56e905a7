//! Which MCP revision a request speaks, and the checks that revision makes
//! before a method runs.
//!
//! - **2026-07-28** ("modern", stateless): every request carries its version
//!   and the client's capabilities in `params._meta`, mirrored in the
//!   `MCP-Protocol-Version`, `Mcp-Method` and (for `tools/call`) `Mcp-Name`
//!   headers. The checks, first failure wins, as the official Python SDK's
//!   server makes them: the `_meta` pair is present (`-32602`); the headers
//!   match the body (`-32020`); the version is one served here (`-32022`,
//!   with the supported list).
//! - **2025-06-18 and 2025-11-25** ("handshake"): `initialize` first, then
//!   requests carrying the negotiated version in `MCP-Protocol-Version`. No
//!   session id is issued, so every request stands alone; a request without
//!   the header is served too (the `initialize` request itself has none).
//!
//! A request is modern when its `_meta` names a protocol version, or its
//! `MCP-Protocol-Version` header names a version that is not of the
//! handshake era (so an unknown version is told the supported list);
//! `initialize` always opens the handshake era.

use super::jsonrpc::{
    Id, Message, Object, RpcError, HEADER_MISMATCH, INVALID_PARAMS, INVALID_REQUEST,
    UNSUPPORTED_PROTOCOL_VERSION,
};
use base64::Engine as _;
use http::header::HeaderName;
use http::HeaderMap;
use serde_json::{json, Value};
use std::borrow::Cow;

/// The stateless revision served.
pub const MODERN: &str = "2026-07-28";
/// The handshake revisions served, newest first (what `initialize` offers
/// back when the client asks for one it does not know).
pub const HANDSHAKE: [&str; 2] = ["2025-11-25", "2025-06-18"];
/// Every revision served, newest first (`server/discover`'s list).
pub const SUPPORTED: [&str; 3] = [MODERN, HANDSHAKE[0], HANDSHAKE[1]];
/// Revisions of the handshake era, served here or not: a header naming one
/// of them is not a modern request.
const HANDSHAKE_ERA: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

pub const PROTOCOL_VERSION_HEADER: &str = "mcp-protocol-version";
pub const METHOD_HEADER: &str = "mcp-method";
pub const NAME_HEADER: &str = "mcp-name";
// The same names, looked up without parsing the name on every request.
static PROTOCOL_VERSION: HeaderName = HeaderName::from_static(PROTOCOL_VERSION_HEADER);
static METHOD: HeaderName = HeaderName::from_static(METHOD_HEADER);
static NAME: HeaderName = HeaderName::from_static(NAME_HEADER);
const VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
const CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";

/// The revision a request is answered under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// 2026-07-28.
    Modern,
    /// 2025-06-18 or 2025-11-25, after `initialize`.
    Handshake,
}

/// Whether a message that could not be read as one of ours (its `params`
/// not an object) is of the handshake era, by its headers alone: no
/// protocol version header, or one of that era's. Its errors are then
/// answered `200`, as every handshake-era error is.
pub fn handshake_by_headers(headers: &HeaderMap) -> bool {
    McpHeaders::read(headers)
        .version
        .is_none_or(|v| HANDSHAKE_ERA.contains(&v.unwrap_or("")))
}

/// The era of `message`, after that era's checks.
///
/// # Errors
/// The first check that failed, as the JSON-RPC error to answer.
pub fn classify(message: &Message<'_>, headers: &HeaderMap) -> Result<Era, RpcError> {
    let mcp = McpHeaders::read(headers);
    let header = mcp.version;
    let meta = message.meta();
    let meta_version = meta.and_then(|m| m.get(VERSION_KEY));
    let modern = message.method != "initialize"
        && (meta_version.is_some()
            || header
                .as_ref()
                .is_some_and(|h| !HANDSHAKE_ERA.contains(&h.unwrap_or(""))));
    if !modern {
        return match header {
            // The handshake negotiates its version in its params.
            _ if message.method == "initialize" => Ok(Era::Handshake),
            None => Ok(Era::Handshake),
            Some(Some(v)) if HANDSHAKE.contains(&v) => Ok(Era::Handshake),
            Some(v) => Err(RpcError::new(
                message.id.clone(),
                INVALID_REQUEST,
                format!(
                    "Unsupported protocol version {:?}; supported: {}",
                    v.unwrap_or_default(),
                    SUPPORTED.join(", ")
                ),
            )),
        };
    }
    if message.id.is_none() {
        // A notification: no `_meta` rules are defined for it; the header
        // that routed it here must name a version served.
        return match header {
            Some(Some(v)) if v == MODERN => Ok(Era::Modern),
            other => Err(unsupported(None, other.flatten().map(Value::from))),
        };
    }
    modern_ladder(message, meta, &mcp)?;
    Ok(Era::Modern)
}

/// The checks of a 2026-07-28 request (see the module docs).
fn modern_ladder(
    message: &Message<'_>,
    meta: Option<&Object<'_>>,
    headers: &McpHeaders<'_>,
) -> Result<(), RpcError> {
    let id = &message.id;
    let Some(meta) = meta.filter(|m| m.contains(VERSION_KEY) && m.contains(CAPABILITIES_KEY))
    else {
        return Err(RpcError::new(
            id.clone(),
            INVALID_PARAMS,
            format!("params._meta must carry {VERSION_KEY:?} and {CAPABILITIES_KEY:?}"),
        ));
    };
    let version = meta.text(VERSION_KEY);
    let mismatch = |what: &str| {
        RpcError::new(
            id.clone(),
            HEADER_MISMATCH,
            format!("Header mismatch: {what}"),
        )
    };
    if let Some(name) = headers.repeated {
        return Err(mismatch(&format!("{name} appears more than once")));
    }
    let header_version = headers.version.flatten();
    if header_version.is_none() || header_version != version.as_deref() {
        return Err(mismatch(
            "MCP-Protocol-Version does not match the request's protocol version",
        ));
    }
    if headers.method.flatten() != Some(&*message.method) {
        return Err(mismatch("Mcp-Method does not match the request's method"));
    }
    if message.method == "tools/call" {
        if let Some(body_name) = message.name() {
            let header_name = headers.name.flatten().and_then(decode_header_value);
            if header_name.as_deref() != Some(body_name) {
                return Err(mismatch("Mcp-Name does not match the tool's name"));
            }
        }
    }
    match version.as_deref() {
        None => Err(RpcError::new(
            id.clone(),
            INVALID_PARAMS,
            "the protocol version in params._meta must be a string",
        )),
        Some(MODERN) => Ok(()),
        Some(v) => Err(unsupported(id.clone(), Some(Value::from(v)))),
    }
}

/// `-32022` naming every version served and the one asked for.
fn unsupported(id: Option<Id>, requested: Option<Value>) -> RpcError {
    let mut error = RpcError::new(
        id,
        UNSUPPORTED_PROTOCOL_VERSION,
        "Unsupported protocol version",
    );
    error.data = Some(json!({
        "supported": SUPPORTED,
        "requested": requested.unwrap_or(Value::Null),
    }));
    error
}

/// The request's three MCP headers, read in one pass over its headers.
/// Each value is `None` when absent and `Some(None)` when present but not
/// visible ASCII text; trimmed.
#[derive(Default)]
struct McpHeaders<'h> {
    version: Option<Option<&'h str>>,
    method: Option<Option<&'h str>>,
    name: Option<Option<&'h str>>,
    /// The first of them that appears more than once.
    repeated: Option<&'static str>,
}

impl<'h> McpHeaders<'h> {
    fn read(headers: &'h HeaderMap) -> Self {
        let mut mcp = McpHeaders::default();
        for (name, value) in headers {
            let (slot, label) = if *name == PROTOCOL_VERSION {
                (&mut mcp.version, PROTOCOL_VERSION_HEADER)
            } else if *name == METHOD {
                (&mut mcp.method, METHOD_HEADER)
            } else if *name == NAME {
                (&mut mcp.name, NAME_HEADER)
            } else {
                continue;
            };
            if slot.is_some() {
                mcp.repeated.get_or_insert(label);
            } else {
                *slot = Some(value.to_str().ok().map(str::trim));
            }
        }
        mcp
    }
}

/// A header value in the `=?base64?...?=` form decoded (base64 of UTF-8),
/// any other value as it is; `None` for a malformed encoded value.
pub fn decode_header_value(value: &str) -> Option<Cow<'_, str>> {
    let Some(payload) = value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    else {
        return Some(Cow::Borrowed(value));
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(payload)
        .ok()?;
    String::from_utf8(bytes).ok().map(Cow::Owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::mcp::jsonrpc::parse;

    fn message(method: &str, params: Value, id: bool) -> Message<'static> {
        let mut m = json!({"jsonrpc": "2.0", "method": method, "params": params});
        if id {
            m["id"] = json!(1);
        }
        let body: &'static [u8] = m.to_string().into_bytes().leak();
        parse(body).expect("message")
    }

    fn meta(version: &str) -> Value {
        json!({"_meta": {VERSION_KEY: version, CAPABILITIES_KEY: {}}})
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, v.parse().expect("value"));
        }
        h
    }

    fn code(m: &Message<'_>, h: &HeaderMap) -> Result<Era, i64> {
        classify(m, h).map_err(|e| e.code)
    }

    #[test]
    fn modern_requests_pass_the_ladder_in_order() {
        let list = message("tools/list", meta(MODERN), true);
        let good = [
            (PROTOCOL_VERSION_HEADER, MODERN),
            (METHOD_HEADER, "tools/list"),
        ];
        assert_eq!(code(&list, &headers(&good)), Ok(Era::Modern));
        // Missing the pair: invalid params, before any header check.
        let bare = message("tools/list", json!({"_meta": {VERSION_KEY: MODERN}}), true);
        assert_eq!(code(&bare, &headers(&good)), Err(INVALID_PARAMS));
        // Headers that disagree with the body.
        for bad in [
            vec![(METHOD_HEADER, "tools/list")],
            vec![(PROTOCOL_VERSION_HEADER, MODERN)],
            vec![
                (PROTOCOL_VERSION_HEADER, MODERN),
                (METHOD_HEADER, "tools/call"),
            ],
            vec![
                (PROTOCOL_VERSION_HEADER, MODERN),
                (METHOD_HEADER, "tools/list"),
                (METHOD_HEADER, "tools/list"),
            ],
        ] {
            assert_eq!(code(&list, &headers(&bad)), Err(HEADER_MISMATCH), "{bad:?}");
        }
        // A version not served, header and body agreeing.
        let future = message("tools/list", meta("2099-01-01"), true);
        let h = headers(&[
            (PROTOCOL_VERSION_HEADER, "2099-01-01"),
            (METHOD_HEADER, "tools/list"),
        ]);
        let e = classify(&future, &h).expect_err("unsupported");
        assert_eq!(e.code, UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(e.data.expect("data")["supported"], json!(SUPPORTED));
    }

    #[test]
    fn tool_calls_check_the_name_header_plain_or_base64() {
        let mut params = meta(MODERN);
        params["name"] = json!("read_board");
        let call = message("tools/call", params, true);
        let with_name = |name: &str| {
            headers(&[
                (PROTOCOL_VERSION_HEADER, MODERN),
                (METHOD_HEADER, "tools/call"),
                (NAME_HEADER, name),
            ])
        };
        assert_eq!(code(&call, &with_name("read_board")), Ok(Era::Modern));
        assert_eq!(
            code(&call, &with_name("=?base64?cmVhZF9ib2FyZA==?=")),
            Ok(Era::Modern)
        );
        assert_eq!(
            code(&call, &with_name("search_board")),
            Err(HEADER_MISMATCH)
        );
        assert_eq!(
            code(&call, &with_name("=?base64?***?=")),
            Err(HEADER_MISMATCH)
        );
    }

    #[test]
    fn handshake_requests_and_notifications() {
        let init = message("initialize", json!({"protocolVersion": "2025-06-18"}), true);
        assert_eq!(code(&init, &HeaderMap::new()), Ok(Era::Handshake));
        // initialize opens the handshake era whatever the header says.
        assert_eq!(
            code(&init, &headers(&[(PROTOCOL_VERSION_HEADER, MODERN)])),
            Ok(Era::Handshake)
        );
        let list = message("tools/list", json!({}), true);
        for v in HANDSHAKE {
            assert_eq!(
                code(&list, &headers(&[(PROTOCOL_VERSION_HEADER, v)])),
                Ok(Era::Handshake)
            );
        }
        assert_eq!(code(&list, &HeaderMap::new()), Ok(Era::Handshake));
        assert_eq!(
            code(&list, &headers(&[(PROTOCOL_VERSION_HEADER, "2025-03-26")])),
            Err(INVALID_REQUEST)
        );
        // An unknown header version is answered as modern: told the list.
        assert_eq!(
            code(&list, &headers(&[(PROTOCOL_VERSION_HEADER, "2031-01-01")])),
            Err(INVALID_PARAMS)
        );
        let note = message("notifications/initialized", json!({}), false);
        assert_eq!(code(&note, &HeaderMap::new()), Ok(Era::Handshake));
        assert_eq!(
            code(&note, &headers(&[(PROTOCOL_VERSION_HEADER, MODERN)])),
            Ok(Era::Modern)
        );
        assert_eq!(
            code(&note, &headers(&[(PROTOCOL_VERSION_HEADER, "2031-01-01")])),
            Err(UNSUPPORTED_PROTOCOL_VERSION)
        );
    }
}

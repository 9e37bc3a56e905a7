//! JSON-RPC 2.0 as MCP uses it over HTTP: one request or notification per
//! POST body, read into a [`Message`] or refused with the standard code,
//! and the response bodies written back. Pure: bytes in, bytes out.
//!
//! What is refused, and how (the `id` of the answer is the request's when
//! it could be read, else `null`):
//!
//! | body | code |
//! |---|---|
//! | not JSON (or nested past serde_json's limit) | `-32700` parse error |
//! | a JSON array (a batch; MCP sends one message per POST) | `-32600` |
//! | not an object, `jsonrpc` not `"2.0"`, `method` missing or not a string | `-32600` |
//! | an `id` that is `null`, fractional, a boolean, an array or an object | `-32600` |
//! | a response (`result` or `error`, no `method`) | `-32600` |
//! | `params` present but not an object | `-32602` |

use serde_json::{Map, Value};
use std::fmt::Write as _;

/// Parse error: the body is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// The body is JSON but not one JSON-RPC request or notification.
pub const INVALID_REQUEST: i64 = -32600;
/// No such method (for this protocol revision).
pub const METHOD_NOT_FOUND: i64 = -32601;
/// The method's params are not what it takes.
pub const INVALID_PARAMS: i64 = -32602;
/// A bug on our side; details only in the log.
pub const INTERNAL_ERROR: i64 = -32603;
/// MCP 2026-07-28: the `MCP-Protocol-Version`, `Mcp-Method` or `Mcp-Name`
/// header is missing or does not match the body.
pub const HEADER_MISMATCH: i64 = -32020;
/// MCP 2026-07-28: the request's protocol version is not served here.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// A request id as the client wrote it: the JSON text of a string or an
/// integer, echoed verbatim in the answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Id(Box<str>);

impl Id {
    /// The id of `value` when it is one MCP allows (a string or an integer;
    /// never `null`).
    fn of(value: &Value) -> Option<Id> {
        match value {
            Value::String(_) => Some(Id(value.to_string().into())),
            Value::Number(n) if n.is_i64() || n.is_u64() => Some(Id(n.to_string().into())),
            _ => None,
        }
    }

    /// The JSON text of the id.
    pub fn json(&self) -> &str {
        &self.0
    }
}

/// One JSON-RPC message that passed the envelope checks.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// `None` for a notification (no `id` member).
    pub id: Option<Id>,
    pub method: String,
    /// The `params` object, when there is one.
    pub params: Option<Map<String, Value>>,
}

/// Why a body is not a message we answer.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub id: Option<Id>,
    pub code: i64,
    pub message: String,
    /// `error.data`, when the code defines one.
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(id: Option<Id>, code: i64, message: impl Into<String>) -> Self {
        RpcError {
            id,
            code,
            message: message.into(),
            data: None,
        }
    }

    /// The response body of this error.
    pub fn body(&self) -> Vec<u8> {
        error_body(
            self.id.as_ref(),
            self.code,
            &self.message,
            self.data.as_ref(),
        )
    }
}

/// Reads one POST body.
///
/// # Errors
/// An [`RpcError`] with the standard code (see the module docs).
pub fn parse(body: &[u8]) -> Result<Message, RpcError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|_| RpcError::new(None, PARSE_ERROR, "Parse error: the body is not JSON"))?;
    let mut object = match value {
        Value::Object(object) => object,
        Value::Array(_) => {
            return Err(RpcError::new(
                None,
                INVALID_REQUEST,
                "Batches are not accepted: send one JSON-RPC message per POST",
            ))
        }
        _ => {
            return Err(RpcError::new(
                None,
                INVALID_REQUEST,
                "The body must be a JSON-RPC request or notification object",
            ))
        }
    };
    let id = match object.get("id") {
        None => None,
        Some(raw) => Some(Id::of(raw).ok_or_else(|| {
            RpcError::new(None, INVALID_REQUEST, "id must be a string or an integer")
        })?),
    };
    let invalid = |message: &str| RpcError::new(id.clone(), INVALID_REQUEST, message);
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid("jsonrpc must be \"2.0\""));
    }
    let method = match object.remove("method") {
        Some(Value::String(method)) => method,
        Some(_) => return Err(invalid("method must be a string")),
        None if object.contains_key("result") || object.contains_key("error") => {
            return Err(invalid("Responses are not accepted by this endpoint"))
        }
        None => return Err(invalid("method is required")),
    };
    let params = match object.remove("params") {
        None => None,
        Some(Value::Object(params)) => Some(params),
        Some(_) => {
            return Err(RpcError::new(
                id,
                INVALID_PARAMS,
                "params must be an object",
            ))
        }
    };
    Ok(Message { id, method, params })
}

/// `{"jsonrpc":"2.0","id":ID,"result":RESULT}` around the JSON text of a
/// result object, spliced in without being parsed again.
pub fn result_body(id: &Id, result: &[u8]) -> Vec<u8> {
    let mut body = Vec::with_capacity(result.len() + id.0.len() + 40);
    body.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    body.extend_from_slice(id.0.as_bytes());
    body.extend_from_slice(b",\"result\":");
    body.extend_from_slice(result);
    body.push(b'}');
    body
}

/// `{"jsonrpc":"2.0","id":ID|null,"error":{"code","message","data"?}}`.
pub fn error_body(id: Option<&Id>, code: i64, message: &str, data: Option<&Value>) -> Vec<u8> {
    let mut body = String::with_capacity(96 + message.len());
    body.push_str("{\"jsonrpc\":\"2.0\",\"id\":");
    body.push_str(id.map_or("null", Id::json));
    let _ = write!(body, ",\"error\":{{\"code\":{code},\"message\":");
    body.push_str(&Value::from(message).to_string());
    if let Some(data) = data {
        body.push_str(",\"data\":");
        body.push_str(&data.to_string());
    }
    body.push_str("}}");
    body.into_bytes()
}

#[cfg(test)]
mod tests {
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
        let deep = "[".repeat(200) + &"]".repeat(200);
        assert_eq!(code(&deep).0, PARSE_ERROR);
    }

    #[test]
    fn requests_and_notifications() {
        let m = parse(
            br#"{"jsonrpc":"2.0","id":"r-1","method":"tools/call","params":{"name":"read_board"}}"#,
        )
        .expect("request");
        assert_eq!(m.id.as_ref().map(Id::json), Some("\"r-1\""));
        assert_eq!(m.method, "tools/call");
        assert_eq!(m.params, json!({"name": "read_board"}).as_object().cloned());
        let n = parse(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).expect("note");
        assert_eq!((n.id, n.params), (None, None));
        let big =
            parse(br#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"m"}"#).expect("u64");
        assert_eq!(big.id.as_ref().map(Id::json), Some("18446744073709551615"));
    }

    #[test]
    fn bodies_echo_the_id_and_escape_the_message() {
        let id = Id::of(&json!("a\"b")).expect("id");
        let ok = result_body(&id, br#"{"tools":[]}"#);
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
}

//! JSON-RPC 2.0 as MCP uses it over HTTP: one request or notification per
//! POST body, read into a [`Message`] or refused with the standard code,
//! and the response bodies written back. Pure: bytes in, bytes out.
//!
//! A body is read in one pass that keeps only what the methods read: the
//! envelope's members, and of `params` its `name`, `protocolVersion`,
//! `arguments` and `_meta` ([`Params`]), the last two one level deep
//! ([`Object`]: names and the JSON text of each value, borrowed from the
//! body). Everything else is checked as JSON and skipped. No tree of
//! values is built, so a request costs about what its bytes cost, and
//! nothing recurses: serde_json skips a value iteratively. A name given
//! twice is read as its last occurrence, as a JSON object reader would.
//!
//! What is refused, and how (the `id` of the answer is the request's when
//! it could be read, else `null`):
//!
//! | body | code |
//! |---|---|
//! | not JSON | `-32700` parse error |
//! | a JSON array (a batch; MCP sends one message per POST) | `-32600` |
//! | not an object, `jsonrpc` not `"2.0"`, `method` missing or not a string | `-32600` |
//! | an `id` that is `null`, fractional, a boolean, an array or an object | `-32600` |
//! | a response (`result` or `error`, no `method`) | `-32600` |
//! | `params` present but not an object | `-32602` |

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::Value;
use std::borrow::Cow;
use std::fmt::{self, Write as _};

/// Parse error: the body is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// The body is JSON but not one JSON-RPC request or notification.
pub const INVALID_REQUEST: i64 = -32600;
/// No such method (for this protocol revision).
pub const METHOD_NOT_FOUND: i64 = -32601;
/// The method's params are not what it takes.
pub const INVALID_PARAMS: i64 = -32602;
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
    /// The id written as `raw` when it is one MCP allows (a string or an
    /// integer; never `null`).
    fn of(raw: &RawValue) -> Option<Id> {
        let text = raw.get();
        let integer = || {
            let digits = text.strip_prefix('-').unwrap_or(text);
            !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
        };
        // A string is echoed as written once it decodes (no lone
        // surrogate); an integer when it is an i64 or a u64.
        let string = || self::text(raw).is_some();
        let fits = || text.parse::<i64>().is_ok() || text.parse::<u64>().is_ok();
        if string() || (integer() && fits()) {
            Some(Id(text.into()))
        } else {
            None
        }
    }

    /// The JSON text of the id.
    pub fn json(&self) -> &str {
        &self.0
    }
}

/// A JSON object read one level deep: each member's name (decoded) and the
/// JSON text of its value, borrowed from the body. A value is read further
/// only when asked ([`Object::text`]; `params.arguments` and `params._meta`).
#[derive(Debug, Clone, Default)]
pub struct Object<'a> {
    members: Vec<(Cow<'a, str>, &'a RawValue)>,
}

/// Equal when the same names carry the same JSON text, in the same order.
impl PartialEq for Object<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.members.len() == other.members.len()
            && self
                .members
                .iter()
                .zip(&other.members)
                .all(|((a, x), (b, y))| a == b && x.get() == y.get())
    }
}

impl<'a> Object<'a> {
    /// The JSON text of member `name` (its last occurrence).
    pub fn get(&self, name: &str) -> Option<&'a RawValue> {
        self.members
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| *v)
    }

    /// Whether the object has a member `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Member `name` when it is a string.
    pub fn text(&self, name: &str) -> Option<Cow<'a, str>> {
        self.get(name).and_then(text)
    }

    /// The members' names, in order (a repeated name each time).
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.members.iter().map(|(n, _)| n.as_ref())
    }
}

/// The string written as `raw`, or `None` when it is another JSON value.
/// Borrowed from the body unless it has escapes.
pub fn text(raw: &RawValue) -> Option<Cow<'_, str>> {
    let written = raw.get();
    if !written.starts_with('"') {
        return None;
    }
    if !written.contains('\\') {
        // A string as serde_json read it: no escapes, so its text is what
        // lies between the quotes.
        return written.get(1..written.len() - 1).map(Cow::Borrowed);
    }
    serde_json::from_str::<Text<'_>>(written).ok().map(|t| t.0)
}

/// Whether `raw` is JSON `null`.
pub fn is_null(raw: &RawValue) -> bool {
    raw.get() == "null"
}

/// A JSON string, borrowed when it has no escapes (serde's own `Cow<str>`
/// always copies).
struct Text<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(V)
    }
}

impl<'de> Deserialize<'de> for Object<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Object<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Object<'de>, A::Error> {
                let mut members = Vec::with_capacity(map.size_hint().unwrap_or(4).min(16));
                while let Some(Text(name)) = map.next_key()? {
                    members.push((name, map.next_value()?));
                }
                Ok(Object { members })
            }
        }
        d.deserialize_map(V)
    }
}

/// A member's value, by its JSON type: an object read as `T`, `null`, or
/// any other value (skipped).
enum Shape<T> {
    Object(T),
    Null,
    Other,
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Shape<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Shape<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Shape<T>, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map)).map(Shape::Object)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Shape<T>, E> {
                Ok(Shape::Null)
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Shape<T>, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Shape::Other)
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Shape<T>, E> {
                Ok(Shape::Other)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Shape<T>, E> {
                Ok(Shape::Other)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Shape<T>, E> {
                Ok(Shape::Other)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Shape<T>, E> {
                Ok(Shape::Other)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Shape<T>, E> {
                Ok(Shape::Other)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// The members of `params` that the methods read, found while the body is
/// read. `arguments` and `_meta` are `Err(())` when present but not
/// objects (`null` is as absent).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Params<'a> {
    /// `name` (`tools/call`), when it is a string.
    pub name: Option<Cow<'a, str>>,
    /// `protocolVersion` (`initialize`), when it is a string.
    pub protocol_version: Option<Cow<'a, str>>,
    pub arguments: Option<Result<Object<'a>, ()>>,
    pub meta: Option<Result<Object<'a>, ()>>,
}

/// A member that is a string when it is one (the JSON text kept, since a
/// name of another type reads as absent).
fn string_member<'de, A: MapAccess<'de>>(map: &mut A) -> Result<Option<Cow<'de, str>>, A::Error> {
    let raw: &'de RawValue = map.next_value()?;
    Ok(text(raw))
}

fn object_member<'de, A: MapAccess<'de>>(
    map: &mut A,
) -> Result<Option<Result<Object<'de>, ()>>, A::Error> {
    Ok(match map.next_value::<Shape<Object<'de>>>()? {
        Shape::Object(o) => Some(Ok(o)),
        Shape::Null => None,
        Shape::Other => Some(Err(())),
    })
}

impl<'de> Deserialize<'de> for Params<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Params<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Params<'de>, A::Error> {
                let mut p = Params::default();
                while let Some(Text(key)) = map.next_key()? {
                    match &*key {
                        "name" => p.name = string_member(&mut map)?,
                        "protocolVersion" => p.protocol_version = string_member(&mut map)?,
                        "arguments" => p.arguments = object_member(&mut map)?,
                        "_meta" => p.meta = object_member(&mut map)?,
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(p)
            }
        }
        d.deserialize_map(V)
    }
}

/// The envelope as read, before its checks: the JSON text of each member
/// that matters, and whether the body carries a `result` or an `error`.
#[derive(Default)]
struct Envelope<'a> {
    jsonrpc: Option<&'a RawValue>,
    id: Option<&'a RawValue>,
    method: Option<&'a RawValue>,
    params: Option<Shape<Params<'a>>>,
    response: bool,
}

impl<'de> Deserialize<'de> for Envelope<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Envelope<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON-RPC object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Envelope<'de>, A::Error> {
                let mut e = Envelope::default();
                while let Some(Text(key)) = map.next_key()? {
                    match &*key {
                        "jsonrpc" => e.jsonrpc = Some(map.next_value()?),
                        "id" => e.id = Some(map.next_value()?),
                        "method" => e.method = Some(map.next_value()?),
                        "params" => e.params = Some(map.next_value()?),
                        other => {
                            e.response |= other == "result" || other == "error";
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(e)
            }
        }
        d.deserialize_map(V)
    }
}

/// One JSON-RPC message that passed the envelope checks, borrowing from
/// the body.
#[derive(Debug, Clone, PartialEq)]
pub struct Message<'a> {
    /// `None` for a notification (no `id` member).
    pub id: Option<Id>,
    pub method: Cow<'a, str>,
    /// The `params` object, when there is one.
    pub params: Option<Params<'a>>,
}

impl<'a> Message<'a> {
    /// `params.name`, when it is a string.
    pub fn name(&self) -> Option<&str> {
        self.params.as_ref().and_then(|p| p.name.as_deref())
    }

    /// `params._meta`, when it is an object.
    pub fn meta(&self) -> Option<&Object<'a>> {
        self.params
            .as_ref()
            .and_then(|p| p.meta.as_ref())
            .and_then(|m| m.as_ref().ok())
    }
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
pub fn parse(body: &[u8]) -> Result<Message<'_>, RpcError> {
    let not_json = || RpcError::new(None, PARSE_ERROR, "Parse error: the body is not JSON");
    let first = body.iter().find(|b| !b.is_ascii_whitespace());
    if first != Some(&b'{') {
        // Not an object: JSON or not, it is refused; which code says which.
        serde_json::from_slice::<IgnoredAny>(body).map_err(|_| not_json())?;
        let message = if first == Some(&b'[') {
            "Batches are not accepted: send one JSON-RPC message per POST"
        } else {
            "The body must be a JSON-RPC request or notification object"
        };
        return Err(RpcError::new(None, INVALID_REQUEST, message));
    }
    // UTF-8 checked once for the whole body: serde_json then reads its
    // strings and raw values without checking each again.
    let body = std::str::from_utf8(body).map_err(|_| not_json())?;
    let envelope: Envelope<'_> = serde_json::from_str(body).map_err(|_| not_json())?;
    let id = match envelope.id {
        None => None,
        Some(raw) => Some(Id::of(raw).ok_or_else(|| {
            RpcError::new(None, INVALID_REQUEST, "id must be a string or an integer")
        })?),
    };
    let invalid = |message: &str| RpcError::new(id.clone(), INVALID_REQUEST, message);
    if envelope.jsonrpc.and_then(text).as_deref() != Some("2.0") {
        return Err(invalid("jsonrpc must be \"2.0\""));
    }
    let method = match envelope.method {
        Some(raw) => text(raw).ok_or_else(|| invalid("method must be a string"))?,
        None if envelope.response => {
            return Err(invalid("Responses are not accepted by this endpoint"))
        }
        None => return Err(invalid("method is required")),
    };
    let params = match envelope.params {
        None => None,
        Some(Shape::Object(params)) => Some(params),
        Some(Shape::Null | Shape::Other) => {
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
/// result object, given as pieces written in order, spliced in without
/// being parsed again: one allocation, one copy.
pub fn result_body(id: &Id, result: &[&[u8]]) -> Vec<u8> {
    const HEAD: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":";
    const RESULT: &[u8] = b",\"result\":";
    let len: usize = result.iter().map(|part| part.len()).sum();
    // Exactly the body's length: one allocation, never grown.
    let mut body = Vec::with_capacity(HEAD.len() + id.0.len() + RESULT.len() + len + 1);
    body.extend_from_slice(HEAD);
    body.extend_from_slice(id.0.as_bytes());
    body.extend_from_slice(RESULT);
    for part in result {
        body.extend_from_slice(part);
    }
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
mod tests;

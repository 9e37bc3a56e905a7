//! `POST {prefix}/board`: the share link in a JSON body instead of the
//! query string, so it stays out of browser history, CDN cache keys and
//! every proxy's access log. The body `{url, view?, include?, exclude?}` is
//! read here into the four parameters, which are then checked exactly as
//! `GET {prefix}/detail` checks its query, and answered with its answer,
//! never cached by anyone (`no-store`) and never `304`.
//!
//! Before the parameters: a method other than `POST` is `405` (`OPTIONS` is
//! a CORS preflight), a `Content-Type` other than `application/json` is
//! `415`, a body over [`BODY_LIMIT`] is `413`; a body that is not one JSON
//! object, an unknown or repeated key, or a value of the wrong type is
//! `400 INVALID_REQUEST` (with `field` naming the key).

use super::error::ApiError;
use super::request_id::RequestIds;
use super::respond::{self, ApiResponse, Served, ERROR_CACHE_CONTROL};
use super::route::{Endpoint, BOARD_ALLOW};
use super::{params, BoardApi, RequestParts};
use http::header::{self, HeaderMap, HeaderValue};
use http::Method;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::Value;

/// The largest body accepted, in bytes (32 KiB): a share link, a view and
/// selector lists fit many times over.
pub const BODY_LIMIT: usize = 32 * 1024;

/// Request headers a browser may send on a cross-origin `POST`, when its
/// preflight names none.
const ALLOW_HEADERS: &str = "Content-Type, Accept, X-Request-Id";

/// The body's four values, each at most once; selector arrays already
/// joined with commas.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct BodyValues {
    pub url: Option<String>,
    pub view: Option<String>,
    pub include: Option<String>,
    pub exclude: Option<String>,
}

impl BodyValues {
    fn as_values(&self) -> [Option<&str>; 4] {
        [&self.url, &self.view, &self.include, &self.exclude].map(Option::as_deref)
    }
}

impl BoardApi {
    /// Answers a request to `{prefix}/board` (see the module docs).
    pub(crate) async fn board(
        &self,
        req: &RequestParts<'_>,
        request_id: &RequestIds,
    ) -> ApiResponse {
        match *req.method {
            Method::POST => {}
            Method::OPTIONS => {
                return respond::preflight_for(req.headers, BOARD_ALLOW, ALLOW_HEADERS)
            }
            _ => return respond::error(&ApiError::PostOnly, request_id),
        }
        let mut served = Served::default();
        let answered = async {
            self.limit_rate(req)?;
            let values = read_body(req.headers, req.body)?;
            let request = self.parsed_values(values.as_values())?;
            // `/detail`'s answer, with no `If-None-Match` seen: a POST is
            // never answered `304`.
            let unconditional = HeaderMap::new();
            self.answer_board(
                Endpoint::Detail,
                &request,
                req.headers,
                &unconditional,
                &mut served,
            )
            .await
        }
        .await;
        let mut response = match answered {
            Ok(response) => response,
            Err(e) => self.refused(&e, request_id, served),
        };
        // Neither a browser nor a shared cache keeps what a POST read.
        response.headers.insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static(ERROR_CACHE_CONTROL),
        );
        response
    }
}

/// The body's values, after its media type, size and shape.
///
/// # Errors
/// `415` for a media type other than `application/json`, `413` past
/// [`BODY_LIMIT`], `400 INVALID_REQUEST` for a body that is not one object
/// of known keys with values of their types.
pub fn read_body(headers: &HeaderMap, body: &[u8]) -> Result<BodyValues, ApiError> {
    if !is_json(headers) {
        return Err(ApiError::UnsupportedMediaType);
    }
    if body.len() > BODY_LIMIT {
        return Err(ApiError::BodyTooLarge);
    }
    let mut json = serde_json::Deserializer::from_slice(body);
    let entries = (&mut json)
        .deserialize_map(EntriesVisitor)
        // Nothing but white space after the object.
        .and_then(|entries| json.end().map(|()| entries.0))
        // serde's text can quote the body, and with it a share link.
        .map_err(|_| ApiError::InvalidRequest {
            field: None,
            message: "The body must be one JSON object: {url, view?, include?, exclude?}".into(),
        })?;
    values(entries)
}

/// Whether `Content-Type` is `application/json` in UTF-8: no `charset`, or
/// `charset=utf-8` (any case, quoted or not). JSON is UTF-8 (RFC 8259); a
/// body announced in another charset (`utf-16`, `latin1`) would be read as
/// something it is not, so it is `415`. Other parameters are ignored.
fn is_json(headers: &HeaderMap) -> bool {
    let mut types = headers.get_all(header::CONTENT_TYPE).iter();
    let (Some(value), None) = (types.next(), types.next()) else {
        return false;
    };
    let mut parts = value.as_bytes().split(|&b| b == b';');
    let essence = parts.next().unwrap_or(b"");
    if !essence
        .trim_ascii()
        .eq_ignore_ascii_case(b"application/json")
    {
        return false;
    }
    parts.all(|param| {
        let Some(eq) = param.iter().position(|&b| b == b'=') else {
            return true;
        };
        let (name, value) = (param[..eq].trim_ascii(), param[eq + 1..].trim_ascii());
        if !name.eq_ignore_ascii_case(b"charset") {
            return true;
        }
        let value = value
            .strip_prefix(b"\"")
            .and_then(|v| v.strip_suffix(b"\""))
            .unwrap_or(value);
        value.eq_ignore_ascii_case(b"utf-8")
    })
}

/// The object's entries in order (keys may repeat); [`values`] checks them.
struct Entries(Vec<(String, Value)>);

struct EntriesVisitor;

impl<'de> Visitor<'de> for EntriesVisitor {
    type Value = Entries;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entries, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            entries.push((key, map.next_value::<Value>()?));
        }
        Ok(Entries(entries))
    }
}

/// The four values from the object's entries: each key known and present
/// once; `url` and `view` strings; `include` and `exclude` a string or an
/// array of strings (joined with commas, the query's form); `null` is the
/// same as leaving the key out.
fn values(entries: Vec<(String, Value)>) -> Result<BodyValues, ApiError> {
    let link = entries.iter().find_map(|(k, v)| match (k.as_str(), v) {
        ("url", Value::String(url)) => Some(url.as_str()),
        _ => None,
    });
    let mut out = BodyValues::default();
    let mut seen = [false; 4];
    for (key, value) in &entries {
        let (slot, i, list) = match key.as_str() {
            "url" => (&mut out.url, 0, false),
            "view" => (&mut out.view, 1, false),
            "include" => (&mut out.include, 2, true),
            "exclude" => (&mut out.exclude, 3, true),
            other => {
                return Err(ApiError::InvalidRequest {
                    field: params::echoable(other, link.into_iter()).then(|| other.to_string()),
                    message: "unknown key in the body; allowed: url, view, include, exclude".into(),
                })
            }
        };
        if std::mem::replace(&mut seen[i], true) {
            return Err(ApiError::invalid_request(
                key,
                format!("{key} must appear at most once"),
            ));
        }
        *slot = match value {
            Value::Null => None,
            Value::String(s) => Some(s.clone()),
            Value::Array(items) if list => Some(joined(key, items)?),
            _ if list => return Err(wrong_type(key, "a string or an array of strings")),
            _ => return Err(wrong_type(key, "a string")),
        };
    }
    Ok(out)
}

/// A selector array as the query writes it: items joined with commas.
fn joined(key: &str, items: &[Value]) -> Result<String, ApiError> {
    let mut text = String::new();
    for (i, item) in items.iter().enumerate() {
        let Value::String(item) = item else {
            return Err(wrong_type(key, "a string or an array of strings"));
        };
        if i > 0 {
            text.push(',');
        }
        text.push_str(item);
    }
    Ok(text)
}

fn wrong_type(key: &str, what: &str) -> ApiError {
    ApiError::invalid_request(key, format!("{key} must be {what}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json_headers(content_type: &'static str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
        h
    }

    fn read(body: &str) -> Result<BodyValues, (u16, &'static str, Option<String>)> {
        read_body(&json_headers("application/json"), body.as_bytes())
            .map_err(|e| (e.status().as_u16(), e.code(), e.field().map(str::to_string)))
    }

    fn ok(
        url: &str,
        view: Option<&str>,
        include: Option<&str>,
        exclude: Option<&str>,
    ) -> BodyValues {
        BodyValues {
            url: Some(url.into()),
            view: view.map(Into::into),
            include: include.map(Into::into),
            exclude: exclude.map(Into::into),
        }
    }

    #[test]
    fn bodies_read_as_the_query_would() {
        let cases: [(&str, BodyValues); 8] = [
            (r#"{"url":"u"}"#, ok("u", None, None, None)),
            (
                r#" {"url":"u","view":"standard"} "#,
                ok("u", Some("standard"), None, None),
            ),
            (
                r#"{"url":"u","include":"a,b"}"#,
                ok("u", None, Some("a,b"), None),
            ),
            (
                r#"{"url":"u","include":["a","b"]}"#,
                ok("u", None, Some("a,b"), None),
            ),
            (
                r#"{"url":"u","exclude":["**.x"]}"#,
                ok("u", None, None, Some("**.x")),
            ),
            (r#"{"url":"u","exclude":[]}"#, ok("u", None, None, Some(""))),
            (r#"{"url":"u","view":null}"#, ok("u", None, None, None)),
            (
                r#"{"include":"a","url":"u"}"#,
                ok("u", None, Some("a"), None),
            ),
        ];
        for (body, want) in cases {
            assert_eq!(read(body), Ok(want), "{body}");
        }
        assert_eq!(read("{}"), Ok(BodyValues::default()));
    }

    #[test]
    fn refusals_and_their_fields() {
        let big = format!(r#"{{"url":"{}"}}"#, "a".repeat(BODY_LIMIT));
        let cases: [(&str, u16, &str, Option<&str>); 14] = [
            ("", 400, "INVALID_REQUEST", None),
            ("[]", 400, "INVALID_REQUEST", None),
            (r#""url""#, 400, "INVALID_REQUEST", None),
            (r#"{"url":"u"} {}"#, 400, "INVALID_REQUEST", None),
            (r#"{"url":"u""#, 400, "INVALID_REQUEST", None),
            (
                r#"{"url":"u","foo":1}"#,
                400,
                "INVALID_REQUEST",
                Some("foo"),
            ),
            (r#"{"url":"u","a b":1}"#, 400, "INVALID_REQUEST", None),
            (
                r#"{"url":"u","url":"v"}"#,
                400,
                "INVALID_REQUEST",
                Some("url"),
            ),
            (r#"{"url":1}"#, 400, "INVALID_REQUEST", Some("url")),
            (
                r#"{"url":"u","view":["full"]}"#,
                400,
                "INVALID_REQUEST",
                Some("view"),
            ),
            (
                r#"{"url":"u","include":{"a":1}}"#,
                400,
                "INVALID_REQUEST",
                Some("include"),
            ),
            (
                r#"{"url":"u","exclude":["a",2]}"#,
                400,
                "INVALID_REQUEST",
                Some("exclude"),
            ),
            (
                r#"{"url":"u","include":true}"#,
                400,
                "INVALID_REQUEST",
                Some("include"),
            ),
            (&big, 413, "PAYLOAD_TOO_LARGE", None),
        ];
        for (body, status, code, field) in cases {
            assert_eq!(
                read(body),
                Err((status, code, field.map(str::to_string))),
                "{body:.60}"
            );
        }
    }

    #[test]
    fn a_permission_id_as_a_key_is_never_echoed() {
        let body = r#"{"url":"https://app.milanote.com/b/x?p=SECRETP","SECRETP":1}"#;
        assert_eq!(read(body), Err((400, "INVALID_REQUEST", None)));
    }

    #[test]
    fn only_json_is_read() {
        let body = br#"{"url":"u"}"#;
        for (content_type, accepted) in [
            ("application/json", true),
            ("application/json; charset=utf-8", true),
            ("application/json;charset=UTF-8", true),
            ("application/json; charset=\"utf-8\"", true),
            ("Application/JSON", true),
            ("application/json; charset=utf-16", false),
            ("application/json; charset=utf-16le", false),
            ("application/json; charset=iso-8859-1", false),
            ("application/json; charset=utf-8; charset=utf-16", false),
            ("application/json; charset=", false),
            ("text/plain", false),
            ("application/x-www-form-urlencoded", false),
            ("application/jsonx", false),
        ] {
            let r = read_body(&json_headers(content_type), body);
            assert_eq!(r.is_ok(), accepted, "{content_type}");
            if !accepted {
                assert_eq!(r, Err(ApiError::UnsupportedMediaType));
            }
        }
        assert_eq!(
            read_body(&HeaderMap::new(), body),
            Err(ApiError::UnsupportedMediaType)
        );
    }
}

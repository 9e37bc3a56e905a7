//! `openapi.yaml` against the OpenAPI 3.1 meta-schema (vendored from the
//! OpenAPI Initiative, `schema/openapi-3.1.schema.json`), then against the
//! real service: responses received over loopback sockets must have a
//! documented status, every required header with a valid value, and a body
//! that validates against the operation's response schema (which `$ref`s
//! `schema/board-document.schema.json` and `schema/json-canvas-1.0.schema.json`).

use crate::common::*;
use jsonschema::{Registry, Validator};
use serde_json::{json, Value};
use shared_board_api::internals::api::error::ApiError;
use std::collections::BTreeSet;
use std::sync::LazyLock;
use std::time::Duration;

const BASE: &str = "https://shared-board-api.test/openapi.yaml";
const BOARD_SCHEMA_URI: &str = "https://shared-board-api.test/schema/board-document.schema.json";
const CANVAS_SCHEMA_URI: &str = "https://shared-board-api.test/schema/json-canvas-1.0.schema.json";

fn read_json(path: &str) -> Value {
    let full = format!("{}/{path}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{full}: {e}"));
    if path.ends_with(".yaml") {
        serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{full}: {e}"))
    } else {
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{full}: {e}"))
    }
}

static SPEC: LazyLock<Value> = LazyLock::new(|| read_json("openapi.yaml"));
static BOARD_SCHEMA: LazyLock<Value> =
    LazyLock::new(|| read_json("schema/board-document.schema.json"));

/// The spec, the BoardDocument schema and the JSON Canvas schema, at the URIs the spec's relative
/// `$ref`s resolve to; nothing is ever fetched.
static REGISTRY: LazyLock<Registry<'static>> = LazyLock::new(|| {
    Registry::new()
        .add(BASE, SPEC.clone())
        .and_then(|r| r.add(BOARD_SCHEMA_URI, BOARD_SCHEMA.clone()))
        .and_then(|r| {
            r.add(
                CANVAS_SCHEMA_URI,
                read_json("schema/json-canvas-1.0.schema.json"),
            )
        })
        .and_then(|r| r.prepare())
        .expect("registry")
});

/// A validator for the schema at `pointer` inside the spec.
fn validator_at(pointer: &str) -> Validator {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .with_registry(&REGISTRY)
        .build(&json!({ "$ref": format!("{BASE}#{pointer}") }))
        .unwrap_or_else(|e| panic!("schema at {pointer} does not compile: {e}"))
}

fn escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

/// Follows a local `$ref` (the spec only has local ones outside schemas),
/// returning the object and its JSON pointer.
fn resolve(value: &Value, pointer: String) -> (Value, String) {
    match value.get("$ref").and_then(Value::as_str) {
        Some(r) => {
            let target = r.strip_prefix('#').expect("local $ref outside schemas");
            let found = SPEC
                .pointer(target)
                .unwrap_or_else(|| panic!("dangling $ref {r}"));
            resolve(found, target.to_string())
        }
        None => (value.clone(), pointer),
    }
}

// Part (a): the document itself.

#[test]
fn the_spec_is_a_valid_openapi_3_1_document() {
    let meta = read_json("schema/openapi-3.1.schema.json");
    assert_eq!(
        meta["$id"], "https://spec.openapis.org/oas/3.1/schema/2022-10-07",
        "the vendored meta-schema is the published OpenAPI 3.1 one"
    );
    let validator = jsonschema::draft202012::new(&meta).expect("meta-schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(&SPEC)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(SPEC["openapi"], "3.1.0");

    // The validator does reject a broken document (the check can fail).
    let mut broken = SPEC.clone();
    broken["paths"]["/api/search"]["get"]["responses"]["200"] = json!({"content": {}});
    broken
        .as_object_mut()
        .expect("object")
        .remove("info")
        .expect("info");
    assert!(!validator.is_valid(&broken));
}

#[test]
fn every_schema_reference_resolves() {
    // Compiling a validator resolves every $ref reachable from it, the
    // BoardDocument schema's own `#/$defs/...` included.
    for name in SPEC["components"]["schemas"]
        .as_object()
        .expect("schemas")
        .keys()
    {
        validator_at(&format!("/components/schemas/{}", escape(name)));
    }
}

#[test]
fn the_catalogue_matches_the_service() {
    let codes: BTreeSet<&str> = SPEC["components"]["schemas"]["ErrorCode"]["enum"]
        .as_array()
        .expect("enum")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let served = [
        ApiError::invalid_request("url", "x"),
        ApiError::InvalidFieldSelector {
            field: "include",
            message: "x".into(),
            hint: Some("board.title".into()),
        },
        ApiError::InvalidShareUrl { message: "x" },
        ApiError::BoardAccessDenied,
        ApiError::BoardNotFound,
        ApiError::NotFound,
        ApiError::MethodNotAllowed,
        ApiError::RateLimited {
            retry_after: Duration::from_secs(1),
        },
        ApiError::UpstreamError,
        ApiError::UpstreamChallenged,
        ApiError::UpstreamTimeout,
        ApiError::Internal,
    ];
    for e in &served {
        assert!(codes.contains(e.code()), "{} is not in ErrorCode", e.code());
        // The status this error is served with is documented on every GET.
        for path in ["/api/search", "/api/detail", "/api/canvas"] {
            let responses = &SPEC["paths"][path]["get"]["responses"];
            if e.code() != "NOT_FOUND" && e.code() != "METHOD_NOT_ALLOWED" {
                assert!(
                    responses.get(e.status().as_str()).is_some(),
                    "{path}: {} undocumented",
                    e.status()
                );
            }
        }
    }
    // The POST form's own refusals, documented on it.
    for e in [
        ApiError::PostOnly,
        ApiError::BodyTooLarge,
        ApiError::UnsupportedMediaType,
    ] {
        assert!(codes.contains(e.code()), "{} is not in ErrorCode", e.code());
        if e.code() != "METHOD_NOT_ALLOWED" {
            let responses = &SPEC["paths"]["/api/board"]["post"]["responses"];
            assert!(responses.get(e.status().as_str()).is_some(), "{e:?}");
        }
    }
    // The whole error catalogue, 503 OVERLOADED included.
    assert!(codes.contains("OVERLOADED"));
    // `/api/changes` answers what `/api/detail` does, and 410 for `since`.
    let not_kept = ApiError::VersionNotKept;
    assert!(codes.contains(not_kept.code()));
    for method in ["get", "head"] {
        let changes = &SPEC["paths"]["/api/changes"][method]["responses"];
        for e in served.iter().chain([&not_kept]) {
            if ![
                "NOT_FOUND",
                "METHOD_NOT_ALLOWED",
                "PAYLOAD_TOO_LARGE",
                "UNSUPPORTED_MEDIA_TYPE",
            ]
            .contains(&e.code())
            {
                assert!(
                    changes.get(e.status().as_str()).is_some(),
                    "{method} changes: {}",
                    e.status()
                );
            }
        }
    }
    for path in ["/api/search", "/api/detail", "/api/canvas"] {
        for method in ["get", "head"] {
            let responses = SPEC["paths"][path][method]["responses"]
                .as_object()
                .expect("responses");
            let statuses: BTreeSet<&str> = responses.keys().map(String::as_str).collect();
            assert_eq!(
                statuses,
                BTreeSet::from([
                    "200", "304", "400", "403", "404", "429", "500", "502", "503", "504"
                ]),
                "{method} {path}"
            );
        }
        let preflight = &SPEC["paths"][path]["options"]["responses"];
        assert!(preflight.get("204").is_some());
    }
}

#[test]
fn every_example_matches_its_schema() {
    let mut checked = 0;
    let components = &SPEC["components"];
    for (name, response) in components["responses"].as_object().expect("responses") {
        let Some(content) = response.get("content").and_then(Value::as_object) else {
            continue;
        };
        for (media, body) in content {
            let pointer = format!(
                "/components/responses/{}/content/{}/schema",
                escape(name),
                escape(media)
            );
            let v = validator_at(&pointer);
            for (example, e) in body["examples"].as_object().into_iter().flatten() {
                let errors: Vec<String> =
                    v.iter_errors(&e["value"]).map(|e| e.to_string()).collect();
                assert!(errors.is_empty(), "{name}/{example}: {errors:#?}");
                checked += 1;
            }
        }
    }
    for (name, parameter) in components["parameters"].as_object().expect("parameters") {
        let v = validator_at(&format!("/components/parameters/{}/schema", escape(name)));
        for (example, e) in parameter["examples"].as_object().into_iter().flatten() {
            assert!(v.is_valid(&e["value"]), "{name}/{example}");
            checked += 1;
        }
    }
    assert!(checked >= 15, "only {checked} examples");
    // The demo link is the one the examples use.
    assert_eq!(
        components["parameters"]["url"]["examples"]["demo"]["value"],
        "https://app.milanote.com/1W3ZZU1Qvua02H/demo?p=demo"
    );
}

// Part (b): real responses against the document.

/// Checks one response against the spec; returns the status for coverage.
fn check(method: &str, target: &str, r: &Response) -> u16 {
    let path = target.split('?').next().unwrap_or(target);
    let lower = method.to_ascii_lowercase();
    let operation = SPEC["paths"].get(path).and_then(|item| item.get(&lower));
    let (response, pointer) = match operation {
        Some(op) => {
            let status = r.status.to_string();
            let documented = op["responses"]
                .get(&status)
                .unwrap_or_else(|| panic!("{method} {target}: {status} is not documented"));
            resolve(
                documented,
                format!("/paths/{}/{lower}/responses/{status}", escape(path)),
            )
        }
        None => {
            // Outside the operations: the two responses the description names.
            let name = if SPEC["paths"].get(path).is_some() {
                "MethodNotAllowed"
            } else {
                "RouteNotFound"
            };
            let expected = if name == "MethodNotAllowed" { 405 } else { 404 };
            assert_eq!(r.status, expected, "{method} {target}");
            let pointer = format!("/components/responses/{name}");
            (SPEC.pointer(&pointer).expect("component").clone(), pointer)
        }
    };
    let label = format!("{method} {target} ({})", r.status);
    check_headers(&label, &response, &pointer, |name| {
        r.header(name).map(str::to_owned)
    });
    match response.get("content").and_then(Value::as_object) {
        Some(content) => {
            let content_type = r.header("content-type").unwrap_or_default();
            let media = content
                .keys()
                .find(|m| content_type.starts_with(m.as_str()))
                .unwrap_or_else(|| panic!("{method} {target}: {content_type} undocumented"));
            // A text body (an Atom feed too) is a JSON string to its schema.
            let body = if media.starts_with("text/") || media.ends_with("+xml") {
                json!(std::str::from_utf8(&r.body).expect("a UTF-8 text body"))
            } else {
                r.json()
            };
            let v = validator_at(&format!("{pointer}/content/{}/schema", escape(media)));
            let errors: Vec<String> = v.iter_errors(&body).map(|e| e.to_string()).collect();
            assert!(
                errors.is_empty(),
                "{method} {target} ({}): {errors:#?}",
                r.status
            );
        }
        None => assert!(
            r.body.is_empty(),
            "{method} {target}: {} has a body the spec does not describe",
            r.status
        ),
    }
    r.status
}

/// Checks the headers of a response against the response object
/// `response` (at `pointer`): each documented one valid, the required
/// ones there.
fn check_headers(
    label: &str,
    response: &Value,
    pointer: &str,
    header_of: impl Fn(&str) -> Option<String>,
) {
    let Some(headers) = response.get("headers").and_then(Value::as_object) else {
        return;
    };
    for (name, header) in headers {
        let (header, header_pointer) =
            resolve(header, format!("{pointer}/headers/{}", escape(name)));
        match header_of(name) {
            Some(value) => {
                let v = validator_at(&format!("{header_pointer}/schema"));
                assert!(
                    v.is_valid(&json!(value)),
                    "{label}: {name}: {value:?} does not match the spec"
                );
            }
            None => assert!(
                header["required"] != true,
                "{label}: required header {name} missing"
            ),
        }
    }
}

fn send(
    addr: std::net::SocketAddr,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
) -> (u16, Response) {
    let r = request(addr, method, target, headers);
    (check(method, target, &r), r)
}

#[test]
fn responses_over_sockets_match_the_spec() {
    let gw = gateway();
    let l = format!("url={}", link(BOARD, PERMISSION));
    let mut seen = BTreeSet::new();
    let mut etag = String::new();
    for target in [
        format!("/api/search?{l}"),
        format!("/api/search?{l}&view=standard"),
        format!("/api/search?{l}&view=full"),
        format!("/api/search?{l}&include=board.**.title"),
        format!("/api/detail?{l}"),
        format!("/api/detail?{l}&view=compact"),
        format!("/api/detail?{l}&exclude=**.timestamps,**.location"),
        format!("/api/detail?{l}&view=standard&exclude=board.children"),
        format!("/api/detail?{l}&exclude=**"),
    ] {
        let (status, r) = send(gw, "GET", &target, &[]);
        assert_eq!(status, 200, "{target}");
        seen.insert(status);
        etag = r.header("etag").expect("etag").to_string();
        send(gw, "HEAD", &target, &[]);
    }
    // The Markdown representation, GET, HEAD and its own 304.
    let markdown = [("Accept", "text/markdown")];
    for target in [
        format!("/api/search?{l}"),
        format!("/api/detail?{l}"),
        format!("/api/detail?{l}&view=standard"),
    ] {
        let (status, r) = send(gw, "GET", &target, &markdown);
        assert_eq!(status, 200, "{target}");
        assert!(r
            .header("content-type")
            .is_some_and(|t| t.starts_with("text/markdown")));
        let tag = r.header("etag").expect("etag").to_string();
        send(gw, "HEAD", &target, &markdown);
        let inm = [("Accept", "text/markdown"), ("If-None-Match", tag.as_str())];
        assert_eq!(send(gw, "GET", &target, &inm).0, 304);
    }
    // The JSON Canvas file, GET, HEAD and its 304, on the boards of every
    // element type; its refusals.
    for board in [BOARD, "5Sw7Ln4Dc2Sk8e", "7Ed9GeCa5eS0zZ"] {
        let target = format!("/api/canvas?url={}", link(board, PERMISSION));
        let (status, r) = send(gw, "GET", &target, &[]);
        assert_eq!(status, 200, "{target}");
        send(gw, "HEAD", &target, &[]);
        let tag = r.header("etag").expect("etag").to_string();
        assert_eq!(send(gw, "GET", &target, &[("If-None-Match", &tag)]).0, 304);
    }
    for query in [
        String::new(),
        format!("{l}&view=full"),
        format!("{l}&include=board.title"),
    ] {
        assert_eq!(
            send(gw, "GET", &format!("/api/canvas?{query}"), &[]).0,
            400,
            "{query}"
        );
    }
    assert_eq!(send(gw, "OPTIONS", "/api/canvas", &[]).0, 204);
    // The full document is the BoardDocument itself, not only a partial one.
    let (_, full) = send(gw, "GET", &format!("/api/detail?{l}"), &[]);
    let board_document =
        jsonschema::draft202012::new(&BOARD_SCHEMA).expect("BoardDocument schema compiles");
    assert!(board_document.is_valid(&full.json()["data"]));

    // A board with a nested board not loaded: its header and its
    // `unloadedReason` as the spec and the schema say.
    let holes = format!("url={}", link("s-hole-missing", PERMISSION));
    for target in [
        format!("/api/detail?{holes}"),
        format!("/api/search?{holes}&include=board.children.unloadedReason"),
    ] {
        let (status, r) = send(gw, "GET", &target, &[]);
        assert_eq!(status, 200, "{target}");
        assert_eq!(r.header("board-completeness"), Some("partial; unloaded=1"));
    }
    let (_, partial) = send(gw, "GET", &format!("/api/detail?{holes}"), &[]);
    assert!(board_document.is_valid(&partial.json()["data"]));

    // 304, GET and HEAD (the last target above produced `etag`).
    let last = format!("/api/detail?{l}&exclude=**");
    for method in ["GET", "HEAD"] {
        let (status, _) = send(gw, method, &last, &[("If-None-Match", &etag)]);
        assert_eq!(status, 304);
        seen.insert(status);
    }
    // What changed: since the version now (empty lists), its 304, a version
    // never kept (410), a malformed one (400); GET and HEAD.
    let (_, now) = send(gw, "GET", &format!("/api/detail?{l}"), &[]);
    let version = now.header("board-version").expect("a version").to_string();
    for (since, expected) in [
        (version.clone(), 200),
        ("0".repeat(32), 410),
        ("nope".into(), 400),
    ] {
        let target = format!("/api/changes?{l}&since={since}");
        let (status, r) = send(gw, "GET", &target, &[]);
        assert_eq!(status, expected, "{target}");
        seen.insert(status);
        assert_eq!(send(gw, "HEAD", &target, &[]).0, expected);
        if status == 200 {
            // Optional in `ChangesOk` only because the event stream has
            // neither: a whole answer has both.
            assert!(r.header("board-completeness").is_some(), "{target}");
            assert!(r.header("server-timing").is_some(), "{target}");
            let tag = r.header("etag").expect("etag").to_string();
            assert_eq!(send(gw, "GET", &target, &[("If-None-Match", &tag)]).0, 304);
            assert_eq!(send(gw, "GET", &target, &markdown).0, 200);
        }
    }
    // The feeds, without `since`.
    for accept in ["application/atom+xml", "application/feed+json"] {
        let target = format!("/api/changes?{l}");
        let (status, r) = send(gw, "GET", &target, &[("Accept", accept)]);
        assert_eq!(status, 200, "{accept}");
        assert!(r
            .header("content-type")
            .is_some_and(|t| t.starts_with(accept)));
    }
    // Preflights.
    for path in ["/api/search", "/api/detail", "/api/changes"] {
        let (status, _) = send(
            gw,
            "OPTIONS",
            path,
            &[
                ("Origin", "http://localhost:3000"),
                ("Access-Control-Request-Method", "GET"),
                ("Access-Control-Request-Headers", "if-none-match"),
            ],
        );
        assert_eq!(status, 204);
        seen.insert(status);
        assert_eq!(send(gw, "OPTIONS", path, &[]).0, 204);
    }
    // Client errors, in the order the request is checked, GET and HEAD.
    for query in [
        String::new(),
        "url=".into(),
        format!("{l}&foo=1"),
        format!("{l}&{l}"),
        format!("{l}&include=version&exclude=board"),
        format!("{l}&view=full&include=version"),
        format!("{l}&view=huge"),
        format!("{l}&include=board.password"),
        format!("{l}&exclude=a..b"),
        "url=https%3A%2F%2Fexample.com%2Fx%3Fp%3Dy".into(),
        format!("url={}", "a".repeat(2049)),
    ] {
        for method in ["GET", "HEAD"] {
            let (status, _) = send(gw, method, &format!("/api/search?{query}"), &[]);
            assert_eq!(status, 400, "{query}");
            seen.insert(status);
        }
    }
    // Upstream answers, through the sample's fault permissions.
    for (permission, expected) in [
        ("fault-denied", 403),
        ("fault-404", 404),
        ("fault-500", 502),
        ("fault-challenge", 502),
    ] {
        let target = format!("/api/detail?url={}", link(BOARD, permission));
        let (status, _) = send(gw, "GET", &target, &[]);
        assert_eq!(status, expected, "{permission}");
        seen.insert(status);
        assert_eq!(send(gw, "HEAD", &target, &[]).0, expected);
    }
    // The POST form: its answers and refusals.
    let share = format!("https://app.milanote.com/{BOARD}/demo?p={PERMISSION}");
    // Content-Type, body, more headers, the status expected.
    type Post<'a> = (&'a str, String, &'a [(&'a str, &'a str)], u16);
    let posts: [Post; 9] = [
        (
            "application/json",
            json!({"url": share}).to_string(),
            &[],
            200,
        ),
        (
            "application/json",
            json!({"url": share, "view": "standard", "exclude": ["board.children.title"]})
                .to_string(),
            &[],
            200,
        ),
        (
            "application/json",
            json!({"url": share}).to_string(),
            &markdown,
            200,
        ),
        (
            "application/json",
            json!({"url": share, "colour": 1}).to_string(),
            &[],
            400,
        ),
        ("application/json", "[]".into(), &[], 400),
        (
            "application/json",
            json!({"url": share, "include": "board.password"}).to_string(),
            &[],
            400,
        ),
        ("text/plain", json!({"url": share}).to_string(), &[], 415),
        ("application/json", " ".repeat(33 << 10), &[], 413),
        (
            "application/json",
            json!({"url": format!("https://app.milanote.com/{BOARD}/x?p=fault-denied")})
                .to_string(),
            &[],
            403,
        ),
    ];
    for (content_type, body, headers, expected) in posts {
        let mut all = vec![("Content-Type", content_type)];
        all.extend_from_slice(headers);
        let r = request_with_body(gw, "POST", "/api/board", &all, body.as_bytes());
        assert_eq!(check("POST", "/api/board", &r), expected, "{body:.80}");
        seen.insert(expected);
    }
    assert_eq!(send(gw, "OPTIONS", "/api/board", &[]).0, 204);
    // Unknown routes and methods, documented as components.
    for (method, target) in [
        ("GET", "/api/nope"),
        ("GET", "/api/search/"),
        ("POST", "/api/boards"),
        ("POST", "/api/search"),
        ("DELETE", "/api/detail"),
        ("PUT", "/api/search"),
        ("GET", "/api/board"),
    ] {
        seen.insert(send(gw, method, target, &[]).0);
    }
    assert_eq!(
        seen,
        BTreeSet::from([200, 204, 304, 400, 403, 404, 405, 410, 413, 415, 502]),
        "statuses covered"
    );
}

mod limits;

/// The event stream against the spec: its header as `ChangesOk` documents
/// it, and each event as `ChangeEvent` does, its `data` decoded and checked
/// against the `contentSchema` of its kind (which a JSON Schema validator
/// only annotates): the `board.version` that opens it, and the
/// `board.changed` an edit brings.
#[test]
fn the_event_stream_matches_the_spec() {
    let node = crate::live::node("");
    let query = format!("url={}", link(BOARD, PERMISSION));
    let mut stream = crate::live::open(node.gateway.addr, &query, &[]);
    assert_eq!(stream.status, 200, "{}", stream.text);
    let (response, pointer) = resolve(
        &SPEC["paths"]["/api/changes"]["get"]["responses"]["200"],
        "/paths/~1api~1changes/get/responses/200".into(),
    );
    check_headers("the event stream", &response, &pointer, |name| {
        stream.header(name)
    });
    assert!(
        response["content"]["text/event-stream"].is_object(),
        "the stream is documented"
    );
    let event_schema = "/components/schemas/ChangeEvent";
    let whole = validator_at(event_schema);
    let kinds = SPEC
        .pointer(&format!("{event_schema}/oneOf"))
        .and_then(Value::as_array)
        .expect("ChangeEvent is a oneOf");
    let check_event = |event: &crate::live::Event| {
        let mut object = json!({ "event": event.event, "data": event.data });
        if let Some(id) = &event.id {
            object["id"] = json!(id);
        }
        let errors: Vec<String> = whole.iter_errors(&object).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{object}: {errors:#?}");
        let kind = kinds
            .iter()
            .position(|k| k["properties"]["event"]["const"] == event.event.as_str())
            .unwrap_or_else(|| panic!("{} is not documented", event.event));
        let data = validator_at(&format!(
            "{event_schema}/oneOf/{kind}/properties/data/contentSchema"
        ));
        let errors: Vec<String> = data
            .iter_errors(&event.json())
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{}: {errors:#?}", event.data);
    };
    let opened = stream.next(Duration::from_secs(5)).expect("a first event");
    assert_eq!(opened.event, "board.version");
    check_event(&opened);
    node.edit(BOARD);
    let changed = stream
        .next(Duration::from_secs(15))
        .expect("the edit within every + 5 s");
    assert_eq!(changed.event, "board.changed");
    check_event(&changed);
}

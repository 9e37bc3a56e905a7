//! End-to-end: the board's other representations from the real service in
//! front of the bundled sample upstream. `Accept: text/markdown` on both
//! endpoints: negotiation, headers, ETags that never cross between
//! representations, HEAD, compression, and errors that stay JSON. The JSON
//! Canvas file of `/api/canvas`: valid against the format's schema, laid
//! out without overlaps, every line an edge, no permission id, its ETag and
//! its errors.

use crate::common::*;
use std::io::Read as _;

const MARKDOWN: &str = "text/markdown; charset=utf-8; variant=GFM";
const JSON: &str = "application/json; charset=utf-8";

fn target(endpoint: &str) -> String {
    format!("/api/{endpoint}?url={}", link(BOARD, PERMISSION))
}

fn with(headers: &[(&str, &str)], endpoint: &str) -> Response {
    request(gateway(), "GET", &target(endpoint), headers)
}

#[test]
fn accept_decides_the_representation() {
    let browser =
        "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8";
    let cases: &[(Option<&str>, &str)] = &[
        (Some("text/markdown"), MARKDOWN),
        (Some("text/markdown, */*;q=0.1"), MARKDOWN),
        (Some("text/markdown;q=0.5, application/json"), JSON),
        (Some("text/markdown, text/html, */*"), MARKDOWN),
        (Some("text/markdown, application/json"), JSON),
        (Some("text/*"), MARKDOWN),
        (Some(browser), JSON),
        (Some("*/*"), JSON),
        (Some("text/markdown;q=2"), JSON),
        (Some("text/markdown garbage"), JSON),
        (Some("image/png"), JSON),
        (None, JSON),
    ];
    for endpoint in ["search", "detail"] {
        for (accept, content_type) in cases {
            let headers: Vec<(&str, &str)> = accept.iter().map(|a| ("Accept", *a)).collect();
            let r = with(&headers, endpoint);
            assert_eq!(r.status, 200, "{endpoint} {accept:?}");
            assert_eq!(
                r.header("content-type"),
                Some(*content_type),
                "{endpoint} {accept:?}"
            );
            assert_eq!(r.header("vary"), Some("Accept, Accept-Encoding"));
            assert_eq!(
                r.header("cache-control"),
                Some("public, max-age=60, stale-while-revalidate=300")
            );
            r.assert_cors();
            if *content_type == MARKDOWN {
                let text = String::from_utf8(r.body.clone()).expect("UTF-8");
                assert!(
                    text.starts_with("# Lisbon \\& Porto — spring trip\n"),
                    "{text}"
                );
            } else {
                assert_eq!(r.json()["ok"], true);
            }
        }
    }
}

#[test]
fn the_markdown_follows_the_selection() {
    let compact = with(&[("Accept", "text/markdown")], "search");
    let full = with(&[("Accept", "text/markdown")], "detail");
    let compact = String::from_utf8(compact.body).expect("UTF-8");
    let full = String::from_utf8(full.body).expect("UTF-8");
    // `compact` has titles and types only: no card text, no table.
    assert!(compact.contains("*Card*") && !compact.contains("| ---"));
    assert!(full.contains("**Lisbon**") && full.contains("| --- |"));
    assert!(compact.len() < full.len());
    let excluded = request(
        gateway(),
        "GET",
        &format!("{}&exclude=board.**.richText", target("detail")),
        &[("Accept", "text/markdown")],
    );
    assert!(!String::from_utf8_lossy(&excluded.body).contains("**Lisbon**"));
}

#[test]
fn etags_never_cross_between_representations() {
    for endpoint in ["search", "detail"] {
        let json = with(&[], endpoint);
        let md = with(&[("Accept", "text/markdown")], endpoint);
        let (json_tag, md_tag) = (
            json.header("etag").expect("etag").to_string(),
            md.header("etag").expect("etag").to_string(),
        );
        assert_ne!(json_tag, md_tag);
        // Each revalidates itself...
        let r = with(&[("If-None-Match", &json_tag)], endpoint);
        assert_eq!(r.status, 304);
        assert_eq!(r.header("vary"), Some("Accept, Accept-Encoding"));
        let r = with(
            &[("Accept", "text/markdown"), ("If-None-Match", &md_tag)],
            endpoint,
        );
        assert_eq!(r.status, 304);
        assert_eq!(r.header("etag"), Some(md_tag.as_str()));
        assert_eq!(r.header("vary"), Some("Accept, Accept-Encoding"));
        r.assert_cors();
        assert!(r.body.is_empty());
        // ...and never the other.
        let r = with(
            &[("Accept", "text/markdown"), ("If-None-Match", &json_tag)],
            endpoint,
        );
        assert_eq!((r.status, r.header("content-type")), (200, Some(MARKDOWN)));
        let r = with(&[("If-None-Match", &md_tag)], endpoint);
        assert_eq!((r.status, r.header("content-type")), (200, Some(JSON)));
    }
}

#[test]
fn head_and_compression_work_as_for_json() {
    let md = [("Accept", "text/markdown")];
    let plain = with(&md, "detail");
    let head = request(gateway(), "HEAD", &target("detail"), &md);
    assert_eq!(head.status, 200);
    assert!(head.body.is_empty());
    for name in [
        "content-length",
        "content-type",
        "etag",
        "vary",
        "cache-control",
    ] {
        assert_eq!(head.header(name), plain.header(name), "{name}");
    }
    assert_eq!(
        head.header("content-length").and_then(|l| l.parse().ok()),
        Some(plain.body.len())
    );
    for (coding, decode) in [
        (
            "gzip",
            (|b: &[u8], out: &mut Vec<u8>| flate2::read::GzDecoder::new(b).read_to_end(out))
                as fn(&[u8], &mut Vec<u8>) -> std::io::Result<usize>,
        ),
        ("br", |b, out| {
            brotli::Decompressor::new(b, 4096).read_to_end(out)
        }),
    ] {
        let headers = [("Accept", "text/markdown"), ("Accept-Encoding", coding)];
        let got = with(&headers, "detail");
        assert_eq!(got.status, 200);
        assert_eq!(got.header("content-encoding"), Some(coding));
        assert_eq!(got.header("content-type"), Some(MARKDOWN));
        assert_eq!(got.header("etag"), plain.header("etag"));
        let mut decoded = Vec::new();
        decode(&got.body, &mut decoded).expect("decodes");
        assert_eq!(decoded, plain.body, "{coding}");
        let head = request(gateway(), "HEAD", &target("detail"), &headers);
        assert_eq!(head.header("content-length"), got.header("content-length"));
        assert_eq!(head.header("content-encoding"), Some(coding));
    }
}

#[test]
fn errors_stay_json() {
    let md = [("Accept", "text/markdown")];
    let r = request(
        gateway(),
        "GET",
        &format!("{}&include=board.password", target("search")),
        &md,
    );
    r.assert_error(400, "INVALID_FIELD_SELECTOR", Some("include"));
    let r = request(
        gateway(),
        "GET",
        "/api/detail?url=https%3A%2F%2Fexample.com%2Fx",
        &md,
    );
    r.assert_error(400, "INVALID_SHARE_URL", Some("url"));
    let r = request(
        gateway(),
        "GET",
        &format!("/api/detail?url={}", link(BOARD, "fault-denied")),
        &md,
    );
    assert_eq!(r.header("content-type"), Some(JSON));
    assert!(r.status >= 400);
}

/// The sample boards a canvas is checked on: the demo board in the web
/// app's shape, the board of every other element type, the normalizer's
/// edge cases, and the demo's nested boards.
const CANVAS_BOARDS: [&str; 6] = [
    BOARD,
    "5Sw7Ln4Dc2Sk8e",
    "7Ed9GeCa5eS0zZ",
    "2Xk9PqRt7LmN4v",
    "3Hq7ZsWd2KpL8c",
    "4Rt5YuNm3BvC6x",
];

/// A permission id that appears nowhere in the boards, to look for.
const CANVAS_PERMISSION: &str = "cnvPERMq7Zx";

fn canvas_target(board: &str) -> String {
    format!("/api/canvas?url={}", link(board, CANVAS_PERMISSION))
}

fn canvas_schema() -> jsonschema::Validator {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/schema/json-canvas-1.0.schema.json"
    );
    let text = std::fs::read_to_string(path).expect("the JSON Canvas schema");
    let schema: serde_json::Value = serde_json::from_str(&text).expect("schema is JSON");
    jsonschema::draft202012::new(&schema).expect("schema compiles")
}

/// A node's rectangle: x, y, width, height.
fn rect(node: &serde_json::Value) -> [i64; 4] {
    ["x", "y", "width", "height"].map(|k| node[k].as_i64().expect("integer"))
}

fn overlap(a: [i64; 4], b: [i64; 4]) -> bool {
    a[0] < b[0] + b[2] && b[0] < a[0] + a[2] && a[1] < b[1] + b[3] && b[1] < a[1] + a[3]
}

fn inside(a: [i64; 4], b: [i64; 4]) -> bool {
    a[0] >= b[0] && a[1] >= b[1] && a[0] + a[2] <= b[0] + b[2] && a[1] + a[3] <= b[1] + b[3]
}

/// The ids of the lines of `board` itself (not of its nested boards).
fn line_ids(node: &serde_json::Value, into: &mut Vec<String>) {
    for child in node["children"].as_array().into_iter().flatten() {
        match child["type"].as_str() {
            Some("LINE") => into.extend(child["id"].as_str().map(str::to_owned)),
            Some("BOARD") => continue,
            _ => {}
        }
        line_ids(child, into);
    }
}

#[test]
fn the_canvas_of_each_sample_board_is_valid_laid_out_and_holds_no_secret() {
    let schema = canvas_schema();
    // The schema bites: fractional pixels, an attribute the format does not
    // name, a colour it does not take, an edge without its end.
    let text = serde_json::json!({"id": "a", "type": "text", "x": 0, "y": 0, "width": 9, "height": 9, "text": ""});
    assert!(schema.is_valid(&serde_json::json!({"nodes": [text.clone()], "edges": []})));
    for (key, value) in [
        ("x", serde_json::json!(1.5)),
        ("title", serde_json::json!("t")),
        ("color", serde_json::json!("red")),
    ] {
        let mut bad = text.clone();
        bad[key] = value;
        assert!(
            !schema.is_valid(&serde_json::json!({"nodes": [bad]})),
            "{key}"
        );
    }
    assert!(!schema.is_valid(&serde_json::json!({"edges": [{"id": "e", "fromNode": "a"}]})));
    for board in CANVAS_BOARDS {
        let r = get(&canvas_target(board));
        assert_eq!(
            r.status,
            200,
            "{board}: {}",
            String::from_utf8_lossy(&r.body)
        );
        assert_eq!(r.header("content-type"), Some(JSON));
        let disposition = r.header("content-disposition").unwrap_or_default();
        assert!(
            disposition.starts_with("attachment; filename=\"") && disposition.contains(".canvas\""),
            "{disposition}"
        );
        assert!(r.header("etag").is_some_and(|t| t.starts_with("W/\"")));
        assert!(r.header("board-completeness").is_some(), "{board}");
        r.assert_cors();
        let canvas = r.json();
        let errors: Vec<String> = schema.iter_errors(&canvas).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{board}: {errors:?}");
        let nodes = canvas["nodes"].as_array().expect("nodes");
        let edges = canvas["edges"].as_array().expect("edges");
        assert!(!nodes.is_empty(), "{board}");
        let ids: std::collections::HashSet<&str> =
            nodes.iter().filter_map(|n| n["id"].as_str()).collect();
        assert_eq!(ids.len(), nodes.len(), "{board}: node ids are unique");
        // Top-level nodes: those no group holds; no two of them overlap.
        let groups: Vec<[i64; 4]> = nodes
            .iter()
            .filter(|n| n["type"] == "group")
            .map(rect)
            .collect();
        let top: Vec<&serde_json::Value> = nodes
            .iter()
            .filter(|n| n["type"] == "group" || !groups.iter().any(|g| inside(rect(n), *g)))
            .collect();
        for (i, a) in top.iter().enumerate() {
            for b in &top[i + 1..] {
                assert!(
                    !overlap(rect(a), rect(b)),
                    "{board}: {} overlaps {}",
                    a["id"],
                    b["id"]
                );
            }
        }
        // Each line of the board is an edge between two of its nodes.
        let detail = get(&format!(
            "/api/detail?url={}",
            link(board, CANVAS_PERMISSION)
        ))
        .json();
        let mut lines = Vec::new();
        line_ids(&detail["data"]["board"], &mut lines);
        let edge_ids: Vec<&str> = edges.iter().filter_map(|e| e["id"].as_str()).collect();
        assert_eq!(edge_ids, lines, "{board}");
        for edge in edges {
            for end in ["fromNode", "toNode"] {
                assert!(
                    ids.contains(edge[end].as_str().unwrap_or("")),
                    "{board}: {edge}"
                );
            }
        }
        let text = String::from_utf8_lossy(&r.body);
        for secret in [
            CANVAS_PERMISSION,
            "PLANTED",
            "u-4f2c91aa",
            "u-77d0be12",
            "?p=",
            "&p=",
        ] {
            assert!(!text.contains(secret), "{board}: {secret} in the canvas");
        }
    }
}

#[test]
fn the_canvas_shows_what_the_board_holds() {
    let canvas = get(&canvas_target(BOARD)).json();
    let node = |id: &str| {
        canvas["nodes"]
            .as_array()
            .and_then(|n| n.iter().find(|n| n["id"] == id))
            .cloned()
            .unwrap_or_else(|| panic!("no node {id}"))
    };
    let text = |id: &str| node(id)["text"].as_str().unwrap_or_default().to_owned();
    // Mentions and board links in the line where they stand.
    assert!(
        text("Crd9EveryNode1")
            .contains("Plan with @Ben and @Ana, day by day in [Day-by-day itinerary]"),
        "{}",
        text("Crd9EveryNode1")
    );
    assert_eq!(node("Col8BeforeGo01")["type"], "group");
    assert_eq!(node("Col8BeforeGo01")["label"], "Before we go");
    assert!(text("Tsl2Checklist0").contains("- [x] Renew Ben's passport"));
    assert_eq!(node("Lnk6TimeOut0aB")["type"], "link");
    assert!(text("Img5Tram28xYz0").starts_with("![tram-28.jpg](http://127.0.0.1:"));
    assert_eq!(text("2Xk9PqRt7LmN4v"), "## Day-by-day itinerary");
    assert_eq!(node("Wq3mTz8Lp0Ab1C")["color"], "#fff6d9");
    // Grid units times 304/34 px: the intro card at (4, 2) units.
    assert_eq!(
        (
            node("Wq3mTz8Lp0Ab1C")["x"].as_i64(),
            node("Wq3mTz8Lp0Ab1C")["y"].as_i64()
        ),
        (Some(36), Some(18))
    );
    let all = canvas.to_string();
    assert!(!all.contains("Crd5Trashed001") && !all.contains("Crd6Deleted001"));
}

#[test]
fn the_canvas_revalidates_and_refuses_what_it_does_not_take() {
    let target = canvas_target(BOARD);
    let first = get(&target);
    let tag = first.header("etag").expect("etag").to_owned();
    let again = get(&target);
    assert_eq!(again.header("etag"), Some(tag.as_str()));
    assert_eq!(again.body, first.body);
    let r = request(gateway(), "GET", &target, &[("If-None-Match", &tag)]);
    assert_eq!(r.status, 304);
    assert!(r.body.is_empty() && r.header("content-disposition").is_none());
    assert_eq!(r.header("etag"), Some(tag.as_str()));
    r.assert_cors();
    // Not the tag of another representation of the same board.
    for other in ["detail", "search"] {
        let json = with(&[], other);
        assert_ne!(json.header("etag"), Some(tag.as_str()));
    }
    let head = request(gateway(), "HEAD", &target, &[]);
    assert_eq!(head.status, 200);
    for name in [
        "content-length",
        "content-type",
        "etag",
        "content-disposition",
    ] {
        assert_eq!(head.header(name), first.header(name), "{name}");
    }
    // Markdown is not a canvas: Accept does not change it.
    let md = request(gateway(), "GET", &target, &[("Accept", "text/markdown")]);
    assert_eq!(
        (md.header("content-type"), md.header("etag")),
        (Some(JSON), Some(tag.as_str()))
    );
    let gz = request(gateway(), "GET", &target, &[("Accept-Encoding", "gzip")]);
    assert_eq!(gz.header("content-encoding"), Some("gzip"));
    let mut decoded = Vec::new();
    flate2::read::GzDecoder::new(&gz.body[..])
        .read_to_end(&mut decoded)
        .expect("gzip");
    assert_eq!(decoded, first.body);
    for (extra, field) in [
        ("&view=full", "view"),
        ("&include=board.title", "include"),
        ("&exclude=**.id", "exclude"),
    ] {
        get(&format!("{target}{extra}")).assert_error(400, "INVALID_REQUEST", Some(field));
    }
    get("/api/canvas").assert_error(400, "INVALID_REQUEST", Some("url"));
    get("/api/canvas?url=https%3A%2F%2Fexample.com%2Fx").assert_error(
        400,
        "INVALID_SHARE_URL",
        Some("url"),
    );
    get(&canvas_target("NoSuchBoard0000")).assert_error(404, "BOARD_NOT_FOUND", None);
    let r = request(gateway(), "POST", &target, &[]);
    r.assert_error(405, "METHOD_NOT_ALLOWED", None);
    let r = request(gateway(), "OPTIONS", &target, &[]);
    assert_eq!(r.status, 204);
}

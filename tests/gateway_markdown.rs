//! End-to-end: `Accept: text/markdown` on both endpoints of the real
//! service in front of the bundled sample upstream: negotiation, headers,
//! ETags that never cross between representations, HEAD, compression, and
//! errors that stay JSON.

mod common;

use common::*;
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

//! The playground page (`board_api.server.playground`): one static
//! HTML file, script and style inline, served by the standalone binary at
//! `GET /` and `HEAD /`. Pure: [`BoardApi::respond`](crate::api::BoardApi)
//! calls [`page`] only in standalone mode; an embedding host never sees it.
//!
//! The page draws boards that strangers wrote, on the gateway's own origin,
//! so its `Content-Security-Policy` is strict: nothing loads by default, and
//! the page's inline `<script>` and `<style>` run because their SHA-256
//! hashes are in the policy (computed once, from the embedded file, so the
//! policy always matches the page served). No `'unsafe-inline'`: text from
//! a board that somehow became markup could not run.

use super::respond::ApiResponse;
use base64::Engine as _;
use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderValue};
use http::{Method, StatusCode};
use std::sync::LazyLock;

/// `assets/playground.html` and the scripts it inlines (the text helpers,
/// then the canvas that uses them, then the workbench), compiled in: no
/// file to deploy next to the binary.
const TEMPLATE: &str = include_str!("../../assets/playground.html");
const INCLUDES: [(&str, &str); 3] = [
    (
        "// @include richtext.js\n",
        include_str!("../../assets/richtext.js"),
    ),
    (
        "// @include canvas.js\n",
        include_str!("../../assets/canvas.js"),
    ),
    (
        "// @include workbench.js\n",
        include_str!("../../assets/workbench.js"),
    ),
];

/// The page as served: the template with each script inlined where its
/// mark stands. Separate files keep each one readable; one page keeps it a
/// single request.
static PAGE: LazyLock<String> = LazyLock::new(|| {
    INCLUDES
        .iter()
        .fold(TEMPLATE.to_owned(), |page, (mark, script)| {
            page.replacen(mark, script, 1)
        })
});

/// The page's policy. Scripts and styles: the page's own inline blocks, by
/// hash. Images: any `http:`/`https:` URL (board images live on the
/// provider's media hosts) and `data:` (drawings, which the page turns into
/// `data:` images itself). Requests: any `http:`/`https:` origin, since the
/// "API base" field may name another gateway. Nothing may frame the page,
/// change its base URL or receive a form.
static CSP: LazyLock<HeaderValue> = LazyLock::new(|| {
    let policy = policy(
        &inline_hashes(&PAGE, "script"),
        &inline_hashes(&PAGE, "style"),
    );
    // Hashes are base64 and the rest is literal ASCII, so this cannot fail;
    // should it ever, the page runs no script rather than any script.
    HeaderValue::from_str(&policy)
        .unwrap_or_else(|_| HeaderValue::from_static("default-src 'none'"))
});

fn policy(script_hashes: &[String], style_hashes: &[String]) -> String {
    let sources = |hashes: &[String]| {
        if hashes.is_empty() {
            "'none'".to_owned()
        } else {
            hashes.join(" ")
        }
    };
    format!(
        "default-src 'none'; script-src {}; style-src {}; img-src https: http: data:; \
         connect-src http: https:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        sources(script_hashes),
        sources(style_hashes)
    )
}

/// `'sha256-<base64>'` of the text of every `<tag>...</tag>` block of `html`
/// that has no attributes (an inline block, as the page writes them).
fn inline_hashes(html: &str, tag: &str) -> Vec<String> {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    let mut hashes = Vec::new();
    let mut rest = html;
    while let Some(start) = rest.find(&open) {
        let body = &rest[start + open.len()..];
        let Some(end) = body.find(&close) else {
            break;
        };
        let digest = ring::digest::digest(&ring::digest::SHA256, &body.as_bytes()[..end]);
        hashes.push(format!(
            "'sha256-{}'",
            base64::engine::general_purpose::STANDARD.encode(digest.as_ref())
        ));
        rest = &body[end + close.len()..];
    }
    hashes
}

/// The answer to `GET /` or `HEAD /` (the adapter drops the body for HEAD);
/// `None` for any other method, which stays a `404 NOT_FOUND` like every
/// path outside the endpoints.
pub(crate) fn page(method: &Method) -> Option<ApiResponse> {
    if method != Method::GET && method != Method::HEAD {
        return None;
    }
    let mut headers = HeaderMap::new();
    let mut set = |name, value| {
        headers.insert(name, HeaderValue::from_static(value));
    };
    set(header::CONTENT_TYPE, "text/html; charset=utf-8");
    set(header::CACHE_CONTROL, "no-cache");
    set(header::X_CONTENT_TYPE_OPTIONS, "nosniff");
    set(header::REFERRER_POLICY, "no-referrer");
    headers.insert(header::CONTENT_SECURITY_POLICY, CSP.clone());
    Some(ApiResponse {
        status: StatusCode::OK,
        headers,
        body: Bytes::from_static(PAGE.as_bytes()),
        served: Default::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn get_and_head_answer_the_page_other_methods_do_not() {
        for method in [Method::GET, Method::HEAD] {
            let r = page(&method).expect("answered");
            assert_eq!(r.status, StatusCode::OK);
            assert_eq!(
                r.headers.get(header::CONTENT_TYPE).map(|v| v.as_bytes()),
                Some(&b"text/html; charset=utf-8"[..])
            );
            assert_eq!(
                r.headers.get(header::X_CONTENT_TYPE_OPTIONS),
                Some(&HeaderValue::from_static("nosniff"))
            );
            assert_eq!(
                r.headers.get(header::CACHE_CONTROL),
                Some(&HeaderValue::from_static("no-cache"))
            );
            assert!(r.has_body() && r.body.starts_with(b"<!doctype html>"));
        }
        for method in [Method::POST, Method::OPTIONS, Method::DELETE] {
            assert!(page(&method).is_none(), "{method}");
        }
    }

    #[test]
    fn the_page_is_self_contained() {
        let page = PAGE.as_str();
        for (mark, _) in INCLUDES {
            assert!(TEMPLATE.contains(mark) && !page.contains(mark), "{mark}");
        }
        assert!(page.contains("const Workbench") && page.contains("Workbench.snippets("));
        assert!(page.contains("const BoardCanvas") && page.contains("BoardCanvas.create("));
        assert!(page.find("const BoardText") < page.find("const BoardCanvas"));
        // No build step and nothing fetched from elsewhere: no external
        // scripts, styles, fonts or images.
        for needle in [
            "<script src",
            "<link",
            "@import",
            "url(http",
            "src=\"http",
            "cdn",
        ] {
            assert!(!page.contains(needle), "the page references {needle:?}");
        }
        for id in [
            "id=\"base\"",
            "id=\"etag\"",
            "id=\"outline\"",
            "id=\"canvas\"",
            "id=\"markdown\"",
            "id=\"snippet-curl\"",
            "id=\"snippet-fetch\"",
            "id=\"snippet-python\"",
        ] {
            assert!(page.contains(id), "{id} missing");
        }
    }

    #[test]
    fn the_page_never_builds_markup_from_strings() {
        // Board text reaches the DOM through textContent and attributes set
        // one by one; nothing in the page parses a string as HTML.
        for needle in [
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "document.write",
            "createContextualFragment",
            "DOMParser",
            "srcdoc",
            "eval(",
            "new Function",
            " style=\"",
            "setAttribute(\"style\"",
            "on\" + ",
        ] {
            assert!(!PAGE.contains(needle), "the page uses {needle:?}");
        }
    }

    #[test]
    fn the_policy_allows_exactly_the_inline_blocks_by_hash() {
        let scripts = inline_hashes(&PAGE, "script");
        let styles = inline_hashes(&PAGE, "style");
        assert_eq!((scripts.len(), styles.len()), (2, 1));
        let csp = CSP.to_str().expect("ASCII");
        assert!(
            !csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"),
            "{csp}"
        );
        for part in [
            "default-src 'none'",
            "base-uri 'none'",
            "form-action 'none'",
            "frame-ancestors 'none'",
            "img-src https: http: data:",
            "connect-src http: https:",
        ] {
            assert!(csp.contains(part), "{part} missing from {csp}");
        }
        assert!(
            csp.contains(&format!("script-src {};", scripts.join(" "))),
            "{csp}"
        );
        assert!(csp.contains(&format!("style-src {};", styles[0])), "{csp}");
    }

    #[test]
    fn inline_hashes_cover_each_block_and_skip_external_ones() {
        // sha256("") and sha256("x") in base64, as a browser computes them.
        let html = "<script></script><script src=a.js></script><p><script>x</script>";
        assert_eq!(
            inline_hashes(html, "script"),
            [
                "'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU='",
                "'sha256-LXEWQrcmsEQBYnyp+6wy9chTD7GQPMTbAiWHF5IaSIE='"
            ]
        );
        assert!(inline_hashes("<script>unterminated", "script").is_empty());
        assert_eq!(policy(&[], &[]).matches("'none'").count(), 6);
    }
}

//! The playground page (`board_api.server.playground`): one static
//! HTML file, script and style inline, served by the standalone binary at
//! `GET /` and `HEAD /`. Pure: [`BoardApi::respond`](crate::api::BoardApi)
//! calls [`page`] only in standalone mode; an embedding host never sees it.

use super::respond::ApiResponse;
use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderValue};
use http::{Method, StatusCode};

/// `assets/playground.html`, compiled in: no file to deploy next to the binary.
pub(crate) const PAGE: &str = include_str!("../../assets/playground.html");

/// The page's policy: its inline script and style run, it may call any API
/// origin (the "API base" field), and nothing else loads or frames it.
const CSP: &str = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
                   connect-src *; img-src data:; base-uri 'none'; form-action 'none'; \
                   frame-ancestors 'none'";

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
    set(header::CONTENT_SECURITY_POLICY, CSP);
    set(header::REFERRER_POLICY, "no-referrer");
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
            assert!(!PAGE.contains(needle), "the page references {needle:?}");
        }
        for id in [
            "id=\"base\"",
            "id=\"etag\"",
            "id=\"outline\"",
            "id=\"curl\"",
        ] {
            assert!(PAGE.contains(id), "{id} missing");
        }
    }
}

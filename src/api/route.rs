//! Step 1 and 2 of the pipeline (DESIGN.md section 2): which of our routes a
//! path is, and what the method asks for. Pure: no Pingora types.

use crate::select::View;
use http::Method;

/// Where our routes live; embedded, everything else belongs to the host.
pub const API_PREFIX: &str = "/api/";

/// The value of the `Allow` header on 405.
pub const ALLOW: &str = "GET, HEAD, OPTIONS";

/// The two read-only endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Endpoint {
    /// `/api/search`: compact by default.
    Search,
    /// `/api/detail`: full by default.
    Detail,
}

impl Endpoint {
    /// The view used when the request names none.
    pub fn default_view(self) -> View {
        match self {
            Endpoint::Search => View::Compact,
            Endpoint::Detail => View::Full,
        }
    }

    pub fn path(self) -> &'static str {
        match self {
            Endpoint::Search => "/api/search",
            Endpoint::Detail => "/api/detail",
        }
    }

    /// A short label for metrics and logs.
    pub fn name(self) -> &'static str {
        match self {
            Endpoint::Search => "search",
            Endpoint::Detail => "detail",
        }
    }
}

/// What a request path is to us.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    Endpoint(Endpoint),
    /// Under `/api/` but not ours: `404 NOT_FOUND`, any method.
    UnknownApi,
    /// Outside `/api/`: the host gateway's when embedded, `404` standalone.
    Outside,
}

/// Classifies a request path (without query). Paths are compared exactly:
/// `/api/search/` is an unknown route, not an alias.
pub fn route(path: &str) -> Route {
    match path {
        "/api/search" => Route::Endpoint(Endpoint::Search),
        "/api/detail" => Route::Endpoint(Endpoint::Detail),
        p if p.starts_with(API_PREFIX) => Route::UnknownApi,
        _ => Route::Outside,
    }
}

/// What the method asks of one of our endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MethodAction {
    /// `OPTIONS`: CORS preflight, `204`.
    Preflight,
    /// `GET` or `HEAD`: go on (the adapter drops the body for `HEAD`).
    Read,
    /// Anything else: `405` with `Allow`.
    NotAllowed,
}

pub fn method_action(method: &Method) -> MethodAction {
    match *method {
        Method::GET | Method::HEAD => MethodAction::Read,
        Method::OPTIONS => MethodAction::Preflight,
        _ => MethodAction::NotAllowed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        let cases = [
            ("/api/search", Route::Endpoint(Endpoint::Search)),
            ("/api/detail", Route::Endpoint(Endpoint::Detail)),
            ("/api/search/", Route::UnknownApi),
            ("/api/detail/x", Route::UnknownApi),
            ("/api/Search", Route::UnknownApi),
            ("/api/", Route::UnknownApi),
            ("/api/boards", Route::UnknownApi),
            ("/api", Route::Outside),
            ("/", Route::Outside),
            ("/search", Route::Outside),
            ("/apix/search", Route::Outside),
        ];
        for (path, want) in cases {
            assert_eq!(route(path), want, "{path}");
        }
    }

    #[test]
    fn methods() {
        let cases = [
            (Method::GET, MethodAction::Read),
            (Method::HEAD, MethodAction::Read),
            (Method::OPTIONS, MethodAction::Preflight),
            (Method::POST, MethodAction::NotAllowed),
            (Method::PUT, MethodAction::NotAllowed),
            (Method::DELETE, MethodAction::NotAllowed),
            (Method::PATCH, MethodAction::NotAllowed),
            (
                Method::from_bytes(b"BREW").expect("token"),
                MethodAction::NotAllowed,
            ),
        ];
        for (method, want) in cases {
            assert_eq!(method_action(&method), want, "{method}");
        }
    }

    #[test]
    fn default_views() {
        assert_eq!(Endpoint::Search.default_view(), View::Compact);
        assert_eq!(Endpoint::Detail.default_view(), View::Full);
    }
}

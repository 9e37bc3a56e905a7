//! Steps 1 and 2 of a request: which of our routes a path is, and what the
//! method asks for. Pure: no Pingora types.

use crate::select::View;
use http::Method;

/// The value of the `Allow` header on 405 from the read endpoints.
pub const ALLOW: &str = "GET, HEAD, OPTIONS";
/// The value of the `Allow` header on 405 from `{prefix}/board`.
pub const BOARD_ALLOW: &str = "POST, OPTIONS";

/// The read-only endpoints that answer a board.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Endpoint {
    /// `/api/search`: compact by default.
    Search,
    /// `/api/detail`: full by default.
    Detail,
    /// `/api/canvas`: the whole board as a JSON Canvas file.
    Canvas,
}

impl Endpoint {
    /// The view used when the request names none.
    pub fn default_view(self) -> View {
        match self {
            Endpoint::Search => View::Compact,
            Endpoint::Detail | Endpoint::Canvas => View::Full,
        }
    }

    /// A short label for metrics and logs.
    pub fn name(self) -> &'static str {
        match self {
            Endpoint::Search => "search",
            Endpoint::Detail => "detail",
            Endpoint::Canvas => "canvas",
        }
    }
}

/// What a request path is to us.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    Endpoint(Endpoint),
    /// `{prefix}/board`: `/detail`'s answer for a JSON body (`POST`), so
    /// the share link stays out of the URL.
    Board,
    /// `{prefix}/mcp`: the Model Context Protocol endpoint (when enabled).
    Mcp,
    /// `{prefix}/changes`: what changed on a board since a version.
    Changes,
    /// Under the prefix but not an endpoint: `404 NOT_FOUND` standalone or
    /// with `claim_prefix`, else the host's.
    UnderPrefix,
    /// Outside the prefix: the host gateway's when embedded, `404` standalone.
    Outside,
}

/// Classifies a request path (without query) against `prefix` (validated
/// by the config: starts with `/`, no trailing `/`). Paths are compared
/// exactly: `/api/search/` is not an alias of `/api/search`.
pub fn route(path: &str, prefix: &str) -> Route {
    let Some(rest) = path.strip_prefix(prefix) else {
        return Route::Outside;
    };
    match rest {
        "/search" => Route::Endpoint(Endpoint::Search),
        "/detail" => Route::Endpoint(Endpoint::Detail),
        "/canvas" => Route::Endpoint(Endpoint::Canvas),
        "/board" => Route::Board,
        "/mcp" => Route::Mcp,
        "/changes" => Route::Changes,
        r if r.starts_with('/') => Route::UnderPrefix,
        // `/api` itself and `/apix/...` are not under `/api/`.
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
            ("/api", "/api/search", Route::Endpoint(Endpoint::Search)),
            ("/api", "/api/detail", Route::Endpoint(Endpoint::Detail)),
            ("/api", "/api/mcp", Route::Mcp),
            ("/api", "/api/canvas", Route::Endpoint(Endpoint::Canvas)),
            ("/api", "/api/canvas/", Route::UnderPrefix),
            ("/b/v1", "/b/v1/canvas", Route::Endpoint(Endpoint::Canvas)),
            ("/api", "/api/board", Route::Board),
            ("/api", "/api/board/", Route::UnderPrefix),
            ("/b/v1", "/b/v1/board", Route::Board),
            ("/api", "/board", Route::Outside),
            ("/api", "/api/mcp/", Route::UnderPrefix),
            ("/api", "/mcp", Route::Outside),
            ("/b/v1", "/b/v1/mcp", Route::Mcp),
            ("/api", "/api/search/", Route::UnderPrefix),
            ("/api", "/api/detail/x", Route::UnderPrefix),
            ("/api", "/api/Search", Route::UnderPrefix),
            ("/api", "/api/", Route::UnderPrefix),
            ("/api", "/api/boards", Route::UnderPrefix),
            ("/api", "/api", Route::Outside),
            ("/api", "/", Route::Outside),
            ("/api", "/search", Route::Outside),
            ("/api", "/apix/search", Route::Outside),
            ("/b/v1", "/b/v1/search", Route::Endpoint(Endpoint::Search)),
            ("/b/v1", "/b/v1/detail", Route::Endpoint(Endpoint::Detail)),
            ("/b/v1", "/b/v1/users", Route::UnderPrefix),
            ("/b/v1", "/api/search", Route::Outside),
            ("/b/v1", "/b/v10/search", Route::Outside),
            ("/b/v1", "/b/search", Route::Outside),
        ];
        for (prefix, path, want) in cases {
            assert_eq!(route(path, prefix), want, "{prefix} {path}");
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
        assert_eq!(Endpoint::Canvas.default_view(), View::Full);
    }
}

//! Who may talk to the operator listener: its `Host` must be one of its own
//! names, and a `POST` must come from a client that is not a browser page of
//! another site. Called by `probes.rs` before any route.
//!
//! - `Host` (or the request target's authority): the listen address's IP (any
//!   IP literal when it listens on `0.0.0.0` or `::`), `localhost`, or a name
//!   of `board_api.server.metrics.hosts`; a port, when given, must be the
//!   listener's (a configured name may carry any port: a proxy in front may
//!   use its own). Anything else is `421`: a page whose DNS name was
//!   rebound to this address sends its own name and is refused.
//! - `POST` (`/watch/<id>/run`): `X-Requested-By` must be present (any
//!   value), which a browser sends cross-site only after a CORS preflight
//!   this listener never grants, and an `Origin`, when present, must be
//!   `http://` one of the accepted hosts. Otherwise `403`.

use http::header::{HOST, ORIGIN};
use http::StatusCode;
use pingora_http::RequestHeader;
use std::net::{IpAddr, SocketAddr};

/// The header a `POST` must carry.
pub(crate) const REQUESTED_BY: &str = "x-requested-by";

/// The operator listener's own names.
#[derive(Debug, Clone)]
pub(crate) struct Guard {
    addr: SocketAddr,
    /// Lower case, without port.
    names: Vec<String>,
}

impl Guard {
    pub(crate) fn new(addr: SocketAddr, names: &[String]) -> Self {
        Guard {
            addr,
            names: names.iter().map(|n| n.to_ascii_lowercase()).collect(),
        }
    }

    /// Why `req` is refused (status and a short text), if it is.
    pub(crate) fn refusal(&self, req: &RequestHeader) -> Option<(StatusCode, &'static str)> {
        let host = req
            .headers
            .get(HOST)
            .and_then(|h| h.to_str().ok())
            .map(str::to_owned)
            .or_else(|| req.uri.authority().map(|a| a.as_str().to_owned()));
        match host {
            Some(h) if self.accepts(&h) => {}
            _ => return Some((StatusCode::MISDIRECTED_REQUEST, "unknown host\n")),
        }
        if req.method != http::Method::POST {
            return None;
        }
        let requested_by = req
            .headers
            .get(REQUESTED_BY)
            .is_some_and(|v| !v.as_bytes().trim_ascii().is_empty());
        if !requested_by {
            return Some((
                StatusCode::FORBIDDEN,
                "a POST needs an X-Requested-By header\n",
            ));
        }
        if let Some(origin) = req.headers.get(ORIGIN) {
            let own = origin
                .to_str()
                .ok()
                .and_then(|o| o.strip_prefix("http://"))
                .is_some_and(|h| self.accepts(h));
            if !own {
                return Some((StatusCode::FORBIDDEN, "cross-origin POST refused\n"));
            }
        }
        None
    }

    /// Whether `host` (`name`, `name:port`, `[v6]:port`) is one of ours.
    fn accepts(&self, host: &str) -> bool {
        let Some((name, port)) = split(host) else {
            return false;
        };
        let name = name.to_ascii_lowercase();
        if self.names.contains(&name) {
            return true;
        }
        // Port 0 in the configuration: the kernel picked the port, which
        // this check does not know; the name still has to be ours.
        if self.addr.port() != 0 && port.is_some_and(|p| p != self.addr.port()) {
            return false;
        }
        if name == "localhost" {
            return true;
        }
        match name.parse::<IpAddr>() {
            Ok(ip) => ip == self.addr.ip() || self.addr.ip().is_unspecified(),
            Err(_) => false,
        }
    }
}

/// `host` as its name (brackets of an IPv6 literal removed) and port.
fn split(host: &str) -> Option<(&str, Option<u16>)> {
    let host = host.trim();
    if let Some(rest) = host.strip_prefix('[') {
        let (name, after) = rest.split_once(']')?;
        return match after {
            "" => Some((name, None)),
            p => Some((name, Some(p.strip_prefix(':')?.parse().ok()?))),
        };
    }
    match host.split_once(':') {
        None if !host.is_empty() => Some((host, None)),
        None => None,
        Some((name, port)) => Some((name, Some(port.parse().ok()?))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(method: &str, headers: &[(&str, &str)]) -> RequestHeader {
        let mut r = RequestHeader::build(method, b"/watch/trip/run", None).unwrap();
        for (k, v) in headers {
            r.append_header(k.to_string(), *v).unwrap();
        }
        r
    }

    #[test]
    fn hosts_accepted_and_refused() {
        let g = Guard::new("127.0.0.1:9100".parse().unwrap(), &["ops.internal".into()]);
        let cases = [
            ("127.0.0.1:9100", true),
            ("127.0.0.1", true),
            ("localhost:9100", true),
            ("LOCALHOST", true),
            ("ops.internal", true),
            ("ops.internal:443", true),
            ("127.0.0.1:9101", false),
            ("localhost:80", false),
            ("10.0.0.5:9100", false),
            ("attacker.example:9100", false),
            ("attacker.example", false),
            ("", false),
            ("[::1]:9100", false),
            ("127.0.0.1:x", false),
        ];
        for (host, ok) in cases {
            let refused = g.refusal(&req("GET", &[("Host", host)]));
            assert_eq!(refused.is_none(), ok, "{host:?}: {refused:?}");
        }
        assert!(g.refusal(&req("GET", &[])).is_some(), "no Host");
        let any = Guard::new("[::]:9100".parse().unwrap(), &[]);
        for (host, ok) in [
            ("[::1]:9100", true),
            ("10.1.2.3:9100", true),
            ("10.1.2.3:1", false),
            ("rebound.example:9100", false),
        ] {
            assert_eq!(
                any.refusal(&req("GET", &[("Host", host)])).is_none(),
                ok,
                "{host}"
            );
        }
        // Port 0: the kernel's pick, any port; the name is still checked.
        let picked = Guard::new("127.0.0.2:0".parse().unwrap(), &[]);
        for (host, ok) in [
            ("127.0.0.2:41234", true),
            ("127.0.0.3:41234", false),
            ("rebound.example:41234", false),
        ] {
            assert_eq!(
                picked.refusal(&req("GET", &[("Host", host)])).is_none(),
                ok,
                "{host}"
            );
        }
    }

    #[test]
    fn a_post_needs_the_header_and_its_own_origin() {
        let g = Guard::new("127.0.0.1:9100".parse().unwrap(), &[]);
        let host = ("Host", "127.0.0.1:9100");
        let by = ("X-Requested-By", "ops");
        let cases: &[(&[(&str, &str)], bool)] = &[
            (&[host, by], true),
            (&[host, by, ("Origin", "http://127.0.0.1:9100")], true),
            (&[host, by, ("Origin", "http://localhost:9100")], true),
            (&[host], false),
            (&[host, ("X-Requested-By", " ")], false),
            (&[host, ("Content-Type", "text/plain")], false),
            (&[host, by, ("Origin", "https://evil.example")], false),
            (&[host, by, ("Origin", "null")], false),
            (&[host, by, ("Origin", "http://127.0.0.1:9101")], false),
        ];
        for (headers, ok) in cases {
            let refused = g.refusal(&req("POST", headers));
            assert_eq!(refused.is_none(), *ok, "{headers:?}: {refused:?}");
            if let Some((status, _)) = refused {
                assert_eq!(status, StatusCode::FORBIDDEN);
            }
        }
        // A GET needs neither.
        assert!(g
            .refusal(&req("GET", &[host, ("Origin", "https://evil.example")]))
            .is_none());
    }
}

//! Embedding: a small host proxy serves our API beside its own routes
//! through one call from its own `request_filter`. The host's upstream here is the sample upstream itself
//! (any loopback HTTP server would do).

mod common;

use async_trait::async_trait;
use common::*;
use pingora_core::upstreams::peer::HttpPeer;
use pingora_core::Result;
use pingora_http::ResponseHeader;
use pingora_proxy::{ProxyHttp, Session};
use shared_board_api::config::ApiSettings;
use shared_board_api::BoardApi;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The host's own proxy: counts the requests its `request_filter` sees,
/// proxies to a loopback upstream and marks its responses.
struct HostProxy {
    upstream: std::net::SocketAddr,
    seen: Arc<AtomicUsize>,
    api: Arc<BoardApi>,
}

#[async_trait]
impl ProxyHttp for HostProxy {
    type CTX = ();
    fn new_ctx(&self) {}

    async fn request_filter(&self, session: &mut Session, _ctx: &mut ()) -> Result<bool> {
        if self.api.handle(session).await? {
            return Ok(true);
        }
        self.seen.fetch_add(1, Ordering::SeqCst);
        Ok(false)
    }

    async fn upstream_peer(&self, _session: &mut Session, _ctx: &mut ()) -> Result<Box<HttpPeer>> {
        Ok(Box::new(HttpPeer::new(self.upstream, false, String::new())))
    }

    async fn response_filter(
        &self,
        _s: &mut Session,
        resp: &mut ResponseHeader,
        _ctx: &mut (),
    ) -> Result<()> {
        resp.insert_header("x-host-proxy", "yes")?;
        Ok(())
    }
}

fn api() -> Arc<BoardApi> {
    let settings = ApiSettings::from_yaml(&config(0, "", "")).expect("config");
    Arc::new(BoardApi::new(&settings).expect("api"))
}

fn upstream_addr() -> std::net::SocketAddr {
    upstream_origin()
        .trim_start_matches("http://")
        .parse()
        .expect("sample upstream address")
}

fn check(gw: &Gateway, seen: &AtomicUsize) {
    // Our routes: answered by the API, never seen by the host's filter.
    let r = request(
        gw.addr,
        "GET",
        &format!("/api/search?url={}", link(BOARD, PERMISSION)),
        &[],
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["data"]["board"]["id"], BOARD);
    assert_eq!(r.header("x-host-proxy"), None);
    let r = request(gw.addr, "POST", "/api/detail", &[]);
    r.assert_error(405, "METHOD_NOT_ALLOWED", None);
    assert_eq!(seen.load(Ordering::SeqCst), 0);
    // Everything else, other paths under our prefix included: the host's,
    // proxied, with the host's response filter.
    for (path, seen_after) in [("/not-ours", 1), ("/api/users", 2)] {
        let r = request(gw.addr, "GET", path, &[]);
        assert_eq!(r.header("x-host-proxy"), Some("yes"), "{path}");
        assert_eq!(seen.load(Ordering::SeqCst), seen_after, "{path}");
    }
}

#[test]
fn one_call_from_the_hosts_request_filter() {
    let seen = Arc::new(AtomicUsize::new(0));
    let host = HostProxy {
        upstream: upstream_addr(),
        seen: seen.clone(),
        api: api(),
    };
    let (gw, _) = start_server(1, |server, addrs| {
        let mut service = pingora_proxy::http_proxy_service(&server.configuration, host);
        service.add_tcp(&addrs[0].to_string());
        server.add_service(service);
    });
    check(&gw, &seen);
}

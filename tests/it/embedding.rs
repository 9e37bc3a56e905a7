//! Embedding: a small host proxy serves our API beside its own routes
//! through one call from its own `request_filter`. The host's upstream here is the sample upstream itself
//! (any loopback HTTP server would do). A host's YAML file names the
//! balancers it trusts, and the binary's other keys there are refused.

use crate::common::*;
use async_trait::async_trait;
use pingora_core::upstreams::peer::HttpPeer;
use pingora_core::Result;
use pingora_http::ResponseHeader;
use pingora_proxy::{ProxyHttp, Session};
use shared_board_api::config::Settings;
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
    let settings = Settings::from_yaml(&config(0, "", ""))
        .expect("config")
        .api()
        .clone();
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

/// A host's file: the API part, a rate limit of one request per second per
/// client, and the binary's section with `server_lines`.
fn host_file(tag: &str, server_lines: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("sba-host-{tag}-{}.yaml", std::process::id()));
    let text = format!(
        "version: 1\nboard_api:\n  provider:\n    origin: {}\n  rate_limit:\n    \
         requests_per_second: 1\n  server:\n{server_lines}",
        upstream_origin()
    );
    std::fs::write(&path, text).expect("write the host's file");
    path
}

/// Searches as the client a balancer names, until the limit answers 429.
fn limited_after(gw: &Gateway, client: &str) -> Option<usize> {
    let target = format!("/api/search?url={}", link(BOARD, PERMISSION));
    (1..=5).find(|_| request(gw.addr, "GET", &target, &[("x-forwarded-for", client)]).status == 429)
}

/// A host that trusts its balancer from its YAML file alone, through both
/// ways of reading it (the shared one is what a reloading host holds, an
/// `Arc` that `trust_proxies` cannot change): the rate limit counts the
/// clients the balancer names, not the balancer. The test's connections
/// come from 127.0.0.1, the balancer here.
#[test]
fn a_host_trusts_its_balancer_from_its_file() {
    let path = host_file("trust", "    trusted_proxies: [\"127.0.0.0/8\"]\n");
    let from_file = Arc::new(BoardApi::from_file(&path).expect("valid"));
    let shared = BoardApi::shared_from_file(&path).expect("valid");
    for (how, api) in [("from_file", from_file), ("shared_from_file", shared)] {
        let host = HostProxy {
            upstream: upstream_addr(),
            seen: Arc::new(AtomicUsize::new(0)),
            api,
        };
        let (gw, _) = start_server(1, |server, addrs| {
            let mut service = pingora_proxy::http_proxy_service(&server.configuration, host);
            service.add_tcp(&addrs[0].to_string());
            server.add_service(service);
        });
        let first = limited_after(&gw, "203.0.113.1");
        assert!(first.is_some(), "{how}: one client is limited");
        // Another client behind the same balancer has a budget of its own
        // (a second's window may pass between two requests: then both do).
        let second = limited_after(&gw, "203.0.113.2");
        assert!(second.is_some_and(|n| n > 1), "{how}: {second:?}");
    }
    let _ = std::fs::remove_file(&path);
}

/// The binary's own keys on a host's path would be ignored: refused, by name.
#[test]
fn a_hosts_file_with_the_binarys_listeners_is_refused_by_name() {
    let path = host_file("listen", "    listen: [\"127.0.0.1:1\"]\n");
    for err in [
        BoardApi::from_file(&path).err(),
        BoardApi::shared_from_file(&path).err(),
    ] {
        let err = err.expect("refused");
        assert_eq!(err.key, "board_api.server.listen", "{err}");
    }
    let _ = std::fs::remove_file(&path);
}

/// A host serving two APIs (two plugin configs of one gateway, say): the
/// first whose prefix matches answers.
struct TwoApis {
    apis: [Arc<BoardApi>; 2],
}

#[async_trait]
impl ProxyHttp for TwoApis {
    type CTX = ();
    fn new_ctx(&self) {}

    async fn request_filter(&self, session: &mut Session, _ctx: &mut ()) -> Result<bool> {
        for api in &self.apis {
            if api.handle(session).await? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    async fn upstream_peer(&self, _session: &mut Session, _ctx: &mut ()) -> Result<Box<HttpPeer>> {
        Ok(Box::new(HttpPeer::new(
            upstream_addr(),
            false,
            String::new(),
        )))
    }
}

/// The value of one series in Prometheus text.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// Two APIs in one process, each named in its file: the one `/metrics`
/// shows each one's own requests and its own cache, not whichever wrote
/// last.
#[test]
fn two_apis_in_one_process_report_their_own_gauges() {
    let named = |name: &str, prefix: &str| {
        let text = config(0, "", &format!("  name: {name}\n  prefix: {prefix}\n"));
        let settings = Settings::from_yaml(&text).expect("config");
        Arc::new(BoardApi::new(settings.api()).expect("api"))
    };
    let host = TwoApis {
        apis: [named("two-a", "/a"), named("two-b", "/b")],
    };
    let (gw, addrs) = start_server(2, |server, addrs| {
        let mut service = pingora_proxy::http_proxy_service(&server.configuration, host);
        service.add_tcp(&addrs[0].to_string());
        server.add_service(service);
        let mut exporter = pingora_prometheus::prometheus_http_service();
        exporter.add_tcp(&addrs[1].to_string());
        server.add_service(exporter);
    });
    let search = |prefix: &str, board: &str| {
        let target = format!("{prefix}/search?url={}", link(board, PERMISSION));
        let r = request(gw.addr, "GET", &target, &[]);
        assert_eq!(
            r.status,
            200,
            "{target}: {}",
            String::from_utf8_lossy(&r.body)
        );
    };
    // Two boards through the first, one (twice, once cold) through the second.
    search("/a", BOARD);
    search("/a", "7Ed9GeCa5eS0zZ");
    search("/b", BOARD);
    search("/b", BOARD);
    // A pool thread counts itself idle only after its answer was sent (and a
    // version may still be being kept): read the exporter until both APIs
    // are idle, then read every figure from that one text.
    let idle = |text: &str| {
        ["two-a", "two-b"].iter().all(|api| {
            [
                ("board_api_pool_jobs", ",state=\"busy\""),
                ("board_api_cold_loads", ",state=\"running\""),
            ]
            .iter()
            .all(|(name, labels)| {
                sample(text, &format!("{name}{{api=\"{api}\"{labels}}}")) == Some(0.0)
            })
        })
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let text = loop {
        let r = request(addrs[1], "GET", "/metrics", &[]);
        assert_eq!(r.status, 200);
        let text = String::from_utf8_lossy(&r.body).into_owned();
        if idle(&text) || std::time::Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let of = |name: &str, api: &str, labels: &str| {
        sample(&text, &format!("{name}{{api=\"{api}\"{labels}}}"))
            .unwrap_or_else(|| panic!("{name} of {api} in\n{text}"))
    };
    let searched = ",endpoint=\"search\",status=\"200\"";
    assert_eq!(of("board_api_requests_total", "two-a", searched), 2.0);
    assert_eq!(of("board_api_requests_total", "two-b", searched), 2.0);
    assert_eq!(
        of("board_api_cache_total", "two-a", ",result=\"miss\""),
        2.0
    );
    assert_eq!(
        of("board_api_cache_total", "two-b", ",result=\"miss\""),
        1.0
    );
    assert_eq!(of("board_api_cache_total", "two-b", ",result=\"hit\""), 1.0);
    // Each cache holds what it loaded: two boards' entries in one, one in
    // the other, and neither is the other's figure.
    let (bytes_a, bytes_b) = (
        of("board_api_cache_bytes", "two-a", ""),
        of("board_api_cache_bytes", "two-b", ""),
    );
    assert!(bytes_a > 0.0 && bytes_b > 0.0, "{bytes_a} {bytes_b}");
    assert!(
        of("board_api_cache_entries", "two-a", "") > of("board_api_cache_entries", "two-b", ""),
        "{text}"
    );
    assert_ne!(bytes_a, bytes_b);
    // Each API's pool and cold-load gauges came back to 0 on their own.
    assert!(idle(&text), "{text}");
}

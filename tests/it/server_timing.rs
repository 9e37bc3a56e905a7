//! `Server-Timing` over real sockets: `miss` on a cold load (with upstream
//! and build times), `hit` after it, `coalesced` for requests that joined a
//! load in flight, and on a `304`; exposed to other origins.

use crate::common::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn timing(r: &Response) -> String {
    r.header("server-timing").unwrap_or_default().to_owned()
}

fn level(r: &Response) -> String {
    timing(r)
        .strip_prefix("cache;desc=")
        .and_then(|t| t.split(',').next())
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn miss_then_hit_then_304() {
    let gw = start_gateway("", "");
    let target = format!("/api/detail?url={}", link(BOARD, "timing-miss"));
    let cold = request(gw.addr, "GET", &target, &[]);
    assert_eq!(cold.status, 200);
    let t = timing(&cold);
    assert!(t.starts_with("cache;desc=miss, upstream;dur="), "{t}");
    assert!(
        t.contains(", build;dur=") && t.contains(", total;dur="),
        "{t}"
    );
    assert_eq!(
        cold.header("access-control-expose-headers"),
        Some("ETag, Server-Timing, Board-Completeness, Board-Version, X-Request-Id, Content-Disposition")
    );
    let hot = request(gw.addr, "GET", &target, &[]);
    assert_eq!(level(&hot), "hit");
    assert!(!timing(&hot).contains("upstream"), "{}", timing(&hot));
    let etag = hot.header("etag").expect("etag").to_owned();
    let revalidated = request(gw.addr, "GET", &target, &[("If-None-Match", &etag)]);
    assert_eq!(revalidated.status, 304);
    assert_eq!(level(&revalidated), "hit");
    // Errors carry none: nothing was served from the store.
    let bad = request(gw.addr, "GET", "/api/detail?url=nope", &[]);
    assert_eq!(bad.status, 400);
    assert_eq!(bad.header("server-timing"), None);
}

/// A loopback proxy in front of the sample upstream that holds every
/// connection until it is opened.
struct Gate {
    addr: std::net::SocketAddr,
    open: Arc<AtomicBool>,
    first: std::sync::mpsc::Receiver<()>,
}

fn gate() -> Gate {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let open = Arc::new(AtomicBool::new(false));
    let (tx, first) = std::sync::mpsc::channel();
    let is_open = Arc::clone(&open);
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(client) = conn else { continue };
            let _ = tx.send(());
            let is_open = Arc::clone(&is_open);
            std::thread::spawn(move || {
                while !is_open.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(5));
                }
                let Ok(upstream) = std::net::TcpStream::connect(sample().addr()) else {
                    return;
                };
                let (mut c2, mut u2) = match (client.try_clone(), upstream.try_clone()) {
                    (Ok(c), Ok(u)) => (c, u),
                    _ => return,
                };
                let (mut c1, mut u1) = (client, upstream);
                let up = std::thread::spawn(move || {
                    let _ = std::io::copy(&mut c1, &mut u1);
                    let _ = u1.shutdown(std::net::Shutdown::Write);
                });
                let _ = std::io::copy(&mut u2, &mut c2);
                let _ = c2.shutdown(std::net::Shutdown::Write);
                let _ = up.join();
            });
        }
    });
    Gate { addr, open, first }
}

#[test]
fn requests_that_join_a_load_in_flight_say_coalesced() {
    let gate = gate();
    let origin = format!("http://{}", gate.addr);
    let gw = start_server(1, |server, addrs| {
        let text = config(addrs[0].port(), "", "").replace(&upstream_origin(), &origin);
        let settings =
            shared_board_api::config::Settings::from_yaml(&text).expect("test config is valid");
        shared_board_api::host::service::add_services(server, &settings).expect("services build");
    })
    .0;
    let target = format!("/api/detail?url={}", link(BOARD, "timing-join"));
    let answers: Vec<Response> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..6)
            .map(|_| s.spawn(|| request(gw.addr, "GET", &target, &[])))
            .collect();
        // The load reached the provider and is held there; the other five
        // requests were sent at the same time and join it meanwhile.
        gate.first
            .recv_timeout(Duration::from_secs(20))
            .expect("the load reached the provider");
        // Joining a load is the gateway's inner state, with nothing outside
        // it to wait on: the other five were sent with the first, and this
        // pause gives them time to arrive. Whatever the timing, the answers
        // below must be one miss and the rest coalesced or hits.
        std::thread::sleep(Duration::from_millis(500));
        gate.open.store(true, Ordering::SeqCst);
        handles
            .into_iter()
            .map(|h| h.join().expect("request"))
            .collect()
    });
    let mut levels: Vec<String> = answers.iter().map(level).collect();
    levels.sort();
    assert!(answers.iter().all(|r| r.status == 200));
    assert_eq!(
        levels.iter().filter(|l| *l == "miss").count(),
        1,
        "{levels:?}"
    );
    assert!(levels.iter().any(|l| l == "coalesced"), "{levels:?}");
    assert!(levels
        .iter()
        .all(|l| l == "miss" || l == "coalesced" || l == "hit"));
}

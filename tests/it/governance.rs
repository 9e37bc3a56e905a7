//! Resource governance over real sockets: cold-load admission answers
//! `503 OVERLOADED` past its queue and `200` again once it drains, cached
//! boards keep flowing meanwhile, cached renders are served compressed
//! (gzip, br, zstd) with the same ETag and the same JSON, and a cold load
//! whose client went away stops.

use crate::common::*;
use std::io::{Read as _, Write as _};
use std::time::{Duration, Instant};

fn detail(board: &str, p: &str) -> String {
    format!("/api/detail?url={}", link(board, p))
}

/// A gauge or counter of the API named `api` (this file's gateways have
/// names of their own, so no other test in the binary moves them), read
/// from the process's registry (the gateways run in this process).
fn metric(name: &str, api: &str, state: Option<&str>) -> f64 {
    prometheus::gather()
        .iter()
        .filter(|f| f.name() == name)
        .flat_map(|f| f.get_metric().iter())
        .find(|m| {
            let label = |n: &str| {
                m.get_label()
                    .iter()
                    .find(|l| l.name() == n)
                    .map(|l| l.value())
            };
            label("api") == Some(api) && state.is_none_or(|s| label("state") == Some(s))
        })
        .map(|m| m.get_gauge().value() + m.get_counter().value())
        .unwrap_or(0.0)
}

fn cold_queued() -> i64 {
    metric("board_api_cold_loads", "gov-overload", Some("queued")) as i64
}

fn overloaded_total() -> f64 {
    metric("board_api_overloaded_total", "gov-overload", None)
}

fn pool_queued() -> i64 {
    metric("board_api_pool_jobs", "gov-gone", Some("queued")) as i64
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn overloaded_past_the_cold_queue_then_200_once_it_drains() {
    let gw = start_gateway(
        "    fetch_deadline_ms: 3000\n",
        "  name: gov-overload\n  limits:\n    max_cold_loads: 1\n    cold_queue: 1\n",
    );
    let addr = gw.addr;
    // A board cached before the flood.
    let warm = request(addr, "GET", &detail(BOARD, PERMISSION), &[]);
    assert_eq!(warm.status, 200);
    let overloaded_before = overloaded_total();
    let slow_before = sample()
        .requests()
        .iter()
        .filter(|t| t.contains("fault-slow"))
        .count();
    // One slow cold load holds the only slot...
    let holder = std::thread::spawn(move || {
        request(addr, "GET", &detail("2Xk9PqRt7LmN4v", "fault-slow"), &[])
    });
    wait_for("the slow load to reach the upstream", || {
        sample()
            .requests()
            .iter()
            .filter(|t| t.contains("fault-slow"))
            .count()
            > slow_before
    });
    // ...a second one waits in the one-place queue...
    let queued = std::thread::spawn(move || {
        request(addr, "GET", &detail("3Hq7ZsWd2KpL8c", "fault-slow"), &[])
    });
    wait_for("a queued cold load", || cold_queued() >= 1);
    // ...so a third cold board is refused at once.
    let refused = request(addr, "GET", &detail("4Rt5YuNm3BvC6x", PERMISSION), &[]);
    refused.assert_error(503, "OVERLOADED", None);
    assert_eq!(refused.header("retry-after"), Some("1"));
    // The cached board does not wait behind the cold loads.
    let started = Instant::now();
    let cached = request(addr, "GET", &detail(BOARD, PERMISSION), &[]);
    assert_eq!(cached.status, 200);
    assert_eq!(cached.header("etag"), warm.header("etag"));
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "cached answer took {:?}",
        started.elapsed()
    );
    // The slow one runs out of its deadline; the queued one gives up after
    // half of its own (503, it never reached the provider).
    assert_eq!(holder.join().expect("holder").status, 504);
    let queued = queued.join().expect("queued");
    queued.assert_error(503, "OVERLOADED", None);
    assert_eq!(queued.header("retry-after"), Some("1"));
    // Both 503s are counted: the one refused at once and the one that
    // waited in the queue first.
    assert_eq!(overloaded_total() - overloaded_before, 2.0);
    // Drained: the refused board now loads.
    let again = request(addr, "GET", &detail("4Rt5YuNm3BvC6x", PERMISSION), &[]);
    assert_eq!(
        again.status,
        200,
        "{}",
        String::from_utf8_lossy(&again.body)
    );
}

#[test]
fn a_cached_render_is_served_gzip_br_and_zstd_as_the_same_json() {
    let gw = start_gateway("", "");
    let target = detail(BOARD, PERMISSION);
    let plain = request(gw.addr, "GET", &target, &[]);
    assert_eq!(plain.status, 200);
    assert_eq!(plain.header("content-encoding"), None);
    let etag = plain.header("etag").expect("etag").to_string();
    let json = plain.json();
    for (accept, coding) in [
        ("gzip", "gzip"),
        ("gzip;q=0.5, br", "br"),
        ("zstd, gzip;q=0.9", "zstd"),
    ] {
        let got = request(gw.addr, "GET", &target, &[("Accept-Encoding", accept)]);
        assert_eq!(got.status, 200);
        assert_eq!(got.header("content-encoding"), Some(coding), "{accept}");
        assert_eq!(got.header("etag"), Some(etag.as_str()));
        assert!(got
            .header("vary")
            .is_some_and(|v| v.to_ascii_lowercase().contains("accept-encoding")));
        got.assert_cors();
        let mut decoded = Vec::new();
        match coding {
            "gzip" => {
                flate2::read::GzDecoder::new(&got.body[..])
                    .read_to_end(&mut decoded)
                    .expect("gzip body");
            }
            "br" => {
                brotli::Decompressor::new(&got.body[..], 4096)
                    .read_to_end(&mut decoded)
                    .expect("br body");
            }
            _ => decoded = zstd::decode_all(&got.body[..]).expect("zstd body"),
        }
        assert_eq!(decoded, plain.body, "{coding}");
        assert_eq!(
            serde_json::from_slice::<serde_json::Value>(&decoded).expect("json"),
            json
        );
        assert_eq!(
            got.header("content-length").and_then(|l| l.parse().ok()),
            Some(got.body.len()),
            "{coding}"
        );
        // HEAD: the same headers, Content-Length of the encoded body.
        let head = request(gw.addr, "HEAD", &target, &[("Accept-Encoding", accept)]);
        assert_eq!(head.status, 200);
        assert_eq!(head.header("content-encoding"), Some(coding));
        assert_eq!(head.header("content-length"), got.header("content-length"));
        assert_eq!(head.header("etag"), Some(etag.as_str()));
        // 304 for a matching validator, whatever the coding.
        let not_modified = request(
            gw.addr,
            "GET",
            &target,
            &[("Accept-Encoding", accept), ("If-None-Match", &etag)],
        );
        assert_eq!(not_modified.status, 304);
        assert!(not_modified.body.is_empty());
        assert_eq!(not_modified.header("etag"), Some(etag.as_str()));
        not_modified.assert_cors();
    }
}

#[test]
fn a_cold_load_whose_client_disconnects_stops_asking_the_provider() {
    // The provider's timeouts are far past the sample's 30 s slow answer:
    // only the client going away can end the request before it.
    let gw = start_gateway(
        "    read_timeout_ms: 120000\n    fetch_deadline_ms: 120000\n",
        "  name: gov-gone\n",
    );
    // `fault-slow` as the permission holds back the token answer; the
    // board id, in the token request's target, tells this test's apart.
    let board = "GoneBoard1";
    let target = detail(board, "fault-slow");
    let mine = move |targets: Vec<String>| {
        targets
            .iter()
            .filter(|t| t.contains(&format!("elementId={board}")))
            .count()
    };
    for round in 1..=2 {
        let mut client = std::net::TcpStream::connect(gw.addr).expect("connect");
        let head = format!("GET {target} HTTP/1.1\r\nHost: x\r\n\r\n");
        client.write_all(head.as_bytes()).expect("send");
        wait_for("the load to ask the provider", || {
            mine(sample().requests()) == round
        });
        // The client leaves while its cold load waits on the provider...
        drop(client);
        // ...and the provider sees the request end, long before its answer.
        wait_for("the provider to see the request end", || {
            mine(sample().abandoned()) == round
        });
        // The next client starts a load of its own (round 2): the one
        // nobody waited for is gone, not joined.
    }
    wait_for("an empty pool queue", || pool_queued() == 0);
    // The gateway goes on serving.
    let r = request(gw.addr, "GET", &detail(BOARD, "after-gone"), &[]);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(mine(sample().requests()), 2);
}

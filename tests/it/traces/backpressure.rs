//! A slow or absent collector never holds a request: with the export's
//! collector accepting connections and never answering, spans past the
//! bounded queue are dropped and counted while every request is answered
//! at once; with nothing listening, batches fail and are counted. Each
//! case installs the export's subscriber for its whole process, so each
//! runs alone in a child process, the gateway and exporter wired as the
//! binary wires them.

use crate::common::*;
use pingora_core::services::background::background_service;
use shared_board_api::config::Settings;
use std::net::TcpListener;
use std::time::{Duration, Instant};

fn counted(outcome: &str) -> u64 {
    prometheus::gather()
        .iter()
        .find(|f| f.name() == "board_api_otlp_spans_total")
        .and_then(|f| {
            f.get_metric().iter().find(|m| {
                m.get_label()
                    .iter()
                    .any(|l| l.name() == "outcome" && l.value() == outcome)
            })
        })
        .map_or(0, |m| m.get_counter().value() as u64)
}

/// A gateway whose spans go to `endpoint`, with a queue of `queue` spans.
fn exporting_gateway(endpoint: &str, queue: usize) -> Gateway {
    let server_extra =
        format!("    otlp:\n      endpoint: {endpoint}\n      queue_spans: {queue}\n");
    start_server(1, move |server, addrs| {
        let text = config_with(addrs[0].port(), "", "", &server_extra);
        let settings = Settings::from_yaml(&text).expect("test config is valid");
        shared_board_api::host::service::add_services(server, &settings).expect("services build");
        let otlp = settings.otlp().expect("the export is configured");
        let exporter = shared_board_api::otlp::install(otlp).expect("installed");
        server.add_service(background_service("span export", exporter));
    })
    .0
}

/// Sends cached requests until `until` holds, each answered within a
/// second; the collector's 5-second export never shows in them.
fn requests_until(gw: &Gateway, what: &str, until: impl Fn() -> bool) -> usize {
    let target = format!("/api/search?url={}", link(BOARD, PERMISSION));
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut sent = 0;
    while !until() {
        assert!(
            Instant::now() < deadline,
            "{what} within 30 s ({sent} requests)"
        );
        let started = Instant::now();
        let r = request(gw.addr, "GET", &target, &[]);
        assert_eq!(r.status, 200);
        let took = started.elapsed();
        assert!(
            took < Duration::from_secs(1),
            "request {sent} took {took:?}"
        );
        sent += 1;
    }
    sent
}

#[test]
fn a_collector_that_never_answers_drops_spans_and_holds_no_request() {
    if !in_own_process(
        module_path!(),
        "a_collector_that_never_answers_drops_spans_and_holds_no_request",
    ) {
        return;
    }
    // Accepts connections and reads nothing back: an export waits its
    // whole deadline.
    let stuck = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = stuck.local_addr().expect("address");
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in stuck.incoming().map_while(Result::ok) {
            held.push(conn);
        }
    });
    let gw = exporting_gateway(&format!("http://{addr}"), 8);
    assert_eq!(counted("dropped"), 0);
    let sent = requests_until(&gw, "spans dropped", || counted("dropped") > 0);
    println!("{sent} requests until a span was dropped");
    assert_eq!(counted("exported"), 0);
}

#[test]
fn an_absent_collector_fails_batches_and_holds_no_request() {
    if !in_own_process(
        module_path!(),
        "an_absent_collector_fails_batches_and_holds_no_request",
    ) {
        return;
    }
    // A port nothing listens on: bound, read back, released.
    let addr = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port");
    let gw = exporting_gateway(&format!("http://{addr}"), 8192);
    requests_until(&gw, "a failed batch", || counted("failed") > 0);
    assert_eq!(counted("exported"), 0);
}

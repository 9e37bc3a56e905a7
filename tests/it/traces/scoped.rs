//! The export of a location of pingap's (`BoardApi::shared_for_location`
//! with `board_api.server.otlp` in its file), without pingap: the API runs
//! its requests under a subscriber of its own and sends from a thread of
//! its own, so its spans reach the collector from a multi-threaded runtime
//! with no subscriber installed, the load's included (it runs in a task of
//! its own); and the host's span given with `with_trace_parent` is their
//! parent, in place of the request's `traceparent`.

use super::collector::Collector;
use super::export::decode;
use crate::common::*;
use shared_board_api::trace::context::Parent;
use shared_board_api::{BoardApi, RequestParts};
use std::time::Duration;

const HOST_TRACE: &str = "5a4b3c2d1e0f11223344556677889900";
const HOST_SPAN: &str = "0102030405060708";
/// What the request itself sends, which the host's span replaces.
const SENT: &str = "00-11111111111111111111111111111111-2222222222222222-01";

fn bytes<const N: usize>(hex: &str) -> [u8; N] {
    let mut out = [0; N];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("hex");
    }
    out
}

#[test]
fn a_locations_spans_reach_its_collector_under_the_hosts_span() {
    let collector = Collector::start();
    let dir = std::env::temp_dir().join(format!("sba-scoped-otlp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("boards.yaml");
    let server = format!("    otlp:\n      endpoint: http://{}\n", collector.addr);
    std::fs::write(&file, config_with(0, "", "", &server)).expect("write");
    let api = BoardApi::shared_for_location(&file).expect("the file is valid");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let (method, mut headers) = (http::Method::GET, http::HeaderMap::new());
    headers.insert("traceparent", http::HeaderValue::from_static(SENT));
    let query = format!("url={}", link(BOARD, "scopedExportPerm"));
    let parent = Parent {
        trace_id: bytes(HOST_TRACE),
        span_id: bytes(HOST_SPAN),
        flags: 1,
    };
    let answer = runtime.block_on(async {
        let parts = RequestParts::new(&method, "/api/detail", Some(&query), &headers)
            .with_trace_parent(parent);
        api.respond(parts).await.expect("ours")
    });
    assert_eq!(answer.status, 200);
    assert_eq!(
        answer.served.trace_id.as_deref(),
        Some(HOST_TRACE),
        "the answer's trace is the host's"
    );

    let names = [
        "shared_board_api.request",
        "shared_board_api.load",
        "shared_board_api.upstream",
        "shared_board_api.build",
    ];
    let arrived = collector.wait_until(Duration::from_secs(30), |exports| {
        let spans = decode(exports);
        names.iter().all(|n| {
            spans
                .iter()
                .any(|s| s.name == *n && s.trace_id == HOST_TRACE)
        })
    });
    let spans = decode(&collector.exports());
    let _ = std::fs::remove_dir_all(&dir);
    assert!(arrived, "not every span arrived: {spans:#?}");
    let request = spans
        .iter()
        .find(|s| s.name == "shared_board_api.request")
        .expect("the request's span");
    assert_eq!(request.parent, HOST_SPAN, "{request:?}");
    assert!(
        spans.iter().all(|s| s.trace_id == HOST_TRACE),
        "a span outside the host's trace (the request's own traceparent read): {spans:#?}"
    );
}

//! The binary's span export against a real collector: the binary (a child
//! process) with `board_api.server.otlp.endpoint` on a test collector,
//! serving a request that carries a `traceparent` and running a watch
//! whose webhook is delivered. The test decodes every body it received
//! (protobuf, the OTLP messages) and checks the span names, that the
//! request's span is the child of the incoming `traceparent` and the
//! load's spans children of it, that the webhook's `traceparent` is the
//! run's span, and that no attribute holds the share link, the permission
//! id, the webhook URL, its token or the secret.
//!
//! With `SBAPI_OTLP_PROTO_PYTHON` set (a venv with PyPI's
//! `opentelemetry-proto`, which `.ci/run` makes), the same bodies are also
//! decoded by `scripts/otlp-decode.py`, and its reading must match.

use super::collector::{Collector, Export};
use crate::common::{request, BOARD};
use crate::watch::node::Node;
use crate::watch::{
    edit, first_run, run_until_delivered, secret, share_link, sqlite, started, wait_until,
};
use crate::watch::{HOOK_TOKEN, PERMISSION};
use prost::Message as _;
use shared_board_api::otlp::proto::{ExportTraceServiceRequest, Value};
use std::collections::BTreeSet;
use std::time::Duration;

const TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const PARENT: &str = "b7ad6b7169203331";
/// The permission id of the traced request's link.
const OWN_PERMISSION: &str = "otlpPermSecret77";

/// A span as the test reads it: ids as hex, attributes as text.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Seen {
    pub name: String,
    pub trace_id: String,
    pub span_id: String,
    pub parent: String,
    pub attributes: Vec<(String, String)>,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn decode(exports: &[Export]) -> Vec<Seen> {
    let mut spans = Vec::new();
    for export in exports {
        let request = ExportTraceServiceRequest::decode(export.body.as_slice())
            .expect("a body the OTLP messages decode");
        for rs in request.resource_spans {
            for ss in rs.scope_spans {
                for s in ss.spans {
                    let attributes = s
                        .attributes
                        .iter()
                        .map(|kv| {
                            let v = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                                Some(Value::StringValue(s)) => s.clone(),
                                Some(Value::IntValue(i)) => i.to_string(),
                                Some(Value::BoolValue(b)) => b.to_string(),
                                Some(Value::DoubleValue(d)) => d.to_string(),
                                None => String::new(),
                            };
                            (kv.key.clone(), v)
                        })
                        .collect();
                    spans.push(Seen {
                        name: s.name,
                        trace_id: hex(&s.trace_id),
                        span_id: hex(&s.span_id),
                        parent: hex(&s.parent_span_id),
                        attributes,
                    });
                }
            }
        }
    }
    spans
}

fn named<'a>(spans: &'a [Seen], name: &str) -> Vec<&'a Seen> {
    spans.iter().filter(|s| s.name == name).collect()
}

#[test]
fn spans_reach_a_real_collector_in_the_callers_trace_and_hold_no_secret() {
    let collector = Collector::start();
    let (dir, upstream, receiver) = started("otlp", &[]);
    let server = format!(
        "    otlp:\n      endpoint: http://{}\n      headers:\n        x-collector-key: SBAPI_TEST_OTLP_KEY\n",
        collector.addr
    );
    let node = Node::start_with(
        &dir,
        &upstream,
        &sqlite(&dir),
        "10s",
        &[("trip", &receiver, 8)],
        &server,
        &[("SBAPI_TEST_OTLP_KEY", "collector-key-1")],
    );
    first_run(&node);
    // A request in the caller's trace: a cold load (a permission id of its
    // own, so the watch's load in the process cache does not answer it).
    let own_link = format!("https://app.milanote.com/{BOARD}/slug?p={OWN_PERMISSION}");
    let link: String = url::form_urlencoded::byte_serialize(own_link.as_bytes()).collect();
    let tp = format!("00-{TRACE}-{PARENT}-01");
    let r = request(
        node.api,
        "GET",
        &format!("/api/detail?url={link}"),
        &[("traceparent", &tp)],
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    edit(&upstream);
    run_until_delivered(&[&node], &receiver, 1);
    let delivered = receiver.seen()[0].header("traceparent").to_owned();
    let run_trace = delivered.split('-').nth(1).unwrap_or_default().to_owned();

    let arrived = collector.wait_until(Duration::from_secs(30), |exports| {
        let spans = decode(exports);
        spans
            .iter()
            .any(|s| s.name == "shared_board_api.request" && s.trace_id == TRACE)
            && spans
                .iter()
                .any(|s| s.name == "shared_board_api.watch.delivery")
    });
    let exports = collector.exports();
    let spans = decode(&exports);
    assert!(arrived, "spans arrived: {spans:#?}");
    for export in &exports {
        assert_eq!(export.target, "/v1/traces");
        assert_eq!(export.headers["content-type"], "application/x-protobuf");
        assert_eq!(export.headers["x-collector-key"], "collector-key-1");
    }

    // The request: a child of the caller's span, in its trace.
    let requests: Vec<&Seen> = named(&spans, "shared_board_api.request")
        .into_iter()
        .filter(|s| s.trace_id == TRACE)
        .collect();
    assert_eq!(requests.len(), 1, "{spans:#?}");
    let req = requests[0];
    assert_eq!(req.parent, PARENT);
    assert!(
        req.attributes.contains(&("route".into(), "detail".into())),
        "{req:?}"
    );
    assert!(
        req.attributes.contains(&("status".into(), "200".into())),
        "{req:?}"
    );
    // Its load's spans, children of children, in the same trace.
    let in_trace: Vec<&Seen> = spans.iter().filter(|s| s.trace_id == TRACE).collect();
    let names: BTreeSet<&str> = in_trace.iter().map(|s| s.name.as_str()).collect();
    for name in [
        "shared_board_api.load",
        "shared_board_api.upstream",
        "shared_board_api.build",
    ] {
        assert!(names.contains(name), "{name} in the trace: {names:?}");
    }
    let ids: BTreeSet<&str> = in_trace.iter().map(|s| s.span_id.as_str()).collect();
    for s in &in_trace {
        assert!(
            s.parent == PARENT || ids.contains(s.parent.as_str()),
            "{} has a parent in the trace: {s:?}",
            s.name
        );
    }
    // The watch run is a trace of its own, and the webhook carried it.
    let runs: Vec<&Seen> = named(&spans, "shared_board_api.watch.run")
        .into_iter()
        .filter(|s| s.trace_id == run_trace)
        .collect();
    assert_eq!(runs.len(), 1, "the delivering run's span: {spans:#?}");
    assert_eq!(delivered, format!("00-{run_trace}-{}-01", runs[0].span_id));
    assert!(runs[0].parent.is_empty());
    let deliveries = named(&spans, "shared_board_api.watch.delivery");
    assert!(
        deliveries
            .iter()
            .any(|d| d.trace_id == run_trace && d.parent == runs[0].span_id),
        "{deliveries:#?}"
    );

    // No secret, anywhere in what was sent.
    let secrets = [
        PERMISSION.to_owned(),
        OWN_PERMISSION.to_owned(),
        HOOK_TOKEN.to_owned(),
        share_link(),
        receiver.url(),
        secret(),
        "milanote.com".to_owned(),
    ];
    for export in &exports {
        let body = String::from_utf8_lossy(&export.body);
        for secret in &secrets {
            assert!(!body.contains(secret.as_str()), "{secret} in an export");
        }
    }
    for s in &spans {
        for (k, v) in &s.attributes {
            for secret in &secrets {
                assert!(
                    !v.contains(secret.as_str()) && !k.contains(secret.as_str()),
                    "{s:?}"
                );
            }
        }
    }
    // Counted once the collector's answer is read, just after it arrived.
    wait_until("the exported spans counted", || {
        node.metric("board_api_otlp_spans_total{outcome=\"exported\"}") >= spans.len() as f64
    });
    assert_eq!(
        node.metric("board_api_otlp_spans_total{outcome=\"dropped\"}"),
        0.0
    );

    python_check(&dir, &exports, &spans);
}

/// The bodies decoded by PyPI's `opentelemetry-proto` must read as ours do.
fn python_check(dir: &std::path::Path, exports: &[Export], spans: &[Seen]) {
    let python = match std::env::var("SBAPI_OTLP_PROTO_PYTHON") {
        Ok(p) if !p.is_empty() => p,
        _ => {
            eprintln!(
                "\n*** SKIPPED: decoding the exports with PyPI opentelemetry-proto needs SBAPI_OTLP_PROTO_PYTHON (.ci/run sets it) ***\n"
            );
            return;
        }
    };
    let mut files = Vec::new();
    for (i, export) in exports.iter().enumerate() {
        let path = dir.join(format!("export-{i}.pb"));
        std::fs::write(&path, &export.body).expect("write a body");
        files.push(path);
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/otlp-decode.py");
    let out = std::process::Command::new(python)
        .arg(script)
        .args(&files)
        .output()
        .expect("the decode script runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut theirs: Vec<Seen> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
            let text = |k: &str| v[k].as_str().unwrap_or_default().to_owned();
            let attributes = v["attributes"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|kv| {
                    (
                        kv[0].as_str().unwrap_or_default().to_owned(),
                        kv[1].as_str().unwrap_or_default().to_owned(),
                    )
                })
                .collect();
            Seen {
                name: text("name"),
                trace_id: text("traceId"),
                span_id: text("spanId"),
                parent: text("parentSpanId"),
                attributes,
            }
        })
        .collect();
    let mut ours = spans.to_vec();
    theirs.sort();
    ours.sort();
    assert_eq!(theirs.len(), ours.len());
    assert_eq!(
        theirs, ours,
        "opentelemetry-proto reads the exports as we do"
    );
    println!(
        "opentelemetry-proto decoded {} spans as the test did",
        theirs.len()
    );
}

//! The exporter: a background task that drains the layer's queue in
//! batches (up to [`BATCH`] spans, or what came within [`FLUSH`] of the
//! first, taken every [`TICK`]) and `POST`s each as `ExportTraceServiceRequest` protobuf to the
//! collector through the webhooks' sender (Pingora's connector): one HTTP
//! client stack in the process. One batch is in flight at a time; a slow or
//! absent collector only makes the queue fill, and the layer drops (and
//! counts) what does not fit.

use super::proto::{self, KeyValue, Value};
use crate::config::OtlpSettings;
use crate::log_throttle::Throttle;
use crate::metrics;
use crate::watch::http::{Attempt, Sender};
use bytes::Bytes;
use prost::Message as _;
use std::time::Duration;
use tokio::sync::mpsc::Receiver;

/// Spans sent in one request at most.
pub const BATCH: usize = 512;
/// How long a batch waits for more spans after its first.
pub const FLUSH: Duration = Duration::from_secs(1);
/// How often a batch being gathered takes what was queued: at this period
/// the default queue holds a busy node's spans in between.
pub const TICK: Duration = Duration::from_millis(50);
/// One export request's whole time, connecting included.
pub const EXPORT_DEADLINE: Duration = Duration::from_secs(5);

/// Sends what the layer queued, until the queue closes or `stop` resolves;
/// the spans already queued then are sent once more before it returns.
pub async fn run(
    settings: OtlpSettings,
    mut queue: Receiver<proto::Span>,
    stop: impl std::future::Future<Output = ()>,
) {
    let sender = Sender::named("otlp");
    let headers: Vec<(String, String)> = settings
        .headers
        .iter()
        .filter_map(|(n, v)| Some((n.as_str().to_owned(), v.to_str().ok()?.to_owned())))
        .collect();
    let resource = resource();
    let mut stop = std::pin::pin!(stop);
    loop {
        let mut batch = Vec::with_capacity(BATCH);
        // The first span of a batch wakes this task; the rest are collected
        // every TICK, not awaited one by one: a task waiting on the queue
        // is woken by every span sent (a thread wake-up per span).
        tokio::select! {
            n = queue.recv_many(&mut batch, BATCH) => if n == 0 { return },
            () = &mut stop => break,
        }
        let until = tokio::time::Instant::now() + FLUSH;
        loop {
            while batch.len() < BATCH {
                match queue.try_recv() {
                    Ok(span) => batch.push(span),
                    Err(_) => break,
                }
            }
            let now = tokio::time::Instant::now();
            if batch.len() >= BATCH || now >= until {
                break;
            }
            tokio::time::sleep_until(until.min(now + TICK)).await;
        }
        send(&sender, &settings, &headers, &resource, batch).await;
    }
    // Shutting down: what is queued now, once, without waiting for more.
    let mut rest = Vec::new();
    while let Ok(span) = queue.try_recv() {
        rest.push(span);
        if rest.len() == BATCH {
            send(
                &sender,
                &settings,
                &headers,
                &resource,
                std::mem::take(&mut rest),
            )
            .await;
        }
    }
    if !rest.is_empty() {
        send(&sender, &settings, &headers, &resource, rest).await;
    }
}

/// The process the spans come from.
fn resource() -> proto::Resource {
    proto::Resource {
        attributes: vec![
            KeyValue::new(
                "service.name",
                Value::StringValue("shared-board-api".into()),
            ),
            KeyValue::new(
                "service.version",
                Value::StringValue(env!("CARGO_PKG_VERSION").into()),
            ),
        ],
    }
}

/// The request body of `spans`.
pub fn encode(resource: &proto::Resource, spans: Vec<proto::Span>) -> Vec<u8> {
    proto::ExportTraceServiceRequest {
        resource_spans: vec![proto::ResourceSpans {
            resource: Some(resource.clone()),
            scope_spans: vec![proto::ScopeSpans {
                scope: Some(proto::InstrumentationScope {
                    name: "shared_board_api".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                }),
                spans,
            }],
        }],
    }
    .encode_to_vec()
}

async fn send(
    sender: &Sender,
    settings: &OtlpSettings,
    headers: &[(String, String)],
    resource: &proto::Resource,
    batch: Vec<proto::Span>,
) {
    let n = batch.len();
    let body = Bytes::from(encode(resource, batch));
    let headers: Vec<(&str, &str)> = headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    let sent = sender
        .send(
            &settings.endpoint,
            "application/x-protobuf",
            &headers,
            body,
            EXPORT_DEADLINE,
        )
        .await;
    match sent {
        Attempt::Delivered(_) => metrics::otlp_spans("exported", n),
        Attempt::Retry { why, .. } | Attempt::Failed(why) => {
            metrics::otlp_spans("failed", n);
            // The collector's address is configuration, not a secret, but
            // the reason alone says enough; at most one line a minute.
            static THROTTLE: Throttle = Throttle::new();
            THROTTLE.warn(&format!("span export: {n} span(s) not exported: {why}"));
        }
    }
}

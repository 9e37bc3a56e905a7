//! The subscriber side of the export: a `tracing-subscriber` layer that
//! gives each span of this crate its W3C ids (from its trace fields when it
//! starts or continues a trace, else from its parent span), collects its
//! fields as attributes, and on close hands the finished span to the
//! exporter's bounded queue: `try_send`, so a full queue drops the span
//! (counted) and the request that closed it never waits.

use super::proto::{self, KeyValue, Value};
use crate::metrics;
use crate::trace::context::{hex_id, span_id};
use std::time::SystemTime;
use tokio::sync::mpsc::{error::TrySendError, Sender};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Metadata, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// The fields that place a span in its W3C trace; never attributes.
const TRACE_FIELDS: [&str; 5] = [
    "trace_id",
    "span_id",
    "parent_span_id",
    "sampled",
    "trace_state",
];

/// Records this crate's spans for the exporter (see the module docs).
pub struct OtlpLayer {
    queue: Sender<proto::Span>,
}

impl OtlpLayer {
    pub fn new(queue: Sender<proto::Span>) -> Self {
        OtlpLayer { queue }
    }
}

/// A span of ours while it is open.
struct Open {
    trace_id: [u8; 16],
    span_id: [u8; 8],
    parent: Option<[u8; 8]>,
    sampled: bool,
    trace_state: String,
    start: SystemTime,
    attributes: Vec<KeyValue>,
}

/// What a span's fields say: its trace placement and its attributes.
#[derive(Default)]
struct Fields {
    trace_id: Option<[u8; 16]>,
    span_id: Option<[u8; 8]>,
    parent: Option<[u8; 8]>,
    sampled: Option<bool>,
    trace_state: Option<String>,
    attributes: Vec<KeyValue>,
}

impl Fields {
    /// A trace field, read with the `traceparent` reader's hex rules.
    fn trace(&mut self, name: &str, text: &str) {
        match name {
            "trace_id" => self.trace_id = hex_id::<16>(text.as_bytes()),
            "span_id" => self.span_id = hex_id::<8>(text.as_bytes()),
            "parent_span_id" => self.parent = hex_id::<8>(text.as_bytes()),
            "trace_state" => self.trace_state = Some(text.to_owned()),
            _ => {}
        }
    }

    fn push(&mut self, field: &Field, value: Value) {
        self.attributes.push(KeyValue::new(field.name(), value));
    }
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let text = format!("{value:?}");
        if TRACE_FIELDS.contains(&field.name()) {
            self.trace(field.name(), &text);
        } else {
            self.push(field, Value::StringValue(text));
        }
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        if TRACE_FIELDS.contains(&field.name()) {
            self.trace(field.name(), value);
        } else {
            self.push(field, Value::StringValue(value.to_owned()));
        }
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        if field.name() == "sampled" {
            self.sampled = Some(value);
        } else {
            self.push(field, Value::BoolValue(value));
        }
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.push(field, Value::IntValue(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.push(
            field,
            Value::IntValue(i64::try_from(value).unwrap_or(i64::MAX)),
        );
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.push(field, Value::DoubleValue(value));
    }
}

/// Only this crate's spans: Pingora's h2 opens spans of its own, which
/// cost nothing when nobody listens to them.
fn ours(metadata: &Metadata<'_>) -> bool {
    metadata.is_span() && metadata.target().starts_with("shared_board_api")
}

impl<S> Layer<S> for OtlpLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn register_callsite(
        &self,
        metadata: &'static Metadata<'static>,
    ) -> tracing::subscriber::Interest {
        if ours(metadata) {
            tracing::subscriber::Interest::always()
        } else {
            tracing::subscriber::Interest::never()
        }
    }

    fn enabled(&self, metadata: &Metadata<'_>, _: Context<'_, S>) -> bool {
        ours(metadata)
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        let inherited = span.parent().and_then(|parent| {
            let ext = parent.extensions();
            ext.get::<Open>()
                .map(|p| (p.trace_id, p.span_id, p.sampled, p.trace_state.clone()))
        });
        let open = match (fields.trace_id, inherited) {
            // A span that starts or continues a W3C trace: its own ids.
            (Some(trace_id), _) => Open {
                trace_id,
                span_id: fields.span_id.unwrap_or_else(span_id),
                parent: fields.parent,
                sampled: fields.sampled.unwrap_or(true),
                trace_state: fields.trace_state.unwrap_or_default(),
                start: SystemTime::now(),
                attributes: fields.attributes,
            },
            (None, Some((trace_id, parent, sampled, trace_state))) => Open {
                trace_id,
                span_id: span_id(),
                parent: Some(parent),
                sampled,
                trace_state,
                start: SystemTime::now(),
                attributes: fields.attributes,
            },
            // A root without ids (a delivery queued before traces): a
            // trace of its own.
            (None, None) => {
                let trace = crate::trace::TraceContext::start();
                Open {
                    trace_id: trace.trace_id,
                    span_id: trace.span_id,
                    parent: None,
                    sampled: trace.sampled,
                    trace_state: String::new(),
                    start: SystemTime::now(),
                    attributes: fields.attributes,
                }
            }
        };
        span.extensions_mut().insert(open);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut fields = Fields::default();
        values.record(&mut fields);
        let mut extensions = span.extensions_mut();
        if let Some(open) = extensions.get_mut::<Open>() {
            open.attributes.append(&mut fields.attributes);
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let Some(open) = span.extensions_mut().remove::<Open>() else {
            return;
        };
        if !open.sampled {
            return;
        }
        let nanos = |t: SystemTime| {
            t.duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        };
        let name = span.name();
        let server = name == "shared_board_api.request";
        let failed = open.attributes.iter().any(|kv| {
            (kv.key == "status"
                && matches!(kv.value.as_ref().and_then(|v| v.value.as_ref()),
                    Some(Value::IntValue(s)) if *s >= 500))
                || (kv.key == "outcome"
                    && matches!(kv.value.as_ref().and_then(|v| v.value.as_ref()),
                        Some(Value::StringValue(o)) if o == "failed"))
        });
        let finished = proto::Span {
            trace_id: open.trace_id.to_vec(),
            span_id: open.span_id.to_vec(),
            trace_state: open.trace_state,
            parent_span_id: open.parent.map(|p| p.to_vec()).unwrap_or_default(),
            name: name.to_owned(),
            kind: if server {
                proto::KIND_SERVER
            } else {
                proto::KIND_INTERNAL
            },
            start_time_unix_nano: nanos(open.start),
            end_time_unix_nano: nanos(SystemTime::now()),
            attributes: open.attributes,
            status: failed.then(|| proto::Status {
                message: String::new(),
                code: proto::STATUS_ERROR,
            }),
            flags: 1,
        };
        match self.queue.try_send(finished) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Closed(_)) => {
                metrics::otlp_spans("dropped", 1);
            }
        }
    }
}

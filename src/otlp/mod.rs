//! The standalone binary's span export (`board_api.server.otlp`): OTLP over
//! HTTP with protobuf bodies, to any OpenTelemetry collector. [`install`]
//! sets the process's `tracing` subscriber (the registry and the
//! [`layer::OtlpLayer`]) and the sample ratio, and returns the
//! [`Exporter`], a Pingora background service that sends the batches
//! ([`export`]). A host that embeds the library installs its own
//! subscriber (`tracing-opentelemetry`) instead and never calls this.

pub mod export;
pub mod layer;
pub mod proto;

use crate::config::OtlpSettings;
use async_trait::async_trait;
use pingora_core::server::ShutdownWatch;
use pingora_core::services::background::BackgroundService;
use std::sync::Mutex;
use tokio::sync::mpsc::{channel, Receiver};
use tracing_subscriber::layer::SubscriberExt as _;

/// The span export as a Pingora background service.
pub struct Exporter {
    settings: OtlpSettings,
    queue: Mutex<Option<Receiver<proto::Span>>>,
}

/// Installs the export's subscriber for the whole process and sets the
/// sample ratio of traces that start here.
///
/// # Errors
/// Another `tracing` subscriber is installed already.
pub fn install(settings: &OtlpSettings) -> Result<Exporter, String> {
    let (tx, rx) = channel(settings.queue_spans);
    let subscriber = tracing_subscriber::registry().with(layer::OtlpLayer::new(tx));
    tracing::subscriber::set_global_default(subscriber)
        .map_err(|e| format!("the span export's subscriber: {e}"))?;
    crate::trace::context::set_sample_ratio(settings.sample_ratio);
    Ok(Exporter {
        settings: settings.clone(),
        queue: Mutex::new(Some(rx)),
    })
}

#[async_trait]
impl BackgroundService for Exporter {
    async fn start(&self, mut shutdown: ShutdownWatch) {
        let queue = self.queue.lock().unwrap_or_else(|e| e.into_inner()).take();
        let Some(queue) = queue else { return };
        let stop = async move {
            let _ = shutdown.changed().await;
        };
        export::run(self.settings.clone(), queue, stop).await;
    }
}

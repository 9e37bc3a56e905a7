//! The standalone binary's span export (`board_api.server.otlp`): OTLP over
//! HTTP with protobuf bodies, to any OpenTelemetry collector. [`install`]
//! sets the process's `tracing` subscriber (the registry and the
//! [`layer::OtlpLayer`]) and the sample ratio, and returns the
//! [`Exporter`], a Pingora background service that sends the batches
//! ([`export`]). pingap's plugin, in a process whose subscriber is pingap's,
//! takes the same export as a [`tracing::Dispatch`] of its own ([`scoped`])
//! and sends from a thread ([`Exporter::spawn_thread`]). A host that embeds
//! the library otherwise installs its own subscriber
//! (`tracing-opentelemetry`) and calls neither.

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
    let (dispatch, exporter) = scoped(settings);
    tracing::dispatcher::set_global_default(dispatch)
        .map_err(|e| format!("the span export's subscriber: {e}"))?;
    Ok(exporter)
}

/// The export's subscriber as a [`tracing::Dispatch`] for a host whose
/// process has a subscriber of its own (pingap's logger): the API's work
/// runs under it ([`tracing::instrument::WithSubscriber`]), the host's spans
/// and logs stay the host's. Sets the sample ratio of traces that start
/// here, and returns the exporter that sends what the dispatch queues.
pub fn scoped(settings: &OtlpSettings) -> (tracing::Dispatch, Exporter) {
    let (tx, rx) = channel(settings.queue_spans);
    let subscriber = tracing_subscriber::registry().with(layer::OtlpLayer::new(tx));
    crate::trace::context::set_sample_ratio(settings.sample_ratio);
    let exporter = Exporter {
        settings: settings.clone(),
        queue: Mutex::new(Some(rx)),
    };
    (tracing::Dispatch::new(subscriber), exporter)
}

impl Exporter {
    /// Sends the batches from a thread of its own, with a one-thread
    /// runtime, for a host that runs no Pingora background service of
    /// ours. The thread ends once its queue is closed: when the dispatch
    /// of [`scoped`] and every span it made are gone.
    ///
    /// # Errors
    /// The thread or its runtime could not be started.
    pub fn spawn_thread(self) -> std::io::Result<()> {
        let queue = self.queue.into_inner().unwrap_or_else(|e| e.into_inner());
        let Some(queue) = queue else { return Ok(()) };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let settings = self.settings;
        std::thread::Builder::new()
            .name("board-api-otlp".into())
            .spawn(move || runtime.block_on(export::run(settings, queue, std::future::pending())))
            .map(drop)
    }
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

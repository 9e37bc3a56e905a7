//! The operator listener (`board_api.server.metrics.listen`): `GET /metrics`
//! (Pingora's Prometheus exporter, unchanged), the probes `GET /healthz` and
//! `GET /readyz`, with watch jobs `GET /watch` and `POST /watch/<id>/run`,
//! and `404` for every other path. Every request first passes
//! `operator_guard` (its own host names; a `POST` with `X-Requested-By` and
//! no foreign `Origin`).
//!
//! Liveness is "the process answers". Readiness follows Pingora's execution
//! phase: ready once the server runs (configuration valid, listeners bound,
//! services started), not ready for good once a shutdown has begun
//! (`SIGTERM`, or the end of an upgrade). While an upgrade hands the
//! listening sockets over (`SIGQUIT`), both processes accept on the same
//! sockets and both serve, so the address stays ready. Pingora stops
//! accepting the moment a shutdown begins: a new probe connection is then
//! refused, and only one already open hears `503`. The phase is read when a probe
//! asks, from Pingora's broadcast of phase changes, so an answer reflects
//! every change Pingora made before it. The fleet tier plays no part: it is
//! optional, and its state is a metric (`board_api_fleet_breaker_open`).

use super::operator_guard::Guard;
use crate::watch::Watches;
use async_trait::async_trait;
use http::header::{HeaderValue, CONTENT_LENGTH, CONTENT_TYPE};
use http::Method;
use http::{Response, StatusCode};
use pingora_core::apps::http_app::{HttpServer, ServeHttp};
use pingora_core::modules::http::compression::ResponseCompressionBuilder;
use pingora_core::protocols::http::ServerSession;
use pingora_core::server::ExecutionPhase;
use pingora_core::services::listening::Service;
use pingora_prometheus::PrometheusHttpApp;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::broadcast::{error::TryRecvError, Receiver};

const STARTING: u8 = 0;
const RUNNING: u8 = 1;
const STOPPING: u8 = 2;

/// Whether the server is ready, from its execution phases.
pub(crate) struct Readiness {
    phases: Mutex<Receiver<ExecutionPhase>>,
    state: AtomicU8,
}

impl Readiness {
    /// Follows the phases `phases` receives (`Server::watch_execution_phase`).
    pub(crate) fn new(phases: Receiver<ExecutionPhase>) -> Self {
        Readiness {
            phases: Mutex::new(phases),
            state: AtomicU8::new(STARTING),
        }
    }

    /// Takes in every phase change sent so far; true while running.
    pub(crate) fn ready(&self) -> bool {
        if let Ok(mut phases) = self.phases.lock() {
            loop {
                match phases.try_recv() {
                    Ok(phase) => self.apply(&phase),
                    // Older changes were overwritten; newer ones follow.
                    Err(TryRecvError::Lagged(_)) => continue,
                    Err(TryRecvError::Empty | TryRecvError::Closed) => break,
                }
            }
        }
        self.state.load(Ordering::Acquire) == RUNNING
    }

    fn apply(&self, phase: &ExecutionPhase) {
        let next = match phase {
            ExecutionPhase::Running => RUNNING,
            // The new process serves the same sockets from now on, and this
            // one serves on beside it until its shutdown begins.
            ExecutionPhase::GracefulUpgradeTransferringFds
            | ExecutionPhase::GracefulUpgradeCloseTimeout => return,
            ExecutionPhase::GracefulTerminate
            | ExecutionPhase::ShutdownStarted
            | ExecutionPhase::ShutdownGracePeriod
            | ExecutionPhase::ShutdownRuntimes
            | ExecutionPhase::Terminated => STOPPING,
            // Setup and bootstrap, or a phase a later Pingora adds.
            _ => return,
        };
        // Once stopping, never ready again.
        let _ = self
            .state
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |now| {
                (now != STOPPING).then_some(next)
            });
    }
}

/// The operator listener's routes.
pub(crate) struct OperatorApp {
    metrics: PrometheusHttpApp,
    readiness: Readiness,
    watches: Option<Arc<Watches>>,
    guard: Guard,
}

#[async_trait]
impl ServeHttp for OperatorApp {
    async fn response(&self, session: &mut ServerSession) -> Response<Vec<u8>> {
        if let Some((status, why)) = self.guard.refusal(session.req_header()) {
            return text(status, why);
        }
        let path = session.req_header().uri.path();
        if path == "/watch" || path.starts_with("/watch/") {
            let method = session.req_header().method.clone();
            return watch(self.watches.as_deref(), &method, path);
        }
        match path {
            "/metrics" => self.metrics.response(session).await,
            "/healthz" => text(StatusCode::OK, "ok\n"),
            "/readyz" if self.readiness.ready() => text(StatusCode::OK, "ready\n"),
            "/readyz" => text(StatusCode::SERVICE_UNAVAILABLE, "not ready\n"),
            _ => text(StatusCode::NOT_FOUND, "not found\n"),
        }
    }
}

fn text(status: StatusCode, body: &'static str) -> Response<Vec<u8>> {
    answer(
        status,
        "text/plain; charset=utf-8",
        body.as_bytes().to_vec(),
    )
}

fn answer(status: StatusCode, content_type: &'static str, body: Vec<u8>) -> Response<Vec<u8>> {
    let len = body.len();
    let mut response = Response::new(body);
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(CONTENT_LENGTH, HeaderValue::from(len));
    response
}

/// `GET /watch`: each job's state on this node; `POST /watch/<id>/run`: a
/// run of that job now (`202`), as a scheduled one but for the interval
/// check (runs of one job never overlap, fleet-wide).
fn watch(watches: Option<&Watches>, method: &Method, path: &str) -> Response<Vec<u8>> {
    let Some(watches) = watches else {
        return text(StatusCode::NOT_FOUND, "no watch jobs\n");
    };
    const JSON: &str = "application/json";
    match (
        method,
        path.strip_prefix("/watch/")
            .and_then(|r| r.strip_suffix("/run")),
    ) {
        (&Method::GET | &Method::HEAD, None) if path == "/watch" => {
            answer(StatusCode::OK, JSON, watches.status())
        }
        (&Method::POST, Some(id)) if watches.trigger(id) => {
            let body = serde_json::json!({ "job": id, "run": "queued" }).to_string();
            answer(StatusCode::ACCEPTED, JSON, body.into_bytes())
        }
        (&Method::POST, Some(_)) => text(StatusCode::NOT_FOUND, "no such job\n"),
        (_, Some(_)) => text(StatusCode::METHOD_NOT_ALLOWED, "POST only\n"),
        (_, None) if path == "/watch" => text(StatusCode::METHOD_NOT_ALLOWED, "GET only\n"),
        _ => text(StatusCode::NOT_FOUND, "not found\n"),
    }
}

/// The operator service on `addr`, with gzip as Pingora's exporter has it.
pub(crate) fn service(
    addr: std::net::SocketAddr,
    hosts: &[String],
    readiness: Readiness,
    watches: Option<Arc<Watches>>,
) -> Service<HttpServer<OperatorApp>> {
    let mut app = HttpServer::new_app(OperatorApp {
        metrics: PrometheusHttpApp,
        readiness,
        watches,
        guard: Guard::new(addr, hosts),
    });
    app.add_module(ResponseCompressionBuilder::enable(7));
    let mut service = Service::new("Prometheus metric HTTP".to_string(), app);
    service.add_tcp(&addr.to_string());
    service
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::broadcast;

    #[test]
    fn ready_while_running_and_never_again_once_stopping() {
        let (tx, rx) = broadcast::channel(16);
        let readiness = Readiness::new(rx);
        assert!(!readiness.ready(), "not ready before Running");
        let _ = tx.send(ExecutionPhase::BootstrapComplete);
        assert!(!readiness.ready());
        let _ = tx.send(ExecutionPhase::Running);
        assert!(readiness.ready());
        assert!(readiness.ready(), "stays ready without news");
        for stop in [
            ExecutionPhase::GracefulTerminate,
            ExecutionPhase::ShutdownStarted,
        ] {
            let (tx, rx) = broadcast::channel(16);
            let readiness = Readiness::new(rx);
            let _ = tx.send(ExecutionPhase::Running);
            assert!(readiness.ready());
            let _ = tx.send(stop.clone());
            assert!(!readiness.ready(), "{stop:?}");
            let _ = tx.send(ExecutionPhase::Running);
            assert!(!readiness.ready(), "Running after {stop:?}");
        }
    }

    #[test]
    fn ready_while_an_upgrade_hands_the_sockets_over_then_not() {
        let (tx, rx) = broadcast::channel(16);
        let readiness = Readiness::new(rx);
        let _ = tx.send(ExecutionPhase::Running);
        for phase in [
            ExecutionPhase::GracefulUpgradeTransferringFds,
            ExecutionPhase::GracefulUpgradeCloseTimeout,
        ] {
            let _ = tx.send(phase.clone());
            assert!(readiness.ready(), "{phase:?}");
        }
        let _ = tx.send(ExecutionPhase::ShutdownStarted);
        assert!(!readiness.ready(), "the old process's shutdown");
    }

    #[test]
    fn a_lagged_receiver_keeps_the_latest_phases() {
        let (tx, rx) = broadcast::channel(2);
        let readiness = Readiness::new(rx);
        for _ in 0..5 {
            let _ = tx.send(ExecutionPhase::Bootstrap);
        }
        let _ = tx.send(ExecutionPhase::Running);
        assert!(readiness.ready());
        drop(tx);
        assert!(readiness.ready(), "a closed channel leaves the state");
    }
}

//! Assembles the standalone Pingora service from validated settings; used by
//! the binary and by the end-to-end tests, so both run the same thing.

use crate::api::BoardApi;
use crate::config::{ConfigError, Settings};
use async_trait::async_trait;
use pingora_core::modules::http::compression::ResponseCompressionBuilder;
use pingora_core::modules::http::HttpModules;
use pingora_core::server::configuration::ServerConf;
use pingora_core::services::listening::Service;
use pingora_core::upstreams::peer::HttpPeer;
use pingora_error::{Error, ErrorType, Result};
use pingora_proxy::{HttpProxy, ProxyHttp, Session};
use std::sync::Arc;

/// The standalone service: every path is answered by the API (unknown ones
/// with `404 NOT_FOUND`); nothing is proxied.
pub(crate) struct BoardApiService {
    api: Arc<BoardApi>,
    compression_level: u32,
}

impl BoardApiService {
    pub(crate) fn new(api: Arc<BoardApi>, compression_level: u32) -> Self {
        BoardApiService {
            api,
            compression_level,
        }
    }
}

#[async_trait]
impl ProxyHttp for BoardApiService {
    type CTX = ();
    fn new_ctx(&self) -> Self::CTX {}

    fn init_downstream_modules(&self, modules: &mut HttpModules) {
        // For our other answers (errors, small bodies). Successful renders
        // arrive already compressed (once per coding, cached) with
        // `Content-Encoding` set; the module leaves a response alone when the
        // client accepts its coding (`decide_action` in Pingora's
        // compression module), so nothing is compressed twice.
        modules.add_module(ResponseCompressionBuilder::enable(self.compression_level));
    }

    async fn request_filter(&self, session: &mut Session, _ctx: &mut ()) -> Result<bool> {
        if self.api.handle(session).await? {
            return Ok(true);
        }
        // Unreachable with `answer_all_paths`; refuse rather than proxy anywhere.
        session.respond_error(404).await?;
        Ok(true)
    }

    async fn upstream_peer(&self, _session: &mut Session, _ctx: &mut ()) -> Result<Box<HttpPeer>> {
        Error::e_explain(ErrorType::InternalError, "the board API never proxies")
    }

    fn suppress_error_log(&self, _session: &Session, _ctx: &(), error: &Error) -> bool {
        // A client that disconnects is not our error.
        matches!(
            error.etype(),
            ErrorType::ConnectionClosed | ErrorType::ReadError | ErrorType::WriteError
        )
    }

    fn request_summary(&self, session: &Session, _ctx: &()) -> String {
        // Standalone, every path is ours, so this is always `Some`.
        self.api
            .request_summary(session)
            .unwrap_or_else(|| "(request)".into())
    }
}

/// The listening service for `settings` (TLS when configured).
///
/// # Errors
/// The provider client cannot be built, or TLS files cannot be loaded.
pub(crate) fn service(
    conf: &Arc<ServerConf>,
    settings: &Settings,
) -> Result<Service<HttpProxy<BoardApiService>>, ConfigError> {
    let api = Arc::new(
        BoardApi::new(&settings.api)?
            .answer_all_paths()
            .serve_playground(settings.server.playground)
            .compress_renders(settings.server.compression_level > 0),
    );
    let mut service = pingora_proxy::http_proxy_service_with_name(
        conf,
        BoardApiService::new(api, settings.server.compression_level),
        "shared-board-api",
    );
    for addr in &settings.server.listen {
        let addr = addr.to_string();
        match &settings.server.tls {
            Some(tls) => service
                .add_tls(
                    &addr,
                    &tls.cert.to_string_lossy(),
                    &tls.key.to_string_lossy(),
                )
                .map_err(|e| ConfigError::new("board_api.server.tls", format!("on {addr}: {e}")))?,
            None => service.add_tcp(&addr),
        }
    }
    Ok(service)
}

/// Adds the standalone board API to a bootstrapped Pingora `server`: one
/// listening service on every `board_api.server.listen` address (TLS with
/// `server.tls`, default plain TCP), answering every path (unknown ones
/// `404 NOT_FOUND`) and proxying nothing, with response compression at
/// `server.compression_level` (default 6; 0 turns it off);
/// and the Prometheus exporter on `server.metrics.listen` when set (default
/// none). Nothing listens until the server runs.
///
/// ```no_run
/// use pingora_core::server::Server;
/// use shared_board_api::config::Settings;
///
/// let settings = Settings::from_file("conf/gateway.yaml".as_ref())?;
/// let mut server = Server::new(None).expect("Pingora defaults");
/// server.bootstrap();
/// shared_board_api::host::service::add_services(&mut server, &settings)?;
/// server.run_forever();
/// # Ok::<(), shared_board_api::config::ConfigError>(())
/// ```
///
/// # Errors
/// A [`ConfigError`]: the provider client cannot be built
/// (`board_api.provider`), or a TLS certificate or key cannot be loaded
/// (`board_api.server.tls`).
pub fn add_services(
    server: &mut pingora_core::server::Server,
    settings: &Settings,
) -> Result<(), ConfigError> {
    let api = service(&server.configuration, settings)?;
    server.add_service(api);
    if let Some(addr) = settings.server.metrics_listen {
        let mut metrics = pingora_prometheus::prometheus_http_service();
        metrics.add_tcp(&addr.to_string());
        server.add_service(metrics);
    }
    Ok(())
}

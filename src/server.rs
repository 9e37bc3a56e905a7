//! Assembles the standalone Pingora service from validated settings; used by
//! the binary and by the end-to-end tests, so both run the same thing.

use crate::api::proxy::BoardApiService;
use crate::api::BoardApi;
use crate::config::ApiSettings;
use pingora_core::server::configuration::ServerConf;
use pingora_core::services::listening::Service;
use pingora_proxy::HttpProxy;
use std::sync::Arc;

/// The listening service for `settings` (TLS when configured).
///
/// # Errors
/// The provider client cannot be built, or TLS files cannot be loaded.
pub fn service(
    conf: &Arc<ServerConf>,
    settings: &ApiSettings,
) -> Result<Service<HttpProxy<BoardApiService>>, String> {
    let api = Arc::new(
        BoardApi::new(settings)?
            .answer_all_paths()
            .serve_playground(settings.playground),
    );
    let mut service = pingora_proxy::http_proxy_service_with_name(
        conf,
        BoardApiService::new(api, settings.compression_level),
        "shared-board-api",
    );
    for addr in &settings.listen {
        let addr = addr.to_string();
        match &settings.tls {
            Some(tls) => service
                .add_tls(
                    &addr,
                    &tls.cert.to_string_lossy(),
                    &tls.key.to_string_lossy(),
                )
                .map_err(|e| format!("TLS on {addr}: {e}"))?,
            None => service.add_tcp(&addr),
        }
    }
    Ok(service)
}

/// Adds the API service, and the Prometheus exporter when configured, to `server`.
///
/// # Errors
/// As [`service`].
pub fn add_services(
    server: &mut pingora_core::server::Server,
    settings: &ApiSettings,
) -> Result<(), String> {
    let api = service(&server.configuration, settings)?;
    server.add_service(api);
    if let Some(addr) = settings.metrics_listen {
        let mut metrics = pingora_prometheus::prometheus_http_service();
        metrics.add_tcp(&addr.to_string());
        server.add_service(metrics);
    }
    Ok(())
}

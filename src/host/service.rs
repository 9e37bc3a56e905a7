//! Assembles the standalone Pingora service from validated settings; used by
//! the binary and by the end-to-end tests, so both run the same thing.

use super::access_log::{AccessLog, Entry};
use super::edge::{self, Edge};
use super::probes;
use crate::api::BoardApi;
use crate::config::{ConfigError, Settings};
use crate::watch::Watches;
use async_trait::async_trait;
use pingora_core::apps::HttpServerOptions;
use pingora_core::listeners::tls::TlsSettings;
use pingora_core::listeners::{L4BufferSettings, ListenerConfig};
use pingora_core::modules::http::compression::ResponseCompressionBuilder;
use pingora_core::modules::http::HttpModules;
use pingora_core::server::configuration::ServerConf;
use pingora_core::server::ShutdownWatch;
use pingora_core::services::background::{background_service, BackgroundService};
use pingora_core::services::listening::Service;
use pingora_core::upstreams::peer::HttpPeer;
use pingora_error::{Error, ErrorType, Result};
use pingora_proxy::{HttpProxy, ProxyHttp, Session};
use std::sync::Arc;
use std::time::Instant;

/// The standalone service: every path is answered by the API (unknown ones
/// with `404 NOT_FOUND`); nothing is proxied.
pub(crate) struct BoardApiService {
    api: Arc<BoardApi>,
    compression_level: u32,
    access_log: Option<AccessLog>,
}

impl BoardApiService {
    pub(crate) fn new(api: Arc<BoardApi>, compression_level: u32) -> Self {
        BoardApiService {
            api,
            compression_level,
            access_log: None,
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

    async fn early_request_filter(&self, session: &mut Session, _ctx: &mut ()) -> Result<()> {
        edge::head_done(session);
        Ok(())
    }

    async fn logging(&self, session: &mut Session, _e: Option<&Error>, _ctx: &mut ()) {
        edge::answered(session);
    }

    async fn request_filter(&self, session: &mut Session, _ctx: &mut ()) -> Result<bool> {
        let started = Instant::now();
        if let Some(answered) = self.api.serve(session).await? {
            if let Some(log) = &self.access_log {
                let req = session.req_header();
                log.record(Entry {
                    method: req.method.clone(),
                    uri: req.uri.clone(),
                    answered,
                    elapsed: started.elapsed(),
                    client: self.api.client_ip(session),
                });
            }
            return Ok(true);
        }
        // Unreachable with `answer_all_paths`; refuse rather than proxy
        // anywhere. Boxed: inline, its future would size this one, which an
        // open event stream holds for as long as it lasts.
        Box::pin(session.respond_error(404)).await?;
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

/// The API's listening service: Pingora's proxy behind the connections'
/// time limits.
pub(crate) type ApiService = Service<Edge<HttpProxy<BoardApiService>>>;

/// The listening service and the watch jobs (if any) for `settings`: TLS when configured (offering
/// HTTP/2 by ALPN unless `server.http2` is false), cleartext HTTP/2 with
/// prior knowledge beside HTTP/1.1 with `server.h2c`, and the access log's
/// writer with `server.access_log`.
///
/// # Errors
/// The provider client cannot be built, TLS files cannot be loaded, a
/// watch job's link is not a share link or its store cannot be opened.
pub(crate) fn service(conf: &Arc<ServerConf>, settings: &Settings) -> Result<Built, ConfigError> {
    let api = Arc::new(
        BoardApi::new(&settings.api)?
            .answer_all_paths()
            .serve_playground(settings.server.playground)
            .compress_renders(settings.server.compression_level > 0)
            .trust_proxies(settings.server.trusted_proxies.clone()),
    );
    // The watch jobs load boards through the same API value (its cache,
    // coalescing, fleet tier and limits).
    let watches = Watches::new(Arc::clone(&api), &settings.api)?;
    let streams = Arc::clone(&api);
    #[cfg(feature = "sqlite")]
    let state_file = api.versions().and_then(|v| v.state_file()).cloned();
    let server = &settings.server;
    let mut app = BoardApiService::new(api, server.compression_level);
    app.access_log = match &server.access_log {
        Some(log) => Some(AccessLog::new(log).map_err(|e| {
            ConfigError::new("board_api.server.access_log", format!("cannot open: {e}"))
        })?),
        None => None,
    };
    let mut proxy = pingora_proxy::http_proxy(conf, app);
    let mut options = HttpServerOptions::default();
    // Pingora peeks at the connection preface: HTTP/1.1 still works.
    options.h2c = server.h2c;
    // An HTTP/2 connection with no open stream closes after the idle time
    // (HTTP/1.1's is kept by `edge`).
    options.h2_idle_timeout = Some(server.edge.idle);
    proxy.server_options = Some(options);
    let mut service = Service::new(
        "shared-board-api".to_string(),
        Edge::new(proxy, server.edge, server.h2c),
    );
    for addr in &server.listen {
        let addr = addr.to_string();
        match &server.tls {
            Some(tls) => {
                let tls_error = |e: Box<Error>| {
                    ConfigError::new("board_api.server.tls", format!("on {addr}: {e}"))
                };
                let cert = tls.cert.to_string_lossy();
                let key = tls.key.to_string_lossy();
                let mut tls_settings = TlsSettings::intermediate(&cert, &key).map_err(tls_error)?;
                // Read both files now, so a file without a certificate or a
                // key is a configuration error rather than a panic when the
                // listener starts.
                tls_settings
                    .set_certificate_chain_file(&cert)
                    .map_err(tls_error)?;
                tls_settings.set_private_key_file(&key).map_err(tls_error)?;
                if server.http2 {
                    tls_settings.enable_h2();
                }
                service.add_listener(
                    ListenerConfig::tcp(addr)
                        .tls(tls_settings)
                        .l4_buffer(l4_buffer()),
                );
            }
            None => service.add_listener(ListenerConfig::tcp(addr).l4_buffer(l4_buffer())),
        }
    }
    Ok(Built {
        api: service,
        watches,
        #[cfg(feature = "sqlite")]
        state_file,
        streams,
    })
}

/// The buffers of the listeners' connections below HTTP and TLS. No read
/// buffer: Pingora's HTTP/1 reads a request head into a buffer of its own,
/// and TLS and HTTP/2 have theirs, so one here would only copy the bytes
/// once more, and Pingora's default (64 KiB, zeroed) is held by every open
/// connection, an idle event stream included. Writes keep Pingora's default
/// buffer (1,460 bytes); an HTTP/1.x answer's head waits for its body in
/// [`super::edge`]'s `Clocked`, so the two leave in one write whatever the
/// body's size, and a 4 KiB buffer here would be held by every connection.
fn l4_buffer() -> L4BufferSettings {
    L4BufferSettings::default().read(0)
}

/// What [`service`] builds: nothing of it runs, listens or opens a file
/// until the server runs it.
pub(crate) struct Built {
    pub(crate) api: ApiService,
    pub(crate) watches: Option<Arc<Watches>>,
    /// The state file (`board_api.changes.store: sqlite`), opened by
    /// [`StateFileService`] in the process that serves.
    #[cfg(feature = "sqlite")]
    pub(crate) state_file: Option<Arc<crate::store::sqlite::Db>>,
    /// The API whose event streams end when the server shuts down.
    pub(crate) streams: Arc<BoardApi>,
}

/// Ends the event streams of `/changes` when the server shuts down, so
/// each ends with its last chunk rather than a cut connection.
struct StreamsService(Arc<BoardApi>);

#[async_trait]
impl BackgroundService for StreamsService {
    async fn start(&self, mut shutdown: ShutdownWatch) {
        let _ = shutdown.changed().await;
        self.0.end_streams();
    }
}

/// Opens the state file as the server starts: after Pingora's fork with
/// `-d` (SQLite forbids carrying a connection across `fork`), and before
/// the first request needs it, so that a file that cannot be used stops
/// the start with a clear message instead of failing requests one by one.
#[cfg(feature = "sqlite")]
struct StateFileService(Arc<crate::store::sqlite::Db>);

#[cfg(feature = "sqlite")]
#[async_trait]
impl BackgroundService for StateFileService {
    async fn start(&self, _shutdown: ShutdownWatch) {
        let db = Arc::clone(&self.0);
        let opened = tokio::task::spawn_blocking(move || db.open_now()).await;
        match opened {
            Ok(Ok(())) => log::info!("state file: {}", self.0.path().display()),
            Ok(Err(e)) => {
                log::error!("cannot start: board_api.changes.path: {e}");
                std::process::exit(2);
            }
            Err(e) => log::error!("state file: the opening task failed: {e}"),
        }
    }
}

/// The watch jobs as a Pingora background service: they run until the
/// server shuts down; what is pending then stays stored.
struct WatchService(Arc<Watches>);

#[async_trait]
impl BackgroundService for WatchService {
    async fn start(&self, shutdown: ShutdownWatch) {
        Arc::clone(&self.0).run(shutdown).await;
    }
}

/// Adds the standalone board API to a bootstrapped Pingora `server`: one
/// listening service on every `board_api.server.listen` address (TLS with
/// `server.tls`, default plain TCP; HTTP/2 by ALPN on TLS unless
/// `server.http2: false`, cleartext HTTP/2 with `server.h2c: true`),
/// answering every path (unknown ones `404 NOT_FOUND`) and proxying nothing,
/// with response compression at `server.compression_level` (default 6; 0
/// turns it off) and an access log with `server.access_log: true`; and the
/// operator listener on `server.metrics.listen` when set (default none):
/// `/metrics`, `/healthz`, and `/readyz`, which follows `server`'s execution
/// phase, and with watch jobs (`board_api.watch.jobs`) `GET /watch` and
/// `POST /watch/<id>/run`; the watch jobs as a background service.
/// With `board_api.changes.store: sqlite`, the state file is opened as the
/// server starts (after the fork of `-d`); a file that cannot be opened
/// ends the process with status 2 and its reason in the log
/// (docs/durability.md). Nothing listens until the server runs. Returns the handles of
/// the listening services, so that a server bootstrapped as a service
/// (`Server::bootstrap_as_a_service`, as the binary is) can make them wait
/// for it.
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
/// (`board_api.provider`), a TLS certificate or key cannot be loaded
/// (`board_api.server.tls`).
pub fn add_services(
    server: &mut pingora_core::server::Server,
    settings: &Settings,
) -> Result<Vec<pingora_core::services::ServiceHandle>, ConfigError> {
    let built = service(&server.configuration, settings)?;
    server.add_service(background_service(
        "event streams",
        StreamsService(built.streams),
    ));
    #[cfg(feature = "sqlite")]
    if let Some(db) = built.state_file {
        server.add_service(background_service("state file", StateFileService(db)));
    }
    let (api, watches) = (built.api, built.watches);
    let mut handles = vec![server.add_service(api)];
    if let Some(addr) = settings.server.metrics_listen {
        let readiness = probes::Readiness::new(server.watch_execution_phase());
        let operator = probes::service(
            addr,
            &settings.server.metrics_hosts,
            readiness,
            watches.clone(),
        );
        handles.push(server.add_service(operator));
    }
    if let Some(watches) = watches {
        server.add_service(background_service("watch jobs", WatchService(watches)));
    }
    log::info!("{}", listeners(settings));
    Ok(handles)
}

/// The start-up line naming every listener and what it speaks.
fn listeners(settings: &Settings) -> String {
    let server = &settings.server;
    let scheme = if server.tls.is_some() {
        "https"
    } else {
        "http"
    };
    let protocols = match (server.tls.is_some(), server.http2, server.h2c) {
        (true, true, _) => "HTTP/2 and HTTP/1.1 by ALPN",
        (false, _, true) => "HTTP/1.1 and h2c",
        _ => "HTTP/1.1",
    };
    let api: Vec<String> = server
        .listen
        .iter()
        .map(|a| format!("{scheme}://{a}"))
        .collect();
    let mut line = format!("listening: the API on {} ({protocols})", api.join(", "));
    if let Some(m) = server.metrics_listen {
        let watch = if settings.api.watch.jobs.is_empty() {
            ""
        } else {
            ", /watch"
        };
        line.push_str(&format!(
            "; the operator listener on http://{m} (/metrics, /healthz, /readyz{watch})"
        ));
    }
    line
}

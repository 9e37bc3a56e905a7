//! The hot-path floor: a bare Pingora `ProxyHttp` that answers every request
//! from `request_filter` with fixed bytes, with the headers our service sends
//! for a cached 200. Same pingora crates and features as the library.
//!
//!   cargo run --release --example bare_responder -- \
//!       --listen 127.0.0.1:18190 --body /tmp/body.json [--etag 'W/"..."'] \
//!       [--compression-level 6] [--threads 2] [--h2c]
//!
//! `--h2c` also accepts cleartext HTTP/2 with prior knowledge, as the
//! gateway's `server.h2c: true`.
//! `--compression-level N` adds Pingora's `ResponseCompression` module at
//! level N exactly as our service does (`ResponseCompressionBuilder::enable`);
//! without it no module is added. `benches/hotpath.sh` runs it beside ours on
//! byte-identical bodies.

use async_trait::async_trait;
use bytes::Bytes;
use http::header;
use pingora_core::modules::http::compression::ResponseCompressionBuilder;
use pingora_core::modules::http::HttpModules;
use pingora_core::server::configuration::{Opt, ServerConf};
use pingora_core::server::Server;
use pingora_core::upstreams::peer::HttpPeer;
use pingora_core::{Error, ErrorType, Result};
use pingora_http::ResponseHeader;
use pingora_proxy::{ProxyHttp, Session};
use std::fmt::Write as _;
use std::time::Instant;

struct Bare {
    body: Bytes,
    etag: String,
    compression_level: Option<u32>,
}

#[async_trait]
impl ProxyHttp for Bare {
    type CTX = ();
    fn new_ctx(&self) -> Self::CTX {}

    fn init_downstream_modules(&self, modules: &mut HttpModules) {
        if let Some(level) = self.compression_level {
            modules.add_module(ResponseCompressionBuilder::enable(level));
        }
    }

    async fn request_filter(&self, session: &mut Session, _ctx: &mut ()) -> Result<bool> {
        // `http::header` names, as our service uses: Pingora writes the
        // well-known ones title-cased (Cache-Control, Content-Type,
        // Content-Length) and the others lower-case, so the bytes match ours.
        // The same names, values and order as ours on the wire (checked by
        // benches/hotpath.sh).
        let start = Instant::now();
        let mut h = ResponseHeader::build(200, Some(11))?;
        h.append_header(header::ACCESS_CONTROL_ALLOW_ORIGIN, "*")?;
        h.append_header(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            "ETag, Server-Timing, Board-Completeness, Board-Version, X-Request-Id, Content-Disposition",
        )?;
        h.append_header(header::X_CONTENT_TYPE_OPTIONS, "nosniff")?;
        h.append_header(header::ETAG, self.etag.as_str())?;
        h.append_header("board-completeness", "complete")?;
        h.append_header(
            header::CACHE_CONTROL,
            "public, max-age=60, stale-while-revalidate=300",
        )?;
        h.append_header(header::VARY, "Accept, Accept-Encoding")?;
        h.append_header(header::CONTENT_TYPE, "application/json; charset=utf-8")?;
        // Ours times each answer for `Server-Timing`; so does the floor.
        let micros = start.elapsed().as_micros();
        let mut timing = String::with_capacity(48);
        let _ = write!(
            timing,
            "cache;desc=hit, total;dur={}.{:03}",
            micros / 1000,
            micros % 1000
        );
        h.append_header("server-timing", timing)?;
        h.insert_header(header::CONTENT_LENGTH, self.body.len())?;
        let head = session.req_header().method == http::Method::HEAD;
        session
            .write_response_header(Box::new(h), self.body.is_empty())
            .await?;
        if !head && !self.body.is_empty() {
            session
                .write_response_body(Some(self.body.clone()), true)
                .await?;
        }
        Ok(true)
    }

    async fn upstream_peer(&self, _session: &mut Session, _ctx: &mut ()) -> Result<Box<HttpPeer>> {
        Error::e_explain(ErrorType::InternalError, "never proxies")
    }

    fn suppress_error_log(&self, _session: &Session, _ctx: &(), _error: &Error) -> bool {
        true
    }
}

fn main() {
    let mut listen = "127.0.0.1:18190".to_string();
    let mut body_path = None;
    let mut etag = "W/\"00000000000000000000000000000000\"".to_string();
    let mut compression_level = None;
    let mut threads = 2usize;
    let mut h2c = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || {
            args.next().unwrap_or_else(|| {
                eprintln!("{a} needs a value");
                std::process::exit(2)
            })
        };
        match a.as_str() {
            "--listen" => listen = value(),
            "--body" => body_path = Some(value()),
            "--etag" => etag = value(),
            "--compression-level" => compression_level = value().parse().ok(),
            "--threads" => threads = value().parse().unwrap_or(2),
            "--h2c" => h2c = true,
            _ => {
                eprintln!("usage: bare_responder --listen ADDR --body FILE [--etag E] [--compression-level N] [--threads N] [--h2c]");
                std::process::exit(2)
            }
        }
    }
    let Some(body_path) = body_path else {
        eprintln!("--body FILE is required");
        std::process::exit(2)
    };
    let body = Bytes::from(std::fs::read(&body_path).unwrap_or_else(|e| {
        eprintln!("cannot read {body_path}: {e}");
        std::process::exit(2)
    }));
    let conf = ServerConf {
        threads,
        grace_period_seconds: Some(0),
        graceful_shutdown_timeout_seconds: Some(1),
        ..ServerConf::default()
    };
    let mut server = Server::new_with_opt_and_conf(Opt::default(), conf);
    server.bootstrap();
    let mut proxy = pingora_proxy::http_proxy_service(
        &server.configuration,
        Bare {
            body,
            etag,
            compression_level,
        },
    );
    if h2c {
        // Cleartext HTTP/2 with prior knowledge beside HTTP/1.1, as the
        // gateway's `server.h2c`.
        if let Some(app) = proxy.app_logic_mut() {
            let mut options = pingora_core::apps::HttpServerOptions::default();
            options.h2c = true;
            app.server_options = Some(options);
        }
    }
    proxy.add_tcp(&listen);
    server.add_service(proxy);
    server.run_forever();
}

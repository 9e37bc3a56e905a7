//! A host gateway that mounts the board API beside its own routes.
//!
//! The host proxies everything it owns (`/api/health`, `/api/users`, ...) to
//! its upstream; the board API answers `/boards/search` and `/boards/detail`
//! (the prefix comes from `examples/host_gateway.yaml`) from one call at the
//! top of the host's `request_filter`. The host logs through the project's
//! scrubbing logger and asks the board API for its request summaries, so no
//! log line carries a share link's permission id, at any level.

use async_trait::async_trait;
use pingora_core::server::configuration::Opt;
use pingora_core::server::Server;
use pingora_core::upstreams::peer::HttpPeer;
use pingora_core::Result;
use pingora_proxy::{ProxyHttp, Session};
use shared_board_api::logging::Redacting;
use shared_board_api::BoardApi;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;

/// The host: its own upstream, and the board API mounted in front of it.
pub struct HostGateway {
    pub board_api: Arc<BoardApi>,
    pub upstream: SocketAddr,
}

#[async_trait]
impl ProxyHttp for HostGateway {
    type CTX = ();
    fn new_ctx(&self) -> Self::CTX {}

    async fn request_filter(&self, session: &mut Session, _ctx: &mut ()) -> Result<bool> {
        // The board API first: `true` means it wrote the whole response.
        if self.board_api.handle(session).await? {
            return Ok(true);
        }
        // The host's own checks (authentication, its own routes...) go here.
        Ok(false)
    }

    async fn upstream_peer(&self, _session: &mut Session, _ctx: &mut ()) -> Result<Box<HttpPeer>> {
        Ok(Box::new(HttpPeer::new(self.upstream, false, String::new())))
    }

    fn request_summary(&self, session: &Session, _ctx: &()) -> String {
        // Ours come back with the query redacted; the host summarizes its own.
        self.board_api.request_summary(session).unwrap_or_else(|| {
            let req = session.req_header();
            format!("{} {}", req.method, req.uri.path())
        })
    }
}

/// The host's own application, for the example: a loopback HTTP/1.1 responder
/// on an ephemeral port answering `/api/health` and `/api/users`, one request
/// per connection, on its own thread.
///
/// # Errors
/// The listener cannot be bound.
pub fn start_host_upstream() -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream);
            let mut request_line = String::new();
            if reader.read_line(&mut request_line).is_err() {
                continue;
            }
            // Skip the headers; the example's routes take no body.
            let mut line = String::new();
            while reader.read_line(&mut line).map(|n| n > 2).unwrap_or(false) {
                line.clear();
            }
            let target = request_line.split(' ').nth(1).unwrap_or("");
            let path = target.split('?').next().unwrap_or("");
            let (status, body) = match path {
                "/api/health" => ("200 OK", r#"{"status":"ok","from":"host"}"#),
                "/api/users" => ("200 OK", r#"{"users":["ada","grace"],"from":"host"}"#),
                _ => (
                    "404 Not Found",
                    r#"{"error":"no such host route","from":"host"}"#,
                ),
            };
            let reply = format!(
                "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = reader.get_mut().write_all(reply.as_bytes());
        }
    });
    Ok(addr)
}

/// Run it (Milanote itself is the board provider here, as the YAML says):
///
/// ```sh
/// RUST_LOG=debug cargo run --example host_gateway -- -c examples/host_gateway.yaml
/// ```
///
/// Then, on 127.0.0.1:6191:
///
/// ```sh
/// curl -s http://127.0.0.1:6191/api/health                      # the host's, proxied
/// curl -s http://127.0.0.1:6191/api/users                       # the host's, proxied
/// curl -s 'http://127.0.0.1:6191/boards/search?url=https%3A%2F%2Fapp.milanote.com%2F<boardId>%2Fslug%3Fp%3D<permissionId>'
/// curl -si http://127.0.0.1:6191/boards/elsewhere               # the host's (404 from its upstream)
/// ```
///
/// The log shows `GET /boards/search?[redacted]`, never the link.
#[allow(dead_code)]
fn main() {
    // Any `log::Log` works behind the scrubber; env_logger reads RUST_LOG.
    let logger =
        env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).build();
    let level = logger.filter();
    let _ = Redacting::new(logger).install(level);

    let opt = Opt::parse_args();
    // `board_api` sits in the same YAML file as Pingora's own keys.
    let conf = opt
        .conf
        .clone()
        .unwrap_or_else(|| "examples/host_gateway.yaml".into());
    let board_api = BoardApi::from_file(conf.as_ref()).unwrap_or_else(|e| {
        eprintln!("cannot start the board API: {e}");
        std::process::exit(2)
    });
    let upstream = start_host_upstream().unwrap_or_else(|e| {
        eprintln!("cannot start the host's upstream: {e}");
        std::process::exit(2)
    });

    let mut server = Server::new(Some(opt)).unwrap_or_else(|e| {
        eprintln!("invalid Pingora configuration: {e}");
        std::process::exit(2)
    });
    server.bootstrap();
    let host = HostGateway {
        board_api: Arc::new(board_api),
        upstream,
    };
    let mut proxy = pingora_proxy::http_proxy_service(&server.configuration, host);
    proxy.add_tcp("127.0.0.1:6191");
    server.add_service(proxy);
    server.run_forever();
}

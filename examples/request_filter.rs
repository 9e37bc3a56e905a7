//! Embedding, way 2: one call from your own `request_filter`.
//!
//! `BoardApi::handle` answers our routes and returns `Ok(true)`; for any path
//! outside `/api/` it returns `Ok(false)` and your filter goes on as before.
//!
//! Run (your app on 127.0.0.1:8000, e.g. `python3 -m http.server 8000`):
//!   cargo run --example request_filter -- -c examples/host_gateway.yaml
//! Try:
//!   curl -s 'http://127.0.0.1:6191/api/detail?url=https%3A%2F%2Fapp.milanote.com%2F1W3ZZU1Qvua02H%2Fdemo%3Fp%3Dm441fkw92yV&view=standard'
//!   curl -si 'http://127.0.0.1:6191/login'         # 403 from your own check
//!   curl -si 'http://127.0.0.1:6191/index.html'    # proxied to 127.0.0.1:8000

use async_trait::async_trait;
use bytes::Bytes;
use pingora::server::configuration::Opt;
use pingora::server::Server;
use pingora_core::upstreams::peer::HttpPeer;
use pingora_core::Result;
use pingora_proxy::{ProxyHttp, Session};
use shared_board_api::api::BoardApi;
use std::sync::Arc;

pub struct MyGateway {
    boards: Arc<BoardApi>,
}

#[async_trait]
impl ProxyHttp for MyGateway {
    type CTX = ();
    fn new_ctx(&self) -> Self::CTX {}

    async fn request_filter(&self, session: &mut Session, _ctx: &mut ()) -> Result<bool> {
        // Our routes first: true means the response is already written.
        if self.boards.handle(session).await? {
            return Ok(true);
        }
        // Your own logic, unchanged.
        if session.req_header().uri.path().starts_with("/login") {
            let _ = session
                .respond_error_with_body(403, Bytes::from_static(b"no way!"))
                .await;
            return Ok(true);
        }
        Ok(false)
    }

    async fn upstream_peer(&self, _session: &mut Session, _ctx: &mut ()) -> Result<Box<HttpPeer>> {
        Ok(Box::new(HttpPeer::new(
            ("127.0.0.1", 8000),
            false,
            String::new(),
        )))
    }
}

fn main() {
    env_logger::init();
    let opt = Opt::parse_args();
    // The board_api section lives in the same YAML file as Pingora's keys.
    let conf = opt
        .conf
        .clone()
        .unwrap_or_else(|| "examples/host_gateway.yaml".into());
    let boards = Arc::new(BoardApi::from_file(conf.as_ref()).unwrap_or_else(|e| {
        eprintln!("cannot start the board API: {e}");
        std::process::exit(2)
    }));

    let mut server = Server::new(Some(opt)).unwrap_or_else(|e| {
        eprintln!("invalid Pingora configuration: {e}");
        std::process::exit(2)
    });
    server.bootstrap();

    let mut proxy = pingora_proxy::http_proxy_service(&server.configuration, MyGateway { boards });
    proxy.add_tcp("127.0.0.1:6191");
    server.add_service(proxy);
    server.run_forever();
}

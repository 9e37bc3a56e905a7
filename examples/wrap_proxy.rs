//! Embedding, way 1: wrap your existing `ProxyHttp` in `WithBoardApi`.
//!
//! `/api/search` and `/api/detail` (and any other `/api/...`, as 404) are
//! answered by shared-board-api; every other request, and every other phase,
//! goes to your proxy unchanged.
//!
//! Run (your app on 127.0.0.1:8000, e.g. `python3 -m http.server 8000`):
//!   cargo run --example wrap_proxy -- -c conf/embedded.yaml
//! Try:
//!   curl -s 'http://127.0.0.1:6191/api/search?url=https%3A%2F%2Fapp.milanote.com%2F1W3ZZU1Qvua02H%2Fdemo%3Fp%3Dm441fkw92yV'
//!   curl -si 'http://127.0.0.1:6191/api/nope'      # 404 NOT_FOUND, ours
//!   curl -si 'http://127.0.0.1:6191/index.html'    # proxied to 127.0.0.1:8000

use async_trait::async_trait;
use pingora::server::configuration::Opt;
use pingora::server::Server;
use pingora_core::upstreams::peer::HttpPeer;
use pingora_core::Result;
use pingora_http::ResponseHeader;
use pingora_proxy::{ProxyHttp, Session};
use shared_board_api::api::proxy::WithBoardApi;
use shared_board_api::api::BoardApi;
use std::sync::Arc;

/// Your gateway as it was: proxies everything to a local app.
pub struct MyGateway;

#[async_trait]
impl ProxyHttp for MyGateway {
    type CTX = ();
    fn new_ctx(&self) -> Self::CTX {}

    async fn upstream_peer(&self, _session: &mut Session, _ctx: &mut ()) -> Result<Box<HttpPeer>> {
        Ok(Box::new(HttpPeer::new(
            ("127.0.0.1", 8000),
            false,
            String::new(),
        )))
    }

    async fn response_filter(
        &self,
        _session: &mut Session,
        upstream_response: &mut ResponseHeader,
        _ctx: &mut (),
    ) -> Result<()> {
        upstream_response.insert_header("Server", "MyGateway")?;
        Ok(())
    }
}

fn main() {
    env_logger::init();
    let opt = Opt::parse_args();
    // The board_api section lives in the same YAML file as Pingora's keys.
    let conf = opt
        .conf
        .clone()
        .unwrap_or_else(|| "conf/embedded.yaml".into());
    let api = Arc::new(BoardApi::from_file(conf.as_ref()).unwrap_or_else(|e| {
        eprintln!("cannot start the board API: {e}");
        std::process::exit(2)
    }));

    let mut server = Server::new(Some(opt)).unwrap_or_else(|e| {
        eprintln!("invalid Pingora configuration: {e}");
        std::process::exit(2)
    });
    server.bootstrap();

    let mut proxy =
        pingora_proxy::http_proxy_service(&server.configuration, WithBoardApi::new(api, MyGateway));
    proxy.add_tcp("127.0.0.1:6191");
    server.add_service(proxy);
    server.run_forever();
}

//! Read a shared [Milanote](https://milanote.com) board as JSON at the edge,
//! on Cloudflare's Pingora.
//!
//! [`BoardApi`] answers `GET {prefix}/search` and `GET {prefix}/detail?url=<share
//! link>` (and `POST {prefix}/board` with the link in a JSON body): it
//! fetches the board from the provider (cached and coalesced), normalizes
//! and sanitizes it, keeps the fields the caller selected and answers JSON
//! with a weak ETag, `304`s, cache headers and CORS. `GET {prefix}/canvas`
//! answers the same board as a JSON Canvas file. It also takes
//! `{prefix}/mcp`, the board for agents, unless `board_api.mcp.enabled` is
//! false; every other path is the host's.
//!
//! # Embedding in a Pingora gateway
//!
//! One call at the top of the host's `request_filter`, and the redacted
//! summary in its `request_summary`:
//!
//! ```no_run
//! use async_trait::async_trait;
//! use pingora_core::{upstreams::peer::HttpPeer, Result};
//! use pingora_proxy::{ProxyHttp, Session};
//! use shared_board_api::BoardApi;
//!
//! struct Host { boards: BoardApi }
//!
//! #[async_trait]
//! impl ProxyHttp for Host {
//!     type CTX = ();
//!     fn new_ctx(&self) {}
//!     async fn request_filter(&self, s: &mut Session, _: &mut ()) -> Result<bool> {
//!         self.boards.handle(s).await // Ok(false): the host's path, go on
//!     }
//!     async fn upstream_peer(&self, _: &mut Session, _: &mut ()) -> Result<Box<HttpPeer>> {
//!         Ok(Box::new(HttpPeer::new(("127.0.0.1", 8000), false, String::new())))
//!     }
//!     fn request_summary(&self, s: &Session, _: &()) -> String {
//!         self.boards.request_summary(s).unwrap_or_else(|| s.req_header().uri.path().into())
//!     }
//! }
//! let boards = BoardApi::from_file("examples/host_gateway.yaml".as_ref())?;
//! # let _ = Host { boards };
//! # Ok::<(), shared_board_api::config::ConfigError>(())
//! ```
//!
//! `examples/host_gateway.rs` is the whole program. Install
//! [`logging::Redacting`] around the host's logger so that no record, ours or
//! Pingora's, carries a share link's permission id.
//!
//! # Hosts without a Pingora `Session`
//!
//! A gateway that lets a plugin answer with a response value instead of
//! writing to the `Session` itself (pingap is one; `pingap-plugin/` in this
//! repository is that plugin) calls [`BoardApi::respond`] with the request's
//! [`RequestParts`] and sends the [`ApiResponse`] it returns; `None` means
//! the path is the host's. [`BoardApi::handle`] is built on it.
//!
//! # Standalone
//!
//! [`host::service::add_services`] adds the API (and the optional Prometheus
//! exporter) to a Pingora `Server` from [`config::Settings`]; the
//! `shared-board-api` binary is that plus a command line.
//!
//! # Features
//!
//! `demo` (default): the binary's command line and logger
//! ([`logging::init`]) and `demo::SampleUpstream`, a loopback stand-in for the
//! provider with bundled sample boards. A host builds with
//! `default-features = false`.

mod api;
#[cfg(feature = "demo")]
pub mod capture;
mod client_addr;
mod clock;
pub mod config;
#[cfg(feature = "demo")]
pub mod demo;
mod document;
mod encoding;
mod governance;
pub mod host;
mod log_throttle;
pub mod logging;
mod metrics;
#[cfg(feature = "otlp")]
pub mod otlp;
mod pipeline;
mod provider;
mod random;
mod select;
mod store;
#[cfg(test)]
mod test_redis;
pub mod trace;
mod watch;

pub use api::respond::{ApiResponse, Served};
pub use api::{BoardApi, RequestParts};
pub use client_addr::{Cidr, TrustedProxies};
pub use host::Answered;

/// Not a public interface: the crate's internal modules, re-exported for its
/// own benches, fuzz targets and tests, which turn on the `internals`
/// feature. Anything here can change in any release without notice.
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod internals {
    /// The request contract (`BoardApi`'s parts).
    pub mod api {
        pub use crate::api::*;
    }
    /// The board store: process cache, coalescing, loads.
    pub mod store {
        pub use crate::store::*;
    }
    /// Content codings of cached renders.
    pub mod encoding {
        pub use crate::encoding::*;
    }
    /// Work pool, cold-load admission, limits.
    pub mod governance {
        pub use crate::governance::*;
    }
    /// The BoardDocument model, sanitizer and schema.
    pub mod document {
        pub use crate::document::*;
    }
    /// Prometheus counters.
    pub mod metrics {
        pub use crate::metrics::*;
    }
    /// Fetch, normalize, sanitize; select and render.
    pub mod pipeline {
        pub use crate::pipeline::*;
    }
    /// The provider client and normalizer.
    pub mod provider {
        pub use crate::provider::*;
    }
    /// Field selection.
    pub mod select {
        pub use crate::select::*;
    }
    /// Watches: their outbox, signatures and payloads.
    pub mod watch {
        pub use crate::watch::*;
    }
}

//! shared-board-api: read a shared Milanote board as JSON at the edge, on Pingora.

pub mod api;
pub mod cache;
pub mod config;
#[cfg(feature = "demo")]
pub mod demo;
pub mod document;
pub mod encoding;
pub mod governance;
pub mod host;
pub mod logging;
pub mod metrics;
pub mod pipeline;
pub mod provider;
pub mod select;

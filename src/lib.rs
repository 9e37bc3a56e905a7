//! shared-board-api: read a shared Milanote board as JSON at the edge, on Pingora.

pub mod api;
pub mod cache;
pub mod config;
pub mod document;
pub mod logging;
pub mod metrics;
mod playground;
pub mod provider;
pub mod select;
pub mod server;

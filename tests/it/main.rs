//! Every integration test, in one binary: each file here is a module, and
//! `common` holds what they share (servers on loopback, the sample
//! upstream, Redis, requests). One binary links the library, Pingora and
//! their dependencies once instead of once per file.
//!
//! Run one file's tests with `cargo test --test it <module>::`, one test
//! with its path (`cargo test --test it fleet::a_fleet_loads`).

mod common;

mod access_log;
mod capture_replay;
mod captured_shape;
mod changes;
mod cli;
mod client_log_lines;
mod connections;
mod deploy;
mod docs;
mod durability;
mod embedding;
mod feeds;
mod fleet;
mod fleet_hostile;
mod gateway_api;
mod gateway_completeness;
mod gateway_edge;
mod gateway_markdown;
mod gateway_upstream;
mod governance;
mod host_example;
mod http2;
mod live;
mod live_fleet;
mod log_redaction;
mod markdown;
mod mcp;
mod mcp_sdk;
mod metrics_at_start;
mod normalize_fixtures;
mod normalize_more_types;
mod normalize_props;
mod normalize_types;
mod openapi;
mod outage_log;
mod pingap;
mod pipeline_differential;
mod playground;
mod probes;
mod provider_client;
mod provider_faults;
mod reload;
mod respond;
mod select_props;
mod select_semantics;
mod server_timing;
mod state_file;
mod tls_listener;
mod traces;
mod trusted_proxies;
mod upgrade;
mod watch;
mod watch_fleet;

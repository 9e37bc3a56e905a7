//! What a read of the store ends with: the error a board or a render
//! could not be produced for, the level that answered, and where a load's
//! time went. The API maps them to its answers, `Server-Timing` and spans.

use crate::provider::error::FetchError;
use crate::trace::spans;
use std::time::Duration;

/// Why a board or a render could not be produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadError {
    /// The provider's answer (remembered for `error_ttl`).
    Fetch(FetchError),
    /// The cold-load queue is full.
    Overloaded,
    /// A bug (a job panicked, a body did not serialize); the text is for
    /// the log.
    Internal(String),
}

impl LoadError {
    /// What kind of failure, as a span records it (never its text).
    pub fn kind(&self) -> &'static str {
        match self {
            LoadError::Fetch(FetchError::AccessDenied) => "access_denied",
            LoadError::Fetch(FetchError::NotFound) => "not_found",
            LoadError::Fetch(FetchError::Upstream(_)) => "upstream",
            LoadError::Fetch(FetchError::Challenged) => "challenged",
            LoadError::Fetch(FetchError::Timeout) => "timeout",
            LoadError::Fetch(FetchError::OverBudget) => "over_budget",
            LoadError::Overloaded => "overloaded",
            LoadError::Internal(_) => "internal",
        }
    }
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Fetch(e) => e.fmt(f),
            LoadError::Overloaded => f.write_str("too many cold loads waiting (503 OVERLOADED)"),
            LoadError::Internal(text) => write!(f, "internal error: {text}"),
        }
    }
}

/// Which level answered a request for a board.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The process cache.
    Hit,
    /// The fleet tier: another node (or this one, earlier) loaded it.
    Shared,
    /// A load already in flight for the same board, joined.
    Coalesced,
    /// Loaded from the provider for this request.
    Miss,
}

impl Source {
    /// The name `Server-Timing` and the access log use.
    pub fn name(self) -> &'static str {
        match self {
            Source::Hit => "hit",
            Source::Shared => "shared",
            Source::Coalesced => "coalesced",
            Source::Miss => "miss",
        }
    }
}

/// Where a load's time went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoadTiming {
    /// Waiting for the provider (token, root board, nested boards).
    pub upstream: Duration,
    /// Normalizing and sanitizing on the work pool.
    pub build: Duration,
}

/// Records how a load ended on its span.
pub(super) fn loaded(outcome: &Result<super::Doc, LoadError>) {
    match outcome {
        Ok(doc) => spans::loaded(
            Some(if doc.from_tier { "shared" } else { "provider" }),
            "ok",
        ),
        Err(e) => spans::loaded(None, e.kind()),
    }
}

//! A failed load as the API answers and logs it: [`api_error`] maps a
//! store's [`LoadError`] onto the catalogue, [`log_failure`] writes it at
//! the level of whose fault it is. Used by every read: the endpoints,
//! `/changes` and the MCP tools.

use super::error::ApiError;
use crate::provider::error::FetchError;
use crate::store::{LoadError, Source};
use std::time::Duration;

/// A failed load in the log, in words, at the level of whose it is: the
/// client's (a denied or missing board: DEBUG), the provider's (5xx,
/// timeouts, malformed answers: WARN), ours (a bug: ERROR). Overload is ours
/// by design, not a fault: WARN, since an operator sizes the limits.
///
/// Only the request that met the failure logs it at that level: one WARN
/// per failed load. Requests that joined that load, or got the failure
/// from the error cache during `error_ttl_seconds`, log it at DEBUG, so an
/// outage is one line per failure, not one per request.
pub(crate) fn log_failure(board_id: &str, after: Duration, e: &LoadError, source: Source) {
    let ms = after.as_secs_f64() * 1000.0;
    if source != Source::Miss {
        log::debug!(
            "board {board_id}: {e} (again, {} in {ms:.1} ms)",
            source.name()
        );
        return;
    }
    match e {
        LoadError::Fetch(FetchError::AccessDenied | FetchError::NotFound) => {
            log::debug!("board {board_id} refused after {ms:.0} ms: {e}")
        }
        LoadError::Fetch(_) | LoadError::Overloaded => {
            log::warn!("board {board_id} failed after {ms:.0} ms: {e}")
        }
        LoadError::Internal(_) => log::error!("board {board_id} failed after {ms:.0} ms: {e}"),
    }
}

/// How long a client refused with `503 OVERLOADED` should wait.
const OVERLOADED_RETRY_AFTER: Duration = Duration::from_secs(1);

pub(crate) fn api_error(e: LoadError) -> ApiError {
    match e {
        LoadError::Fetch(e) => ApiError::from(&e),
        LoadError::Overloaded => ApiError::Overloaded {
            retry_after: OVERLOADED_RETRY_AFTER,
        },
        LoadError::Internal(_) => ApiError::Internal,
    }
}

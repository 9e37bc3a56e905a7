//! `ApiError`: everything the API can answer with besides success, mapped to
//! status, code and message in exactly one place, so every layer below speaks its own error type.

use crate::provider::error::FetchError;
use crate::select::SelectorError;
use http::StatusCode;
use std::time::Duration;

/// One error the API answers with. Client mistakes carry a message for the
/// caller; internal and upstream detail goes to the log only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiError {
    /// Steps 3 to 5: query shape, combination, view. `field` names the
    /// parameter when exactly one caused it.
    InvalidRequest {
        field: Option<String>,
        message: String,
    },
    /// Step 6: a selector list; `field` is `include` or `exclude`; `hint`
    /// the nearest valid selector, when one is near.
    InvalidFieldSelector {
        field: &'static str,
        message: String,
        hint: Option<String>,
    },
    /// Step 7: the share link. The message never echoes the link.
    InvalidShareUrl {
        message: &'static str,
    },
    BoardAccessDenied,
    BoardNotFound,
    /// Unknown route.
    NotFound,
    /// A method other than `GET`, `HEAD` or `OPTIONS` on a read endpoint.
    MethodNotAllowed,
    /// `/changes`: `since` is a well-formed version that is not kept for
    /// this board (expired, evicted, never seen).
    VersionNotKept,
    /// A method other than `POST` or `OPTIONS` on `{prefix}/board`.
    PostOnly,
    /// A `POST {prefix}/board` body over its 32 KiB limit.
    BodyTooLarge,
    /// A `POST {prefix}/board` body that is not `application/json`.
    UnsupportedMediaType,
    RateLimited {
        retry_after: Duration,
    },
    UpstreamError,
    /// The provider's bot wall (AWS WAF) asked for a challenge or a
    /// CAPTCHA instead of answering: a `502` whose message says so, so an
    /// operator can tell it from a broken answer.
    UpstreamChallenged,
    UpstreamTimeout,
    /// Too many cold loads at once: the queue for them is full.
    Overloaded {
        retry_after: Duration,
    },
    Internal,
}

impl ApiError {
    pub fn invalid_request(field: &str, message: impl Into<String>) -> Self {
        ApiError::InvalidRequest {
            field: Some(field.to_string()),
            message: message.into(),
        }
    }

    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::InvalidRequest { .. }
            | ApiError::InvalidFieldSelector { .. }
            | ApiError::InvalidShareUrl { .. } => StatusCode::BAD_REQUEST,
            ApiError::BoardAccessDenied => StatusCode::FORBIDDEN,
            ApiError::BoardNotFound | ApiError::NotFound => StatusCode::NOT_FOUND,
            ApiError::VersionNotKept => StatusCode::GONE,
            ApiError::MethodNotAllowed | ApiError::PostOnly => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::BodyTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::UpstreamError | ApiError::UpstreamChallenged => StatusCode::BAD_GATEWAY,
            ApiError::UpstreamTimeout => StatusCode::GATEWAY_TIMEOUT,
            ApiError::Overloaded { .. } => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            ApiError::InvalidRequest { .. } => "INVALID_REQUEST",
            ApiError::InvalidFieldSelector { .. } => "INVALID_FIELD_SELECTOR",
            ApiError::InvalidShareUrl { .. } => "INVALID_SHARE_URL",
            ApiError::BoardAccessDenied => "BOARD_ACCESS_DENIED",
            ApiError::BoardNotFound => "BOARD_NOT_FOUND",
            ApiError::NotFound => "NOT_FOUND",
            ApiError::VersionNotKept => "VERSION_NOT_KEPT",
            ApiError::MethodNotAllowed | ApiError::PostOnly => "METHOD_NOT_ALLOWED",
            ApiError::BodyTooLarge => "PAYLOAD_TOO_LARGE",
            ApiError::UnsupportedMediaType => "UNSUPPORTED_MEDIA_TYPE",
            ApiError::RateLimited { .. } => "RATE_LIMITED",
            ApiError::UpstreamError | ApiError::UpstreamChallenged => "UPSTREAM_ERROR",
            ApiError::UpstreamTimeout => "UPSTREAM_TIMEOUT",
            ApiError::Overloaded { .. } => "OVERLOADED",
            ApiError::Internal => "INTERNAL_ERROR",
        }
    }

    pub fn message(&self) -> &str {
        match self {
            ApiError::BodyTooLarge => "The request body is over its limit of 32768 bytes",
            ApiError::InvalidRequest { message, .. }
            | ApiError::InvalidFieldSelector { message, .. } => message,
            ApiError::InvalidShareUrl { message } => message,
            ApiError::BoardAccessDenied => {
                "The share link does not grant access to this board (revoked, password protected or private)"
            }
            ApiError::BoardNotFound => "The board does not exist or was deleted",
            ApiError::NotFound => "No such route",
            ApiError::MethodNotAllowed => "Method not allowed; use GET, HEAD or OPTIONS",
            ApiError::VersionNotKept => {
                "That version of the board is not kept (expired, evicted or never seen); read the board whole and start again from its Board-Version"
            }
            ApiError::PostOnly => "Method not allowed; POST a JSON body to this endpoint",
            ApiError::UnsupportedMediaType => "The request body must be application/json",
            ApiError::RateLimited { .. } => "Too many requests; retry later",
            ApiError::UpstreamError => "The board provider failed or sent an unusable response",
            ApiError::UpstreamChallenged => {
                "Milanote asked for a bot challenge (its firewall) instead of sending the board; retry later"
            }
            ApiError::UpstreamTimeout => "The board provider did not answer in time",
            ApiError::Overloaded { .. } => "Too many boards are loading right now; retry shortly",
            ApiError::Internal => "Internal error",
        }
    }

    /// A suggestion for the caller beside the message: the nearest valid
    /// selector of an unknown one.
    pub fn hint(&self) -> Option<&str> {
        match self {
            ApiError::InvalidFieldSelector { hint, .. } => hint.as_deref(),
            _ => None,
        }
    }

    /// The offending query parameter, when one caused the error.
    pub fn field(&self) -> Option<&str> {
        match self {
            ApiError::InvalidRequest { field, .. } => field.as_deref(),
            ApiError::InvalidFieldSelector { field, .. } => Some(field),
            ApiError::InvalidShareUrl { .. } => Some("url"),
            ApiError::VersionNotKept => Some("since"),
            _ => None,
        }
    }
}

impl From<SelectorError> for ApiError {
    fn from(e: SelectorError) -> Self {
        ApiError::InvalidFieldSelector {
            field: e.param.as_str(),
            message: e.message,
            hint: e.hint,
        }
    }
}

impl From<&FetchError> for ApiError {
    fn from(e: &FetchError) -> Self {
        match e {
            FetchError::AccessDenied => ApiError::BoardAccessDenied,
            FetchError::NotFound => ApiError::BoardNotFound,
            FetchError::Upstream(_) => ApiError::UpstreamError,
            FetchError::Challenged => ApiError::UpstreamChallenged,
            FetchError::Timeout => ApiError::UpstreamTimeout,
            // Our own pacing toward the provider: as busy as a full queue.
            FetchError::OverBudget => ApiError::Overloaded {
                retry_after: std::time::Duration::from_secs(1),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogue() {
        let cases: [(ApiError, u16, &str, Option<&str>); 17] = [
            (
                ApiError::VersionNotKept,
                410,
                "VERSION_NOT_KEPT",
                Some("since"),
            ),
            (
                ApiError::invalid_request("view", "x"),
                400,
                "INVALID_REQUEST",
                Some("view"),
            ),
            (
                ApiError::InvalidFieldSelector {
                    field: "exclude",
                    message: "m".into(),
                    hint: None,
                },
                400,
                "INVALID_FIELD_SELECTOR",
                Some("exclude"),
            ),
            (
                ApiError::InvalidShareUrl { message: "m" },
                400,
                "INVALID_SHARE_URL",
                Some("url"),
            ),
            (
                ApiError::BoardAccessDenied,
                403,
                "BOARD_ACCESS_DENIED",
                None,
            ),
            (ApiError::BoardNotFound, 404, "BOARD_NOT_FOUND", None),
            (ApiError::NotFound, 404, "NOT_FOUND", None),
            (ApiError::MethodNotAllowed, 405, "METHOD_NOT_ALLOWED", None),
            (
                ApiError::RateLimited {
                    retry_after: Duration::from_secs(1),
                },
                429,
                "RATE_LIMITED",
                None,
            ),
            (ApiError::UpstreamError, 502, "UPSTREAM_ERROR", None),
            (ApiError::UpstreamChallenged, 502, "UPSTREAM_ERROR", None),
            (ApiError::PostOnly, 405, "METHOD_NOT_ALLOWED", None),
            (ApiError::BodyTooLarge, 413, "PAYLOAD_TOO_LARGE", None),
            (
                ApiError::UnsupportedMediaType,
                415,
                "UNSUPPORTED_MEDIA_TYPE",
                None,
            ),
            (ApiError::UpstreamTimeout, 504, "UPSTREAM_TIMEOUT", None),
            (
                ApiError::Overloaded {
                    retry_after: Duration::from_secs(1),
                },
                503,
                "OVERLOADED",
                None,
            ),
            (ApiError::Internal, 500, "INTERNAL_ERROR", None),
        ];
        for (err, status, code, field) in cases {
            assert_eq!(err.status().as_u16(), status, "{code}");
            assert_eq!(err.code(), code);
            assert_eq!(err.field(), field, "{code}");
            assert!(!err.message().is_empty(), "{code}");
        }
    }

    #[test]
    fn fetch_errors_map_to_the_catalogue() {
        let cases = [
            (FetchError::AccessDenied, 403, "BOARD_ACCESS_DENIED"),
            (FetchError::NotFound, 404, "BOARD_NOT_FOUND"),
            (FetchError::Upstream(String::new()), 502, "UPSTREAM_ERROR"),
            (FetchError::Timeout, 504, "UPSTREAM_TIMEOUT"),
            (FetchError::Challenged, 502, "UPSTREAM_ERROR"),
        ];
        for (fetch, status, code) in cases {
            let e = ApiError::from(&fetch);
            assert_eq!(e.status().as_u16(), status, "{fetch:?}");
            assert_eq!(e.code(), code, "{fetch:?}");
            assert_eq!(e.field(), None, "{fetch:?}");
        }
    }

    #[test]
    fn fetch_errors_never_carry_upstream_text() {
        let e = ApiError::from(&FetchError::Upstream("token=abc p=secret".into()));
        assert_eq!(e, ApiError::UpstreamError);
        assert!(!e.message().contains("secret"));
    }

    #[test]
    fn a_bot_challenge_says_so_and_differs_from_a_broken_answer() {
        let challenged = ApiError::from(&FetchError::Challenged);
        assert!(challenged.message().contains("bot challenge"));
        assert_ne!(challenged.message(), ApiError::UpstreamError.message());
    }
}

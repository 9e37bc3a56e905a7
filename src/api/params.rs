//! Steps 3 to 7 of request checking (query shape, combination, view, selectors, share link), in that order so the first error a client sees is the same every time: the query string ->
//! a validated [`BoardRequest`] (share link + compiled selection), or the first
//! [`ApiError`] in the documented order.

use super::error::ApiError;
use super::route::Endpoint;
use super::share_link::{self, ShareLink};
use crate::select::{Selection, View};
use std::borrow::Cow;

/// Longest `url` value accepted, in characters, after trimming whitespace.
pub const MAX_URL_CHARS: usize = 2048;

/// A request that passed every check before the fetch.
#[derive(Debug)]
pub struct BoardRequest {
    pub link: ShareLink,
    pub selection: Selection,
}

/// The four parameters, each seen at most once, still raw.
#[derive(Default)]
struct RawParams<'q> {
    url: Option<Cow<'q, str>>,
    view: Option<Cow<'q, str>>,
    include: Option<Cow<'q, str>>,
    exclude: Option<Cow<'q, str>>,
}

/// Validates the query of a GET/HEAD to `endpoint`.
///
/// # Errors
/// The first failing step: `INVALID_REQUEST` (shape, combination, view),
/// `INVALID_FIELD_SELECTOR`, then `INVALID_SHARE_URL`.
pub fn parse(
    endpoint: Endpoint,
    query: Option<&str>,
    share_host: &str,
) -> Result<BoardRequest, ApiError> {
    validate(endpoint, shape(query.unwrap_or(""))?, share_host)
}

/// The parameters of a request made some other way than a query string (an
/// MCP tool's arguments), each present at most once, checked exactly as a
/// query's from step 3's `url` checks on.
///
/// # Errors
/// As [`parse`], after the query's shape.
pub fn from_values(
    endpoint: Endpoint,
    values: [Option<&str>; 4],
    share_host: &str,
) -> Result<BoardRequest, ApiError> {
    let [url, view, include, exclude] = values.map(|v| v.map(Cow::Borrowed));
    let raw = RawParams {
        url,
        view,
        include,
        exclude,
    };
    validate(endpoint, raw, share_host)
}

/// Step 3, continued: `url` present, 1 to [`MAX_URL_CHARS`] characters
/// after trimming; the trimmed value. Every endpoint that takes a share
/// link checks it so.
///
/// # Errors
/// `INVALID_REQUEST` (`field: url`).
pub(super) fn url_value(url: Option<&str>) -> Result<&str, ApiError> {
    let Some(url) = url.map(str::trim) else {
        return Err(ApiError::invalid_request("url", "url is required"));
    };
    if url.is_empty() {
        return Err(ApiError::invalid_request("url", "url must not be empty"));
    }
    if url.chars().count() > MAX_URL_CHARS {
        return Err(ApiError::invalid_request(
            "url",
            format!("url must be at most {MAX_URL_CHARS} characters"),
        ));
    }
    Ok(url)
}

/// Steps 3 (the `url` value) to 7.
fn validate(
    endpoint: Endpoint,
    raw: RawParams<'_>,
    share_host: &str,
) -> Result<BoardRequest, ApiError> {
    let url = url_value(raw.url.as_deref())?;
    // The canvas is the whole board: no view or selector applies to it.
    if endpoint == Endpoint::Canvas {
        let named = [
            ("view", &raw.view),
            ("include", &raw.include),
            ("exclude", &raw.exclude),
        ];
        if let Some((name, _)) = named.iter().find(|(_, v)| v.is_some()) {
            return Err(ApiError::invalid_request(
                name,
                "the canvas is the whole board: it takes url only",
            ));
        }
    }
    // Step 4: combinations that are refused (include with exclude or view); no priority between them.
    if raw.include.is_some() && raw.exclude.is_some() {
        return Err(combination("include and exclude cannot be combined"));
    }
    if raw.view.is_some() && raw.include.is_some() {
        return Err(combination("view and include cannot be combined"));
    }
    // Step 5: the view.
    let view = match raw.view.as_deref() {
        None => endpoint.default_view(),
        Some(v) => View::parse(v).ok_or_else(|| {
            ApiError::invalid_request("view", "view must be one of compact, standard, full")
        })?,
    };
    // Step 6: selectors.
    let selection = match (raw.include.as_deref(), raw.exclude.as_deref()) {
        (Some(list), _) => Selection::include(list)?,
        (None, Some(list)) => Selection::exclude(view, list)?,
        (None, None) => Selection::view(view),
    };
    // Step 7: the share link.
    let link = share_link::parse(url, share_host).map_err(|e| ApiError::InvalidShareUrl {
        message: e.message(),
    })?;
    Ok(BoardRequest { link, selection })
}

/// Step 3: `application/x-www-form-urlencoded` decoding; unknown and repeated
/// parameters.
fn shape(query: &str) -> Result<RawParams<'_>, ApiError> {
    let pairs: Vec<_> = url::form_urlencoded::parse(query.as_bytes()).collect();
    let mut raw = RawParams::default();
    for (key, value) in &pairs {
        let slot = match key.as_ref() {
            "url" => &mut raw.url,
            "view" => &mut raw.view,
            "include" => &mut raw.include,
            "exclude" => &mut raw.exclude,
            other => return Err(unknown_parameter(other, &pairs)),
        };
        if slot.is_some() {
            return Err(ApiError::invalid_request(
                key,
                format!("{key} must appear at most once"),
            ));
        }
        *slot = Some(value.clone());
    }
    Ok(raw)
}

/// `INVALID_REQUEST` for an unknown parameter, naming it in `error.field`
/// only when that cannot leak a secret: a short plain name that is not the
/// permission id of the request's own share link (a link pasted as a
/// parameter name, or `?<permission>`, is never echoed).
pub(super) fn unknown_parameter(name: &str, pairs: &[(Cow<'_, str>, Cow<'_, str>)]) -> ApiError {
    let links = pairs.iter().filter(|(k, _)| k == "url").map(|(_, v)| &**v);
    ApiError::InvalidRequest {
        field: echoable(name, links).then(|| name.to_string()),
        message: "unknown query parameter; allowed: url, view, include, exclude".into(),
    }
}

/// Whether an unknown parameter's `name` may be echoed in `error.field`: a
/// short plain name that is not the permission id of any of the request's
/// share `links` (a link pasted as a name, or `?<permission>`, never is).
pub(super) fn echoable<'a>(name: &str, links: impl Iterator<Item = &'a str>) -> bool {
    let plain = (1..=64).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    plain
        && !links
            .filter_map(|v| url::Url::parse(v.trim()).ok())
            .any(|link| link.query_pairs().any(|(k, v)| k == "p" && v == name))
}

fn combination(message: &str) -> ApiError {
    ApiError::InvalidRequest {
        field: None,
        message: message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOST: &str = "app.milanote.com";
    const LINK: &str =
        "url=https%3A%2F%2Fapp.milanote.com%2F1W3ZZU1Qvua02H%2Fdragon-tree%3Fp%3Dm441fkw92yV";

    fn err(q: &str) -> (String, Option<String>) {
        let e = parse(Endpoint::Search, Some(q), HOST).expect_err(q);
        (e.code().to_string(), e.field().map(str::to_string))
    }

    fn ok(endpoint: Endpoint, q: &str) -> BoardRequest {
        parse(endpoint, Some(q), HOST).unwrap_or_else(|e| panic!("{q}: {e:?}"))
    }

    #[test]
    fn rejections_in_pipeline_order() {
        let too_long = format!("url={}", "a".repeat(2049));
        let at_limit_bad_link = format!("url={}", "a".repeat(2048));
        let cases: Vec<(String, &str, Option<&str>)> = vec![
            ("".into(), "INVALID_REQUEST", Some("url")),
            ("view=full".into(), "INVALID_REQUEST", Some("url")),
            ("url=".into(), "INVALID_REQUEST", Some("url")),
            ("url=+++".into(), "INVALID_REQUEST", Some("url")),
            ("url=%20%09".into(), "INVALID_REQUEST", Some("url")),
            (too_long, "INVALID_REQUEST", Some("url")),
            (format!("{LINK}&foo=1"), "INVALID_REQUEST", Some("foo")),
            (format!("foo=1&{LINK}"), "INVALID_REQUEST", Some("foo")),
            (format!("{LINK}&URL=x"), "INVALID_REQUEST", Some("URL")),
            (format!("{LINK}&{LINK}"), "INVALID_REQUEST", Some("url")),
            (
                format!("{LINK}&view=full&view=full"),
                "INVALID_REQUEST",
                Some("view"),
            ),
            (
                format!("{LINK}&include=a&include=b"),
                "INVALID_REQUEST",
                Some("include"),
            ),
            (
                format!("{LINK}&exclude=a&exclude=b"),
                "INVALID_REQUEST",
                Some("exclude"),
            ),
            // Unknown parameters come before combinations and views.
            (
                format!("{LINK}&view=bogus&x=1"),
                "INVALID_REQUEST",
                Some("x"),
            ),
            (
                format!("{LINK}&include=version&exclude=version"),
                "INVALID_REQUEST",
                None,
            ),
            (
                format!("{LINK}&view=full&include=version"),
                "INVALID_REQUEST",
                None,
            ),
            (
                format!("{LINK}&view=full&include=version&exclude=board"),
                "INVALID_REQUEST",
                None,
            ),
            // Combinations come before the view's value.
            (
                format!("{LINK}&view=bogus&include=version"),
                "INVALID_REQUEST",
                None,
            ),
            (
                format!("{LINK}&view=bogus"),
                "INVALID_REQUEST",
                Some("view"),
            ),
            (format!("{LINK}&view="), "INVALID_REQUEST", Some("view")),
            (format!("{LINK}&view=FULL"), "INVALID_REQUEST", Some("view")),
            // Views come before selectors, selectors before the link.
            (
                format!("{LINK}&view=bogus&exclude="),
                "INVALID_REQUEST",
                Some("view"),
            ),
            (
                "url=bad&include=".into(),
                "INVALID_FIELD_SELECTOR",
                Some("include"),
            ),
            (
                "url=bad&exclude=".into(),
                "INVALID_FIELD_SELECTOR",
                Some("exclude"),
            ),
            ("url=bad".into(), "INVALID_SHARE_URL", Some("url")),
            (at_limit_bad_link, "INVALID_SHARE_URL", Some("url")),
        ];
        for (q, code, field) in cases {
            assert_eq!(
                err(&q),
                (code.to_string(), field.map(str::to_string)),
                "{q}"
            );
        }
    }

    #[test]
    fn unknown_names_that_could_carry_secrets_are_not_echoed() {
        let link = "https://app.milanote.com/1W3ZZU1Qvua02H/x?p=m441fkw92yV";
        let cases = [
            // The link itself as a parameter name.
            (
                url::form_urlencoded::byte_serialize(link.as_bytes()).collect::<String>(),
                None,
            ),
            // The permission id of the request's own link.
            (format!("{LINK}&m441fkw92yV"), None),
            (format!("{LINK}&m441fkw92yV=1"), None),
            // Ordinary mistakes are named.
            (format!("{LINK}&callback=x"), Some("callback")),
            (format!("{LINK}&p=m441fkw92yV"), Some("p")),
            (format!("{LINK}&{}=1", "a".repeat(65)), None),
        ];
        for (q, field) in cases {
            let e = parse(Endpoint::Search, Some(&q), HOST).expect_err(&q);
            assert_eq!((e.code(), e.field()), ("INVALID_REQUEST", field), "{q}");
            assert!(!e.message().contains("m441fkw92yV"));
        }
    }

    #[test]
    fn accepted_shapes() {
        let r = ok(Endpoint::Search, LINK);
        assert_eq!(r.link.board_id, "1W3ZZU1Qvua02H");
        assert_eq!(r.link.permission_id, "m441fkw92yV");
        // The url is trimmed, and `+` decodes to a space.
        let r = ok(Endpoint::Detail, &format!("url=++{}++", &LINK[4..]));
        assert_eq!(r.link.board_id, "1W3ZZU1Qvua02H");
        ok(Endpoint::Search, &format!("{LINK}&view=full"));
        ok(
            Endpoint::Detail,
            &format!("{LINK}&view=compact&exclude=version"),
        );
        ok(Endpoint::Detail, &format!("{LINK}&view=standard"));
    }

    #[test]
    fn selections_follow_the_endpoint_default() {
        let search = ok(Endpoint::Search, LINK).selection.canonical();
        let detail = ok(Endpoint::Detail, LINK).selection.canonical();
        let search_full = ok(Endpoint::Search, &format!("{LINK}&view=full"))
            .selection
            .canonical();
        assert_ne!(search, detail);
        assert_eq!(search_full, detail);
    }
}

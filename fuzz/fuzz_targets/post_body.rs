//! Fuzz target for `POST /api/board`'s body, read before anything else of
//! the request: any bytes, under a `Content-Type` the first byte picks, are
//! either the four parameters (then checked as `/api/detail` checks its
//! query) or refused with a `4xx` of the documented set: `400` (not one
//! object of known keys and types, or parameters that do not check out),
//! `413` (over `BODY_LIMIT`), `415` (not JSON). Nothing may panic, and no
//! refusal quotes the body (it may hold a share link).
//!
//! Run: `cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run post_body -- -max_total_time=600`

#![no_main]

use http::header::{HeaderMap, HeaderValue, CONTENT_TYPE};
use libfuzzer_sys::fuzz_target;
use shared_board_api::internals::api::error::ApiError;
use shared_board_api::internals::api::params;
use shared_board_api::internals::api::post::{read_body, BODY_LIMIT};
use shared_board_api::internals::api::route::Endpoint;

const TYPES: [Option<&str>; 6] = [
    Some("application/json"),
    Some("application/json; charset=utf-8"),
    Some(" Application/JSON ;x=y"),
    Some("text/plain"),
    Some("application/jsonx"),
    None,
];

/// A permission id a share link in the body may carry (the fuzzer finds
/// it in the dictionary-free way, or not): never in a refusal of the body
/// or of the link.
const SECRET: &str = "permFuzzSecret9";

/// A refusal with one of the `allowed` statuses that does not quote the
/// share link (a selector's refusal may quote the selector).
fn assert_clean(e: &ApiError, allowed: &[u16]) {
    let status = e.status().as_u16();
    assert!(allowed.contains(&status), "{status}: {e:?}");
    if matches!(e.field(), None | Some("url")) {
        assert!(!e.message().contains(SECRET), "a refusal quotes the link: {e:?}");
    }
}

fuzz_target!(|data: &[u8]| {
    let (choice, rest) = data.split_first().map_or((0, data), |(c, r)| (*c, r));
    let mut headers = HeaderMap::new();
    if let Some(t) = TYPES[usize::from(choice) % TYPES.len()] {
        headers.insert(CONTENT_TYPE, HeaderValue::from_static(t));
    }
    // Every few inputs, padded past the limit with white space.
    let padded;
    let body = if choice & 0x80 != 0 {
        padded = [rest, &vec![b' '; BODY_LIMIT + 1 - rest.len().min(BODY_LIMIT)]].concat();
        &padded[..]
    } else {
        rest
    };
    match read_body(&headers, body) {
        Ok(values) => {
            assert!(body.len() <= BODY_LIMIT);
            let values = [&values.url, &values.view, &values.include, &values.exclude]
                .map(Option::as_deref);
            if let Err(e) = params::from_values(Endpoint::Detail, values, "app.milanote.com") {
                assert_clean(&e, &[400]);
            }
        }
        Err(e) => assert_clean(&e, &[400, 413, 415]),
    }
});

//! Fuzz target for the rich-text readers: arbitrary bytes, as UTF-8 JSON
//! text, read by the text reader (`rich_text_from_str`, the serving path)
//! and by the value reader (`rich_text` on the text parsed into a
//! `serde_json::Value`, the reference). Both must refuse the same texts and
//! give the same blocks, byte for byte, and the same plain text for the
//! rest; neither may panic. The same for the text held in a JSON string.
//! The bytes reader (`rich_text_from_bytes`, the serving path for an
//! element's content, which serde_json has accepted first) runs on every
//! text serde_json parses: it either reads it, with the same result, or
//! hands it back.
//!
//! Run: `cargo fuzz run rich_text` (from the repository root, nightly).

#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use shared_board_api::internals::provider::rich_text::{
    rich_text, rich_text_from_bytes, rich_text_from_str,
};

fn shown(text: &str) -> (Result<Option<(String, String)>, ()>, Result<Option<(String, String)>, ()>) {
    let show = |rich: Option<shared_board_api::internals::document::RichText>| {
        rich.map(|r| (serde_json::to_string(&r.blocks).unwrap_or_default(), r.plain_text))
    };
    let old = serde_json::from_str::<Value>(text)
        .map(|v| show(rich_text(&v)))
        .map_err(|_| ());
    let new = rich_text_from_str(text).map(show).map_err(|_| ());
    if new.is_ok() {
        if let Ok(bytes) = rich_text_from_bytes(text) {
            assert_eq!(Ok(show(bytes)), new, "bytes reader: {text}");
        }
    }
    (old, new)
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (old, new) = shown(text);
    assert_eq!(old, new, "{text}");
    if let Ok(quoted) = serde_json::to_string(text) {
        let (old, new) = shown(&quoted);
        assert_eq!(old, new, "as a string: {text}");
    }
});

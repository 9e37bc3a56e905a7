//! Fuzz target for the normalizer: arbitrary bytes -> if they are a JSON
//! object, a `Fetched` built from its `elements`, `comments` and `canvasOrder`
//! -> `normalize` -> serialize. It must never panic, and the output must stay
//! linear in the input (no cycle, shared thread id or canvasOrder repeat may
//! multiply it).
//!
//! Run: `cargo fuzz run normalize` (from the repository root, nightly).

#![no_main]

use shared_board_api::internals::provider::fetched::{canvas_order_of, comments_of};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value};
use shared_board_api::internals::provider::normalize::normalize;
use shared_board_api::internals::provider::Fetched;

/// Output bytes allowed per input byte. The worst honest case is a table cell
/// whose rich text shows up three times (blocks, plainText, value) plus the
/// fixed keys of a node; 32 leaves a wide margin.
const MAX_GROWTH: usize = 32;

fn object(body: &Map<String, Value>, key: &str) -> Map<String, Value> {
    match body.get(key) {
        Some(Value::Object(map)) => map.clone(),
        _ => Map::new(),
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(Value::Object(body)) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let elements = object(&body, "elements");
    // The root: `rootId` when given, else the first BOARD, else the first key.
    let root_id = body
        .get("rootId")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| {
            elements
                .iter()
                .find(|(_, e)| e.get("elementType").and_then(Value::as_str) == Some("BOARD"))
                .map(|(k, _)| k.clone())
        })
        .or_else(|| elements.keys().next().cloned())
        .unwrap_or_default();
    let loaded_boards = elements
        .iter()
        .filter(|(_, e)| e.get("elementType").and_then(Value::as_str) == Some("BOARD"))
        .map(|(k, _)| k.clone())
        .collect();
    let mut fetched = Fetched::from_elements(&root_id, elements);
    fetched.comments = comments_of(&object(&body, "comments"));
    fetched.canvas_order = canvas_order_of(&object(&body, "canvasOrder"));
    fetched.loaded_boards = loaded_boards;
    fetched.fetched_time_ms = body.get("fetchedTime").and_then(Value::as_i64);
    let Ok(document) = normalize(&fetched, "milanote") else {
        return;
    };
    let Ok(bytes) = serde_json::to_vec(&document) else {
        return;
    };
    assert!(
        bytes.len() <= MAX_GROWTH * data.len() + 1024,
        "output {} bytes for {} input bytes",
        bytes.len(),
        data.len()
    );
    // What this service writes, serde_json can read back.
    assert!(serde_json::from_slice::<Value>(&bytes).is_ok());
});

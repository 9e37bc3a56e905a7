//! Fuzzes the selector parser and engine: any UTF-8 input, as an `include` list
//! and as an `exclude` list on every view, is either refused with a message or
//! applied to a small fixed document; nothing may panic, and a refusal never
//! echoes more than the input.
//!
//! Run: `cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run selector_parse -- -max_total_time=60`

#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};
use shared_board_api::internals::document::sanitize::sanitize;
use shared_board_api::internals::select::{Selection, View};
use std::sync::LazyLock;

static DOC: LazyLock<Value> = LazyLock::new(|| {
    let mut doc = json!({
        "version": 1,
        "source": {"provider": "milanote", "boardId": "root"},
        "fetchedAt": "2026-01-01T00:00:00.000Z",
        "board": {
            "id": "root", "type": "BOARD", "title": "Root", "childrenLoaded": true,
            "location": {}, "timestamps": {"createdAt": "t0"},
            "children": [
                {"id": "c", "type": "CARD", "richText": {"blocks": [{"token": "x"}], "plainText": "p"}, "children": []},
                {"id": "t", "type": "TABLE", "table": {"rows": [[{"value": 1}], []]}, "children": [
                    {"id": "u", "type": "UNKNOWN", "elementType": "X", "content": {"a": {}}, "children": []}
                ]}
            ]
        }
    });
    sanitize(&mut doc);
    doc
});

fuzz_target!(|data: &[u8]| {
    let Ok(list) = std::str::from_utf8(data) else {
        return;
    };
    let check = |result: Result<Selection, shared_board_api::internals::select::SelectorError>| match result {
        Ok(selection) => {
            let out = selection.apply(&DOC);
            assert!(out.is_object());
            assert!(!selection.canonical().is_empty());
        }
        Err(e) => assert!(e.message.len() <= list.len() + 80, "{}", e.message),
    };
    check(Selection::include(list));
    for view in [View::Compact, View::Standard, View::Full] {
        check(Selection::exclude(view, list));
    }
});

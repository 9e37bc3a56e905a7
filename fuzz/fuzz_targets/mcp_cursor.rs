//! Fuzz target for `read_board`'s cursors, which an agent sends back and
//! this server must not trust: any text as a cursor (and any bytes as a
//! cursor's decoded payload, so the fuzzer gets past base64 at once) is
//! either refused cleanly (`400 INVALID_REQUEST`, `field: cursor`) or names
//! a place; a place is then either a page of a real board's Markdown,
//! whose result core is JSON, or refused the same way. Nothing may panic.
//! A cursor this build makes resumes where it says.
//!
//! Run: `cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run mcp_cursor -- -max_total_time=600`

#![no_main]

use libfuzzer_sys::fuzz_target;
use shared_board_api::internals::api::error::ApiError;
use shared_board_api::internals::api::mcp::cursor;
use shared_board_api::internals::pipeline::markdown::{self, pages::Paged};
use shared_board_api::internals::select::{Selection, View};
use std::sync::LazyLock;

const BOARD: &str = "b";
const VERSION: &str = "0123456789abcdef0123456789abcdef";

/// A document as the service writes one: cards in both sections, a column
/// and a nested board, enough text for several small pages.
const DOC: &str = r#"{"version":1,"source":{"provider":"milanote","boardId":"b"},"fetchedAt":"2026-01-01T00:00:00.000Z","board":{"id":"b","type":"BOARD","title":"Trip","childrenLoaded":true,"children":[{"id":"c1","type":"CARD","location":{"parentId":"b","section":"CANVAS","position":{"x":10,"y":20}},"richText":{"plainText":"Pack the tent","blocks":[{"type":"paragraph","text":"Pack the tent"}]},"children":[]},{"id":"col","type":"COLUMN","title":"Ideas","location":{"parentId":"b","section":"CANVAS","position":{"x":0,"y":0}},"children":[{"id":"c2","type":"CARD","location":{"parentId":"col","section":"INBOX","position":{"index":1}},"richText":{"plainText":"Späti – 24h ✓","blocks":[{"type":"paragraph","text":"Späti – 24h ✓"}]},"children":[]},{"id":"c3","type":"CARD","location":{"parentId":"col","section":"INBOX","position":{"index":2}},"richText":{"plainText":"Train at 7","blocks":[{"type":"paragraph","text":"Train at 7"}]},"children":[]}]},{"id":"n","type":"BOARD","title":"Nested","childrenLoaded":false,"location":{"parentId":"b","section":"INBOX","position":{"index":2}},"children":[]}]}}"#;

static PAGED: LazyLock<Paged> = LazyLock::new(|| {
    markdown::render_paged(&Selection::view(View::Full), DOC.as_bytes()).expect("the document renders")
});
static BOUND: LazyLock<String> = LazyLock::new(|| {
    cursor::binding(&Selection::view(View::Full).canonical(), None, false)
});

fn assert_refusal(e: &ApiError, input: &str) {
    assert_eq!(e.status().as_u16(), 400, "{input:?}: {e:?}");
    assert_eq!(e.code(), "INVALID_REQUEST", "{input:?}");
    assert_eq!(e.field(), Some("cursor"), "{input:?}");
}

fn check(text: &str) {
    let start = match cursor::resume(text, BOARD, VERSION, &BOUND) {
        Ok(start) => start,
        Err(e) => return assert_refusal(&e, text),
    };
    for max_chars in [1_000, 40_000] {
        match cursor::page_core(&PAGED, start, max_chars, BOARD, VERSION, &BOUND) {
            Ok(core) => {
                let object = format!("{{{core}}}");
                let value: serde_json::Value =
                    serde_json::from_str(&object).expect("a page's core is JSON");
                assert_eq!(value["isError"], false);
            }
            Err(e) => assert_refusal(&e, text),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    match mode % 3 {
        // Any text, as the agent sends it.
        0 => check(&String::from_utf8_lossy(rest)),
        // Any payload, base64 as this server writes cursors.
        1 => {
            use base64::Engine as _;
            let text = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(rest);
            check(&text);
        }
        // A cursor this build made, at any offset: it resumes there.
        _ => {
            let mut offset = [0u8; 8];
            let n = rest.len().min(8);
            offset[..n].copy_from_slice(&rest[..n]);
            let offset = u64::from_le_bytes(offset) as usize % (PAGED.text().len() + 2);
            let text = cursor::encode(BOARD, VERSION, &BOUND, offset);
            assert_eq!(cursor::resume(&text, BOARD, VERSION, &BOUND), Ok(offset));
            check(&text);
        }
    }
});

//! Fuzz target for what `/api/changes` reads back from a version store:
//! arbitrary bytes as a stored value (the mark, zstd, the bound, the hash
//! check), and arbitrary bytes as a kept document that passed that check
//! (the hash is no key: whoever can write the store can make one), compared
//! with a document as the service writes it, both ways, and with itself.
//! Nothing may panic, recurse without bound or fail the answer: a kept
//! document that is not one of this board's is "not kept" (`Ok(None)`),
//! and a document compared with itself has no changes.
//!
//! Run: `cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run kept_version -- -max_total_time=600`

#![no_main]

use libfuzzer_sys::fuzz_target;
use shared_board_api::internals::pipeline::changes::{self, flat};
use shared_board_api::internals::pipeline::version::version_of;
use shared_board_api::internals::pipeline::Representation;
use shared_board_api::internals::store::versions::codec;

/// A document as the service writes one, with a nested board, a column
/// and cards in both sections.
const NOW: &[u8] = br#"{"version":1,"source":{"provider":"milanote","boardId":"b"},"fetchedAt":"2026-01-01T00:00:00.000Z","board":{"id":"b","type":"BOARD","title":"Trip","childrenLoaded":true,"children":[{"id":"c1","type":"CARD","location":{"parentId":"b","section":"CANVAS","position":{"x":10,"y":20}},"richText":{"plainText":"Pack the tent","blocks":[{"type":"paragraph","text":"Pack the tent"}]},"timestamps":{"modifiedAt":"2026-01-01T00:00:00.000Z"},"children":[]},{"id":"col","type":"COLUMN","title":"Ideas","location":{"parentId":"b","section":"CANVAS","position":{"x":0,"y":0}},"children":[{"id":"c2","type":"CARD","location":{"parentId":"col","section":"INBOX","position":{"index":1}},"children":[]}]},{"id":"n","type":"BOARD","title":"Nested","childrenLoaded":false,"location":{"parentId":"b","section":"INBOX","position":{"index":2}},"children":[]}]}}"#;

const MAX_BYTES: usize = 1 << 20;

fuzz_target!(|data: &[u8]| {
    // As a stored value: refused or a document of exactly its token.
    let token = version_of(NOW);
    if let Ok(document) = codec::open(data, &token, MAX_BYTES) {
        assert_eq!(document, NOW, "only the document of its token opens");
    }
    // As a kept document that passed the check.
    let kept = data;
    let from = version_of(kept);
    let to = version_of(NOW);
    for representation in [Representation::Json, Representation::Markdown] {
        let answered = changes::answer("changes", representation, "b", Some(kept), &from, NOW, &to);
        assert!(answered.is_ok(), "the answer fails on a kept document: {answered:?}");
    }
    let Ok(old) = flat::read(kept) else {
        return;
    };
    let new = flat::read(NOW).expect("the service's document reads");
    let both_ways = [
        changes::compare_flat(&old, &from, &new, &to),
        changes::compare_flat(&new, &to, &old, &from),
    ];
    for found in &both_ways {
        // Every element of each side is listed once at most in each list.
        for list in [&found.added, &found.removed, &found.changed, &found.moved] {
            let mut ids: Vec<&str> = list.iter().map(|e| e.id.as_str()).collect();
            ids.sort_unstable();
            ids.dedup();
            assert_eq!(ids.len(), list.len(), "an element listed twice");
        }
    }
    // What one way adds, the other removes.
    let ids = |list: &[changes::Entry]| {
        let mut ids: Vec<String> = list.iter().map(|e| e.id.clone()).collect();
        ids.sort_unstable();
        ids
    };
    assert_eq!(ids(&both_ways[0].added), ids(&both_ways[1].removed));
    assert_eq!(ids(&both_ways[0].changed), ids(&both_ways[1].changed));
    let itself = changes::compare_flat(&old, &from, &old, &from);
    assert!(itself.is_empty(), "a document differs from itself: {itself:?}");
});

//! Fuzz target for what the fleet tier hands back: arbitrary bytes as a
//! value read from Redis, and arbitrary bytes as the document inside a value
//! sealed with the fleet key (what a node of another version, a bug or a
//! leaked key could write), through the read (tag, header, inflate, the
//! document check) and, when the value is accepted, every view and
//! selection as JSON and as Markdown, and the search. Nothing may panic or
//! overflow a stack, and an accepted document must render every way: a
//! value that would fail a render must be refused at the read.
//!
//! Run: `cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run tier_value -- -max_total_time=600`

#![no_main]

mod common_selections;

use common_selections::SELECTIONS;
use libfuzzer_sys::fuzz_target;
use shared_board_api::internals::document::{Completeness, Coverage};
use shared_board_api::internals::pipeline::{markdown, nested, search, LoadedBoard, Representation};
use shared_board_api::internals::store::shared::check;
use shared_board_api::internals::store::shared::format::{self, Header};
use shared_board_api::internals::store::shared::seal::{Seal, Secret};
use std::sync::LazyLock;

const NAME: &str = "sbapi:{00112233445566778899aabbccddeeff}:doc:full";
const MAX_BYTES: usize = 1 << 20;

static SEAL: LazyLock<Seal> = LazyLock::new(|| {
    Seal::new(
        &Secret::new(b"fuzz-fleet-key-fuzz-fleet-key-32".to_vec()).expect("32 bytes"),
        None,
    )
});

fuzz_target!(|data: &[u8]| {
    // The bytes as they are, read as a value under NAME.
    if let Ok((header, json)) = format::decode(data, MAX_BYTES, &SEAL, NAME) {
        use_value(&header, json);
    }
    // The bytes as the document of a value a node sealed; the first byte
    // is the header's coverage and completeness.
    let Some((&flags, json)) = data.split_first() else {
        return;
    };
    let header = Header {
        coverage: if flags & 1 == 0 {
            Coverage::Full
        } else {
            Coverage::Outline
        },
        unloaded: u32::from((flags >> 1) & 3),
        transient: flags & 8 != 0,
        expires_at_ms: i64::MAX,
    };
    let value = format::encode(&header, json, &SEAL, NAME).expect("encodes");
    let (read, json) = format::decode(&value, MAX_BYTES, &SEAL, NAME).expect("its own value");
    assert_eq!(read, header);
    use_value(&header, json);
});

/// What a node does with a value whose tag verified.
fn use_value(header: &Header, json: Vec<u8>) {
    // The board the key is for: the one the document names, when it can
    // be read (so the check's other rules are reached), else any.
    let board = serde_json::from_slice::<serde_json::Value>(&json)
        .ok()
        .and_then(|v| v["board"]["id"].as_str().map(str::to_owned))
        .unwrap_or_else(|| "root".to_owned());
    let Ok(checked) = check::document(&json, &board, 10_000) else {
        return;
    };
    let completeness = checked.completeness;
    let announced = Completeness {
        unloaded: header.unloaded,
        transient: header.transient,
    };
    if completeness != announced {
        return;
    }
    // As a node keeps it: with the entries the check noted, whose full
    // render must carry the same ETag as a walk of the document gives.
    let walked = LoadedBoard::with_completeness(json.clone(), header.coverage, completeness);
    let loaded = LoadedBoard::with_completeness(json, header.coverage, completeness)
        .with_entries(checked.entries);
    if let Some(full) = SELECTIONS.iter().find(|s| s.is_full() && loaded.serves(s)) {
        let tag = |board: &LoadedBoard| board.render("detail", full).map(|r| r.etag);
        assert_eq!(tag(&loaded).ok(), tag(&walked).ok(), "the noted entries hash as the walk");
    }
    for selection in SELECTIONS.iter() {
        if !loaded.serves(selection) {
            continue;
        }
        for scope in ["search", "detail"] {
            for representation in [Representation::Json, Representation::Markdown] {
                if let Err(e) = loaded.render_as(representation, scope, selection) {
                    panic!(
                        "an accepted document does not render ({representation:?}, {}): {e}",
                        selection.canonical()
                    );
                }
            }
        }
        // An agent's pages: the same Markdown, cut where blocks start.
        match markdown::render_paged(selection, loaded.document_json()) {
            Ok(paged) => {
                let whole = markdown::render(selection, loaded.document_json()).ok();
                assert_eq!(whole.as_deref(), Some(paged.text()), "the paged text is the render");
                let mut at = 0;
                while let Some(page) = paged.page(at, 64) {
                    assert!(page.end > at, "each page goes on");
                    at = page.end;
                }
            }
            Err(_) => panic!("an accepted document does not render in pages ({})", selection.canonical()),
        }
    }
    // Its root read as a nested board (what `read_board` with `board` does).
    if header.coverage == Coverage::Full {
        if let Err(nested::NestedError::Unreadable(e)) = nested::nested_document(loaded.document_json(), &board) {
            panic!("an accepted document is not readable as a tree: {e}");
        }
    }
    // The search reads any accepted document (a field of another type
    // counts as absent).
    if let Err(e) = search::search(loaded.document_json(), "a", 20) {
        panic!("an accepted document is not searchable: {e}");
    }
}

//! Fuzz target for depth: the bytes build a document of any depth (a few
//! bytes nest thousands of levels: boards in `children`, raw `content`,
//! rich-text blocks, table rows, bare arrays), which goes through every
//! selection's walk as JSON and as Markdown, the search and the fleet
//! tier's document check. Nothing may overflow a stack, and a document the
//! check accepts renders every way.
//!
//! Run: `cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run select_depth -- -max_total_time=600`

#![no_main]

mod common_selections;

use common_selections::SELECTIONS;
use libfuzzer_sys::fuzz_target;
use shared_board_api::internals::pipeline::{markdown, search};
use shared_board_api::internals::store::shared::check;

/// Containers the bytes open: the text before a value, the text that
/// closes them, and whether a sibling goes in as an array item.
const OPEN: [(&str, &str, bool); 6] = [
    (r#"[{"id":"n","type":"BOARD","children":"#, "}]", false),
    (r#"{"content":"#, "}", false),
    ("[", "]", true),
    (r#"{"richText":{"blocks":["#, "]}}", true),
    (r#"{"table":{"rows":[["#, "]]}}", true),
    (r#"{"title":"#, "}", false),
];
const SCALARS: [&str; 4] = [r#""t""#, "1", "null", r#""\u00e9\n""#];

/// The document the bytes describe. Each byte is an operation (low three
/// bits) repeated 1 to 128 times (high bits): open a container, write a
/// scalar, add a sibling, or close.
fn build(data: &[u8]) -> Vec<u8> {
    let mut out = br#"{"version":1,"source":{"provider":"p","boardId":"b"},"fetchedAt":"t","board":{"id":"b","type":"BOARD","title":"T","children":"#.to_vec();
    let mut open: Vec<(&str, bool)> = Vec::new();
    let mut at_value = true;
    for &byte in data {
        let times = 1usize << (byte >> 5);
        for _ in 0..times {
            match (byte & 7, at_value) {
                (op @ 0..=5, true) => {
                    let (prefix, suffix, array) = OPEN[op as usize];
                    out.extend_from_slice(prefix.as_bytes());
                    open.push((suffix, array));
                }
                (6, true) => {
                    out.extend_from_slice(SCALARS[(byte >> 3) as usize & 3].as_bytes());
                    at_value = false;
                }
                (_, true) => {
                    out.extend_from_slice(b"[]");
                    at_value = false;
                }
                (6, false) => match open.last() {
                    Some((_, true)) => {
                        out.push(b',');
                        at_value = true;
                    }
                    Some((_, false)) => {
                        out.extend_from_slice(br#","k":"#);
                        at_value = true;
                    }
                    None => {}
                },
                (_, false) => {
                    if let Some((suffix, _)) = open.pop() {
                        out.extend_from_slice(suffix.as_bytes());
                    }
                }
            }
        }
    }
    if at_value {
        out.extend_from_slice(b"[]");
    }
    while let Some((suffix, _)) = open.pop() {
        out.extend_from_slice(suffix.as_bytes());
    }
    out.extend_from_slice(b"}}");
    out
}

fuzz_target!(|data: &[u8]| {
    let doc = build(data);
    let accepted = check::document(&doc, "b", usize::MAX).is_ok();
    for selection in SELECTIONS.iter() {
        let mut json = Vec::new();
        let walked = selection.apply_bytes(&doc, &mut json);
        let written = markdown::render(selection, &doc);
        if accepted {
            assert!(
                walked.is_ok() && written.is_ok(),
                "an accepted document does not render: {}",
                selection.canonical()
            );
        }
    }
    let _ = search::search(&doc, "t", 20);
});

//! Unit cases of the byte walks: against the value walks of `select::apply`, and
//! on malformed bytes.

use super::*;
use crate::select::apply;
use crate::select::compile::compile;
use crate::select::parse::parse_list;
use serde_json::{json, Value};

fn program(list: &str) -> Program {
    compile(&parse_list(list).expect("parses")).expect("compiles")
}

fn doc() -> Value {
    json!({
        "version": 1,
        "board": {
            "id": "b", "title": "a\"}b", "location": {"position": {}}, "icon": {},
            "children": [
                {"id": "n", "location": {}, "children": [],
                 "content": {"k": {}, "v": [[{}], {"e": {}}, 1], "t\\\"": {"x": "]"}}},
                {"id": "t", "table": {"rows": [[{}], [{"value": 1}, {}]]}, "children": []}
            ]
        }
    })
}

#[test]
fn the_byte_walks_match_the_value_walks() {
    let lists = [
        "board",
        "**",
        "board.location",
        "board.icon,version",
        "board.children.table.rows",
        "board.children.table.rows.value",
        "board.children.content",
        "board.children.location",
        "board.**.id,board.**.title",
        "version",
        "board.location.position",
        "board.children.*",
        "board.id,board.location,board.icon,board.children,version",
    ];
    let bytes = serde_json::to_vec(&doc()).unwrap();
    for list in lists {
        let p = program(list);
        let mut out = Vec::new();
        include(&p, &bytes, &mut out).expect("reads");
        let want = serde_json::to_vec(&apply::include(&p, &doc())).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out),
            String::from_utf8_lossy(&want),
            "include {list}"
        );
        let mut out = Vec::new();
        exclude(&p, &bytes, &mut out).expect("reads");
        let mut value = doc();
        apply::exclude(&p, &mut value);
        let want = serde_json::to_vec(&value).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out),
            String::from_utf8_lossy(&want),
            "exclude {list}"
        );
    }
}

#[test]
fn malformed_bytes_are_an_error_not_a_panic() {
    let p = program("board");
    for bad in [
        "",
        "{",
        "{\"board\"",
        "{\"board\":{\"id\":\"x}",
        "{}x",
        "[",
        "{\"a\":1,}",
    ] {
        let mut out = Vec::new();
        assert!(
            include(&p, bad.as_bytes(), &mut out).is_err()
                | exclude(&p, bad.as_bytes(), &mut out).is_err(),
            "{bad}"
        );
    }
}

/// `{"board":{"id":"b","children":[{"id":"b","children":[...]}]}}`, `levels`
/// nodes deep, built as text (no value tree could hold it).
fn nested(levels: usize) -> Vec<u8> {
    let mut doc = br#"{"board":{"id":"b","children":"#.to_vec();
    for _ in 0..levels {
        doc.extend_from_slice(br#"[{"id":"b","children":"#);
    }
    doc.extend_from_slice(b"[]");
    for _ in 0..levels {
        doc.extend_from_slice(b"}]");
    }
    doc.extend_from_slice(b"}}");
    doc
}

#[test]
fn no_document_walks_deeper_than_the_limit() {
    // Every walk of every kind, on a document far past the limit: refused,
    // on a stack the size of a small thread's (the walks' frames are small,
    // and no walk goes past MAX_DEPTH of them).
    let deep = nested(200_000);
    let shallow = nested(30);
    let lists = ["**", "board.**.id", "board.children", "board"];
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || {
            for list in lists {
                let p = program(list);
                let mut out = Vec::new();
                assert_eq!(include(&p, &deep, &mut out), Err(Malformed), "{list}");
                out.clear();
                // An exclude skips what it removes without walking it.
                let excluded = exclude(&p, &deep, &mut out);
                assert!(excluded.is_err() || list != "board.**.id", "{list}");
                out.clear();
                assert_eq!(include(&p, &shallow, &mut out), Ok(()), "{list}");
                out.clear();
                assert_eq!(exclude(&p, &shallow, &mut out), Ok(()), "{list}");
            }
        })
        .expect("spawns")
        .join()
        .expect("no walk overflowed its stack");
}

//! Property tests of the normalizer's invariants over random boards with
//! cycles, orphans, duplicate ids, shared thread ids and noisy canvasOrder:
//! no panic, same bytes twice, every element at most once, parents before
//! children, canvasOrder respected, output linear in the input and readable
//! back by serde_json; every element type, secrets planted inside raw leaves
//! never output, `unloadedReason` exactly on boards not loaded and the
//! completeness counted alike by the walk and over the document. The fuzz target checks the same on arbitrary bytes.

use proptest::prelude::*;
use serde_json::{json, Map, Value};
use shared_board_api::internals::document::{Completeness, Coverage, UnloadedReason};
use shared_board_api::internals::provider::fetched::{canvas_order_of, comments_of};
use shared_board_api::internals::provider::normalize::normalize;
use shared_board_api::internals::provider::Fetched;
use shared_board_api::internals::select::{Selection, View};
use std::collections::HashSet;

const IDS: &[&str] = &["r", "a", "b", "c", "d", "e", "f", "g", "h", "x"];
const TYPES: &[&str] = &[
    "BOARD",
    "CARD",
    "COLUMN",
    "TASK",
    "TABLE",
    "COMMENT_THREAD",
    "SKELETON",
    "LINE",
    "DOCUMENT",
    "COLOR_SWATCH",
    "SKETCH",
    "ANNOTATION",
    "ALIAS",
];

/// The value planted under sensitive keys inside raw leaves: it must never
/// reach a document.
const PLANTED: &str = "PLANTED-SECRET";

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        (-5i64..5).prop_map(Value::from),
        (-5i64..5).prop_map(|n| Value::from(n.to_string())),
        prop::sample::select(vec!["canvas", "column", "", "inf"]).prop_map(Value::from),
        any::<bool>().prop_map(Value::from),
    ]
}

fn element() -> impl Strategy<Value = (String, Value)> {
    (
        prop::sample::select(IDS),
        prop::option::of(prop::sample::select(IDS)),
        prop::sample::select(IDS),
        prop::sample::select(TYPES),
        prop::collection::vec(scalar(), 5),
        prop::option::of(prop::sample::select(vec!["T1", "a"])),
        prop::sample::select(vec![
            json!("#e8b730"),
            json!({"value": "#123456", "token": PLANTED}),
            json!(5),
            Value::Null,
        ]),
    )
        .prop_map(|(key, id, parent, kind, s, thread, color)| {
            let mut e = json!({
                "elementType": kind,
                "location": {"parentId": parent, "section": s[0],
                             "position": {"score": s[1], "index": s[2], "y": s[3], "x": s[4]}},
                "content": {"threadId": thread, "textContent": "t", "title": "T", "color": color,
                            "caption": "{\"blocks\":[{\"text\":\"cap\"}]}",
                            "tableContent": {"data": [[{"value": s[1]}, {"draftContent": "{\"blocks\":[{\"text\":\"c\"}]}"}]]},
                            "drawing": {"svg": "<svg/>", "paths": [[s[3], s[4]]], "userId": PLANTED, "meta": {"Token": PLANTED}},
                            "start": {"elementId": parent, "secret": PLANTED}, "end": s[2], "control": {"x": s[3], "y": s[4]},
                            "lineStyle": {"color": "#333", "apiKey": PLANTED, "deep": [{"password": PLANTED, "w": s[1]}]}},
                "meta": {"createdTime": s[1]}
            });
            if let Some(id) = id {
                e["id"] = json!(id);
            }
            (key.to_owned(), e)
        })
}

fn board() -> impl Strategy<Value = Value> {
    (
        prop::collection::vec(element(), 0..30),
        prop::collection::vec(
            (
                prop::sample::select(IDS),
                prop::collection::vec(prop::sample::select(IDS), 0..12),
            ),
            0..6,
        ),
        prop::collection::vec(
            (prop::sample::select(vec!["T1", "T2", "a", "b"]), scalar()),
            0..10,
        ),
    )
        .prop_map(|(elements, orders, comments)| {
            let mut map = Map::new();
            for (key, e) in elements {
                map.insert(key, e);
            }
            map.insert(
                "r".into(),
                json!({"elementType": "BOARD", "location": {"parentId": "a"}}),
            );
            let canvas: Map<String, Value> = orders
                .into_iter()
                .map(|(p, ids)| (p.to_owned(), json!(ids)))
                .collect();
            let comments: Map<String, Value> = comments
                .into_iter()
                .enumerate()
                .map(|(i, (thread, at))| {
                    (
                        format!("c{i}"),
                        json!({"threadId": thread, "text": "x", "createdAt": at}),
                    )
                })
                .collect();
            json!({"elements": map, "canvasOrder": canvas, "comments": comments})
        })
}

fn fetched(body: &Value) -> Fetched {
    let take = |k: &str| body[k].as_object().cloned().unwrap_or_default();
    let mut f = Fetched::from_elements("r", take("elements"));
    f.comments = comments_of(&take("comments"));
    f.canvas_order = canvas_order_of(&take("canvasOrder"));
    f.loaded_boards = ["r".to_owned(), "b".to_owned()].into_iter().collect();
    // Reasons for some boards; the others get the fallback.
    f.unloaded.insert("c".into(), UnloadedReason::BoardLimit);
    f.unloaded.insert("d".into(), UnloadedReason::Deadline);
    f.unloaded.insert("e".into(), UnloadedReason::AccessDenied);
    f.unloaded.insert("b".into(), UnloadedReason::NotFound);
    f
}

/// Every `BOARD` node says why its children are missing exactly when they
/// are: `unloadedReason` with `childrenLoaded: false`, and only then.
fn reasons_match_loaded(doc: &Value) -> Result<(), TestCaseError> {
    let mut stack = vec![&doc["board"]];
    while let Some(n) = stack.pop() {
        if n["type"] == "BOARD" {
            let loaded = n["childrenLoaded"].as_bool().unwrap();
            prop_assert_eq!(n.get("unloadedReason").is_some(), !loaded, "{}", n);
        } else {
            prop_assert!(n.get("unloadedReason").is_none() && n.get("childrenLoaded").is_none());
        }
        stack.extend(n["children"].as_array().unwrap().iter());
    }
    Ok(())
}

/// The element each id resolves to, by an independent reading of the rule.
fn winners(elements: &Map<String, Value>) -> Vec<(String, &Value)> {
    let resolve = |key: &String, e: &Value| {
        e.get("id")
            .and_then(Value::as_str)
            .unwrap_or(key)
            .to_owned()
    };
    let kind = |e: &Value| {
        e.get("elementType")
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    // The later claim wins, except that a SKELETON never replaces a BOARD;
    // an entry that is not an object claims its key and is no element.
    let mut out: Vec<(String, &Value)> = Vec::new();
    for (key, e) in elements {
        let id = resolve(key, e);
        match out.iter_mut().find(|(w, _)| *w == id) {
            Some(slot) => {
                let keep = kind(slot.1).as_deref() == Some("BOARD")
                    && kind(e).as_deref() == Some("SKELETON");
                if !keep {
                    slot.1 = e;
                }
            }
            None => out.push((id, e)),
        }
    }
    out.retain(|(_, e)| e.is_object());
    out
}

/// Checks ids, parents, completeness and canvasOrder below `node`.
fn walk(
    node: &Value,
    elements: &Map<String, Value>,
    canvas: &Map<String, Value>,
    seen: &mut HashSet<String>,
) {
    let winners = winners(elements);
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        let id = n["id"].as_str().unwrap().to_owned();
        assert!(seen.insert(id.clone()), "{id} twice");
        let children = n["children"].as_array().unwrap();
        let child_ids: Vec<&str> = children.iter().map(|c| c["id"].as_str().unwrap()).collect();
        for c in children {
            assert_eq!(c["location"]["parentId"], json!(id));
        }
        let mut want: Vec<&str> = winners
            .iter()
            .filter(|(w, e)| w != "r" && e["location"]["parentId"] == json!(id))
            .map(|(w, _)| w.as_str())
            .collect();
        let mut got = child_ids.clone();
        want.sort_unstable();
        got.sort_unstable();
        assert_eq!(got, want, "children of {id}");
        // Listed children come first, in their listed (first-occurrence) order.
        let listed: Vec<&str> = canvas
            .get(&id)
            .and_then(Value::as_array)
            .map_or(Vec::new(), |l| {
                let mut out: Vec<&str> = Vec::new();
                for v in l.iter().filter_map(Value::as_str) {
                    if child_ids.contains(&v) && !out.contains(&v) {
                        out.push(v);
                    }
                }
                out
            });
        assert_eq!(&child_ids[..listed.len()], &listed[..], "children of {id}");
        stack.extend(children.iter());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// The serving path's document bytes are the reference's sanitized
    /// document, and its renders are the reference's, byte for byte.
    #[test]
    fn build_matches_the_reference(body in board()) {
        let f = fetched(&body);
        let slow = shared_board_api::internals::pipeline::reference::build(&f, "r", "milanote");
        let outline = shared_board_api::internals::pipeline::load::build(f.clone(), "r", "milanote", Coverage::Outline);
        let fast = shared_board_api::internals::pipeline::load::build(f, "r", "milanote", Coverage::Full);
        let (fast, slow) = match (fast, slow) {
            (Ok(fast), Ok(slow)) => (fast, slow),
            (fast, slow) => {
                prop_assert_eq!(fast.err(), slow.err());
                return Ok(());
            }
        };
        prop_assert_eq!(
            String::from_utf8_lossy(fast.document_json()),
            serde_json::to_string(&slow).unwrap()
        );
        // Counted on the walk, as a client would count it, and the same for an outline.
        prop_assert_eq!(fast.completeness(), Completeness::of_value(&slow));
        prop_assert_eq!(outline.as_ref().map(|o| o.completeness()).ok(), Some(fast.completeness()));
        prop_assert!(!String::from_utf8_lossy(fast.document_json()).contains(PLANTED));
        reasons_match_loaded(&slow)?;
        for selection in [
            Selection::view(View::Full),
            Selection::view(View::Standard),
            Selection::view(View::Compact),
            Selection::include("board.children.content,board.children.richText,board.**.title,version").unwrap(),
            Selection::exclude(View::Full, "board.**.timestamps,board.children.content").unwrap(),
            Selection::include("board.**.id,board.**.type,board.children.comments.threadId,board.**.location").unwrap(),
            Selection::include("board.**.drawing,board.**.start,board.**.unloadedReason,board.**.color").unwrap(),
            Selection::exclude(View::Full, "board.children.lineStyle,board.**.caption").unwrap(),
            Selection::include("board.**.end,board.**.control,board.**.childrenLoaded,board.**.unloadedReason").unwrap(),
        ] {
            let a = fast.render("detail", &selection).unwrap();
            let b = shared_board_api::internals::pipeline::reference::rendered("detail", &selection, &slow).unwrap();
            prop_assert_eq!(String::from_utf8_lossy(&a.body), String::from_utf8_lossy(&b.body));
            prop_assert_eq!(&a.etag, &b.etag);
            if selection.coverage() == Coverage::Outline {
                let outline = outline.as_ref().expect("an outline builds where the document does");
                let c = outline.render("detail", &selection).unwrap();
                prop_assert_eq!(String::from_utf8_lossy(&c.body), String::from_utf8_lossy(&b.body));
                prop_assert_eq!(c.etag, b.etag);
            }
        }
    }

    #[test]
    fn normalizer_invariants(body in board()) {
        let input = serde_json::to_vec(&body).unwrap();
        let f = fetched(&body);
        // Another element may claim the root's id after it: then that one is
        // the root, and a root that is not a BOARD is refused.
        let raw = body["elements"].as_object().cloned().unwrap_or_default();
        let root_is_board = winners(&raw)
            .iter()
            .any(|(id, e)| id == "r" && e["elementType"] == "BOARD");
        if !root_is_board {
            prop_assert!(normalize(&f, "milanote").is_err());
            return Ok(());
        }
        let first = serde_json::to_vec(&normalize(&f, "milanote").unwrap()).unwrap();
        let second = serde_json::to_vec(&normalize(&f.clone(), "milanote").unwrap()).unwrap();
        prop_assert_eq!(&first, &second);
        prop_assert!(first.len() <= 32 * input.len() + 1024);
        let doc: Value = serde_json::from_slice(&first).unwrap();
        let mut seen = HashSet::new();
        let canvas = body["canvasOrder"].as_object().cloned().unwrap_or_default();
        walk(&doc["board"], &raw, &canvas, &mut seen);
        for id in &seen {
            prop_assert!(raw.values().any(|e| e.get("id") == Some(&json!(id))) || raw.contains_key(id));
        }
        // Shared thread ids may copy comments, at most once more in total.
        let mut copies = 0;
        let mut stack = vec![&doc["board"]];
        while let Some(n) = stack.pop() {
            copies += n.get("comments").and_then(Value::as_array).map_or(0, Vec::len);
            stack.extend(n["children"].as_array().unwrap().iter());
        }
        prop_assert!(copies <= 2 * f.comments.len());
    }
}

//! Every fixture board, merged with its nested boards the way the provider
//! client does it, normalizes deterministically into a
//! document that validates against `schema/board-document.schema.json`.
//!
//! `PRINT_FIXTURE=<boardId> cargo test --test it normalize_fixtures::` prints that
//! board's document.

use serde_json::{json, Value};
use shared_board_api::internals::provider::fetched::{canvas_order_of, comments_of};
use shared_board_api::internals::provider::normalize::normalize;
use shared_board_api::internals::provider::Fetched;
use std::collections::{BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

const DEMO: &str = "1W3ZZU1Qvua02H";
const EDGE: &str = "7Ed9GeCa5eS0zZ";
/// The demo's board of documents, swatches, sketches and lines.
const SHAPES: &str = "5Sw7Ln4Dc2Sk8e";

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src/demo/fixtures/boards")
}

fn board_ids() -> Vec<String> {
    let mut ids: Vec<String> = std::fs::read_dir(dir())
        .unwrap()
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.strip_suffix(".json").map(str::to_owned)
        })
        .collect();
    ids.sort();
    ids
}

fn load(board_id: &str) -> Option<Value> {
    let text = std::fs::read_to_string(dir().join(format!("{board_id}.json"))).ok()?;
    Some(serde_json::from_str(&text).expect("fixture is JSON"))
}

fn is_type(v: &Value, t: &str) -> bool {
    v.get("elementType").and_then(Value::as_str) == Some(t)
}

/// Breadth first from `root`, like the client: a nested board counts as
/// loaded when its fixture exists; a BOARD is never replaced by a SKELETON.
fn fetched_for(root: &str) -> Fetched {
    let mut fetched = Fetched {
        root_id: root.to_owned(),
        fetched_at_ms: 1_796_400_000_000,
        ..Fetched::default()
    };
    let mut queue = VecDeque::from([root.to_owned()]);
    while let Some(board) = queue.pop_front() {
        if fetched.loaded_boards.contains(&board) {
            continue;
        }
        let Some(body) = load(&board) else {
            continue;
        };
        fetched.loaded_boards.insert(board.clone());
        if board == root {
            fetched.fetched_time_ms = body["fetchedTime"].as_i64();
        }
        let take = |key: &str| {
            body.get(key)
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default()
        };
        for (id, element) in take("elements") {
            let keep_old = fetched.elements.get(id.as_str()).is_some_and(|old| {
                old.head.element_type() == "BOARD" && is_type(&element, "SKELETON")
            });
            if is_type(&element, "BOARD") && id != board {
                queue.push_back(id.clone());
            }
            if !keep_old {
                fetched.merge_element(&id, element);
            }
        }
        fetched.comments.extend(comments_of(&take("comments")));
        fetched
            .canvas_order
            .extend(canvas_order_of(&take("canvasOrder")));
    }
    fetched
}

fn document(root: &str) -> Value {
    let doc = normalize(&fetched_for(root), "milanote").expect("fixture normalizes");
    serde_json::to_value(doc).unwrap()
}

/// Every node below `node`, pre-order.
fn nodes(node: &Value) -> Vec<&Value> {
    let mut out = Vec::new();
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        out.push(n);
        if let Some(children) = n["children"].as_array() {
            stack.extend(children.iter().rev());
        }
    }
    out
}

fn find<'a>(doc: &'a Value, id: &str) -> &'a Value {
    nodes(&doc["board"])
        .into_iter()
        .find(|n| n["id"] == id)
        .unwrap_or_else(|| panic!("{id} not in the document"))
}

fn child_ids(node: &Value) -> Vec<&str> {
    node["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect()
}

#[test]
fn fixture_files_are_well_formed() {
    let ids = board_ids();
    assert!(ids.len() >= 5, "{ids:?}");
    for id in &ids {
        assert!(
            !id.is_empty()
                && id.len() <= 256
                && id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'),
            "{id}"
        );
        let body = load(id).unwrap();
        for key in ["elements", "comments", "canvasOrder"] {
            assert!(body[key].is_object(), "{id}: {key}");
        }
        assert!(body["fetchedTime"].is_i64(), "{id}");
        assert!(
            is_type(&body["elements"][id.as_str()], "BOARD"),
            "{id}: holds its own BOARD element"
        );
    }
}

#[test]
fn every_fixture_is_deterministic_and_valid() {
    let schema: Value =
        serde_json::from_str(shared_board_api::internals::document::schema::SCHEMA_JSON).unwrap();
    let validator = jsonschema::draft202012::new(&schema).expect("schema compiles");
    for id in board_ids() {
        let fetched = fetched_for(&id);
        let first = serde_json::to_vec(&normalize(&fetched, "milanote").unwrap()).unwrap();
        let second = serde_json::to_vec(&normalize(&fetched.clone(), "milanote").unwrap()).unwrap();
        assert_eq!(first, second, "{id}: not deterministic");
        let value: Value = serde_json::from_slice(&first).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&value)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{id}: {errors:#?}");
        if std::env::var("PRINT_FIXTURE").as_deref() == Ok(id.as_str()) {
            println!("{}", serde_json::to_string_pretty(&value).unwrap());
        }
    }
}

#[test]
fn demo_board_nests_three_levels_of_boards() {
    let doc = document(DEMO);
    assert_eq!(
        doc["source"],
        json!({"provider": "milanote", "boardId": DEMO})
    );
    assert_eq!(doc["fetchedAt"], "2026-12-02T08:26:40.000Z");
    assert_eq!(doc["board"]["title"], "Lisbon & Porto — spring trip");
    let chain = ["2Xk9PqRt7LmN4v", "3Hq7ZsWd2KpL8c", "4Rt5YuNm3BvC6x"];
    for id in chain {
        let board = find(&doc, id);
        assert_eq!(board["type"], "BOARD");
        assert_eq!(board["childrenLoaded"], true, "{id}");
        assert!(!board["children"].as_array().unwrap().is_empty(), "{id}");
    }
    assert_eq!(
        find(&doc, "Tbl2Shortlis0k")["table"]["rows"][2][0]["value"],
        "Cantinho do Avillez"
    );
    // canvasOrder first, then section/score/index/y/x/id (the stacking
    // order, not the reading order); nothing trashed or deleted.
    assert_eq!(
        child_ids(&doc["board"]),
        [
            "Crd9EveryNode1",
            "Wq3mTz8Lp0Ab1C",
            "Img5Tram28xYz0",
            "2Xk9PqRt7LmN4v",
            "Col8BeforeGo01",
            "5Sw7Ln4Dc2Sk8e",
            "Crd2NataRank0q",
            "Lnk6TimeOut0aB",
            "Fil7Tickets0pQ",
            "Tbl9Budget0Xy1",
            "Cth3Budget0Thr",
            "Lin8Arrow0Cd1E",
            "Crd7Unsorted01"
        ]
    );
    let comments = &find(&doc, "Cth3Budget0Thr")["comments"];
    let ids: Vec<&Value> = comments
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["id"])
        .collect();
    assert_eq!(
        ids,
        [
            &json!("Cmt1aBudgetQ1x"),
            &json!("Cmt2bBudgetQ2y"),
            &json!("Cmt3cBudgetQ3z")
        ]
    );
}

#[test]
fn nested_board_alone_is_a_root_too() {
    let doc = document("3Hq7ZsWd2KpL8c");
    assert_eq!(doc["board"]["title"], "Porto day trip");
    assert_eq!(doc["board"]["location"]["parentId"], "2Xk9PqRt7LmN4v");
    assert_eq!(find(&doc, "4Rt5YuNm3BvC6x")["childrenLoaded"], true);
}

#[test]
fn edge_board_ordering_cycles_orphans_and_fallbacks() {
    let doc = document(EDGE);
    let board = &doc["board"];
    assert_eq!(board["title"], "Untitled board");
    assert_eq!(
        board["timestamps"],
        json!({"createdAt": "2026-11-30T00:53:20.000Z", "modifiedAt": "2026-11-30T09:00:00.000Z"})
    );
    assert!(board.get("icon").is_none());
    assert_eq!(
        child_ids(board),
        [
            "e-ord-d",
            "e-ord-b",
            "e-ord-i",
            "8Nl0Ad3dBo4rdX",
            "e-ord-c",
            "e-ord-f",
            "e-ord-g",
            "e-ord-a",
            "e-ord-e",
            "e-ord-h",
            "e-keyonly",
            "e-underscore",
            "e-file",
            "e-image",
            "e-link",
            "e-skeleton",
            "e-table",
            "e-thread-1",
            "e-thread-2",
            "e-unknown",
            "e-untyped",
            "e-ord-j"
        ]
    );
    let all: BTreeSet<&str> = nodes(board)
        .iter()
        .map(|n| n["id"].as_str().unwrap())
        .collect();
    for gone in ["e-cyc-1", "e-cyc-2", "e-self", "e-orphan", "e-orphan-child"] {
        assert!(!all.contains(gone), "{gone}");
    }
    assert_eq!(all.iter().filter(|id| **id == EDGE).count(), 1);
    assert_eq!(
        child_ids(find(&doc, "e-underscore")),
        ["e-rt-plain", "e-rt-tiptap-str", "e-rt-draft-str"]
    );
    assert_eq!(find(&doc, "8Nl0Ad3dBo4rdX")["childrenLoaded"], false);
    assert_eq!(
        find(&doc, "e-ord-h")["location"]["position"],
        json!({"y": 5, "index": 0, "score": 10})
    );
    assert_eq!(find(&doc, "e-skeleton")["rootBoard"], "0Other0Root000");
    let unknown = find(&doc, "e-untyped");
    assert_eq!(
        (&unknown["type"], &unknown["elementType"]),
        (&json!("UNKNOWN"), &json!(""))
    );
}

#[test]
fn edge_board_comments_table_and_rich_text() {
    let doc = document(EDGE);
    let thread = find(&doc, "e-thread-1");
    let ids: Vec<&str> = thread["comments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["c-1", "c-2", "c-3", "c-late"]);
    assert_eq!(thread["comments"][0]["richText"]["plainText"], "first");
    assert!(thread["comments"][0].get("updatedAt").is_none());
    assert_eq!(
        find(&doc, "e-thread-2")["comments"][0]["id"],
        "c-by-element"
    );

    let rows = &find(&doc, "e-table")["table"]["rows"];
    let values: Vec<Vec<Value>> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r.as_array()
                .unwrap()
                .iter()
                .map(|c| c.get("value").cloned().unwrap_or(Value::Null))
                .collect()
        })
        .collect();
    assert_eq!(
        values,
        [
            vec![json!("v"), json!("from draft string")],
            vec![json!("tiptap cell"), json!(0)],
            vec![],
            vec![json!(7), Value::Null, json!("")]
        ]
    );
    let plain = |id: &str| find(&doc, id)["richText"]["plainText"].clone();
    assert_eq!(plain("e-rt-tiptap-str"), "TipTap as a string");
    assert_eq!(plain("e-rt-draft-str"), "Draft.js as a string\nline three");
    assert_eq!(plain("e-rt-plain"), "Plain string text");
    assert_eq!(plain("e-rt-draft-obj"), "Draft.js object");
    assert_eq!(plain("e-rt-tiptap-obj"), "Task with \na hard break");
    assert_eq!(find(&doc, "e-rt-tiptap-str")["transparent"], true);
    assert!(find(&doc, "e-rt-plain").get("transparent").is_none());
}

#[test]
fn planted_values_never_reach_the_document() {
    // The normalizer copies raw JSON only into blocks, UNKNOWN.content and raw
    // arrays, and leaves the sensitive keys out as it copies; fields outside
    // the table (a card's `password`, a comment's `userId`/`email`,
    // `meta.creator`, Draft.js `entityMap`) are never copied at all.
    let doc = document(EDGE);
    let text = serde_json::to_string(&doc).unwrap();
    assert!(!text.contains("PLANTED-SECRET"), "{text}");
    // The leaves the planted values lived in are still there.
    assert_eq!(
        find(&doc, "e-unknown")["content"]["strokes"],
        json!([[0, 0], [10, 12]])
    );
    assert_eq!(
        doc["board"]["defaultColorPalette"],
        json!([{"hex": "#000"}])
    );
    let demo = serde_json::to_string(&document(DEMO)).unwrap();
    assert!(
        !demo.contains("u-4f2c91aa"),
        "comment userId / meta.creator copied"
    );
}

#[test]
fn objects_that_sanitizing_emptied_inside_leaves_are_pruned_by_include() {
    use shared_board_api::internals::document::sanitize::sanitize;
    use shared_board_api::internals::select::{Selection, View};
    let mut doc = document(EDGE);
    sanitize(&mut doc);
    // `full` is the sanitized document untouched: the emptied object stays.
    assert_eq!(
        find(&doc, "e-unknown")["content"],
        json!({"strokes": [[0, 0], [10, 12]], "nested": {}})
    );
    let pruned = json!({"strokes": [[0, 0], [10, 12]]});
    for selection in [
        Selection::view(View::Standard),
        Selection::include("board.children").expect("valid"),
        Selection::include("board.children.content,board.children.id").expect("valid"),
    ] {
        let out = selection.apply(&doc);
        assert_eq!(
            find(&out, "e-unknown")["content"],
            pruned,
            "{}",
            selection.canonical()
        );
    }
    // Pruning is not matching: an exclude keeps the leaf as it is.
    let out = Selection::exclude(View::Full, "board.children.title")
        .expect("valid")
        .apply(&doc);
    assert_eq!(find(&out, "e-unknown")["content"]["nested"], json!({}));
}

#[test]
fn the_demo_holds_every_element_type() {
    let doc = document(DEMO);
    let shapes = find(&doc, SHAPES);
    assert_eq!(shapes["childrenLoaded"], true);
    let mut types: Vec<&str> = nodes(&doc["board"])
        .into_iter()
        .filter_map(|n| n["type"].as_str())
        .collect();
    types.sort_unstable();
    types.dedup();
    for kind in [
        "BOARD",
        "COLUMN",
        "CARD",
        "IMAGE",
        "FILE",
        "LINK",
        "TASK_LIST",
        "TASK",
        "TABLE",
        "COMMENT_THREAD",
        "DOCUMENT",
        "COLOR_SWATCH",
        "SKETCH",
        "ANNOTATION",
        "LINE",
    ] {
        assert!(types.contains(&kind), "{kind} not in the demo: {types:?}");
    }
    // A line between two cards of its board, by their ids.
    let line = find(&doc, "Lin0Between01");
    for (end, card) in [("start", "Crd0LineFrom01"), ("end", "Crd0LineTo0002")] {
        assert_eq!(line[end]["elementId"], card);
        assert_eq!(find(&doc, card)["type"], "CARD");
        assert_eq!(find(&doc, card)["location"]["parentId"], SHAPES);
    }
    assert!(line["lineStyle"].get("modifiedBy").is_none());
    let sketch = find(&doc, "Skt0Tram28Map");
    assert!(sketch["drawing"]["svg"]
        .as_str()
        .is_some_and(|s| s.starts_with("<svg")));
    assert!(sketch["drawing"].get("userId").is_none());
    assert_eq!(find(&doc, "Swt0Azul00001")["color"], "#1f5fa8");
    assert_eq!(
        find(&doc, "Swt0Sand00002")["caption"]["plainText"],
        "Sand of Comporta"
    );
    assert_eq!(find(&doc, "Doc0Packing01")["title"], "Packing list");
}

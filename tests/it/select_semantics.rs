//! Selector semantics on one hand-written sanitized
//! document: presets, include, exclude, wildcards, arrays and leaves.

use serde_json::{json, Value};
use shared_board_api::internals::select::{Selection, View};

fn doc() -> Value {
    json!({
        "version": 1,
        "source": {"provider": "milanote", "boardId": "root"},
        "fetchedAt": "2026-01-01T00:00:00.000Z",
        "board": {
            "id": "root", "type": "BOARD", "title": "Root", "color": "blue", "childrenLoaded": true,
            "location": {},
            "timestamps": {"createdAt": "t0"},
            "children": [
                {"id": "c1", "type": "CARD",
                 "richText": {"blocks": [{"type": "paragraph", "id": "blk", "attrs": {}}], "plainText": "hello"},
                 "timestamps": {"createdAt": "t1"}, "children": []},
                {"id": "col", "type": "COLUMN", "title": "Col", "location": {"parentId": "root"}, "children": [
                    {"id": "tb", "type": "TABLE", "table": {
                        "rows": [[{"value": "a1"}, {"value": "a2"}], [{"richText": {"blocks": [], "plainText": "b1"}}]],
                        "columnWidths": [1, 2]
                    }, "timestamps": {"createdAt": "t2"}, "children": []}
                ]},
                {"id": "lk", "type": "LINK", "url": "https://x", "caption": {"blocks": [], "plainText": "cap"}, "children": []},
                {"id": "u", "type": "UNKNOWN", "elementType": "WEIRD",
                 "content": {"id": "inner", "title": "not a title", "timestamps": {}}, "children": []}
            ]
        }
    })
}

fn include(list: &str) -> Value {
    Selection::include(list)
        .unwrap_or_else(|e| panic!("{list}: {e}"))
        .apply(&doc())
}

fn exclude(view: View, list: &str) -> Value {
    Selection::exclude(view, list)
        .unwrap_or_else(|e| panic!("{list}: {e}"))
        .apply(&doc())
}

#[test]
fn include_cases() {
    let ids =
        json!({"board": {"children": [{"id": "c1"}, {"id": "col"}, {"id": "lk"}, {"id": "u"}]}});
    let cases: Vec<(&str, Value)> = vec![
        ("version", json!({"version": 1})),
        ("source.boardId", json!({"source": {"boardId": "root"}})),
        ("board.*.id", ids.clone()),
        ("board.children.id", ids.clone()),
        (
            "board.children.*.id",
            json!({"board": {"children": [
                {"children": []}, {"children": [{"id": "tb"}]}, {"children": []}, {"children": []}
            ]}}),
        ),
        // `children: []` is kept on every node `**` passed through.
        (
            "board.**.id",
            json!({"board": {"id": "root", "children": [
                {"id": "c1", "children": []},
                {"id": "col", "children": [{"id": "tb", "children": []}]},
                {"id": "lk", "children": []},
                {"id": "u", "children": []}
            ]}}),
        ),
        // Through `rows` and its inner arrays; a row left empty stays `[]`.
        (
            "board.**.table.rows.value",
            json!({"board": {"children": [
                {"children": []},
                {"children": [{"table": {"rows": [[{"value": "a1"}, {"value": "a2"}], []]}, "children": []}]},
                {"children": []},
                {"children": []}
            ]}}),
        ),
        (
            "board.**.plainText",
            json!({"board": {"children": [
                {"richText": {"plainText": "hello"}, "children": []},
                {"children": [{"table": {"rows": [[], [{"richText": {"plainText": "b1"}}]]}, "children": []}]},
                {"caption": {"plainText": "cap"}, "children": []},
                {"children": []}
            ]}}),
        ),
        // The empty `location` is dropped, so nothing is kept.
        ("board.location", json!({})),
        ("board.location,version", json!({"version": 1})),
        ("board.icon", json!({})),
        ("board.icon.svgUrl", json!({})),
        (
            "board.children.caption",
            json!({"board": {"children": [{"caption": {"blocks": [], "plainText": "cap"}}]}}),
        ),
        // A leaf is kept whole, less the empty objects inside it.
        (
            "board.children.content",
            json!({"board": {"children": [
                {"content": {"id": "inner", "title": "not a title"}}
            ]}}),
        ),
        (
            "board.children.richText.blocks",
            json!({"board": {"children": [
                {"richText": {"blocks": [{"type": "paragraph", "id": "blk"}]}}
            ]}}),
        ),
        (
            "**.timestamps",
            json!({"board": {"timestamps": {"createdAt": "t0"}, "children": [
                {"timestamps": {"createdAt": "t1"}, "children": []},
                {"children": [{"timestamps": {"createdAt": "t2"}, "children": []}]},
                {"children": []},
                {"children": []}
            ]}}),
        ),
        ("board.children.table", json!({"board": {"children": []}})),
        (
            "board.children.children.table.columnWidths",
            json!({"board": {"children": [
                {"children": []}, {"children": [{"table": {"columnWidths": [1, 2]}}]}, {"children": []}, {"children": []}
            ]}}),
        ),
    ];
    for (list, expected) in cases {
        assert_eq!(include(list), expected, "include={list}");
    }
}

/// `doc()` without the empty objects inside its leaves, as include keeps it.
fn doc_without_empty_leaf_objects() -> Value {
    let mut pruned = doc();
    let children = &mut pruned["board"]["children"];
    children[0]["richText"]["blocks"][0]
        .as_object_mut()
        .expect("block")
        .remove("attrs");
    children[3]["content"]
        .as_object_mut()
        .expect("content")
        .remove("timestamps");
    pruned
}

#[test]
fn include_where_a_selector_ends_keeps_the_value_whole_without_empty_objects() {
    let mut expected = doc_without_empty_leaf_objects();
    expected["board"]
        .as_object_mut()
        .expect("board")
        .remove("location");
    assert_eq!(include("board")["board"], expected["board"]);
    assert_eq!(include("**"), expected);
    assert_eq!(include("*"), expected);
    assert_eq!(include("version,source,fetchedAt,board"), expected);
}

#[test]
fn wildcards_never_enter_leaves() {
    let out = include("**.id").to_string();
    assert!(!out.contains("inner"), "{out}");
    assert!(!out.contains("blk"), "{out}");
    let out = include("board.**.title").to_string();
    assert!(!out.contains("not a title"), "{out}");
    // And exclude leaves them alone too.
    let out = exclude(View::Full, "**.id");
    assert_eq!(out["board"]["children"][3]["content"]["id"], "inner");
    assert_eq!(
        out["board"]["children"][0]["richText"]["blocks"][0]["id"],
        "blk"
    );
    assert!(out["board"].get("id").is_none());
}

#[test]
fn exclude_cases() {
    let mut no_timestamps = doc();
    let board = no_timestamps["board"].as_object_mut().expect("board");
    board.remove("timestamps");
    let children = board["children"].as_array_mut().expect("children");
    children[0]
        .as_object_mut()
        .expect("card")
        .remove("timestamps");
    children[1]["children"][0]
        .as_object_mut()
        .expect("table")
        .remove("timestamps");

    let full = doc();
    let cases: Vec<(View, &str, Value)> = vec![
        (View::Full, "**.timestamps", no_timestamps.clone()),
        // `timestamps` emptied this way is dropped, as if excluded whole.
        (View::Full, "**.createdAt", no_timestamps),
        (View::Full, "*", json!({})),
        (View::Full, "**", json!({})),
        (View::Full, "version,source,fetchedAt,board", json!({})),
        (
            View::Compact,
            "board",
            json!({"version": 1, "source": {"provider": "milanote", "boardId": "root"}}),
        ),
        (
            View::Compact,
            "source.provider,source.boardId,board,version",
            json!({}),
        ),
        (View::Full, "board.icon", full.clone()),
        (View::Full, "board.children.children.children.id", full),
    ];
    for (view, list, expected) in cases {
        assert_eq!(
            exclude(view, list),
            expected,
            "{}&exclude={list}",
            view.as_str()
        );
    }
}

#[test]
fn exclude_drops_objects_it_empties_but_keeps_those_already_empty() {
    // `location` of `col` held only `parentId`: dropped. The root's `location`
    // was `{}` already: kept.
    let out = exclude(View::Full, "**.parentId");
    assert!(out["board"]["children"][1].get("location").is_none());
    assert_eq!(out["board"]["location"], json!({}));
    // The same with a path that ends inside the already-empty object.
    let out = exclude(View::Full, "board.location.parentId");
    assert_eq!(out, doc());
    // Array elements emptied this way are dropped; the array stays `[]`.
    let out = exclude(View::Full, "board.children.*");
    assert_eq!(out["board"]["children"], json!([]));
    assert_eq!(out["board"]["id"], "root");
    // Table cells emptied this way go; rows stay, even empty.
    let out = exclude(View::Full, "board.**.table.rows.value");
    assert_eq!(
        out["board"]["children"][1]["children"][0]["table"]["rows"],
        json!([[], [{"richText": {"blocks": [], "plainText": "b1"}}]])
    );
}

#[test]
fn presets() {
    let compact = json!({
        "version": 1,
        "source": {"provider": "milanote", "boardId": "root"},
        "board": {"id": "root", "type": "BOARD", "title": "Root", "children": [
            {"id": "c1", "type": "CARD", "children": []},
            {"id": "col", "type": "COLUMN", "title": "Col", "children": [
                {"id": "tb", "type": "TABLE", "children": []}
            ]},
            {"id": "lk", "type": "LINK", "children": []},
            {"id": "u", "type": "UNKNOWN", "children": []}
        ]}
    });
    assert_eq!(Selection::view(View::Compact).apply(&doc()), compact);
    let mut standard = doc_without_empty_leaf_objects();
    let board = standard["board"].as_object_mut().expect("board");
    for key in ["childrenLoaded", "location", "timestamps"] {
        board.remove(key);
    }
    assert_eq!(Selection::view(View::Standard).apply(&doc()), standard);
    assert_eq!(Selection::view(View::Full).apply(&doc()), doc());
    // The presets are the documented include lists.
    for view in [View::Compact, View::Standard] {
        let list = match view {
            View::Compact => shared_board_api::internals::select::COMPACT,
            _ => shared_board_api::internals::select::STANDARD,
        };
        assert_eq!(include(list), Selection::view(view).apply(&doc()));
    }
    // Exclude applies to the preset it is given.
    assert_eq!(
        exclude(View::Compact, "board.**.title"),
        json!({
            "version": 1,
            "source": {"provider": "milanote", "boardId": "root"},
            "board": {"id": "root", "type": "BOARD", "children": [
                {"id": "c1", "type": "CARD", "children": []},
                {"id": "col", "type": "COLUMN", "children": [{"id": "tb", "type": "TABLE", "children": []}]},
                {"id": "lk", "type": "LINK", "children": []},
                {"id": "u", "type": "UNKNOWN", "children": []}
            ]}
        })
    );
}

#[test]
fn order_and_duplicates_do_not_matter() {
    let lists = [
        (
            "board.**.id,version,**.timestamps",
            "**.timestamps, version ,board.**.id,version",
        ),
        (
            "board.children,board.*.title",
            "board.*.title,board.children",
        ),
        (
            "board.**.table.rows.value,board.**",
            "board.**,board.**.table.rows.value",
        ),
    ];
    for (a, b) in lists {
        assert_eq!(include(a), include(b), "{a} / {b}");
        assert_eq!(exclude(View::Full, a), exclude(View::Full, b), "{a} / {b}");
        let ca = Selection::include(a).map(|s| s.canonical()).ok();
        let cb = Selection::include(b).map(|s| s.canonical()).ok();
        assert_eq!(ca, cb);
    }
}

#[test]
fn apply_leaves_its_input_alone_and_can_run_many_times() {
    let d = doc();
    let sel = Selection::exclude(View::Full, "**.timestamps").expect("valid");
    let first = sel.apply(&d);
    assert_eq!(sel.apply(&d), first);
    assert_eq!(d, doc());
}

#[test]
fn non_object_documents_give_empty_data() {
    let sel = Selection::include("version").expect("valid");
    assert_eq!(sel.apply(&json!([1, 2])), json!({}));
    assert_eq!(sel.apply(&json!(null)), json!({}));
    let sel = Selection::exclude(View::Full, "version").expect("valid");
    assert_eq!(sel.apply(&json!("x")), json!("x"));
}

/// `levels` nested nodes under `board`, the leaf a card with a creation time.
fn nested_nodes(levels: usize) -> Value {
    let mut node =
        json!({"id": "leaf", "type": "CARD", "timestamps": {"createdAt": "t"}, "children": []});
    for i in 0..levels {
        // By hand: `json!` would serialize `node` again at every level.
        let mut parent = json!({"id": format!("n{i}"), "type": "COLUMN", "timestamps": {}});
        parent["children"] = Value::Array(vec![node]);
        node = parent;
    }
    let mut doc = json!({"version": 1});
    doc["board"] = node;
    doc
}

#[test]
fn deeply_nested_nodes() {
    // 60 levels of `children` (120 JSON levels, as deep as the normalizer
    // writes): every level is walked.
    let doc = nested_nodes(60);
    let ids = Selection::include("board.**.id")
        .expect("valid")
        .apply(&doc);
    assert_eq!(ids.to_string().matches("\"id\"").count(), 61);
    let out = Selection::exclude(View::Full, "**.createdAt")
        .expect("valid")
        .apply(&doc);
    assert!(!out.to_string().contains("createdAt"));
    // Already-empty timestamps stay; the emptied one goes.
    assert_eq!(out.to_string().matches("timestamps").count(), 60);
    // 300 levels (600 JSON levels): the walks stop at 127 containers, so
    // they never go deeper whatever the value; below that an include keeps
    // nothing and an exclude leaves the value as it is.
    let doc = nested_nodes(300);
    let ids = Selection::include("board.**.id")
        .expect("valid")
        .apply(&doc);
    let kept = ids.to_string().matches("\"id\"").count();
    assert!((60..70).contains(&kept), "{kept} ids");
    let out = Selection::exclude(View::Full, "**.createdAt")
        .expect("valid")
        .apply(&doc);
    assert!(out.to_string().contains("createdAt"));
}

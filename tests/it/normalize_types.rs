//! The normalization table, one element type at a
//! time: raw element in, the node's expected JSON out.

use serde_json::{json, Map, Value};
use shared_board_api::internals::provider::fetched::{canvas_order_of, comments_of};
use shared_board_api::internals::provider::normalize::normalize;
use shared_board_api::internals::provider::Fetched;

const ROOT: &str = "root";

/// Normalizes a board holding `element` (stored under `id`) and `comments`,
/// and returns that element's node.
fn node_with(id: &str, mut element: Value, comments: Value, loaded: &[&str]) -> Value {
    if element.get("location").is_none() {
        element["location"] = json!({"parentId": ROOT});
    }
    let mut elements = Map::new();
    elements.insert(ROOT.into(), json!({"elementType": "BOARD"}));
    elements.insert(id.into(), element);
    let mut fetched = Fetched::from_elements(ROOT, elements);
    fetched.comments = comments_of(&serde_json::from_value(comments).unwrap());
    fetched.loaded_boards = loaded
        .iter()
        .map(|s| s.to_string())
        .chain([ROOT.to_owned()])
        .collect();
    let doc = serde_json::to_value(normalize(&fetched, "milanote").unwrap()).unwrap();
    let children = doc["board"]["children"].as_array().unwrap();
    assert_eq!(children.len(), 1, "{doc}");
    children[0].clone()
}

fn node(element: Value) -> Value {
    node_with("e", element, json!({}), &[])
}

/// The fields every node has, for an element stored as `e` directly under the root.
fn base(kind: &str) -> Value {
    json!({"id": "e", "type": kind, "location": {"parentId": ROOT}, "children": []})
}

fn merged(mut a: Value, b: Value) -> Value {
    if let (Some(a), Value::Object(b)) = (a.as_object_mut(), b) {
        a.extend(b);
    }
    a
}

fn doc_of(text: &str) -> Value {
    json!({"type": "doc", "content": [{"type": "paragraph", "content": [{"type": "text", "text": text}]}]})
}

fn blocks_of(text: &str) -> Value {
    json!([{"type": "paragraph", "content": [{"type": "text", "text": text}]}])
}

#[test]
fn every_node_location_and_timestamps() {
    let got = node(json!({
        "elementType": "COLUMN",
        "location": {"parentId": ROOT, "section": "canvas", "rootBoard": 7,
                     "position": {"x": 1.5, "y": -2, "index": 3, "score": "4"}},
        "meta": {"createdTime": 0, "modifiedTime": "1000", "significantModified": "2024-01-02T03:04:05+01:00",
                 "locationSectionModifiedTime": "never", "creator": "u-1"}
    }));
    let want = json!({
        "id": "e", "type": "COLUMN", "children": [],
        "location": {"parentId": ROOT, "section": "canvas", "rootBoard": 7,
                     "position": {"x": 1.5, "y": -2, "index": 3, "score": "4"}},
        "timestamps": {"createdAt": "1970-01-01T00:00:00.000Z", "modifiedAt": "1970-01-01T00:00:01.000Z",
                       "significantModifiedAt": "2024-01-02T02:04:05.000Z"}
    });
    assert_eq!(got, want);
}

#[test]
fn flat_positions_nested_wins_then_location_then_top_level() {
    let got = node(json!({
        "elementType": "COLUMN",
        "location": {"parentId": ROOT, "position": {"x": 1}, "positionX": 2, "positionY": 3},
        "positionX": 4, "positionY": 5, "positionIndex": 6, "positionScore": 7
    }));
    assert_eq!(
        got["location"]["position"],
        json!({"x": 1, "y": 3, "index": 6, "score": 7})
    );
}

#[test]
fn board() {
    let got = node_with(
        "b1",
        json!({"elementType": "BOARD", "location": {"parentId": ROOT}, "content": {
            "title": "Trips", "color": "#fff", "secondaryColor": 3, "defaultColorPalette": ["#a", "#b"],
            "published": false,
            "icon": {"type": "emoji", "id": "x", "name": "X", "svg": "https://i/x.svg", "png": "https://i/x.png"},
            "image": {"original": "https://o", "thumb": "https://t"},
            "file": {"ext": "png"},
            "permission": "owner"
        }}),
        json!({}),
        &["b1"],
    );
    let want = json!({
        "id": "b1", "type": "BOARD", "location": {"parentId": ROOT}, "children": [],
        "title": "Trips", "color": "#fff", "secondaryColor": 3, "defaultColorPalette": ["#a", "#b"],
        "published": false,
        "icon": {"type": "emoji", "id": "x", "name": "X", "svgUrl": "https://i/x.svg", "pngUrl": "https://i/x.png"},
        "image": {"url": "https://o", "originalUrl": "https://o", "thumbnailUrl": "https://t"},
        "file": {"extension": "png"},
        "childrenLoaded": true
    });
    assert_eq!(got, want);
    let untitled = node(json!({"elementType": "BOARD", "content": {"title": 5}}));
    assert_eq!(
        untitled,
        merged(
            base("BOARD"),
            json!({"title": "Untitled board", "childrenLoaded": false, "unloadedReason": "UPSTREAM_ERROR"})
        )
    );
}

#[test]
fn column() {
    assert_eq!(
        node(json!({"elementType": "COLUMN", "content": {"title": "To do"}})),
        merged(base("COLUMN"), json!({"title": "To do"}))
    );
    assert_eq!(
        node(json!({"elementType": "COLUMN", "content": {"title": ["x"]}})),
        base("COLUMN")
    );
}

#[test]
fn card() {
    let table: &[(Value, Value)] = &[
        (
            json!({"textContent": doc_of("hi"), "background": "#eee", "transparent": {"enabled": true}}),
            json!({"richText": {"blocks": blocks_of("hi"), "plainText": "hi"}, "background": "#eee", "transparent": true}),
        ),
        (json!({"transparent": false}), json!({"transparent": false})),
        (json!({"transparent": {"enabled": "yes"}}), json!({})),
        // A plain string, even empty, is rich text.
        (
            json!({"textContent": ""}),
            json!({"richText": {"blocks": [], "plainText": ""}}),
        ),
        (
            json!({"textContent": "plain"}),
            json!({"richText": {"blocks": [], "plainText": "plain"}}),
        ),
    ];
    for (content, fields) in table {
        let got = node(json!({"elementType": "CARD", "content": content}));
        assert_eq!(got, merged(base("CARD"), fields.clone()), "{content}");
    }
}

#[test]
fn image_url_fallbacks() {
    let table: &[(Value, Value)] = &[
        (
            json!({"regular": "r", "large": "l", "original": "o", "url": "u", "huge": "h", "thumb": "t",
                   "width": 10, "height": "20", "primaryColor": "#123", "colors": ["#1", {"c": 2}], "transparent": true}),
            json!({"url": "r", "originalUrl": "o", "thumbnailUrl": "t", "largeUrl": "l", "hugeUrl": "h",
                   "width": 10, "height": "20", "primaryColor": "#123", "colors": ["#1", {"c": 2}], "transparent": true}),
        ),
        (
            json!({"large": "l", "original": "o", "url": "u"}),
            json!({"url": "l", "originalUrl": "o", "largeUrl": "l"}),
        ),
        (
            json!({"regular": "", "original": "o", "url": "u"}),
            json!({"url": "o", "originalUrl": "o"}),
        ),
        (json!({"url": "u"}), json!({"url": "u"})),
    ];
    for (image, want) in table {
        let got = node(json!({"elementType": "IMAGE", "content": {"image": image}}));
        assert_eq!(
            got,
            merged(base("IMAGE"), json!({"image": want})),
            "{image}"
        );
    }
    let empty = node(json!({"elementType": "IMAGE", "content": {"image": {}, "file": "x"}}));
    assert_eq!(empty, base("IMAGE"));
}

#[test]
fn file() {
    let got = node(json!({"elementType": "FILE", "content": {
        "title": "Plan.pdf",
        "file": {"type": "document", "ext": "pdf", "mime": "application/pdf", "filename": "plan.pdf", "size": 1234,
                 "lastModified": 1_700_000_000_000_i64, "uploadedTimestamp": "2024-05-06T07:08:09.1Z", "url": "https://f/plan.pdf",
                 "uploaderId": "u-1"},
        "image": {"regular": "https://f/preview.png"},
        "previewReady": true, "displayMode": "preview"
    }}));
    let want = merged(
        base("FILE"),
        json!({
            "title": "Plan.pdf",
            "file": {"type": "document", "extension": "pdf", "mimeType": "application/pdf", "filename": "plan.pdf",
                     "sizeBytes": 1234, "modifiedAt": "2023-11-14T22:13:20.000Z", "uploadedAt": "2024-05-06T07:08:09.100Z",
                     "url": "https://f/plan.pdf"},
            "previewImage": {"url": "https://f/preview.png"},
            "previewReady": true, "displayMode": "preview"
        }),
    );
    assert_eq!(got, want);
}

#[test]
fn link() {
    let got = node(json!({"elementType": "LINK", "content": {
        "link": {"url": "https://a", "title": "A", "favicon": "https://a/f.ico"}, "url": "https://b",
        "provider": {"name": "A", "url": "https://a", "display": "a"}, "mediaType": "article",
        "caption": doc_of("cap"), "showCaption": true
    }}));
    let want = merged(
        base("LINK"),
        json!({"url": "https://a", "title": "A", "faviconUrl": "https://a/f.ico",
               "provider": {"name": "A", "url": "https://a", "display": "a"}, "mediaType": "article",
               "caption": {"blocks": blocks_of("cap"), "plainText": "cap"}, "showCaption": true}),
    );
    assert_eq!(got, want);
    let fallback = node(
        json!({"elementType": "LINK", "content": {"link": {"title": "T"}, "url": "https://b", "provider": {"x": 1}}}),
    );
    assert_eq!(
        fallback,
        merged(base("LINK"), json!({"url": "https://b", "title": "T"}))
    );
}

#[test]
fn task_list_and_tasks() {
    assert_eq!(
        node(json!({"elementType": "TASK_LIST", "content": {"title": "Todo", "showTitle": false}})),
        merged(
            base("TASK_LIST"),
            json!({"title": "Todo", "showTitle": false})
        )
    );
    let table: &[(Value, Value)] = &[
        (
            json!({"isComplete": true, "completed": false}),
            json!({"completed": true}),
        ),
        (
            json!({"isComplete": "no", "completed": false, "checked": true}),
            json!({"completed": false}),
        ),
        (json!({"checked": true}), json!({"completed": true})),
        (
            json!({"textContent": doc_of("Call"), "dueDate": "2030-04-05", "hasDueDateTime": false,
                   "dueReminderTimestamp": 1_900_000_000_000_i64}),
            json!({"richText": {"blocks": blocks_of("Call"), "plainText": "Call"}, "dueDate": "2030-04-05",
                   "hasDueDateTime": false, "reminderAt": "2030-03-17T17:46:40.000Z"}),
        ),
        (
            json!({"dueDate": 1_900_000_000_000_i64, "dueReminderTimestamp": "soon"}),
            json!({"dueDate": 1_900_000_000_000_i64}),
        ),
    ];
    for (content, fields) in table {
        let got = node(json!({"elementType": "TASK", "content": content}));
        assert_eq!(got, merged(base("TASK"), fields.clone()), "{content}");
    }
}

#[test]
fn table() {
    let draft = json!({"blocks": [{"key": "a", "text": "from draft"}], "entityMap": {}});
    let got = node(
        json!({"elementType": "TABLE", "content": {"width": 400, "tableContent": {
            "version": 2, "colWidthsGU": [10, 12],
            "data": [
                [{"value": "A", "textStyle": ["bold"], "background": "#eee"}, {"draftContent": draft.to_string()}],
                [{"value": "", "textContent": doc_of("tip")}, {}],
            ]
        }}}),
    );
    let want = merged(
        base("TABLE"),
        json!({"width": 400, "table": {
            "rows": [
                [{"value": "A", "textStyles": ["bold"], "background": "#eee"},
                 {"value": "from draft", "richText": {"blocks": [{"key": "a", "text": "from draft"}], "plainText": "from draft"}}],
                [{"value": "tip", "richText": {"blocks": blocks_of("tip"), "plainText": "tip"}}, {}]
            ],
            "columnWidths": [10, 12], "version": 2
        }}),
    );
    assert_eq!(got, want);
    let no_data = node(json!({"elementType": "TABLE", "content": {"tableContent": {}}}));
    assert_eq!(
        no_data,
        merged(base("TABLE"), json!({"table": {"rows": []}}))
    );
}

#[test]
fn comment_thread() {
    let comments = json!({
        "k2": {"id": "c2", "threadId": "T", "userId": "u-9", "text": "later", "createdAt": 2000, "updatedAt": 3000},
        "k1": {"_id": "c1", "threadId": "T", "text": doc_of("first"), "createdAt": "1970-01-01T00:00:01Z"},
        "k3": {"threadId": "T", "text": "tie, by id", "createdAt": 2000},
        "k4": {"threadId": "other", "text": "not here"}
    });
    let got = node_with(
        "e",
        json!({"elementType": "COMMENT_THREAD", "content": {"threadId": "T"}}),
        comments,
        &[],
    );
    let want = merged(
        base("COMMENT_THREAD"),
        json!({"threadId": "T", "comments": [
            {"id": "c1", "threadId": "T", "richText": {"blocks": blocks_of("first"), "plainText": "first"},
             "createdAt": "1970-01-01T00:00:01.000Z"},
            {"id": "c2", "threadId": "T", "richText": {"blocks": [], "plainText": "later"},
             "createdAt": "1970-01-01T00:00:02.000Z", "updatedAt": "1970-01-01T00:00:03.000Z"},
            {"id": "k3", "threadId": "T", "richText": {"blocks": [], "plainText": "tie, by id"},
             "createdAt": "1970-01-01T00:00:02.000Z"}
        ]}),
    );
    assert_eq!(got, want);
    let by_id = node_with(
        "e",
        json!({"elementType": "COMMENT_THREAD"}),
        json!({"k": {"threadId": "e", "text": "x"}}),
        &[],
    );
    assert_eq!(
        by_id,
        merged(
            base("COMMENT_THREAD"),
            json!({"comments": [{"id": "k", "threadId": "e", "richText": {"blocks": [], "plainText": "x"}}]})
        )
    );
}

#[test]
fn skeleton_and_unknown() {
    let skeleton =
        node(json!({"elementType": "SKELETON", "location": {"parentId": ROOT, "rootBoard": "R1"}}));
    assert_eq!(
        skeleton,
        json!({"id": "e", "type": "SKELETON", "location": {"parentId": ROOT, "rootBoard": "R1"}, "rootBoard": "R1", "children": []})
    );
    for kind in ["ALIAS", "CLONE", "DRAWING"] {
        let unknown = node(
            json!({"elementType": kind, "content": {"start": {"elementId": "a"}, "points": [[1, 2]]}}),
        );
        assert_eq!(
            unknown,
            merged(
                base("UNKNOWN"),
                json!({"elementType": kind, "content": {"start": {"elementId": "a"}, "points": [[1, 2]]}})
            )
        );
    }
    let bare = node(json!({"elementType": 5}));
    assert_eq!(bare, merged(base("UNKNOWN"), json!({"elementType": ""})));
}

#[test]
fn children_attach_through_parent_id_in_order() {
    let mut elements = Map::new();
    elements.insert(ROOT.into(), json!({"elementType": "BOARD"}));
    for (id, parent, score) in [
        ("col", ROOT, 1),
        ("c2", "col", 2),
        ("c1", "col", 1),
        ("c3", "col", 1),
    ] {
        elements.insert(
            id.into(),
            json!({"elementType": "CARD", "location": {"parentId": parent, "position": {"score": score}}}),
        );
    }
    let mut fetched = Fetched::from_elements(ROOT, elements);
    fetched.canvas_order = canvas_order_of(json!({"col": ["c3"]}).as_object().unwrap());
    let doc = serde_json::to_value(normalize(&fetched, "milanote").unwrap()).unwrap();
    let ids: Vec<&str> = doc["board"]["children"][0]["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["c3", "c1", "c2"]);
    assert_eq!(doc["board"]["childrenLoaded"], false);
}

//! The element types beyond the first ten (`DOCUMENT`, `COLOR_SWATCH`,
//! `SKETCH`, `ANNOTATION`, `LINE`), one at a time: raw element in, the
//! node's expected JSON out; secrets planted inside their raw leaves never
//! come out; their documents validate against the schema; the selectors
//! reach their fields; and `unloadedReason` on boards not loaded.

use serde_json::{json, Map, Value};
use shared_board_api::internals::document::{Completeness, UnloadedReason};
use shared_board_api::internals::pipeline::{load, reference};
use shared_board_api::internals::provider::normalize::normalize;
use shared_board_api::internals::provider::Fetched;
use shared_board_api::internals::select::{Selection, View};

const ROOT: &str = "root";
const PLANTED: &str = "PLANTED-SECRET";

fn fetched_with(elements: &[(&str, Value)]) -> Fetched {
    let mut map = Map::new();
    map.insert(ROOT.into(), json!({"elementType": "BOARD"}));
    for (id, element) in elements {
        let mut element = element.clone();
        if element.get("location").is_none() {
            element["location"] = json!({"parentId": ROOT});
        }
        map.insert((*id).into(), element);
    }
    let mut fetched = Fetched::from_elements(ROOT, map);
    fetched.loaded_boards.insert(ROOT.into());
    fetched
}

/// The node of the one element `raw`, stored as `e` under the root.
fn node(raw: Value) -> Value {
    let doc = normalize(&fetched_with(&[("e", raw)]), "milanote").unwrap();
    let doc = serde_json::to_value(doc).unwrap();
    doc["board"]["children"][0].clone()
}

fn base(kind: &str, fields: Value) -> Value {
    let mut node = json!({"id": "e", "type": kind, "location": {"parentId": ROOT}, "children": []});
    if let (Some(node), Value::Object(fields)) = (node.as_object_mut(), fields) {
        node.extend(fields);
    }
    node
}

fn doc_of(text: &str) -> Value {
    json!({"type": "doc", "content": [{"type": "paragraph", "content": [{"type": "text", "text": text}]}]})
}

fn blocks_of(text: &str) -> Value {
    json!([{"type": "paragraph", "content": [{"type": "text", "text": text}]}])
}

#[test]
fn document() {
    let got = node(json!({"elementType": "DOCUMENT", "content": {
        "title": "Packing list", "textContent": doc_of("Rain jacket"), "email": "a@b"
    }}));
    let want = base(
        "DOCUMENT",
        json!({"title": "Packing list", "richText": {"blocks": blocks_of("Rain jacket"), "plainText": "Rain jacket"}}),
    );
    assert_eq!(got, want);
    // Rich text sent as a JSON string, and a title of the wrong type.
    let got = node(json!({"elementType": "DOCUMENT", "content": {
        "title": 7, "textContent": doc_of("x").to_string()
    }}));
    assert_eq!(
        got,
        base(
            "DOCUMENT",
            json!({"richText": {"blocks": blocks_of("x"), "plainText": "x"}})
        )
    );
    assert_eq!(
        node(json!({"elementType": "DOCUMENT"})),
        base("DOCUMENT", json!({}))
    );
}

#[test]
fn color_swatch() {
    let cases: Vec<(Value, Value)> = vec![
        (
            json!({"color": "#e8b730", "caption": doc_of("Sand")}),
            json!({"color": "#e8b730", "caption": {"blocks": blocks_of("Sand"), "plainText": "Sand"}}),
        ),
        (
            json!({"color": {"value": "#1f5fa8", "name": "Azulejo", "token": PLANTED}}),
            json!({"color": "#1f5fa8"}),
        ),
        (json!({"color": {"name": "no value"}}), json!({})),
        (json!({"color": {"value": 5}}), json!({})),
        (json!({"color": 5, "caption": 5}), json!({})),
        (json!({"color": null}), json!({})),
    ];
    for (content, fields) in cases {
        let got = node(json!({"elementType": "COLOR_SWATCH", "content": content}));
        assert_eq!(got, base("COLOR_SWATCH", fields), "{content}");
    }
}

#[test]
fn sketch_and_annotation_keep_the_drawing_as_a_leaf() {
    let drawing = json!({
        "svg": "<svg xmlns='http://www.w3.org/2000/svg'><path d='M0 0L9 9'/></svg>",
        "paths": [{"points": [[0, 0], [9, 9]], "color": "#222", "userId": PLANTED}],
        "meta": {"Token": PLANTED, "apiKey": {"nested": PLANTED}},
        "width": 9
    });
    let kept = json!({
        "svg": "<svg xmlns='http://www.w3.org/2000/svg'><path d='M0 0L9 9'/></svg>",
        "paths": [{"points": [[0, 0], [9, 9]], "color": "#222"}],
        "meta": {},
        "width": 9
    });
    for kind in ["SKETCH", "ANNOTATION"] {
        let got = node(
            json!({"elementType": kind, "content": {"drawing": drawing, "password": PLANTED}}),
        );
        assert_eq!(got, base(kind, json!({"drawing": kept})), "{kind}");
        // Any JSON passes through, null is no drawing.
        let got = node(json!({"elementType": kind, "content": {"drawing": "<svg/>"}}));
        assert_eq!(got, base(kind, json!({"drawing": "<svg/>"})));
        let got = node(json!({"elementType": kind, "content": {"drawing": null}}));
        assert_eq!(got, base(kind, json!({})));
    }
}

#[test]
fn line_keeps_its_ends_control_and_style_as_leaves() {
    let got = node(json!({"elementType": "LINE", "content": {
        "start": {"elementId": "a", "secret": PLANTED, "offset": {"x": 1, "sessionId": PLANTED}},
        "end": "b",
        "control": {"x": 10, "y": 20},
        "lineStyle": {"color": "#333", "endArrow": true, "apiKey": PLANTED, "dash": [{"cookie": PLANTED, "w": 2}]},
        "color": "#ignored"
    }}));
    let want = base(
        "LINE",
        json!({
            "start": {"elementId": "a", "offset": {"x": 1}},
            "end": "b",
            "control": {"x": 10, "y": 20},
            "lineStyle": {"color": "#333", "endArrow": true, "dash": [{"w": 2}]}
        }),
    );
    assert_eq!(got, want);
    let points = node(json!({"elementType": "LINE", "content": {
        "start": {"x": 0, "y": 0}, "end": {"x": 5, "y": 5}, "control": null
    }}));
    assert_eq!(
        points,
        base(
            "LINE",
            json!({"start": {"x": 0, "y": 0}, "end": {"x": 5, "y": 5}})
        )
    );
}

#[test]
fn alias_and_clone_stay_unknown() {
    for kind in ["ALIAS", "CLONE", "Line", "document"] {
        let got = node(json!({"elementType": kind, "content": {"drawing": {"a": 1}}}));
        assert_eq!(
            got,
            base(
                "UNKNOWN",
                json!({"elementType": kind, "content": {"drawing": {"a": 1}}})
            ),
            "{kind}"
        );
    }
}

/// One board holding every new type, with secrets planted in each leaf.
fn every_new_type() -> Fetched {
    let planted = json!({"userId": PLANTED, "inner": [{"Password": PLANTED}]});
    fetched_with(&[
        (
            "e1",
            json!({"elementType": "DOCUMENT", "content": {"title": "D", "textContent": doc_of("body")}}),
        ),
        (
            "e2",
            json!({"elementType": "COLOR_SWATCH", "content": {"color": "#fff", "caption": doc_of("cap")}}),
        ),
        (
            "e3",
            json!({"elementType": "SKETCH", "content": {"drawing": {"svg": "<svg/>", "p": planted}}}),
        ),
        (
            "e4",
            json!({"elementType": "ANNOTATION", "content": {"drawing": {"svg": "<svg/>", "p": planted}}}),
        ),
        (
            "e5",
            json!({"elementType": "LINE", "content": {"start": {"elementId": "e1", "p": planted},
                   "end": {"x": 1, "y": 2}, "control": {"x": 3, "p": planted},
                   "lineStyle": {"color": "#000", "p": planted}}}),
        ),
        (
            "e6",
            json!({"elementType": "BOARD", "content": {"title": "Nested"}}),
        ),
    ])
}

#[test]
fn planted_secrets_never_reach_either_pipeline() {
    let fetched = every_new_type();
    let fast = load::build(
        fetched.clone(),
        ROOT,
        "milanote",
        shared_board_api::internals::document::Coverage::Full,
    )
    .unwrap();
    let text = String::from_utf8_lossy(fast.document_json()).into_owned();
    assert!(!text.contains(PLANTED), "{text}");
    let slow = reference::build(&fetched, ROOT, "milanote").unwrap();
    assert_eq!(text, serde_json::to_string(&slow).unwrap());
    // The leaves kept what was not sensitive.
    assert_eq!(
        slow["board"]["children"][4]["lineStyle"],
        json!({"color": "#000", "p": {"inner": [{}]}})
    );
}

#[test]
fn every_full_document_validates_against_the_schema() {
    let schema: Value =
        serde_json::from_str(shared_board_api::internals::document::schema::SCHEMA_JSON).unwrap();
    let validator = jsonschema::draft202012::new(&schema).expect("schema compiles");
    let mut fetched = every_new_type();
    for reason in [
        UnloadedReason::BoardLimit,
        UnloadedReason::Deadline,
        UnloadedReason::AccessDenied,
        UnloadedReason::NotFound,
        UnloadedReason::UpstreamError,
    ] {
        fetched.unloaded.insert("e6".into(), reason);
        let doc = serde_json::to_value(normalize(&fetched, "milanote").unwrap()).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&doc)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{reason:?}: {errors:#?}");
        let types: Vec<&str> = doc["board"]["children"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|c| c["type"].as_str())
            .collect();
        assert_eq!(
            types,
            [
                "DOCUMENT",
                "COLOR_SWATCH",
                "SKETCH",
                "ANNOTATION",
                "LINE",
                "BOARD"
            ]
        );
    }
    // A value the schema refuses, so the check above can fail.
    let mut doc = serde_json::to_value(normalize(&fetched, "milanote").unwrap()).unwrap();
    doc["board"]["children"][5]["unloadedReason"] = json!("TIRED");
    assert!(validator.iter_errors(&doc).next().is_some());
}

fn selected(selection: &Selection) -> Value {
    let doc = reference::build(&every_new_type(), ROOT, "milanote").unwrap();
    let rendered = reference::rendered("detail", selection, &doc).unwrap();
    let body: Value = serde_json::from_slice(&rendered.body).unwrap();
    body["data"].clone()
}

#[test]
fn selectors_reach_the_new_fields() {
    let drawings = selected(&Selection::include("board.**.drawing").unwrap());
    assert_eq!(
        drawings,
        // `**` passes through every `children`, which is kept even when
        // empty; objects emptied by sanitizing are pruned inside the leaf.
        json!({"board": {"children": [
            {"children": []},
            {"children": []},
            {"drawing": {"svg": "<svg/>", "p": {"inner": []}}, "children": []},
            {"drawing": {"svg": "<svg/>", "p": {"inner": []}}, "children": []},
            {"children": []},
            {"children": []}
        ]}})
    );
    let without_style =
        selected(&Selection::exclude(View::Full, "board.children.lineStyle").unwrap());
    let line = &without_style["board"]["children"][4];
    assert_eq!(line["type"], "LINE");
    assert!(line.get("lineStyle").is_none() && line.get("start").is_some());
    let fields = selected(
        &Selection::include(
            "board.children.color,board.children.caption.plainText,board.children.end,board.children.unloadedReason",
        )
        .unwrap(),
    );
    assert_eq!(
        fields,
        json!({"board": {"children": [
            {"color": "#fff", "caption": {"plainText": "cap"}},
            {"end": {"x": 1, "y": 2}},
            {"unloadedReason": "UPSTREAM_ERROR"}
        ]}})
    );
    // Leaves are leaves; a field no type has, or a sensitive one, is still refused.
    for bad in [
        "board.children.drawing.svg",
        "board.children.lineStyle.color",
        "board.children.start.elementId",
        "board.children.strokeWidth",
        "board.drawing",
        "board.children.drawing.userId",
    ] {
        // Every selector error is answered `INVALID_FIELD_SELECTOR`.
        let err = Selection::include(bad).unwrap_err();
        assert_eq!(
            err.message,
            "Unknown field selector: include item 1: matches no field of the board document"
        );
    }
}

#[test]
fn boards_not_loaded_say_why_and_are_counted() {
    let mut fetched = every_new_type();
    let doc = |f: &Fetched| serde_json::to_value(normalize(f, "milanote").unwrap()).unwrap();
    // No reason recorded: the provider sent a board it could not be asked about.
    let nested = doc(&fetched)["board"]["children"][5].clone();
    assert_eq!(nested["childrenLoaded"], false);
    assert_eq!(nested["unloadedReason"], "UPSTREAM_ERROR");
    fetched
        .unloaded
        .insert("e6".into(), UnloadedReason::BoardLimit);
    let value = doc(&fetched);
    assert_eq!(
        value["board"]["children"][5]["unloadedReason"],
        "BOARD_LIMIT"
    );
    assert!(value["board"].get("unloadedReason").is_none());
    let built = load::build(
        fetched.clone(),
        ROOT,
        "milanote",
        shared_board_api::internals::document::Coverage::Outline,
    )
    .unwrap();
    let stable = Completeness {
        unloaded: 1,
        transient: false,
    };
    assert_eq!(built.completeness(), stable);
    assert_eq!(Completeness::of_value(&value), stable);
    let typed = normalize(&fetched, "milanote").unwrap();
    assert_eq!(Completeness::of_document(&typed), stable);
    fetched
        .unloaded
        .insert("e6".into(), UnloadedReason::Deadline);
    let typed = normalize(&fetched, "milanote").unwrap();
    assert!(Completeness::of_document(&typed).transient);
    fetched
        .unloaded
        .insert("e6".into(), UnloadedReason::BoardLimit);
    // Loaded after all: the reason recorded earlier is not output.
    fetched.loaded_boards.insert("e6".into());
    let value = doc(&fetched);
    assert_eq!(value["board"]["children"][5]["childrenLoaded"], true);
    assert!(value["board"]["children"][5]
        .get("unloadedReason")
        .is_none());
    assert_eq!(Completeness::of_value(&value), Completeness::default());
}

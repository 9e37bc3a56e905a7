use super::*;
use serde_json::json;

fn doc(children: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "version": 1, "fetchedAt": "t",
        "board": {"id": "root", "type": "BOARD", "title": "Trip", "childrenLoaded": true,
                  "children": children}
    }))
    .expect("JSON")
}

fn card(id: &str, text: &str) -> Value {
    json!({"id": id, "type": "CARD", "richText": {"plainText": text, "blocks": []}, "children": []})
}

fn ids(found: &Found) -> Vec<&str> {
    found.matches.iter().map(|m| m.id.as_str()).collect()
}

#[test]
fn every_searched_field_is_found_once_per_element() {
    let d = doc(json!([
        {"id": "col", "type": "COLUMN", "title": "Porto days", "children": [
            card("c1", "Take the train to PORTO at nine"),
            {"id": "l1", "type": "LINK", "url": "https://porto.example/x", "title": "Guide",
             "caption": {"plainText": "Porto by night", "blocks": []}, "children": []},
        ]},
        {"id": "img", "type": "IMAGE", "file": {"filename": "porto-bridge.png"}, "children": []},
        {"id": "tbl", "type": "TABLE", "table": {"rows": [[{"value": "x"}, {"richText": {"plainText": "Porto wine", "blocks": []}}]]}, "children": []},
        {"id": "thr", "type": "COMMENT_THREAD", "comments": [{"id": "k", "richText": {"plainText": "see you in porto", "blocks": []}}], "children": []},
        card("other", "Lisbon only"),
    ]));
    let found = search(&d, "porto", 20).expect("searches");
    assert_eq!(ids(&found), ["col", "c1", "l1", "img", "tbl", "thr"]);
    let fields: Vec<&str> = found.matches.iter().map(|m| m.field).collect();
    assert_eq!(
        fields,
        ["title", "text", "caption", "fileName", "table", "comment"]
    );
    assert_eq!(found.total, 6);
    assert_eq!(found.matches[1].path, ["Trip", "Porto days"]);
    assert_eq!(found.matches[1].snippet, "Take the train to PORTO at nine");
    assert_eq!(found.matches[0].path, ["Trip"]);
    // A link's URL and caption are found when its title is not.
    let url = search(&d, "porto.example", 20).expect("searches");
    assert_eq!((ids(&url), url.matches[0].field), (vec!["l1"], "url"));
    let title = search(&d, "guide", 20).expect("searches");
    assert_eq!(title.matches[0].field, "title");
}

#[test]
fn matching_is_unicode_caseless() {
    let d = doc(json!([
        card("de", "Die STRASSE und die Straße"),
        card("tr", "İstanbul"),
        card("el", "ΟΔΥΣΣΕΥΣ"),
        card("ru", "Москва"),
    ]));
    for (query, want) in [
        ("straße", vec!["de"]),
        ("istanbul", vec![]),
        ("i̇stanbul", vec!["tr"]),
        ("οδυσσευσ", vec!["el"]),
        ("МОСКВА", vec!["ru"]),
        ("москва", vec!["ru"]),
    ] {
        let found = search(&d, query, 20).expect("searches");
        assert_eq!(ids(&found), want, "{query}");
    }
    // The snippet is the original text, not its lower case.
    let found = search(&d, "straße", 20).expect("searches");
    assert_eq!(found.matches[0].snippet, "Die STRASSE und die Straße");
}

#[test]
fn nested_boards_are_searched_and_unloaded_ones_counted() {
    let d = doc(json!([
        {"id": "b1", "type": "BOARD", "title": "Food", "childrenLoaded": true, "children": [
            {"id": "b2", "type": "BOARD", "title": "Cafés", "childrenLoaded": true, "children": [
                card("deep", "pastel de nata"),
            ]},
        ]},
        {"id": "b3", "type": "BOARD", "title": "Hidden", "childrenLoaded": false,
         "unloadedReason": "ACCESS_DENIED", "children": []},
    ]));
    let found = search(&d, "NATA", 20).expect("searches");
    assert_eq!(ids(&found), ["deep"]);
    assert_eq!(found.matches[0].path, ["Trip", "Food", "Cafés"]);
    assert_eq!(found.unloaded_boards, 1);
    assert_eq!(
        found.board,
        BoardRef {
            id: "root".into(),
            title: "Trip".into()
        }
    );
}

#[test]
fn the_limit_lists_the_first_and_counts_the_rest() {
    let cards: Vec<Value> = (0..30)
        .map(|i| card(&format!("c{i}"), "same words"))
        .collect();
    let d = doc(Value::Array(cards));
    let found = search(&d, "words", 5).expect("searches");
    assert_eq!(ids(&found), ["c0", "c1", "c2", "c3", "c4"]);
    assert_eq!(found.total, 30);
    assert_eq!(search(&d, "absent", 5).expect("searches").total, 0);
}

#[test]
fn untitled_parents_are_named_by_their_first_words() {
    let d = doc(json!([
        {"id": "c", "type": "CARD", "richText": {"plainText": "A   card\nwith a long text that goes on and on and on past the label", "blocks": []},
         "children": [{"id": "t", "type": "COMMENT_THREAD", "comments": [{"id": "k", "richText": {"plainText": "reply here", "blocks": []}}], "children": []}]},
        {"id": "col", "type": "COLUMN", "children": [card("x", "reply in column")]},
    ]));
    let found = search(&d, "reply", 20).expect("searches");
    assert_eq!(
        found.matches[0].path,
        ["Trip", "A card with a long text that goes on and…"]
    );
    assert_eq!(found.matches[1].path, ["Trip", "COLUMN"]);
}

#[test]
fn snippets_are_cut_on_characters_with_context() {
    let text = format!("{}needle{}", "é".repeat(100), "ü".repeat(100));
    let (start, end) = find_caseless(&text, "needle").expect("found");
    assert_eq!(&text[start..end], "needle");
    let s = snippet(&text, start, end);
    assert_eq!(s, format!("…{}needle{}…", "é".repeat(60), "ü".repeat(60)));
    // A match inside one character's lower-case expansion takes it whole.
    let (start, end) = find_caseless("xİy", "i").expect("found");
    assert_eq!(&"xİy"[start..end], "İ");
    assert_eq!(snippet("a\n\n b\tc", 0, 1), "a b c");
}

#[test]
fn not_a_document_is_an_error() {
    assert!(search(b"[1]", "x", 1).is_err());
    assert!(search(b"{\"board\":", "x", 1).is_err());
}

#[test]
fn matches_come_in_reading_order() {
    let at = |id: &str, section: &str, position: Value| {
        let mut c = card(id, "same words");
        c["location"] = json!({"section": section, "position": position});
        c
    };
    let d = doc(json!([
        at("below", "CANVAS", json!({"x": 0, "y": 20, "score": 1})),
        at("right", "CANVAS", json!({"x": 40, "y": 0, "score": 2})),
        {"id": "col", "type": "COLUMN", "title": "Col", "location": {"section": "CANVAS", "position": {"x": "4", "y": "0"}},
         "children": [
            at("second", "INBOX", json!({"index": 1})),
            at("first", "INBOX", json!({"index": 0})),
         ]},
    ]));
    let found = search(&d, "words", 20).expect("searches");
    assert_eq!(ids(&found), ["first", "second", "right", "below"]);
}

/// A document of another shape (fields of other types, as a node of
/// another version might write one to the fleet tier) is searched for what
/// can be read: a field of another type counts as absent, an element that
/// is not an object is left out, the search never fails.
#[test]
fn fields_of_other_types_count_as_absent() {
    let mixed = json!([
        {"id": "a", "type": "CARD", "title": 5, "richText": {"plainText": "lisbon tram"},
         "caption": "lisbon as a string", "url": ["lisbon"], "childrenLoaded": "yes",
         "comments": [7, {"richText": {"plainText": "lisbon again"}}],
         "location": {"section": 3, "position": "top"}, "children": {"id": "x"}},
        17,
        {"id": 9, "type": "CARD", "title": "Lisbon by night", "children": [card("c", "lisbon")]},
        {"id": "d", "type": "CARD", "richText": 5, "children": null}
    ]);
    let found = search(&doc(mixed), "lisbon", 10).expect("searched");
    assert_eq!(ids(&found), ["a", "", "c"]);
    assert_eq!(found.matches[0].field, "text");
    assert_eq!(found.matches[1].field, "title");
    // A member named twice: the element reads as empty, the search goes on.
    let twice = br#"{"board":{"id":"r","type":"BOARD","children":[{"id":"a","type":"CARD","type":"X","title":"Lisbon"},{"id":"b","type":"CARD","title":"Lisbon"}]}}"#;
    let found = search(twice, "lisbon", 10).expect("searched");
    assert_eq!(ids(&found), ["b"]);
    let twice = br#"{"board":{"id":"r","id":"s","children":[]},"board":{"id":"r","title":"Lisbon","type":"BOARD"}}"#;
    let found = search(twice, "lisbon", 10).expect("searched");
    assert_eq!((found.board.id.as_str(), ids(&found)), ("r", vec!["r"]));
    // The root's own fields too.
    let root = br#"{"board":{"id":"r","type":["BOARD"],"title":{"t":1},"children":[{"id":"c","type":"CARD","title":"Lisbon"}]}}"#;
    let found = search(root, "lisbon", 10).expect("searched");
    assert_eq!((found.board.title.as_str(), ids(&found)), ("", vec!["c"]));
}

/// Elements nested far past any document's bound (a thousand boards, each
/// in the last one's `children`) are searched down to [`MAX_NESTED`] and
/// no further, on a thread with a small stack: each element's parser
/// starts its own depth count, so only the search's own count bounds it.
#[test]
fn elements_nested_past_the_bound_are_left_out_not_overflowed() {
    let mut d = String::from(
        r#"{"version":1,"fetchedAt":"t","board":{"id":"root","type":"BOARD","children":"#,
    );
    for i in 0..1000 {
        d.push_str(&format!(
            r#"[{{"id":"b{i}","type":"BOARD","title":"deep {i}","children":"#
        ));
    }
    d.push_str("[]");
    for _ in 0..1000 {
        d.push_str("}]");
    }
    d.push_str("}}");
    let found = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || search(d.as_bytes(), "deep", 2000).expect("searches"))
        .expect("thread")
        .join()
        .expect("no overflow");
    // The root is level 0; its children's elements are read to the bound.
    assert_eq!(found.total, MAX_NESTED);
    assert_eq!(
        found.matches.last().map(|m| m.id.as_str()),
        Some(format!("b{}", MAX_NESTED - 1).as_str())
    );
}

#[test]
fn a_match_on_the_root_board_has_its_title_as_path() {
    let d = doc(json!([card("c", "A trip plan")]));
    let found = search(&d, "trip", 20).expect("searches");
    assert_eq!(ids(&found), ["root", "c"]);
    assert_eq!(found.matches[0].path, ["Trip"]);
    assert_eq!(found.matches[1].path, ["Trip"]);
}

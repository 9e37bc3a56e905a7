//! The comparison on hand-made boards, and a property test against an
//! independent JSON diff (json-patch, RFC 6902) of the same two boards.

use super::*;
use proptest::prelude::*;
use serde_json::{json, Map, Value};

/// An element of a generated board: (id, type, parent index or the root,
/// section, title, x, y).
type Gen = (
    String,
    &'static str,
    Option<usize>,
    &'static str,
    String,
    i64,
    i64,
);

/// A board document with `elements`, written as the service nests it.
fn doc(elements: &[Gen]) -> Vec<u8> {
    fn node(at: Option<usize>, elements: &[Gen]) -> Value {
        let children: Vec<Value> = elements
            .iter()
            .enumerate()
            .filter(|(_, e)| e.2 == at)
            .map(|(i, _)| node(Some(i), elements))
            .collect();
        match at {
            None => json!({"id": "root", "type": "BOARD", "title": "Root", "children": children}),
            Some(i) => {
                let (id, kind, parent, section, title, x, y) = &elements[i];
                let parent_id = parent.map_or("root".to_owned(), |p| elements[p].0.clone());
                json!({"id": id, "type": kind, "title": title,
                       "location": {"parentId": parent_id, "section": section, "position": {"x": x, "y": y}},
                       "timestamps": {"modifiedAt": format!("{x}{y}")},
                       "children": children})
            }
        }
    }
    let document = json!({"version": 1, "source": {"provider": "milanote", "boardId": "root"},
                          "fetchedAt": "t", "board": node(None, elements)});
    serde_json::to_vec(&document).expect("serializes")
}

fn el(
    id: &str,
    parent: Option<usize>,
    section: &str,
    title: &str,
    x: i64,
) -> (
    String,
    &'static str,
    Option<usize>,
    &'static str,
    String,
    i64,
    i64,
) {
    let section: &'static str = if section == "INBOX" {
        "INBOX"
    } else {
        "CANVAS"
    };
    (
        id.to_owned(),
        "CARD",
        parent,
        section,
        title.to_owned(),
        x,
        0,
    )
}

#[test]
fn each_kind_of_change_is_reported_with_its_path() {
    let old = doc(&[
        el("col", None, "CANVAS", "Column", 0),
        el("a", Some(0), "INBOX", "Card A", 0),
        el("gone", None, "CANVAS", "Old card", 5),
        el("b", None, "CANVAS", "Card B", 9),
    ]);
    let new = doc(&[
        el("col", None, "CANVAS", "Column", 0),
        el("a", Some(0), "INBOX", "Card A edited", 0),
        el("b", Some(0), "INBOX", "Card B", 9),
        el("new", Some(0), "INBOX", "New card", 12),
    ]);
    let changes = compare(&old, "f", &new, "t").expect("compares");
    assert_eq!(changes.board_id, "root");
    assert!(changes.complete);
    let ids = |list: &[Entry]| list.iter().map(|e| e.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&changes.added), ["new"]);
    assert_eq!(ids(&changes.removed), ["gone"]);
    assert_eq!(ids(&changes.changed), ["a"]);
    assert_eq!(changes.changed[0].fields, Some(vec!["title".to_owned()]));
    assert_eq!(changes.changed[0].parent_id.as_deref(), Some("col"));
    assert_eq!(changes.path(&changes.changed[0]), ["Root", "Column"]);
    let listed: Vec<&str> = changes.parents.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(listed.len(), 2, "each parent once: {listed:?}");
    assert_eq!(changes.changed[0].title, "Card A edited");
    assert_eq!(ids(&changes.moved), ["b"]);
    let moved = &changes.moved[0];
    assert_eq!(
        moved.from.as_ref().and_then(|p| p.parent_id.as_deref()),
        Some("root")
    );
    assert_eq!(
        moved.to.as_ref().and_then(|p| p.section.as_deref()),
        Some("INBOX")
    );
    let same = compare(&new, "t", &new, "t").expect("compares");
    assert!(same.is_empty());
    let value = serde_json::to_value(&changes).expect("serializes");
    let keys: Vec<&String> = value.as_object().expect("object").keys().collect();
    assert_eq!(
        keys,
        [
            "boardId",
            "from",
            "to",
            "complete",
            "truncated",
            "counts",
            "added",
            "removed",
            "changed",
            "moved",
            "parents"
        ]
    );
    assert!(value["added"][0].get("fields").is_none());
}

#[test]
fn times_alone_are_no_change_and_unloaded_boards_make_it_incomplete() {
    let old = br#"{"board":{"id":"r","type":"BOARD","children":[{"id":"c","type":"CARD","timestamps":{"modifiedAt":"1"},"children":[]}]}}"#;
    let new = br#"{"board":{"id":"r","type":"BOARD","children":[{"id":"c","type":"CARD","timestamps":{"modifiedAt":"2"},"children":[]},{"id":"n","type":"BOARD","childrenLoaded":false,"children":[]}]}}"#;
    let changes = compare(old, "a", new, "b").expect("compares");
    assert!(changes.changed.is_empty());
    assert!(!changes.complete);
    assert_eq!(changes.added.len(), 1);
}

#[test]
fn fields_named_twice_give_the_same_answer_both_ways() {
    let board = |members: &str| {
        format!(
            r#"{{"board":{{"id":"r","type":"BOARD","children":[{{"id":"x","type":"CARD",{members}}}]}}}}"#
        )
    };
    let changed = |a: &str, b: &str| {
        let (a, b) = (board(a), board(b));
        let forth = compare(a.as_bytes(), "a", b.as_bytes(), "b").expect("compares");
        let back = compare(b.as_bytes(), "b", a.as_bytes(), "a").expect("compares");
        let fields = |c: &Changes| c.changed.first().and_then(|e| e.fields.clone());
        assert_eq!(fields(&forth), fields(&back), "{a} / {b}");
        fields(&forth)
    };
    // In step, pair by pair: the second `a` differs, named once.
    assert_eq!(
        changed(r#""a":1,"a":2"#, r#""a":2,"a":3"#),
        Some(vec!["a".to_owned()])
    );
    // Out of step, by name: the first of each name.
    assert_eq!(
        changed(r#""a":1,"a":2,"t":0"#, r#""a":1,"t":0,"a":1"#),
        None
    );
    assert_eq!(
        changed(r#""a":1,"t":0"#, r#""t":1,"a":1,"u":2"#),
        Some(vec!["t".to_owned(), "u".to_owned()])
    );
}

/// Up to 10 elements drawn from 14 ids, each under the root or an earlier
/// element, so two boards share most ids and differ in every way.
fn board() -> impl Strategy<Value = Vec<Gen>> {
    prop::collection::vec(
        (
            0usize..14,
            prop::sample::select(vec!["CARD", "COLUMN", "BOARD"]),
            prop::option::of(0usize..10),
            prop::sample::select(vec!["CANVAS", "INBOX"]),
            prop::sample::select(vec!["x", "y", "a much longer title"]),
            0i64..3,
            0i64..3,
        ),
        0..10,
    )
    .prop_map(|raw| {
        let mut seen = std::collections::HashSet::new();
        let mut out: Vec<Gen> = Vec::new();
        for (id, kind, parent, section, title, x, y) in raw {
            if !seen.insert(id) {
                continue;
            }
            let parent = parent.filter(|&p| p < out.len());
            out.push((
                format!("e{id}"),
                kind,
                parent,
                section,
                title.to_owned(),
                x,
                y,
            ));
        }
        out
    })
}

/// Each element of a document as `{parent, section, fields}` by id, the
/// way json-patch is given it.
fn table(doc: &[u8]) -> Map<String, Value> {
    let flat = flat::read(doc).expect("reads");
    let mut map = Map::new();
    for e in &flat.elements {
        let fields: Map<String, Value> = e
            .fields
            .iter()
            .map(|(k, v)| (k.to_string(), serde_json::from_str(v.get()).expect("json")))
            .collect();
        let parent = e.parent.map(|p| flat.elements[p].id.to_string());
        map.insert(
            e.id.to_string(),
            json!({"parent": parent, "section": e.section.as_deref(), "fields": fields}),
        );
    }
    map
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Applying the reported changes to the first board gives the second's
    /// elements, parents, sections and fields; and the reported ids and
    /// fields are those an RFC 6902 diff of the two tables touches.
    #[test]
    fn the_changes_turn_one_board_into_the_other(a in board(), b in board()) {
        let (old, new) = (doc(&a), doc(&b));
        let changes = compare(&old, "f", &new, "t").expect("compares");
        let (before, after) = (table(&old), table(&new));
        let mut applied = before.clone();
        for e in &changes.removed {
            applied.remove(&e.id);
        }
        for e in &changes.added {
            applied.insert(e.id.clone(), after[&e.id].clone());
        }
        for e in &changes.changed {
            for f in e.fields.as_deref().unwrap_or_default() {
                let value = after[&e.id]["fields"].get(f).cloned();
                let fields = applied[&e.id]["fields"].as_object().cloned().unwrap_or_default();
                let mut fields = fields;
                match value {
                    Some(v) => { fields.insert(f.clone(), v); }
                    None => { fields.remove(f); }
                }
                applied[&e.id]["fields"] = Value::Object(fields);
            }
        }
        for e in &changes.moved {
            let to = e.to.as_ref().expect("moved has to");
            applied[&e.id]["parent"] = json!(to.parent_id);
            applied[&e.id]["section"] = json!(to.section);
        }
        prop_assert_eq!(&applied, &after);

        // The reference: which ids and fields an independent diff touches.
        let patch = json_patch::diff(&Value::Object(before.clone()), &Value::Object(after.clone()));
        let mut reference: std::collections::BTreeSet<(String, String)> = Default::default();
        for op in patch.0.iter() {
            let path = op.path().to_string();
            let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
            let what = match parts.as_slice() {
                [id] => {
                    let kind = if before.contains_key(*id) && after.contains_key(*id) { "replaced" }
                        else if before.contains_key(*id) { "removed" } else { "added" };
                    (id.to_string(), kind.to_owned())
                }
                [id, "parent" | "section", ..] => (id.to_string(), "moved".to_owned()),
                [id, "fields", field, ..] => (id.to_string(), format!("field {}", field.replace("~1", "/").replace("~0", "~"))),
                [id, "fields"] => (id.to_string(), "fields".to_owned()),
                _ => (path.clone(), "other".to_owned()),
            };
            reference.insert(what);
        }
        let mut reported: std::collections::BTreeSet<(String, String)> = Default::default();
        for e in &changes.added { reported.insert((e.id.clone(), "added".into())); }
        for e in &changes.removed { reported.insert((e.id.clone(), "removed".into())); }
        for e in &changes.moved { reported.insert((e.id.clone(), "moved".into())); }
        for e in &changes.changed {
            for f in e.fields.as_deref().unwrap_or_default() {
                reported.insert((e.id.clone(), format!("field {f}")));
            }
        }
        // json-patch may replace a whole `fields` object where one member
        // differs in kind; compare per id where it did.
        let whole: Vec<String> = reference.iter().filter(|(_, k)| k == "fields" || k == "replaced").map(|(id, _)| id.clone()).collect();
        reference.retain(|(id, _)| !whole.contains(id));
        reported.retain(|(id, _)| !whole.contains(id));
        prop_assert_eq!(reference, reported);
    }
}

/// A chain of `depth` nested columns with `cards` cards at the bottom, each
/// title `title_len` characters long.
fn deep(depth: usize, cards: usize, edited: bool) -> Vec<u8> {
    let mut elements = Vec::new();
    for d in 0..depth {
        let parent = d.checked_sub(1);
        elements.push(el(
            &format!("c{d}"),
            parent,
            "CANVAS",
            &format!("{d:02} {}", "t".repeat(40)),
            0,
        ));
    }
    for i in 0..cards {
        let title = if edited {
            format!("card {i} edited")
        } else {
            format!("card {i}")
        };
        elements.push(el(
            &format!("k{i}"),
            Some(depth - 1),
            "INBOX",
            &title,
            i as i64,
        ));
    }
    doc(&elements)
}

#[test]
fn the_answer_grows_with_the_board_not_its_depth() {
    let (old, new) = (deep(31, 800, false), deep(31, 800, true));
    let changes = compare(&old, "f", &new, "t").expect("compares");
    assert_eq!(changes.changed.len(), 800);
    assert_eq!(changes.parents.len(), 32, "the root and each column once");
    let json = serde_json::to_vec(&changes).expect("json");
    assert!(
        json.len() <= 2 * new.len(),
        "{} bytes of changes for a {}-byte document",
        json.len(),
        new.len()
    );
    let markdown = markdown::render(&changes, "Root");
    assert!(
        markdown.len() <= 2 * new.len(),
        "{} bytes of Markdown",
        markdown.len()
    );
    // The path is still there for whoever follows it.
    assert_eq!(changes.path(&changes.changed[0]).len(), 32);
}

#[test]
fn each_list_is_capped_and_says_how_many_there_were() {
    let (old, new) = (deep(2, MAX_LIST + 5, false), deep(2, MAX_LIST + 5, true));
    let changes = compare(&old, "f", &new, "t").expect("compares");
    assert_eq!(changes.changed.len(), MAX_LIST);
    assert_eq!(changes.counts.changed, MAX_LIST + 5);
    assert!(changes.truncated);
    let mut cut = changes.clone();
    cut.truncate(3);
    assert_eq!(cut.changed.len(), 3);
    assert_eq!(cut.parents.len(), 3, "only the parents still named");
    cut.truncate(0);
    assert!(cut.parents.is_empty());
}

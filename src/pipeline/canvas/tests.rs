//! The canvas writer on small hand-made documents: what each element
//! becomes, where it goes, and what never reaches the file.

use super::*;
use serde_json::json;

fn at(x: f64, y: f64) -> Value {
    json!({"section": "CANVAS", "position": {"x": x, "y": y}})
}

fn card(id: &str, x: f64, y: f64, text: &str) -> Value {
    json!({"id": id, "type": "CARD", "location": at(x, y), "background": "#FFF6D9",
        "richText": {"blocks": [{"type": "paragraph", "content": [{"type": "text", "text": text}]}], "plainText": text},
        "children": []})
}

fn canvas(children: Vec<Value>) -> Value {
    let doc = json!({"version": 1, "board": {"id": "b", "type": "BOARD", "title": "Trip / plan", "children": children}});
    let out = render(&serde_json::to_vec(&doc).expect("json")).expect("renders");
    assert_eq!(out.title, "Trip / plan");
    serde_json::from_slice(&out.body).expect("the canvas is JSON")
}

fn node<'v>(canvas: &'v Value, id: &str) -> &'v Value {
    canvas["nodes"]
        .as_array()
        .and_then(|n| n.iter().find(|n| n["id"] == id))
        .unwrap_or_else(|| panic!("no node {id} in {canvas}"))
}

#[test]
fn a_card_is_a_text_node_in_pixels_with_its_markdown_and_colour() {
    let c = canvas(vec![card("c1", 34.0, 2.0, "Hello *world*")]);
    let n = node(&c, "c1");
    assert_eq!(n["type"], "text");
    assert_eq!((n["x"].as_i64(), n["y"].as_i64()), (Some(304), Some(18)));
    assert_eq!(n["width"], 304);
    assert_eq!(n["text"], "Hello \\*world\\*");
    assert_eq!(n["color"], "#fff6d9");
    assert!(n["height"].as_i64().is_some_and(|h| h >= 56));
}

#[test]
fn a_column_is_a_group_around_its_cards() {
    let mut second = card("c2", 0.0, 0.0, "second");
    second["location"] = json!({"section": "INBOX", "position": {"index": 1}});
    let mut first = card("c1", 0.0, 0.0, "first");
    first["location"] = json!({"section": "INBOX", "position": {"index": 0}});
    let column = json!({"id": "col", "type": "COLUMN", "title": "Day 1", "location": at(10.0, 10.0),
        "children": [second, first]});
    let c = canvas(vec![column]);
    let group = node(&c, "col");
    assert_eq!(
        (group["type"].as_str(), group["label"].as_str()),
        (Some("group"), Some("Day 1"))
    );
    let (a, b) = (node(&c, "c1"), node(&c, "c2"));
    let inside = |n: &Value| {
        let v = |n: &Value, k: &str| n[k].as_i64().unwrap_or(i64::MIN);
        v(n, "x") >= v(group, "x")
            && v(n, "y") >= v(group, "y")
            && v(n, "x") + v(n, "width") <= v(group, "x") + v(group, "width")
            && v(n, "y") + v(n, "height") <= v(group, "y") + v(group, "height")
    };
    assert!(inside(a) && inside(b), "{c}");
    assert!(
        a["y"].as_i64() < b["y"].as_i64(),
        "stacked in reading order"
    );
    let ids: Vec<&str> = c["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| n["id"].as_str())
        .collect();
    assert_eq!(ids, ["col", "c1", "c2"], "the group is below what it holds");
}

#[test]
fn links_images_boards_and_lines() {
    let link = json!({"id": "l", "type": "LINK", "url": "https://example.com/a", "title": "A", "location": at(40.0, 0.0), "children": []});
    let share = json!({"id": "s", "type": "LINK", "url": "https://app.milanote.com/X/y?p=SECRET", "title": "Other board", "location": at(80.0, 0.0), "children": []});
    let image = json!({"id": "i", "type": "IMAGE", "image": {"url": "https://img.test/a.png", "width": 400, "height": 200},
        "file": {"filename": "a.png"}, "location": at(0.0, 40.0), "children": []});
    let board = json!({"id": "nb", "type": "BOARD", "title": "Nested", "color": "red", "location": at(40.0, 40.0),
        "children": [card("deep", 0.0, 0.0, "not drawn here")]});
    let line = json!({"id": "ln", "type": "LINE", "start": {"elementId": "c"}, "end": "nb",
        "lineStyle": {"color": "#c0392b", "startArrow": true, "endArrow": false}, "location": at(5.0, 5.0), "children": []});
    let points = json!({"id": "pt", "type": "LINE", "start": {"x": 0, "y": 90}, "end": {"x": 30, "y": 95}, "location": at(0.0, 90.0), "children": []});
    let lost = json!({"id": "lost", "type": "LINE", "start": "c", "end": "deep", "location": at(0.0, 0.0), "children": []});
    let c = canvas(vec![
        card("c", 0.0, 0.0, "from"),
        link,
        share,
        image,
        board,
        line,
        points,
        lost,
    ]);
    assert_eq!(node(&c, "l")["type"], "link");
    assert_eq!(node(&c, "l")["url"], "https://example.com/a");
    let s = node(&c, "s");
    assert_eq!(
        (s["type"].as_str(), s["text"].as_str()),
        (Some("text"), Some("Other board"))
    );
    let i = node(&c, "i");
    assert_eq!(i["text"], "![a.png](https://img.test/a.png)");
    assert!(i["height"].as_i64() > Some(120));
    let nb = node(&c, "nb");
    assert_eq!(
        (nb["text"].as_str(), nb["color"].as_str()),
        (Some("## Nested"), Some("1"))
    );
    assert!(!c.to_string().contains("not drawn here") && !c.to_string().contains("SECRET"));
    let edges = c["edges"].as_array().expect("edges");
    assert_eq!(
        edges.len(),
        2,
        "the line into a nested board is left out: {c}"
    );
    assert_eq!(
        edges[0],
        json!({"id": "ln", "fromNode": "c", "fromEnd": "arrow", "toNode": "nb", "toEnd": "none", "color": "#c0392b"})
    );
    let (from, to) = (
        edges[1]["fromNode"].as_str().unwrap_or(""),
        edges[1]["toNode"].as_str().unwrap_or(""),
    );
    assert_eq!(
        (
            node(&c, from)["text"].as_str(),
            node(&c, to)["width"].as_i64()
        ),
        (Some(""), Some(20))
    );
}

#[test]
fn overlapping_elements_are_moved_apart_and_trash_is_never_shown() {
    let mut trashed = card("t", 0.0, 0.0, "trashed");
    trashed["location"]["section"] = json!("TRASH");
    let c = canvas(vec![
        card("a", 0.0, 0.0, "one"),
        card("b", 2.0, 2.0, "two"),
        trashed,
    ]);
    let nodes = c["nodes"].as_array().expect("nodes");
    assert_eq!(nodes.len(), 2);
    let rect = |n: &Value| layout::Rect {
        x: n["x"].as_f64().unwrap_or(0.0),
        y: n["y"].as_f64().unwrap_or(0.0),
        w: n["width"].as_f64().unwrap_or(0.0),
        h: n["height"].as_f64().unwrap_or(0.0),
    };
    assert!(!rect(&nodes[0]).overlaps(&rect(&nodes[1])), "{c}");
}

#[test]
fn loose_elements_go_in_a_row_below_the_board() {
    let mut tray = card("u", 0.0, 0.0, "unsorted");
    tray["location"] = json!({"section": "INBOX", "position": {"index": 0}});
    let c = canvas(vec![card("a", 0.0, 0.0, "placed"), tray]);
    let (a, u) = (node(&c, "a"), node(&c, "u"));
    assert!(
        u["y"].as_i64() >= Some(a["y"].as_i64().unwrap_or(0) + a["height"].as_i64().unwrap_or(0))
    );
}

#[test]
fn file_names_are_safe() {
    let cases = [
        ("Trip / plan", "Trip _ plan.canvas"),
        (
            "Lisbon & Porto — spring trip",
            "Lisbon & Porto — spring trip.canvas",
        ),
        ("a\"b\r\n<c>", "a_b_c_.canvas"),
        // Bidi overrides and isolates, zero-width and separator characters go.
        ("invoice\u{202E}txt.exe", "invoicetxt.exe.canvas"),
        (
            "a\u{200B}b\u{200C}c\u{200D}d\u{2060}e\u{FEFF}f",
            "abcdef.canvas",
        ),
        ("\u{2066}x\u{2069}\u{200E}\u{200F}\u{061C}", "x.canvas"),
        ("line\u{2028}para\u{2029}end\u{0085}", "lineparaend.canvas"),
        ("\u{202E}\u{200B}", "board.canvas"),
        // Windows device names, in any case, with or without an extension.
        ("CON", "_CON.canvas"),
        ("con", "_con.canvas"),
        ("Nul.txt", "_Nul.txt.canvas"),
        ("aux ", "_aux.canvas"),
        ("PRN", "_PRN.canvas"),
        ("com1", "_com1.canvas"),
        ("LPT9.board", "_LPT9.board.canvas"),
        ("COM0", "COM0.canvas"),
        ("COM10", "COM10.canvas"),
        ("CONSOLE", "CONSOLE.canvas"),
        ("my CON", "my CON.canvas"),
        ("  ..  ", "board.canvas"),
        ("", "board.canvas"),
    ];
    for (title, want) in cases {
        assert_eq!(file_name(title), want, "{title:?}");
    }
    assert_eq!(file_name(&"x".repeat(300)).chars().count(), 107);
}

#[test]
fn node_ids_are_unique_and_never_empty() {
    let mut nameless = card("", 80.0, 0.0, "no id");
    nameless["id"] = json!("");
    let line = json!({"id": "ln", "type": "LINE", "start": {"x": 0, "y": 60}, "end": "c",
        "location": at(0.0, 60.0), "children": []});
    let c = canvas(vec![
        card("c", 0.0, 0.0, "one"),
        card("c", 40.0, 0.0, "two"),
        card("ln-start", 0.0, 90.0, "named like a point's node"),
        nameless,
        line,
    ]);
    let ids: Vec<&str> = c["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| n["id"].as_str())
        .collect();
    let unique: std::collections::HashSet<&str> = ids.iter().copied().collect();
    assert_eq!(unique.len(), ids.len(), "{ids:?}");
    assert!(ids.iter().all(|id| !id.is_empty()), "{ids:?}");
    assert!(
        ids.contains(&"c-2") && ids.contains(&"node") && ids.contains(&"ln-start-2"),
        "{ids:?}"
    );
    assert_eq!(c["edges"][0]["fromNode"], "ln-start-2");
}

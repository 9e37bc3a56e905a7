//! The generated raw `/api/boards` bodies the benchmarks share: 100 to
//! 20,000 elements shaped like Milanote's (columns of TipTap and Draft.js
//! cards, tasks, images, links, tables, comment threads, nested boards,
//! lines, documents, colour swatches, sketches and annotations; rich text
//! partly stored as JSON strings).

#![allow(dead_code)]

use serde_json::{json, Map, Value};

pub const ROOT: &str = "1W3ZZU1Qvua02H";

pub fn tiptap(text: &str) -> Value {
    json!({"type": "doc", "content": [
        {"type": "heading", "attrs": {"level": 2}, "content": [{"type": "text", "text": "Note"}]},
        {"type": "paragraph", "content": [{"type": "text", "text": text}, {"type": "hardBreak"},
            {"type": "text", "text": "second line", "marks": [{"type": "bold"}]}]},
        {"type": "bulletList", "content": [
            {"type": "listItem", "content": [{"type": "paragraph", "content": [{"type": "text", "text": "one"}]}]},
            {"type": "listItem", "content": [{"type": "paragraph", "content": [{"type": "text", "text": "two"}]}]}]}
    ]})
}

pub fn draft(text: &str) -> Value {
    json!({"blocks": [
        {"key": "a1b2c", "text": text, "type": "unstyled", "depth": 0, "inlineStyleRanges": [], "entityRanges": [], "data": {}},
        {"key": "d3e4f", "text": "follow-up", "type": "unstyled", "depth": 0, "inlineStyleRanges": [], "entityRanges": [], "data": {}}
    ], "entityMap": {}})
}

pub fn meta(i: usize) -> Value {
    let t = 1_796_000_000_000_i64 + i as i64 * 1000;
    json!({"createdTime": t, "modifiedTime": t + 5, "significantModified": t + 3,
           "locationSectionModifiedTime": t + 1, "creator": "u-1"})
}

/// A raw `/api/boards` body with `n` elements besides the root.
pub fn raw_board(n: usize) -> Vec<u8> {
    let mut elements = Map::new();
    let mut comments = Map::new();
    let mut order: Vec<String> = Vec::new();
    elements.insert(
        ROOT.into(),
        json!({"id": ROOT, "elementType": "BOARD", "location": {"parentId": "home", "section": "canvas"},
               "content": {"title": "Bench board", "color": "#fff"}, "meta": meta(0)}),
    );
    let mut column = String::new();
    for i in 0..n {
        let id = format!("el{i:08}");
        // Every 20th element is a column; the next ones live in it.
        let (parent, section) = if i % 20 == 0 || column.is_empty() {
            (ROOT.to_owned(), "canvas")
        } else {
            (column.clone(), "column")
        };
        let location = json!({"parentId": parent, "section": section,
                              "position": {"x": (i * 37) % 2000, "y": (i * 91) % 3000, "index": i % 20, "score": (i % 20) * 1000}});
        let (kind, content) = match i % 20 {
            0 => ("COLUMN", json!({"title": format!("Column {i}")})),
            1..=6 => (
                "CARD",
                json!({"textContent": tiptap(&format!("Card {i} text")), "background": "#fff6d9"}),
            ),
            7 | 8 => (
                "CARD",
                json!({"textContent": draft(&format!("Draft card {i}")).to_string()}),
            ),
            9 | 10 => (
                "TASK",
                json!({"textContent": tiptap(&format!("Task {i}")).to_string(), "isComplete": i % 3 == 0, "dueDate": "2030-04-05"}),
            ),
            11 => (
                "IMAGE",
                json!({"image": {"original": "https://m/o.jpg", "regular": "https://m/r.jpg", "thumb": "https://m/t.jpg",
                                             "width": 1200, "height": 800, "colors": ["#e8b730", "#2b4c6f"]}}),
            ),
            12 => (
                "LINK",
                json!({"link": {"url": "https://example.com/a", "title": "A page", "favicon": "https://example.com/f.ico"},
                                  "provider": {"name": "Example"}, "caption": tiptap("caption").to_string(), "showCaption": true}),
            ),
            13 => (
                "TABLE",
                json!({"width": 400, "tableContent": {"version": 2, "colWidthsGU": [8, 8, 8], "data": [
                        [{"value": "A"}, {"value": "B"}, {"value": "C"}],
                        [{"draftContent": draft("x").to_string()}, {"value": 1}, {"value": true}],
                        [{"draftContent": draft("y").to_string()}, {"value": 2}, {"value": false}]]}}),
            ),
            14 => {
                for c in 0..3 {
                    comments.insert(
                        format!("cm{i:08}{c}"),
                        json!({"id": format!("cm{i:08}{c}"), "threadId": id, "userId": "u-1",
                               "text": tiptap("a comment"), "createdAt": 1_796_000_000_000_i64 + c}),
                    );
                }
                ("COMMENT_THREAD", json!({"threadId": id}))
            }
            15 => (
                "BOARD",
                json!({"title": format!("Nested {i}"), "color": "#7bb4e3"}),
            ),
            16 => (
                "LINE",
                json!({"start": {"elementId": "el00000001"}, "end": {"elementId": "el00000002"},
                       "control": {"x": 120, "y": 40}, "lineStyle": {"color": "#333", "endArrow": true, "width": 2}}),
            ),
            17 => (
                "DOCUMENT",
                json!({"title": format!("Document {i}"), "textContent": tiptap(&format!("Document {i} body")).to_string()}),
            ),
            18 => (
                "COLOR_SWATCH",
                json!({"color": {"value": "#e8b730"}, "caption": tiptap("swatch").to_string()}),
            ),
            19 => (
                if i % 40 == 19 { "SKETCH" } else { "ANNOTATION" },
                json!({"drawing": {"svg": "<svg xmlns='http://www.w3.org/2000/svg'><path d='M0 0L10 10'/></svg>",
                                   "paths": [{"points": [[0, 0], [4, 6], [10, 10]], "color": "#222", "width": 2}]}}),
            ),
            _ => ("CARD", json!({"textContent": format!("plain card {i}")})),
        };
        if i % 20 == 0 {
            column = id.clone();
        }
        if parent == ROOT && order.len() < 50 {
            order.push(id.clone());
        }
        elements.insert(
            id.clone(),
            json!({"id": id, "elementType": kind, "location": location, "content": content, "meta": meta(i)}),
        );
    }
    let body = json!({"elements": elements, "comments": comments, "canvasOrder": {ROOT: order},
                      "fetchedTime": 1_796_200_000_000_i64, "boardIds": [ROOT], "childrenReturned": {ROOT: true}});
    serde_json::to_vec(&body).unwrap_or_default()
}

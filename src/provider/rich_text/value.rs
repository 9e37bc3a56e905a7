//! The value reader: rich text already parsed into a `serde_json::Value`
//! -> [`RichText`], by the rules of the parent module's docs. The reference
//! pipeline reads rich text so, and the tests and the `rich_text` fuzz
//! target hold the serving path's text reader ([`super::stream`]) to it;
//! nothing else builds it.

use crate::document::{Blocks, RichText};
use crate::provider::raw::{raw_leaf, MAX_RAW_DEPTH};
use serde_json::Value;
use std::borrow::Cow;

/// Reads rich text in any of the accepted shapes (see the module docs).
///
/// Returns `None` when `value` is not rich text.
pub fn rich_text(value: &Value) -> Option<RichText> {
    match value {
        Value::Object(_) => {
            let shape = shape(value)?;
            let blocks = value.get(shape.blocks_key()).and_then(Value::as_array);
            let blocks = blocks.map(Vec::as_slice).unwrap_or_default();
            let blocks: Vec<_> = blocks
                .iter()
                .filter_map(|b| raw_leaf(b, MAX_RAW_DEPTH))
                .collect();
            Some(RichText {
                plain_text: shape.plain_text(value),
                blocks: Blocks::of(&blocks),
            })
        }
        Value::String(s) => {
            // A plain string, even empty, is rich text with no blocks.
            let trimmed = s.trim_start();
            if trimmed.starts_with('{') {
                if let Ok(parsed @ Value::Object(_)) = serde_json::from_str::<Value>(trimmed) {
                    if let Some(rich) = rich_text(&parsed) {
                        return Some(rich);
                    }
                }
            }
            Some(RichText {
                blocks: Blocks::default(),
                plain_text: s.clone(),
            })
        }
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::Array(_) => None,
    }
}

#[derive(Clone, Copy)]
enum Shape {
    TipTap,
    Draft,
}

impl Shape {
    fn blocks_key(self) -> &'static str {
        match self {
            Shape::TipTap => "content",
            Shape::Draft => "blocks",
        }
    }

    fn plain_text(self, value: &Value) -> String {
        match self {
            Shape::TipTap => tiptap_plain_text(value),
            Shape::Draft => {
                let blocks = value.get("blocks").and_then(Value::as_array);
                draft_plain_text(blocks.map(Vec::as_slice).unwrap_or_default())
            }
        }
    }
}

/// A TipTap doc (`type: "doc"`) or Draft.js raw content (a `blocks` array).
fn shape(value: &Value) -> Option<Shape> {
    let obj = value.as_object()?;
    if obj.get("type").and_then(Value::as_str) == Some("doc") {
        return Some(Shape::TipTap);
    }
    obj.get("blocks")
        .and_then(Value::as_array)
        .map(|_| Shape::Draft)
}

/// Draft.js: each block's `text`, non-empty ones joined with newlines.
fn draft_plain_text(blocks: &[Value]) -> String {
    let parts: Vec<&str> = blocks
        .iter()
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .filter(|t| !t.is_empty())
        .collect();
    parts.join("\n")
}

/// What one TipTap node contributes before its children are looked at.
enum Piece<'a> {
    /// Final text (a `text` node, a `hardBreak`, a mention, a board link);
    /// may be empty.
    Text(Cow<'a, str>),
    /// A container: its children and the separator they join with.
    Container(&'a [Value], &'static str),
}

fn piece(node: &Value) -> Piece<'_> {
    if let Some(text) = node.get("text").and_then(Value::as_str) {
        return Piece::Text(Cow::Borrowed(text));
    }
    let kind = node.get("type").and_then(Value::as_str).unwrap_or_default();
    let attr = |key: &str| {
        node.get("attrs")
            .and_then(|a| a.get(key))
            .and_then(Value::as_str)
    };
    match kind {
        "hardBreak" => return Piece::Text(Cow::Borrowed("\n")),
        "mention" => return Piece::Text(mention_text(attr("label").unwrap_or_default())),
        "inlineBoardLink" => return Piece::Text(Cow::Borrowed(attr("title").unwrap_or_default())),
        _ => {}
    }
    let children = node.get("content").and_then(Value::as_array);
    let children = children.map(Vec::as_slice).unwrap_or_default();
    let separator = match kind {
        "paragraph" | "heading" | "smallText" | "codeBlock" | "listItem" | "taskItem" => "",
        _ => "\n",
    };
    Piece::Container(children, separator)
}

/// A mention's words: `@` and its label, one `@` when the label has one.
pub fn mention_text(label: &str) -> Cow<'_, str> {
    let label = label.trim();
    if label.is_empty() || label.starts_with('@') {
        Cow::Borrowed(label)
    } else {
        Cow::Owned(format!("@{label}"))
    }
}

struct Frame<'a> {
    children: &'a [Value],
    next: usize,
    separator: &'static str,
    parts: Vec<String>,
}

/// TipTap plain text, post-order over an explicit stack.
fn tiptap_plain_text(root: &Value) -> String {
    let (children, separator) = match piece(root) {
        Piece::Text(text) => return text.into_owned(),
        Piece::Container(children, separator) => (children, separator),
    };
    let mut stack = vec![Frame {
        children,
        next: 0,
        separator,
        parts: Vec::new(),
    }];
    while let Some(top) = stack.last_mut() {
        if let Some(child) = top.children.get(top.next) {
            top.next += 1;
            match piece(child) {
                Piece::Text(text) => {
                    if !text.is_empty() {
                        top.parts.push(text.into_owned());
                    }
                }
                Piece::Container(children, separator) => stack.push(Frame {
                    children,
                    next: 0,
                    separator,
                    parts: Vec::new(),
                }),
            }
            continue;
        }
        let done = stack.pop().map(|f| f.parts.join(f.separator));
        let done = done.unwrap_or_default();
        match stack.last_mut() {
            Some(parent) => {
                if !done.is_empty() {
                    parent.parts.push(done);
                }
            }
            None => return done,
        }
    }
    String::new()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::Raw;
    use serde_json::json;

    fn plain(value: Value) -> Option<String> {
        rich_text(&value).map(|r| r.plain_text)
    }

    fn p(text: &str) -> Value {
        json!({"type": "paragraph", "content": [{"type": "text", "text": text}]})
    }

    #[test]
    fn plain_text_table() {
        let cases: Vec<(Value, Option<&str>)> = vec![
            (json!({"type": "doc", "content": [p("a"), p("b")]}), Some("a\nb")),
            (json!({"type": "doc", "content": []}), Some("")),
            (json!({"type": "doc"}), Some("")),
            (json!({"type": "doc", "content": [p("a"), {"type": "paragraph"}, p("b")]}), Some("a\nb")),
            (
                json!({"type": "doc", "content": [{"type": "paragraph", "content": [
                    {"type": "text", "text": "a"}, {"type": "hardBreak"}, {"type": "text", "text": "b"}]}]}),
                Some("a\nb"),
            ),
            (
                json!({"type": "doc", "content": [{"type": "heading", "attrs": {"level": 1},
                    "content": [{"type": "text", "text": "Hi "}, {"type": "text", "text": "there", "marks": [{"type": "bold"}]}]}]}),
                Some("Hi there"),
            ),
            (
                json!({"type": "doc", "content": [{"type": "bulletList", "content": [
                    {"type": "listItem", "content": [p("one")]},
                    {"type": "listItem", "content": [p("two"), p("2b")]}]}]}),
                Some("one\ntwo2b"),
            ),
            (json!({"type": "doc", "content": [{"type": "blockquote", "content": [p("q1"), p("q2")]}]}), Some("q1\nq2")),
            (json!({"type": "doc", "content": [{"type": "mention", "text": "@ann", "content": [p("x")]}]}), Some("@ann")),
            (json!({"type": "doc", "content": ["stray", 3, null, p("ok")]}), Some("ok")),
            (
                json!({"type": "doc", "content": [{"type": "paragraph", "content": [
                    {"type": "text", "text": "ask "},
                    {"type": "mention", "attrs": {"id": "u-PLANTED", "label": "Ann"}},
                    {"type": "text", "text": ", see "},
                    {"type": "inlineBoardLink", "attrs": {"boardId": "b", "title": "Porto", "url": "https://x"}},
                    {"type": "text", "text": "."}]}]}),
                Some("ask @Ann, see Porto."),
            ),
            (json!({"type": "doc", "content": [{"type": "paragraph", "content": [
                {"type": "mention", "attrs": {"label": "@bo"}}, {"type": "mention", "attrs": {"id": "u1"}},
                {"type": "inlineBoardLink", "attrs": {"boardId": "b"}}]}]}), Some("@bo")),
            (
                json!({"type": "doc", "content": [
                    {"type": "smallText", "content": [{"type": "text", "text": "small "}, {"type": "text", "text": "print", "marks": [{"type": "underline"}]}]},
                    {"type": "callout", "attrs": {"icon": "bulb"}, "content": [p("c1"), p("c2")]},
                    {"type": "codeBlock", "attrs": {"language": "rust"}, "content": [{"type": "text", "text": "let a;\nlet b;"}]},
                    {"type": "taskList", "content": [
                        {"type": "taskItem", "attrs": {"checked": true}, "content": [p("done")]},
                        {"type": "taskItem", "attrs": {"checked": false}, "content": [p("to"), p("do")]}]},
                    {"type": "horizontalRule"},
                    {"type": "futureNode", "content": [p("f1"), p("f2")]}]}),
                Some("small print\nc1\nc2\nlet a;\nlet b;\ndone\ntodo\nf1\nf2"),
            ),
            (json!({"blocks": [{"text": "a"}, {"text": ""}, {"text": "b"}], "entityMap": {}}), Some("a\nb")),
            (json!({"blocks": [{"key": "k"}, {"text": 5}]}), Some("")),
            (json!({"blocks": []}), Some("")),
            (json!("{\"type\":\"doc\",\"content\":[{\"type\":\"paragraph\",\"content\":[{\"type\":\"text\",\"text\":\"s\"}]}]}"), Some("s")),
            (json!(" {\"blocks\":[{\"text\":\"d\"}],\"entityMap\":{}}"), Some("d")),
            (json!("{not json"), Some("{not json")),
            (json!("{\"other\":1}"), Some("{\"other\":1}")),
            (json!("just text\nline 2"), Some("just text\nline 2")),
            (json!(""), Some("")),
            (json!(null), None),
            (json!(7), None),
            (json!(true), None),
            (json!([p("a")]), None),
            (json!({"type": "paragraph", "content": [{"type": "text", "text": "x"}]}), None),
            (json!({"blocks": "nope"}), None),
        ];
        for (value, want) in cases {
            assert_eq!(plain(value.clone()).as_deref(), want, "{value}");
        }
    }

    #[test]
    fn blocks_are_the_raw_blocks() {
        let doc = json!({"type": "doc", "content": [p("a"), p("b")]});
        let rich = rich_text(&doc).unwrap();
        assert_eq!(
            rich.blocks,
            Blocks::of(&[Raw::verbatim(&p("a")), Raw::verbatim(&p("b"))])
        );
        assert_eq!(
            serde_json::to_value(&rich.blocks).unwrap(),
            json!([p("a"), p("b")])
        );

        let draft =
            json!({"blocks": [{"key": "k1", "text": "x", "type": "unstyled"}], "entityMap": {}});
        let rich = rich_text(&Value::String(draft.to_string())).unwrap();
        assert_eq!(
            rich.blocks.json(),
            r#"[{"key":"k1","text":"x","type":"unstyled"}]"#
        );

        let rich = rich_text(&json!("plain")).unwrap();
        assert!(rich.blocks.is_empty());
        assert_eq!(serde_json::to_string(&rich.blocks).unwrap(), "[]");
    }

    #[test]
    fn deep_documents_do_not_overflow() {
        // Far deeper than serde_json would parse, built directly.
        // `json!` would copy `node` through to_value, recursively: build by hand.
        let mut node = json!({"type": "text", "text": "deep"});
        for _ in 0..20_000 {
            let mut wrapper = serde_json::Map::new();
            wrapper.insert("type".into(), json!("blockquote"));
            wrapper.insert("content".into(), Value::Array(vec![node]));
            node = Value::Object(wrapper);
        }
        let mut doc = serde_json::Map::new();
        doc.insert("type".into(), json!("doc"));
        doc.insert("content".into(), Value::Array(vec![node]));
        let doc = Value::Object(doc);
        let rich = rich_text(&doc).unwrap();
        assert_eq!(rich.plain_text, "deep");
        // The copied blocks are cut to the raw depth bound.
        let copied = serde_json::to_vec(&rich.blocks).unwrap();
        assert!(serde_json::from_slice::<Value>(&copied).is_ok());
        // Dropping 50,000 nested Values recursively is serde_json's concern;
        // leak it so the test thread's stack is not what is being tested.
        std::mem::forget(doc);
    }
}

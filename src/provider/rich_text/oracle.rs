//! The text reader ([`super::stream`]) against the value reader
//! ([`super::rich_text`] on `serde_json::from_str::<Value>`): the same
//! blocks, byte for byte, and the same plain text, on generated JSON text
//! (TipTap and Draft.js shapes, marks, lists, headings, mentions, repeated
//! keys, sensitive keys, wrong types, deep nesting, escapes that are lone
//! surrogates) as an object and as a JSON string holding it; and the same
//! refusal where the value parse refuses the text.

use super::{rich_text, rich_text_from_bytes, rich_text_from_str};
use crate::document::RichText;
use proptest::prelude::*;
use serde_json::Value;

/// What the value reader gives for `text`: `Err` when it does not parse.
fn by_value(text: &str) -> Result<Option<RichText>, ()> {
    let value: Value = serde_json::from_str(text).map_err(|_| ())?;
    Ok(rich_text(&value))
}

/// Blocks as text and plain text, comparable and readable in a failure.
fn shown(rich: &Option<RichText>) -> Option<(String, String)> {
    rich.as_ref().map(|r| {
        let blocks = serde_json::to_string(&r.blocks).unwrap_or_default();
        (blocks, r.plain_text.clone())
    })
}

/// The bytes reader on `text`, where it applies (text serde_json parses):
/// the serde reader's result, or handed back to it. `true` when it read.
fn assert_bytes_reader_agrees(text: &str, serde: &Result<Option<RichText>, ()>) -> bool {
    let Ok(serde) = serde else {
        return false;
    };
    match rich_text_from_bytes(text) {
        Ok(bytes) => {
            assert_eq!(shown(&bytes), shown(serde), "bytes reader: {text}");
            true
        }
        Err(_) => false,
    }
}

fn assert_same_reading(text: &str) {
    let old = by_value(text);
    let new = rich_text_from_str(text).map_err(|_| ());
    match (&old, &new) {
        (Ok(old), Ok(new)) => assert_eq!(shown(new), shown(old), "{text}"),
        _ => assert_eq!(old.is_err(), new.is_err(), "{text}: {old:?} / {new:?}"),
    }
    assert_bytes_reader_agrees(text, &new);
    // The same text held in a JSON string.
    if let Ok(quoted) = serde_json::to_string(text) {
        let old = by_value(&quoted).map(|r| shown(&r));
        let new = rich_text_from_str(&quoted).map(|r| shown(&r));
        assert_eq!(new.ok(), old.ok(), "as a string: {text}");
    }
}

#[test]
fn table() {
    let cases = [
        r#"{"type":"doc","content":[{"type":"paragraph","content":[{"type":"text","text":"a"}]},{"type":"paragraph"}]}"#,
        r#"{"content":[{"type":"heading","attrs":{"level":1},"content":[{"type":"text","text":"H","marks":[{"type":"bold"}]}]}],"type":"doc"}"#,
        r#"{"type":"doc","content":[{"type":"paragraph","content":[{"type":"mention","attrs":{"id":"u-PLANTED","label":" Ann ","mentionKey":"k"}},{"type":"hardBreak"},{"type":"inlineBoardLink","attrs":{"title":"T","permissionId":"p"}}]}]}"#,
        r#"{"type":"doc","content":[{"attrs":{"id":"u","label":"@bo"},"type":"mention","id":"x"}]}"#,
        r#"{"type":"doc","content":[{"type":"text","text":"x","marks":[{"type":"textMention","attrs":{"userId":"u","mentionKey":"m","originalText":"@A"}}]}]}"#,
        r#"{"type":"doc","content":[{"type":"paragraph","type":"mention","id":"a","attrs":{"label":"L","id":"b"},"id":"c"}]}"#,
        r#"{"type":"doc","content":[{"a":1,"b":2,"a":{"c":3},"token":4,"Token":5}]}"#,
        r#"{"type":"doc","type":"other","content":[]}"#,
        r#"{"type":"other","type":"doc","content":[1,"s",null,true,1.5,-0,1e20,[2]]}"#,
        r#"{"type":"doc","text":"","content":[{"type":"text","text":"ignored"}]}"#,
        r#"{"type":"doc","content":"nope"}"#,
        r#"{"blocks":[{"text":"a"},{"text":""},{"text":5},"x",{"text":"b","key":"k","userId":"u"}],"entityMap":{}}"#,
        r#"{"blocks":"no"}"#,
        r#"{"blocks":[],"blocks":[{"text":"later"}]}"#,
        r#"{"type":"doc","content":[{"type":"text","text":"\ud800"}]}"#,
        r#"{"type":"doc","content":[{"type":"text","text":"\ud83d\ude00 \u00e9\n\"q\""}]}"#,
        r#"{"type":"doc","content":[{"type":"text","text":"x","n":1e400}]}"#,
        r#"{"type":"doc","content":[{"k\u0065y":1,"key":2}]}"#,
        r#"{"type":"doc","content":[{"type":"paragraph","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]} "#,
        r#"{"type":"doc"} x"#,
        r#" {"type":"doc"}"#,
        r#""plain""#,
        r#""""#,
        r#"" {\"blocks\":[{\"text\":\"d\"}]}""#,
        r#""{not json""#,
        r#"[1,2]"#,
        r#"null"#,
        r#"{}"#,
    ];
    for text in cases {
        assert_same_reading(text);
    }
    // The bytes reader reads the common shapes itself, escapes, floats,
    // mentions and repeated keys among them; it hands back only what its
    // cursor does not read.
    let mut read = 0;
    for text in cases {
        let serde = rich_text_from_str(text).map_err(|_| ());
        read += usize::from(assert_bytes_reader_agrees(text, &serde));
    }
    let parsed = cases
        .iter()
        .filter(|t| serde_json::from_str::<Value>(t).is_ok())
        .count();
    assert_eq!(read, parsed, "of {} texts", cases.len());
}

#[test]
fn deep_nesting() {
    for depth in [40, 47, 48, 49, 60, 120, 125, 126, 127, 128, 200] {
        let mut node = r#"{"type":"text","text":"deep"}"#.to_owned();
        for i in 0..depth {
            let kind = if i % 2 == 0 { "blockquote" } else { "listItem" };
            node = format!(r#"{{"type":"{kind}","content":[{node}],"attrs":{{"x":[[1]]}}}}"#);
        }
        assert_same_reading(&format!(r#"{{"type":"doc","content":[{node}]}}"#));
        let arrays = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
        assert_same_reading(&format!(r#"{{"type":"doc","content":[{{"a":{arrays}}}]}}"#));
    }
}

/// JSON text with the keys, types and strings that the rules turn on,
/// repeated keys and lone surrogate escapes among them.
fn json_text() -> impl Strategy<Value = String> {
    let key = prop::sample::select(vec![
        "type",
        "type",
        "text",
        "text",
        "content",
        "content",
        "attrs",
        "marks",
        "label",
        "title",
        "id",
        "ID",
        "mentionKey",
        "userId",
        "token",
        "permissionId",
        "blocks",
        "key",
        "level",
        "k\\u0065y",
        "x",
    ]);
    let string = prop::sample::select(vec![
        "doc",
        "paragraph",
        "heading",
        "text",
        "hardBreak",
        "mention",
        "textMention",
        "Mention",
        "inlineBoardLink",
        "bulletList",
        "listItem",
        "taskItem",
        "codeBlock",
        "callout",
        "",
        " @ann ",
        "Ann",
        "a\\nb",
        "\\ud800",
        "\\udc00x",
        "\\ud83d\\ude00",
        "\\u00e9",
        "\\\"",
    ]);
    let leaf = prop_oneof![
        string.prop_map(|s| format!("\"{s}\"")),
        Just("null".to_owned()),
        Just("true".to_owned()),
        Just("-0".to_owned()),
        Just("1.5e3".to_owned()),
        Just("12345678901234567890".to_owned()),
        Just("-7".to_owned()),
    ];
    leaf.prop_recursive(8, 64, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5)
                .prop_map(|items| format!("[{}]", items.join(","))),
            prop::collection::vec((key.clone(), inner), 0..6).prop_map(|members| {
                let members: Vec<String> = members
                    .into_iter()
                    .map(|(k, v)| format!("\"{k}\":{v}"))
                    .collect();
                format!("{{{}}}", members.join(","))
            }),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Generated TipTap docs, Draft.js contents and anything else.
    #[test]
    fn text_reader_matches_value_reader(
        body in json_text(),
        blocks in prop::collection::vec(json_text(), 0..4),
        shape in 0..3u8,
    ) {
        let text = match shape {
            0 => format!(r#"{{"type":"doc","content":[{}]}}"#, blocks.join(",")),
            1 => format!(r#"{{"blocks":[{}],"entityMap":{body}}}"#, blocks.join(",")),
            _ => body,
        };
        assert_same_reading(&text);
    }
}

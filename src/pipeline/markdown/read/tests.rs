//! Unit cases of the Markdown reader: against serde_json's reading of the same
//! bytes, against the byte walk followed by serde_json, and on malformed input.

use super::*;

/// The value of the whole of `json`, read by [`Tree`].
fn read<'a>(json: &'a [u8], arena: &'a Bump) -> Walk<V<'a>> {
    let mut tree = Tree::new(arena);
    let end = tree.value(json, 0)?;
    if end != json.len() {
        return Err(Malformed);
    }
    tree.finish()
}

#[test]
fn reads_as_serde_json_does() {
    for json in [
        r#"{"a":[1,[2,[],3],{"b":[4,{"c":[]}]},5],"d":{"e":{"f":{}}},"g":"h"}"#,
        r#"[[[[1]]],[],[{"x":[{"y":[true,null,false]}],"z":2}],3]"#,
        r#"{"t":"a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00 x","\u0041":1}"#,
        r#"{"location":{"x":1},"title":"kept","drawing":[1,2],"n":-0}"#,
        r#"[0,-0,1,-1,7,-12,999999999999999999,-999999999999999999,1000000000000000000,18446744073709551615,18446744073709551616,-9223372036854775808,-9223372036854775809,1.5,-2.5e-3,1e-400,1.7976931348623157e308]"#,
        r#""Grüße, 世界""#,
        r#"{}"#,
        r#"[]"#,
    ] {
        let arena = Bump::new();
        let fast = read(json.as_bytes(), &arena).expect(json);
        let reference = V::parse(json.as_bytes(), &arena).expect(json);
        assert_eq!(format!("{fast:?}"), format!("{reference:?}"), "{json}");
    }
}

/// The ids of the items of `list`, in the order the value holds them.
fn ids<'a>(list: &'a [V<'a>]) -> Vec<&'a str> {
    list.iter().map(|v| v.str("id").unwrap_or("-")).collect()
}

#[test]
fn children_arrays_are_held_in_reading_order_by_both_readers() {
    let json = concat!(
        r#"{"children":["#,
        r#"{"id":"low","location":{"section":"CANVAS","position":{"x":0,"y":50}}},"#,
        r#"{"id":"right","location":{"section":"CANVAS","position":{"x":40,"y":0}}},"#,
        r#"{"id":"left","location":{"section":"CANVAS","position":{"x":4,"y":0}},"children":["#,
        r#"{"id":"b","location":{"position":{"x":0,"y":5}}},{"id":"a","location":{"position":{"x":0,"y":1}}}]},"#,
        r#"{"id":"n2","location":{"section":"INBOX","position":{"index":2}}},"#,
        r#"{"id":"none"},"#,
        r#"{"id":"n1","location":{"section":"INBOX","position":{"index":1}}},"#,
        r#"{"id":"thread","location":{"section":"ATTACHED"}},"#,
        r#"7],"#,
        r#""other":[{"id":"y9","location":{"position":{"y":9}}},{"id":"y1","location":{"position":{"y":1}}}]}"#
    );
    let arena = Bump::new();
    let fast = read(json.as_bytes(), &arena).expect("json");
    let reference = V::parse(json.as_bytes(), &arena).expect("json");
    assert_eq!(format!("{fast:?}"), format!("{reference:?}"));
    // Attached, then the canvas in rows, the inbox by index, the rest as given.
    assert_eq!(
        ids(fast.list("children")),
        ["thread", "left", "right", "low", "n1", "n2", "none", "-"]
    );
    let left = fast.list("children")[1];
    assert_eq!(ids(left.list("children")), ["a", "b"]);
    // Only `children` arrays are reordered.
    assert_eq!(ids(fast.list("other")), ["y9", "y1"]);
}

/// Shapes the typed documents never take, where the one-pass selection
/// could part from selecting into bytes: members in [`skipped`] holding
/// scalars or only empty objects, a model field's name written with an
/// escape, empty objects at model positions and inside leaves.
#[test]
fn selects_as_the_byte_walk_then_serde_json_do() {
    use crate::select::{Selection, View};
    let doc = concat!(
        r#"{"version":1,"source":{"provider":"m","boardId":"b"},"#,
        r#""board":{"id":"b","type":"BOARD","title":"T","icon":{},"children":["#,
        r#"{"id":"n","type":"CARD","location":"x"},"#,
        r#"{"id":"m","type":"CARD","location":{"position":{}},"timestamps":{}},"#,
        r#"{"location":"x"},{"id":"q","type":"CARD","\u0063ontent":{"a":{}}},"#,
        r#"{"location":{}},{"timestamps":{"a":{},"b":{"c":{}}}},{"location":{"a":{},"b":1}},"#,
        r#"{"id":"w","content":{"drawing":{"a":{}}}},{"id":"z","content":{"location":[]}},"#,
        r#"{"id":"k","type":"CARD","content":{"k":{},"#,
        r#""v":[[{}],{"e":{}},1],"location":{},"drawing":{"x":{}}},"children":[]},"#,
        r#"{"id":"r","type":"CARD","richText":{"blocks":[{"type":"p","content":[{},"#,
        r#"{"type":"text","text":"a\"b","marks":[{}]}]}],"plainText":"a"},"#,
        r#""timestamps":{"createdAt":"t"}},"#,
        r#"{"id":"e","type":"TABLE","table":{"rows":[[{}],[{"value":1},{}]]}}"#,
        r#"]}}"#
    );
    let mut selections: Vec<Selection> = [View::Full, View::Standard, View::Compact]
        .into_iter()
        .map(Selection::view)
        .collect();
    for list in [
        "board.children",
        "board.children.content",
        "board.children.location",
        "board.children.richText",
        "board.**.timestamps",
        "board.children.table.rows",
        "board.icon,board.children.id",
        "**",
    ] {
        selections.push(Selection::include(list).expect("valid"));
        for view in [View::Full, View::Standard] {
            selections.push(Selection::exclude(view, list).expect("valid"));
        }
    }
    for selection in &selections {
        let arena = Bump::new();
        let mut scratch = Vec::new();
        let mut tree = Tree::new(&arena);
        selection
            .apply_into(doc.as_bytes(), &mut scratch, &mut tree)
            .expect("reads");
        let mut selected = Vec::new();
        selection
            .apply_bytes(doc.as_bytes(), &mut selected)
            .expect("selects");
        assert_eq!(
            tree.finish().expect("a value").plain(),
            V::parse(&selected, &arena).expect("JSON").plain(),
            "{}",
            selection.canonical()
        );
    }
}

/// Any JSON value: arbitrary Unicode text (quotes, backslashes, control
/// characters, astral planes, all escaped by serde_json), every kind of
/// number, nesting, and keys that are sometimes skipped members.
fn any_json() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
    use proptest::prelude::*;
    use serde_json::Value;
    // Mostly the characters serde_json escapes, which arbitrary Unicode
    // text seldom holds.
    let text = prop_oneof![any::<String>(), "[a\"\\\\\\x00-\\x1f/\u{e9}\u{1F600}]{0,8}",];
    let key = prop_oneof![
        text.clone(),
        proptest::sample::select(vec!["type", "text", "location", "drawing", "content"])
            .prop_map(str::to_owned),
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        text.prop_map(Value::from),
    ];
    leaf.prop_recursive(6, 64, 8, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..8).prop_map(Value::from),
            proptest::collection::vec((key.clone(), inner), 0..8)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

proptest::proptest! {
    #[test]
    fn any_compact_json_reads_as_serde_json_reads_it(value in any_json()) {
        let json = serde_json::to_vec(&value).expect("serializes");
        let arena = Bump::new();
        let fast = read(&json, &arena).expect("reads");
        let reference = V::parse(&json, &arena).expect("parses");
        proptest::prop_assert_eq!(fast.plain(), reference.plain());
    }
}

#[test]
fn malformed_input_is_an_error_not_a_panic() {
    let deep = "[".repeat(128) + &"]".repeat(128);
    for bad in [
        "",
        "{",
        "[",
        "\"",
        "\"a",
        "{\"a\"}",
        "{\"a\":}",
        "{\"a\":1,}",
        "[1,]",
        "tru",
        "nul",
        "-",
        "1.",
        "01",
        "-01",
        "+1",
        "1e",
        "--1",
        "\"\\x\"",
        "\"\\u12\"",
        "\"\\ud800\"",
        "\"\\udc00\"",
        "\"\\ud800\\u0041\"",
        "\"a\nb\"",
        "{1:2}",
        "[1]x",
        "1E400",
        &deep,
    ] {
        let arena = Bump::new();
        assert!(read(bad.as_bytes(), &arena).is_err(), "{bad:?}");
        assert!(V::parse(bad.as_bytes(), &arena).is_err(), "{bad:?}");
    }
    // Nesting past the limit under a member that is only weighed, not
    // built, is refused too (and does not exhaust the stack).
    let nested = "{\"a\":".repeat(100_000) + "1" + &"}".repeat(100_000);
    let doc = format!(
        r#"{{"board":{{"children":[{{"richText":{{"blocks":[{{"drawing":{nested}}}]}}}}]}}}}"#
    );
    let standard = crate::select::Selection::view(crate::select::View::Standard);
    let arena = Bump::new();
    let (mut scratch, mut tree) = (Vec::new(), Tree::new(&arena));
    assert_eq!(
        standard.apply_into(doc.as_bytes(), &mut scratch, &mut tree),
        Err(Malformed)
    );
    // Whitespace is JSON, but never in what this service wrote.
    for spaced in ["[1 ]", " 1", "{\"a\": 1}", "[\n]"] {
        let arena = Bump::new();
        assert!(read(spaced.as_bytes(), &arena).is_err(), "{spaced:?}");
    }
    let arena = Bump::new();
    let ok = "[".repeat(127) + &"]".repeat(127);
    assert!(read(ok.as_bytes(), &arena).is_ok());
    assert!(V::parse(ok.as_bytes(), &arena).is_ok());
    assert!(read(b"\"\xff\"", &arena).is_err());
}

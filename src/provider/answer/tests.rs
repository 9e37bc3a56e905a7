//! Reading answers: what is accepted, kept and skipped.

use super::*;
use serde_json::json;

/// An answer as plain values: the top-level fields, the elements as
/// `(key, head, content)`, the comments and the `canvasOrder` entries.
type Split = (
    Map<String, Value>,
    Option<Vec<(String, Head, Option<Value>)>>,
    Option<Comments>,
    Option<Vec<(String, Value)>>,
);

/// What parsing the body as one value gives, split the way [`Answer`] splits it.
fn as_one_value(body: &[u8]) -> Result<Split, AnswerError> {
    let mut top = match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(map)) => map,
        Ok(_) => return Err(AnswerError::NotObject),
        Err(_) => return Err(AnswerError::NotJson),
    };
    let elements = match top.shift_remove("elements") {
        Some(Value::Object(map)) => Some(
            map.into_iter()
                .map(|(key, mut element)| {
                    let content = element
                        .as_object_mut()
                        .and_then(|o| o.shift_remove("content"));
                    // The head of every field, not only the kept ones.
                    let head = Head::read_under(&key, &element);
                    (key, head, content)
                })
                .collect(),
        ),
        _ => None,
    };
    let comments = match top.shift_remove("comments") {
        Some(Value::Object(map)) => Some(comments_of(&map)),
        _ => None,
    };
    let canvas_order = match top.shift_remove("canvasOrder") {
        Some(Value::Object(map)) => Some(map.into_iter().collect()),
        _ => None,
    };
    Ok((top, elements, comments, canvas_order))
}

fn check(body: &str) {
    let want = as_one_value(body.as_bytes());
    let got = Answer::parse(body.as_bytes()).map(|a| {
        let elements = a.elements.map(|entries| {
            entries
                .into_iter()
                .map(|(key, e)| {
                    let content = e.content.map(|c| c.value().unwrap());
                    (key.into(), e.head, content)
                })
                .collect()
        });
        let canvas_order = a.canvas_order.map(|entries| {
            entries
                .into_iter()
                .map(|(key, text)| (key, text.value().unwrap()))
                .collect()
        });
        (a.fields, elements, a.comments, canvas_order)
    });
    assert_eq!(got, want, "{body}");
}

/// Answers of every shape the reader takes or refuses (the streamed
/// reader's tests read them too).
pub(super) const READ_CASES: &[&str] = &[
    r#"{"elements": {"a": {"id": "a", "content": {"x": [1, {"y": "\"}"}]}, "elementType": "CARD"}}, "errors": {}}"#,
    r#"{"elements": {"a": {"content": 1, "content": {"b": 2}}, "b": 5, "a": {"v": 2}}}"#,
    r#"{"elements": [1, 2], "comments": {"c": {"text": "t"}}}"#,
    r#"{"comments": {"c": {"text": {"a": [1]}, "id": 3, "x": {"y": []}, "text": "last"}, "d": 5, "c": [1]}}"#,
    r#"{"comments": {"c": {"threadId": "t", "createdAt": 1, "updatedAt": "2020-01-01T00:00:00Z", "_id": "u"}}, "comments": 4}"#,
    r#"{"comments": {"c": {"t\u0065xt": "escaped"}}, "comments": {"d": {}}}"#,
    r#"{"elements": {"a": [1, {"content": 2}]}, "elements": {"b": {"content": null}}}"#,
    r#"{"elements": {"a": {"content": "x"}}, "elements": 3}"#,
    r#"{"fetchedTime": 1.5e3, "elements": {"\u0061": {"i\u0064": -7, "content": {"\u0074": "\ud83d\ude00"}}}}"#,
    r#"  {"elements": {}}  "#,
    r#"{"elements": {"a": {"location": {"parentId": "p", "position": {"x": 1, "y": [2], "q": {"r": []}}, "positionY": "7", "z": [{}]}, "positionIndex": 3}}}"#,
    r#"{"elements": {"a": {"location": {"parentId": 1, "parentId": "q", "position": {"x": 1}, "position": 5, "section": null}}}}"#,
    r#"{"elements": {"a": {"location": [1, {"parentId": "p"}], "meta": {"createdTime": 5, "creator": {"u": 1}, "createdTime": "2020-01-01T00:00:00Z"}}}}"#,
    r#"{"elements": {"a": {"meta": 7, "location": {"p\u0061rentId": "e", "posit\u0069on": {"\u0078": 2}}, "element\u0054ype": "CARD", "location": {"parentId": "last"}}}}"#,
    r#"{"elements": {"a": {"meta": {"modifiedTime": 1}, "meta": [], "threadId": 4, "_id": "u", "positionScore": 1.5}}}"#,
    r#"[1, 2]"#,
    r#""text""#,
    r#"{"elements": {"a": {"content": {"b": }}}}"#,
    r#"{"elements": {"a": {"content": {"b": 1}}}} trailing"#,
    r#"{"elements": {"a": {"content": {"b": "\x"}}}}"#,
    // Text that is kept or skipped is held to a value parse: a lone
    // surrogate escape, a number out of range.
    r#"{"elements": {"a": {"content": {"t": "\ud06d\ude42"}}}}"#,
    r#"{"elements": {"a": {"content": {"t": "\ud83d\ude42 ok"}}}}"#,
    r#"{"elements": {"a": {"style": ["\udc00"]}}}"#,
    r#"{"elements": {"a": {"location": {"other": "\ud800x"}}}}"#,
    r#"{"elements": {"a": {"meta": {"creator": 1e400}}}}"#,
    r#"{"elements": {"a": {"content": [1e308, -1e400]}}}"#,
    r#"{"elements": [["\ud800"]]}"#,
    // A head field that is an array or an object is read through as a
    // value: held as nothing, refused where a value parse refuses it.
    r#"{"elements": {"a": {"id": {"\ud800": 1}}}}"#,
    r#"{"elements": {"a": {"location": {"parentId": ["\udc00"]}}}}"#,
    r#"{"elements": {"a": {"meta": {"createdTime": {"k": 1e400}}}}}"#,
    r#"{"elements": {"a": {"location": {"position": {"x": {"a": [1, "\ud800"]}}}}}}"#,
    r#"{"elements": {"a": {"elementType": {"k": "v"}, "threadId": [1, {}], "id": null, "_id": "u"}}}"#,
    r#"{"elements": {"a": {"id": 12, "positionX": 1e308, "location": {"section": true, "rootBoard": -0}}}}"#,
    r#"{"comments": {"c": {"text": "\ude42 lone"}}}"#,
    r#"{"comments": {"c": {"userId": 2e999}}}"#,
    r#"{"canvasOrder": {"p": ["\u0061", 1.50, {"x": []}], "q": 7, "p": ["last"]}}"#,
    r#"{"canvasOrder": {"p": ["a"]}, "canvasOrder": [1]}"#,
    r#"{"canvasOrder": {"p": ["\udc00"]}}"#,
    r#"{"canvasOrder": {"p": [1e400]}}"#,
    "",
];

#[test]
fn reads_what_one_value_reads() {
    for body in READ_CASES {
        check(body);
    }
}

#[test]
fn the_nesting_limit_is_the_one_of_a_value() {
    let nest = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let objects = |depth: usize| format!(r#"{}1{}"#, r#"{"k":"#.repeat(depth), "}".repeat(depth));
    for depth in [
        MAX_CONTENT_DEPTH - 1,
        MAX_CONTENT_DEPTH,
        MAX_CONTENT_DEPTH + 1,
    ] {
        for value in [nest(depth), objects(depth)] {
            check(&format!(
                r#"{{"elements": {{"a": {{"content": {value}}}}}}}"#
            ));
            check(&format!(r#"{{"elements": {{"a": {{"style": {value}}}}}}}"#));
            check(&format!(r#"{{"elements": {{"a": {{"meta": {value}}}}}}}"#));
            check(&format!(r#"{{"elements": {{"a": {{"id": {value}}}}}}}"#));
            check(&format!(
                r#"{{"elements": {{"a": {{"location": {{"position": {{"x": {value}}}}}}}}}}}"#
            ));
            check(&format!(r#"{{"elements": [{value}]}}"#));
            check(&format!(r#"{{"elements": [[{value}]]}}"#));
            check(&format!(r#"{{"comments": {value}}}"#));
            check(&format!(r#"{{"canvasOrder": {{"p": {value}}}}}"#));
        }
    }
    // A top-level member sits below one level, the answer: its limit is
    // the body's, less one.
    for depth in [MAX_LEVELS - 2, MAX_LEVELS - 1, MAX_LEVELS] {
        for value in [nest(depth), objects(depth)] {
            check(&format!(r#"{{"x": {value}}}"#));
            check(&format!(r#"{{"errors": [{value}], "elements": {{}}}}"#));
        }
    }
    let too_deep = format!(
        r#"{{"elements": {{"a": {{"content": {}}}}}}}"#,
        objects(MAX_CONTENT_DEPTH + 1)
    );
    assert_eq!(
        Answer::parse(too_deep.as_bytes()).err(),
        Some(AnswerError::NotJson)
    );
}

#[test]
fn from_value_round_trips() {
    let value = json!({"elements": {"a": {"content": {"b": 1}, "id": "a"}}, "x": 1});
    let answer = Answer::from_value(value.as_object().unwrap());
    assert_eq!(answer.element_count(), 1);
    let (key, head) = answer.element_heads().next().unwrap();
    // An id equal to its key is not held twice.
    assert_eq!((key, head.id()), ("a", None));
    assert_eq!(head.claimed_id(key), "a");
    assert_eq!(answer.fields["x"], 1);
}

#[test]
fn an_id_equal_to_its_key_is_the_key() {
    // (the element under key "k", the id its head holds, the id it claims)
    let cases = [
        (r#"{"id":"k"}"#, None, "k"),
        // The id is the key even with an `_id`: that is no fallback.
        (r#"{"id":"k","_id":"u"}"#, None, "k"),
        (r#"{"id":"x","_id":"u"}"#, Some("x"), "x"),
        (r#"{"_id":"k"}"#, None, "k"),
        (r#"{"_id":"u"}"#, Some("u"), "u"),
        // A repeated `id`: the last one counts, whichever was the key.
        (r#"{"id":"k","id":"x"}"#, Some("x"), "x"),
        (r#"{"id":"x","id":"k"}"#, None, "k"),
        (r#"{"id":"k","id":null,"_id":"u"}"#, Some("u"), "u"),
        (r#"{"id":"","_id":"u"}"#, Some("u"), "u"),
        (r#"{"id":5}"#, Some("5"), "5"),
        (r#"{"id":"\u006b"}"#, None, "k"),
    ];
    for (element, held, claimed) in cases {
        let body = format!(r#"{{"elements":{{"k":{element}}}}}"#);
        let answer = Answer::parse(body.as_bytes()).unwrap();
        let (key, head) = answer.element_heads().next().unwrap();
        assert_eq!(head.id(), held, "{body}");
        assert_eq!(head.claimed_id(key), claimed, "{body}");
        // And the same head as the element read as a value.
        check(&body);
    }
    // Under an empty key, an empty id is no id.
    let answer = Answer::parse(br#"{"elements":{"":{"id":"","_id":"u"}}}"#).unwrap();
    let (_, head) = answer.element_heads().next().unwrap();
    assert_eq!(head.id(), Some("u"));
}

#[test]
fn parent_ids_are_shared_and_read_as_values_read_them() {
    let body = r#"{"elements":{
        "a":{"location":{"parentId":"p","rootBoard":"p"}},
        "b":{"location":{"parentId":"\u0070","rootBoard":"p"}},
        "r":{"location":{"rootBoard":7}},
        "c":{"location":{"parentId":5}},
        "d":{"location":{"parentId":""}},
        "e":{"location":{"parentId":[1],"section":"CANVAS"}},
        "f":{"location":{"parentId":"q","parentId":"p"}}}}"#;
    check(body);
    let answer = Answer::parse(body.as_bytes()).unwrap();
    let parents: Vec<_> = answer
        .element_heads()
        .map(|(_, head)| head.location.as_ref().and_then(|l| l.parent_id.clone()))
        .collect();
    let texts: Vec<_> = parents.iter().map(|p| p.as_deref()).collect();
    let want = [Some("p"), Some("p"), None, Some("5"), None, None, Some("p")];
    assert_eq!(texts, want);
    // One string for every child of "p", and for the root board "p".
    let p = parents[0].as_ref().unwrap();
    assert!(p.is_same(parents[1].as_ref().unwrap()));
    assert!(p.is_same(parents[6].as_ref().unwrap()));
    let roots: Vec<_> = answer
        .element_heads()
        .map(|(_, head)| head.location.as_ref().and_then(|l| l.root_board.clone()))
        .collect();
    match (&roots[0], &roots[1]) {
        (Some(HeldScalar::Shared(a)), Some(HeldScalar::Shared(b))) => {
            assert!(a.is_same(p) && b.is_same(p));
        }
        other => panic!("root boards not shared: {other:?}"),
    }
    assert_eq!(roots[2], Some(HeldScalar::Number(7.into())));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1000))]

    /// Generated values with surrogate escapes, numbers near the range of
    /// an `f64` and nesting, as an element's content, another member of an
    /// element, a comment's text and a top-level member: the answer reads
    /// what one value parse reads, and refuses what it refuses.
    #[test]
    fn generated_answers_read_as_one_value(
        content in super::check::tests::json_text(),
        other in super::check::tests::json_text(),
        text in super::check::tests::json_text(),
        nest in 0usize..130,
    ) {
        let deep = format!("{}{content}{}", "[".repeat(nest), "]".repeat(nest));
        // A comment's text is compared as the text kept: written compact
        // when it parses, as the value's side writes it.
        let text = serde_json::from_str::<Value>(&text).map_or(text, |v| v.to_string());
        let body = format!(
            r#"{{"elements":{{"a":{{"id":"a","content":{content},"style":{other}}},"b":{{"content":{deep}}}}},"comments":{{"c":{{"text":{text}}}}},"canvasOrder":{{"p":{other},"q":{deep}}},"x":{other}}}"#
        );
        check(&body);
    }
}

#[test]
fn a_body_that_is_not_utf8_is_refused_as_one_value_refuses_it() {
    let bad = [0xff_u8, 0xc3];
    for (before, after) in [
        (r#"{"elements": {"a": {"content": {"t": ""#, r#""}}}}"#),
        (r#"{"elements": {"a": {"style": ""#, r#""}}}"#),
        (r#"{"elements": {"a": {"id": ""#, r#""}}}"#),
        (r#"{"elements": {""#, r#"": {}}}"#),
        (r#"{"comments": {"c": {"text": ""#, r#""}}}"#),
        (r#"{"x": ""#, r#""}"#),
        (r#"{"x": 1"#, "}"),
        (r#"{"x": 1}"#, ""),
    ] {
        for byte in bad {
            let mut body = before.as_bytes().to_vec();
            body.push(byte);
            body.extend_from_slice(after.as_bytes());
            let got = Answer::parse(&body).err();
            assert_eq!(got, as_one_value(&body).err(), "{body:?}");
            assert_eq!(got, Some(AnswerError::NotJson), "{body:?}");
        }
    }
}

#[test]
fn a_kept_text_is_a_slice_of_the_bodys_own_str_on_char_boundaries() {
    let body = Bytes::from_static("{\"a\":\"é\"}".as_bytes());
    let text = std::str::from_utf8(&body).unwrap();
    let kept = JsonText::slice_of(&body, text, 5..9).expect("a string value");
    assert_eq!(kept.text(), "\"é\"");
    // Inside the two bytes of `é`.
    assert_eq!(JsonText::slice_of(&body, text, 5..7), None);
    assert_eq!(JsonText::slice_of(&body, text, 7..9), None);
    // Past the end.
    assert_eq!(JsonText::slice_of(&body, text, 5..11), None);
    // The same text in other bytes is not the body's own.
    let copy = String::from(text);
    assert_eq!(JsonText::slice_of(&body, &copy, 5..9), None);
    assert_eq!(JsonText::slice_of(&body, &text[..8], 5..8), None);
}

#[test]
fn picked_names_are_found_in_their_lists_places() {
    use crate::provider::head::{FLAT_POSITION_KEYS, POSITION_KEYS, TIME_KEYS};
    for (keys, key) in [
        (TIME_KEYS, super::time_key as fn(&str) -> Option<usize>),
        (POSITION_KEYS, super::position_key),
        (FLAT_POSITION_KEYS, super::flat_key),
    ] {
        for (i, name) in keys.iter().enumerate() {
            assert_eq!(key(name), Some(i), "{name}");
            assert_eq!(key(&name.to_uppercase()), None, "{name}");
            assert_eq!(key(&format!("{name} ")), None, "{name}");
        }
        assert_eq!(key(""), None);
    }
}

//! The tier's document check on hand-written documents; every fixture the
//! normalizer writes passes it too (`tests/it/pipeline_differential.rs`).

use super::*;
use crate::document::sanitize::SENSITIVE_KEYS;

fn doc(board: &str) -> String {
    format!(
        r#"{{"version":1,"source":{{"provider":"milanote","boardId":"b"}},"fetchedAt":"t","board":{{"id":"b","type":"BOARD","title":"T","children":[{board}]}}}}"#
    )
}

fn check(json: &str) -> Result<Completeness, Invalid> {
    document(json.as_bytes(), "b", 100).map(|checked| checked.completeness)
}

#[test]
fn what_the_service_writes_passes() {
    let cases = [
        doc(""),
        doc(
            r#"{"id":"c","type":"CARD","richText":{"plainText":"a\"b\\c\n\u0001 é 😀 \ud83d\ude00","blocks":[]},"children":[]}"#,
        ),
        doc(
            r#"{"id":"n","type":"UNKNOWN","content":{"x":[1,-0.5,1e300,-12345678901234567890,true,false,null,{},[]]},"children":[]}"#,
        ),
    ];
    for json in &cases {
        assert_eq!(check(json), Ok(Completeness::default()), "{json}");
    }
}

#[test]
fn nested_boards_not_loaded_are_counted() {
    let json = doc(
        r#"{"id":"x","type":"BOARD","childrenLoaded":false,"unloadedReason":"DEADLINE","children":[]},{"id":"y","type":"BOARD","childrenLoaded":false,"unloadedReason":"ACCESS_DENIED","children":[]},{"id":"z","type":"CARD","childrenLoaded":false,"children":[]}"#,
    );
    assert_eq!(
        check(&json),
        Ok(Completeness {
            unloaded: 2,
            transient: true
        })
    );
}

#[test]
fn anything_else_is_refused() {
    let cases: Vec<(String, &str)> = vec![
        (String::new(), "not an object"),
        ("[]".into(), "not an object"),
        (doc("").replace(":1,", ": 1,"), "not compact JSON"),
        (format!("{} ", doc("")), "not compact JSON"),
        (doc("").replace("\"T\"", "\"a\tb\""), "not compact JSON"),
        (doc("").replace("\"T\"", r#""\ud83d""#), "not compact JSON"),
        (doc("").replace("\"T\"", r#""\x41""#), "not compact JSON"),
        (doc("").replace("\"T\"", "01"), "not compact JSON"),
        (doc("").replace("\"T\"", "1."), "not compact JSON"),
        (doc("").replace("\"T\"", "1e999"), "a number out of range"),
        (doc("").replace("\"T\"", "tru"), "not compact JSON"),
        (doc("").replace("]}}", "]}"), "not compact JSON"),
        (doc("").replace("]}}", "]}}}"), "not compact JSON"),
        (doc("").replace("[]", "[,]"), "not compact JSON"),
        (doc("").replace("\"title\"", "title"), "not compact JSON"),
        (
            doc("").replace("\"boardId\":\"b\"", "\"boardId\":\"a\""),
            "another board",
        ),
        (
            doc("").replace("\"id\":\"b\"", "\"id\":\"a\""),
            "another board",
        ),
        (doc("").replace("\"source\"", "\"origin\""), "another board"),
        (
            doc("").replace("\"id\":\"b\",", "\"id\":\"b\",\"id\":\"b\","),
            "a repeated board id",
        ),
        // A second `board` without an id of its own: serde_json takes the
        // last one, the check read the first.
        (
            doc("")
                .replacen("}}", r#"},"board":{"type":"BOARD","title":"Other"}}"#, 1)
                .replacen("}}}", "}}", 1),
            "a repeated member of the document",
        ),
        (
            doc("").replace(
                "\"fetchedAt\":\"t\",",
                "\"fetchedAt\":\"t\",\"fetchedAt\":\"u\",",
            ),
            "a repeated member of the document",
        ),
        (
            doc(r#"{"id":"c","permissionId":"p","children":[]}"#),
            "a sensitive field",
        ),
        (
            doc(r#"{"id":"c","content":{"x":{"ToKeN":"t"}},"children":[]}"#),
            "a sensitive field",
        ),
        (
            doc(r#"{"id":"c","content":{"\u0074oken":"t"},"children":[]}"#),
            "a sensitive field",
        ),
        // KELVIN SIGN folds to `k`: a key of other byte lengths than the
        // ASCII names, refused all the same.
        (
            doc("{\"id\":\"c\",\"content\":{\"to\u{212A}en\":\"t\"},\"children\":[]}"),
            "a sensitive field",
        ),
    ];
    for (json, why) in &cases {
        assert_eq!(check(json), Err(Invalid(why)), "{json}");
    }
    let not_utf8 = [doc("").as_bytes(), &[0xff]].concat();
    assert_eq!(document(&not_utf8, "b", 100), Err(Invalid("not UTF-8")));
}

/// A board nested `levels` deep below the root.
fn nested(levels: usize) -> String {
    let open = r#"{"id":"n","type":"CARD","children":["#;
    let inner = format!("{}{}", open.repeat(levels), "]}".repeat(levels));
    doc(&inner[..inner.len()])
}

#[test]
fn depth_and_node_count_are_bounded() {
    // The root object, `board`, then `children` and a node per level.
    let deepest = (MAX_DEPTH - 3) / 2;
    assert!(check(&nested(deepest)).is_ok());
    assert_eq!(check(&nested(deepest + 1)), Err(Invalid("nested too deep")));
    assert_eq!(check(&nested(200_000)), Err(Invalid("nested too deep")));
    let flat = |n: usize| doc(&vec![r#"{"id":"c","children":[]}"#; n].join(","));
    assert!(check(&flat(99)).is_ok(), "the root and 99 nodes");
    assert_eq!(check(&flat(100)), Err(Invalid("too many nodes")));
    // Objects elsewhere are not nodes.
    let content = doc(&format!(
        r#"{{"id":"c","content":[{}],"children":[]}}"#,
        vec!["{}"; 500].join(",")
    ));
    assert!(check(&content).is_ok());
}

/// The check's key filter reads keys exactly as the sanitizer does: every
/// sensitive name in any ASCII case, with letters that fold to ASCII, and
/// the keys a document is made of.
#[test]
fn keys_are_sensitive_exactly_as_the_sanitizer_says() {
    let mut keys: Vec<String> = Vec::new();
    for name in SENSITIVE_KEYS {
        keys.push(name.to_owned());
        keys.push(name.to_ascii_uppercase());
        let mut chars: Vec<char> = name.chars().collect();
        chars[0] = chars[0].to_ascii_uppercase();
        keys.push(chars.iter().collect());
        // The same length, another first letter; one letter changed.
        keys.push(format!("q{}", &name[1..]));
        keys.push(format!("{}q", &name[..name.len() - 1]));
        keys.push(name.replace('k', "\u{212a}").replace('s', "\u{17f}"));
    }
    for key in [
        "",
        "a",
        "id",
        "type",
        "text",
        "attrs",
        "marks",
        "content",
        "children",
        "location",
        "position",
        "section",
        "title",
        "élément",
        "\u{212a}",
        "tokens",
        "creators",
        "_id",
    ] {
        keys.push(key.to_owned());
    }
    for key in keys {
        assert_eq!(sensitive_key(key.as_bytes()), is_sensitive(&key), "{key:?}");
    }
}

/// The shape filter ([`SENSITIVE_SHAPES`]) rests on one fact of Unicode:
/// of the characters other than ASCII, only KELVIN SIGN lower-cases to
/// ASCII (the sanitizer maps `ſ` itself). Every other character keeps a
/// key's folded form out of ASCII, so it cannot name a field.
#[test]
fn only_the_kelvin_sign_lower_cases_to_ascii() {
    let folding: Vec<char> = (0x80..=0x10_FFFF)
        .filter_map(char::from_u32)
        .filter(|c| c.to_lowercase().all(|l| l.is_ascii()))
        .collect();
    assert_eq!(folding, ['\u{212a}']);
}

/// Every spelling of each name with any of its `k`s as `K` and any of its
/// `s`s as `ſ` (every subset) passes the shape filter and reads as the
/// sanitizer reads it.
#[test]
fn every_folded_spelling_of_a_name_is_caught() {
    for name in SENSITIVE_KEYS {
        let foldable: Vec<usize> = name
            .char_indices()
            .filter(|(_, c)| matches!(c, 'k' | 's'))
            .map(|(i, _)| i)
            .collect();
        for mask in 0u32..1 << foldable.len() {
            let key: String = name
                .char_indices()
                .map(|(i, c)| match foldable.iter().position(|&f| f == i) {
                    Some(bit) if mask & (1 << bit) != 0 => {
                        if c == 'k' {
                            '\u{212a}'
                        } else {
                            '\u{17f}'
                        }
                    }
                    _ => c,
                })
                .collect();
            assert!(is_sensitive(&key), "{key:?}");
            assert!(sensitive_key(key.as_bytes()), "{key:?}");
        }
    }
}

/// The entries the check notes are the document's top-level `"key":value`
/// spans, as the selection walk's `entries` reads them.
#[test]
fn the_top_level_entries_are_noted() {
    for json in [
        doc(""),
        doc(r#"{"id":"c","type":"CARD","children":[]},{"id":"d","type":"CARD"}"#),
        r#"{"source":{"boardId":"b"},"x":{},"y":[],"z":"}","board":{"id":"b"},"n":1}"#.to_owned(),
    ] {
        let checked = document(json.as_bytes(), "b", 100).expect("it checks out");
        let mut walked = Vec::new();
        crate::select::stream::entries(json.as_bytes(), |_, entry| walked.push(entry.to_vec()))
            .expect("it walks");
        let noted: Vec<Vec<u8>> = checked
            .entries
            .iter()
            .map(|span| json.as_bytes()[span.clone()].to_vec())
            .collect();
        assert_eq!(noted, walked, "{json}");
    }
}

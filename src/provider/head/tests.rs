//! The head's tests: its fields read from values and from answers, held
//! compactly, and the rule for which element an id names.

use super::*;
use crate::provider::raw::scalar;
use crate::provider::time::normalize_time;
use proptest::prelude::*;
use serde_json::json;

/// JSON text of one member's value: integers across `i64` and `u64`,
/// floats (`-0.0`, exponents, the shortest and the scientific form),
/// strings with escapes, and what is not a scalar.
pub(super) fn value_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|n| n.to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_flat_map(|f| prop_oneof![Just(format!("{f:?}")), Just(format!("{f:e}"))]),
        prop::sample::select(vec![
            "-0.0",
            "-0",
            "0.0",
            "0e0",
            "1E+2",
            "-1.5e-7",
            "12.50",
            "1e300",
            "-0.0e5",
            "null",
            "true",
            "false",
            "[]",
            "{}",
            "[1,\"x\"]",
            "{\"a\":1}",
            "\"\"",
            "\"TRASH\"",
            "\"deleted\"",
            "\"\\u00e9\\n\"",
            "\"1e3\"",
        ])
        .prop_map(str::to_owned),
        "\\PC{0,6}".prop_map(|s| Value::String(s).to_string()),
    ]
}

/// `location` as it was read before its scalars were held compactly:
/// the document's [`Scalar`]s read from the element's values.
fn location_of_values(element: &Value) -> Option<Location> {
    let loc = element.get("location").and_then(Value::as_object);
    let pos = loc
        .and_then(|l| l.get("position"))
        .and_then(Value::as_object);
    let coord = |i: usize| {
        scalar(pos.and_then(|p| p.get(POSITION_KEYS[i])))
            .or_else(|| scalar(loc.and_then(|l| l.get(FLAT_POSITION_KEYS[i]))))
            .or_else(|| scalar(element.get(FLAT_POSITION_KEYS[i])))
    };
    let position = Position {
        x: coord(0),
        y: coord(1),
        index: coord(2),
        score: coord(3),
    };
    let location = Location {
        parent_id: ident(loc.and_then(|l| l.get("parentId"))),
        section: scalar(loc.and_then(|l| l.get("section"))),
        root_board: scalar(loc.and_then(|l| l.get("rootBoard"))),
        position: (position != Position::default()).then_some(position),
    };
    (location != Location::default()).then_some(location)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// An element's location, held and then written, is the location
    /// read from its values, byte for byte, and removal reads the same
    /// section.
    #[test]
    fn held_location_writes_as_read_from_values(
        members in prop::collection::vec(
            (prop::sample::select(vec![
                "section", "rootBoard", "parentId", "x", "y", "index", "score",
                "positionX", "positionY", "positionIndex", "positionScore",
                "top:positionX", "top:positionY", "top:positionIndex", "top:positionScore",
            ]), value_text()),
            0..10,
        ),
    ) {
        let (mut loc, mut pos, mut top) = (Vec::new(), Vec::new(), Vec::new());
        for (key, text) in &members {
            let member = |k: &str| format!("{}:{text}", Value::from(k));
            match *key {
                "x" | "y" | "index" | "score" => pos.push(member(key)),
                k if k.starts_with("top:") => top.push(member(&k[4..])),
                k => loc.push(member(k)),
            }
        }
        loc.push(format!("\"position\":{{{}}}", pos.join(",")));
        top.push(format!("\"location\":{{{}}}", loc.join(",")));
        let element: Value = serde_json::from_str(&format!("{{{}}}", top.join(",")))
            .expect("valid JSON");
        let head = Head::read(&element);
        let held = head.location.as_ref().map(HeldLocation::location);
        let old = location_of_values(&element);
        prop_assert_eq!(
            serde_json::to_string(&held).ok(),
            serde_json::to_string(&old).ok(),
            "{}", element
        );
        let removed = old
            .as_ref()
            .and_then(|l| l.section.as_ref())
            .and_then(|s| s.0.as_str())
            .is_some_and(is_removed_section);
        prop_assert_eq!(head.is_removed(), removed);
    }
}

/// Every element's head is held until the document is written: its
/// size is most of the peak heap beyond the document itself.
#[test]
fn a_head_is_152_bytes() {
    assert_eq!(std::mem::size_of::<Head>(), 152);
    assert_eq!(std::mem::size_of::<Option<HeldLocation>>(), 104);
}

/// The fields few elements have are held apart, read back as they were
/// read, and not boxed at all when the element has none of them.
#[test]
fn rare_fields_are_boxed_only_when_present() {
    let plain = Head::read_under("a", &json!({"id": "a", "elementType": "CARD"}));
    assert!(plain.rare.is_none());
    assert_eq!(
        (plain.id(), plain.thread_id(), plain.element_type()),
        (None, None, "CARD")
    );
    let cases = [
        (json!({"id": "b"}), (Some("b"), None, "")),
        (json!({"threadId": 7}), (None, Some("7"), "")),
        (json!({"elementType": "NEW_KIND"}), (None, None, "NEW_KIND")),
        (json!({"elementType": ""}), (None, None, "")),
        (
            json!({"_id": "c", "threadId": "t", "elementType": "BOARD"}),
            (Some("c"), Some("t"), "BOARD"),
        ),
    ];
    for (element, want) in cases {
        let head = Head::read_under("a", &element);
        assert!(head.rare.is_some(), "{element}");
        assert_eq!(
            (head.id(), head.thread_id(), head.element_type()),
            want,
            "{element}"
        );
    }
    assert_eq!(Head::NONE.element_type(), "");
    assert_eq!(Head::read(&json!({"elementType": 3})).element_type(), "");
}

#[test]
fn times_held_compactly_normalize_as_their_values() {
    let values = [
        json!(1_700_000_000_123_i64),
        json!(-1),
        json!(0),
        json!(i64::MAX),
        json!(u64::MAX),
        json!(1_700_000_000_123.9),
        json!(-1.5),
        json!("2023-11-14T22:13:20.123Z"),
        json!("1700000000123"),
        json!("not a time"),
        json!(null),
        json!(true),
        json!([1]),
        json!({"t": 1}),
        json!(253_402_300_800_000_i64),
    ];
    for chunk in values.chunks(3) {
        let mut times: [Option<Value>; 4] = Default::default();
        for (slot, value) in times.iter_mut().zip(chunk) {
            *slot = Some(value.clone());
        }
        let want = times
            .each_ref()
            .map(|t| t.as_ref().and_then(normalize_time));
        let got = MetaTimes::new(times.each_ref().map(|t| HeldScalar::of(t.as_ref())))
            .timestamps()
            .unwrap_or_default();
        let got = [
            got.created_at,
            got.modified_at,
            got.significant_modified_at,
            got.location_modified_at,
        ];
        assert_eq!(got, want, "{times:?}");
    }
}

#[test]
fn location_table() {
    let cases: Vec<(Value, Option<Value>)> = vec![
        (json!({}), None),
        (json!({"location": "r"}), None),
        (json!({"location": {"parentId": ""}}), None),
        (
            json!({"location": {"parentId": 12}}),
            Some(json!({"parentId": "12"})),
        ),
        (json!({"location": {"position": {}}}), None),
        (json!({"positionX": 3}), Some(json!({"position": {"x": 3}}))),
        (
            json!({"location": {"section": null, "rootBoard": "R", "position": {"x": null}, "positionX": "7"}}),
            Some(json!({"rootBoard": "R", "position": {"x": "7"}})),
        ),
    ];
    for (element, want) in cases {
        let got = Head::read(&element)
            .location
            .map(|l| serde_json::to_value(l.location()).unwrap_or_default());
        assert_eq!(got, want, "{element}");
    }
}

#[test]
fn claimed_id_table() {
    let cases: &[(Value, &str)] = &[
        (json!({"id": "a", "_id": "b"}), "a"),
        (json!({"_id": "b"}), "b"),
        (json!({}), "key"),
        (json!({"id": "", "_id": "b"}), "b"),
        (json!({"id": null, "_id": ""}), "key"),
        (json!({"id": 42}), "42"),
        (json!({"id": 4.5}), "key"),
        (json!({"id": ["x"], "_id": {"y": 1}}), "key"),
        (json!("not an object"), "key"),
        (json!([{"id": "a"}]), "key"),
    ];
    for (raw, want) in cases {
        assert_eq!(Head::read(raw).claimed_id("key"), *want, "{raw}");
    }
}

#[test]
fn find_element_follows_the_id_rule() {
    let elements = json!({
        "r": {"id": "x", "elementType": "BOARD"},
        "k": {"id": "r", "elementType": "CARD"},
        "n": {"_id": 7, "elementType": "CARD"},
        "plain": {"elementType": "TASK"},
        "b": {"_id": "bb", "elementType": "BOARD"},
        "s": {"_id": "bb", "elementType": "SKELETON"},
        "c": {"id": "cc", "elementType": "A"},
        "d": {"id": "cc", "elementType": "B"},
        "e": 5
    });
    let heads: Vec<(String, Head)> = elements
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), Head::read_under(k, v)))
        .collect();
    let iter = || heads.iter().map(|(k, h)| (k.as_str(), h));
    let kind = |id: &str| find_element(iter(), id).map(|h| h.element_type().to_owned());
    // The map key "r" holds element "x": "r" is the element whose id is "r".
    assert_eq!(kind("r").as_deref(), Some("CARD"));
    assert_eq!(kind("x").as_deref(), Some("BOARD"));
    assert_eq!(kind("k"), None);
    assert_eq!(kind("7").as_deref(), Some("CARD"));
    assert_eq!(kind("plain").as_deref(), Some("TASK"));
    // A SKELETON never replaces a BOARD; otherwise the later copy wins.
    assert_eq!(kind("bb").as_deref(), Some("BOARD"));
    assert_eq!(kind("cc").as_deref(), Some("B"));
    // A non-object claims its key.
    assert_eq!(find_element(iter(), "e").map(|h| h.is_object), Some(false));
    for (key, head) in iter() {
        assert!(
            find_element(iter(), &head.claimed_id(key)).is_some(),
            "{key}"
        );
    }
}

//! The sample upstream's `/api/boards` answer: the requested boards' fixture
//! files merged, plus the synthetic `s-deep-<n>` chain and the `s-big` tree.

use super::captured::Captured;
use super::fixtures;
use serde_json::{json, Map, Value};
use std::borrow::Cow;

/// `fetchedTime` of a boards answer when no fixture carries one.
const DEFAULT_FETCHED_TIME: i64 = 1_767_225_600_000;

/// Milanote's answer for `ids`: the requested boards' fixtures merged, with
/// `errors`, `childrenReturned` and `boardIds`. `origin` is the sample's own,
/// for the bundled images the fixtures point at. A `captured` board is
/// served before a bundled one of the same id.
pub fn boards_body(ids: &[&str], token_ok: bool, origin: &str, captured: &Captured) -> Value {
    let mut elements = Map::new();
    let mut comments = Map::new();
    let mut canvas_order = Map::new();
    let mut errors = Map::new();
    let mut returned = Map::new();
    let mut fetched_time = None;
    let mut omit_elements = false;
    for &id in ids {
        if !token_ok {
            errors.insert(id.into(), json!({"error": {"code": "ACCESS_DENIED"}}));
            returned.insert(id.into(), json!(false));
            continue;
        }
        if id == "fault-no-elements" {
            omit_elements = true;
            returned.insert(id.into(), json!(true));
            continue;
        }
        let fixture = captured.fixture(id).map(Cow::Borrowed);
        let Some(fixture) = fixture
            .or_else(|| fixtures::fixture(id, origin).map(Cow::Owned))
            .or_else(|| deep_board(id).map(Cow::Owned))
            .or_else(|| super::big::big_board(id).map(Cow::Owned))
        else {
            errors.insert(id.into(), json!({"error": {"code": "BOARD_NOT_FOUND"}}));
            returned.insert(id.into(), json!(false));
            continue;
        };
        join(
            [
                &mut elements,
                &mut comments,
                &mut canvas_order,
                &mut errors,
                &mut returned,
            ],
            &fixture,
        );
        if !returned.contains_key(id) {
            returned.insert(id.into(), json!(!errors.contains_key(id)));
        }
        if fetched_time.is_none() {
            fetched_time = fixture.get("fetchedTime").and_then(Value::as_i64);
        }
    }
    // What belonged to none of a captured answer's boards came with all of
    // them: once per batch, however many of them it asks for.
    let orphans = if token_ok {
        captured.orphans(ids)
    } else {
        Vec::new()
    };
    for part in orphans {
        join(
            [
                &mut elements,
                &mut comments,
                &mut canvas_order,
                &mut errors,
                &mut returned,
            ],
            part,
        );
    }
    let mut body = Map::new();
    if !omit_elements {
        body.insert("elements".into(), Value::Object(elements));
    }
    body.insert("comments".into(), Value::Object(comments));
    body.insert("canvasOrder".into(), Value::Object(canvas_order));
    body.insert("errors".into(), Value::Object(errors));
    body.insert("childrenReturned".into(), Value::Object(returned));
    body.insert("boardIds".into(), json!(ids));
    body.insert(
        "fetchedTime".into(),
        json!(fetched_time.unwrap_or(DEFAULT_FETCHED_TIME)),
    );
    Value::Object(body)
}

/// The members of a boards answer that are joined from each fixture.
const MEMBERS: [&str; 5] = [
    "elements",
    "comments",
    "canvasOrder",
    "errors",
    "childrenReturned",
];

/// Joins the [`MEMBERS`] of `part` (a fixture, or a capture's orphans) into
/// `targets`, in that order.
fn join(targets: [&mut Map<String, Value>; 5], part: &Map<String, Value>) {
    for (key, target) in MEMBERS.iter().zip(targets) {
        if let Some(Value::Object(map)) = part.get(*key) {
            target.extend(map.clone());
        }
    }
}

/// Deepest board of the synthetic `s-deep-<n>` chain.
pub const DEEP_CHAIN_LAST: u32 = 99;

/// `s-deep-<n>` (0 to [`DEEP_CHAIN_LAST`]): a synthetic chain where each board
/// holds the next one, for nesting-depth tests.
fn deep_board(id: &str) -> Option<Map<String, Value>> {
    let n: u32 = id.strip_prefix("s-deep-")?.parse().ok()?;
    if n > DEEP_CHAIN_LAST || id != format!("s-deep-{n}") {
        return None;
    }
    let parent = match n {
        0 => "t-home".to_owned(),
        _ => format!("s-deep-{}", n - 1),
    };
    let board = |id: &str, parent: &str| {
        json!({"id": id, "elementType": "BOARD", "location": {"parentId": parent},
               "content": {"title": id}})
    };
    let mut elements = Map::new();
    elements.insert(id.to_owned(), board(id, &parent));
    if n < DEEP_CHAIN_LAST {
        let child = format!("s-deep-{}", n + 1);
        elements.insert(child.clone(), board(&child, id));
    }
    Some(
        json!({"elements": elements, "fetchedTime": DEFAULT_FETCHED_TIME})
            .as_object()?
            .clone(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenario_fixtures_carry_their_errors() {
        let v = boards_body(
            &["fault-password"],
            true,
            "http://127.0.0.1:1",
            &Captured::default(),
        );
        assert_eq!(
            v["errors"]["fault-password"]["error"]["code"],
            "PASSWORD_PROTECTED"
        );
        assert_eq!(v["childrenReturned"]["fault-password"], false);
        let v = boards_body(
            &["fault-no-elements"],
            true,
            "http://127.0.0.1:1",
            &Captured::default(),
        );
        assert!(v.get("elements").is_none());
    }

    #[test]
    fn deep_chain_is_synthesized() {
        let v = boards_body(
            &["s-deep-5"],
            true,
            "http://127.0.0.1:1",
            &Captured::default(),
        );
        assert_eq!(
            v["elements"]["s-deep-6"]["location"]["parentId"],
            "s-deep-5"
        );
        assert_eq!(v["childrenReturned"]["s-deep-5"], true);
        for bad in ["s-deep-100", "s-deep-05", "s-deep-x"] {
            assert_eq!(
                boards_body(&[bad], true, "http://127.0.0.1:1", &Captured::default())["errors"]
                    [bad]["error"]["code"],
                "BOARD_NOT_FOUND"
            );
        }
    }
}

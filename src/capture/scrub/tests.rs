//! The scrubber on answers in the shape the web app's traffic has.

use super::*;
use serde_json::json;

const ALICE: &str = "1XbZ5iAlice001";
const BOB: &str = "1XbZ5iBob00002";
const PERM: &str = "pXq7TzPermission9";
const TOKEN: &str = "eyJhbGciOiJIUzI1NiJ9.c2hhcmU.c2ln";

fn answer() -> Value {
    json!({
        "elements": {
            "1XbZEplawr6y02": {
                "_id": "1XbZEplawr6y02", "elementType": "BOARD",
                "location": {"parentId": "1XbZEplawr6y01", "section": "CANVAS"},
                "content": {"title": "Trip"},
                "meta": {"creator": ALICE, "modifiedBy": BOB, "createdTime": 1},
                "acl": {ALICE: {"role": "OWNER"}, "public": {"permissionId": PERM}}
            },
            "1XbZEqlawr6y03": {
                "_id": "1XbZEqlawr6y03", "elementType": "CARD",
                "location": {"parentId": "1XbZEplawr6y02", "section": "CANVAS", "position": {"x": 4, "y": 2}},
                "content": {"textContent": {"type": "doc", "content": [{"type": "paragraph", "attrs": {"key": "YUt42"}, "content": [
                    {"type": "text", "text": "ask "},
                    {"type": "mention", "attrs": {"id": BOB, "label": "Bob"}},
                    {"type": "text", "text": " about demo", "marks": [{"type": "textMention", "attrs": {"userId": ALICE, "originalText": "@Alice", "mentionKey": "k1"}}]},
                    {"type": "inlineBoardLink", "attrs": {"boardId": "1XbZEplawr6y09", "title": "Plan", "permissionId": "otherPerm123", "url": format!("https://app.milanote.com/1XbZEplawr6y09/plan?p={PERM}")}}
                ]}]}},
                "meta": {"creator": ALICE}
            }
        },
        "comments": {"c1": {"threadId": "t1", "userId": BOB, "text": "seen by 1XbZ5iBob00002"},
                     "c2": {"threadId": "t1", "text": "OWNER"}},
        "boardIds": ["1XbZEplawr6y02"],
        "tokens": [TOKEN]
    })
}

fn scrubbed() -> (Value, Scrubber) {
    let mut value = answer();
    let mut s = Scrubber::new(PERM);
    s.add_token(TOKEN);
    s.learn(&value);
    s.finish();
    s.scrub(&mut value);
    (value, s)
}

#[test]
fn no_person_id_permission_or_token_is_left() {
    let (value, s) = scrubbed();
    let text = value.to_string();
    for secret in [ALICE, BOB, PERM, TOKEN, "otherPerm123"] {
        assert!(!text.contains(secret), "{secret} in {text}");
    }
    assert_eq!(s.users(), 2);
}

#[test]
fn board_content_and_ids_stay() {
    let (value, _) = scrubbed();
    let card = &value["elements"]["1XbZEqlawr6y03"];
    let para = &card["content"]["textContent"]["content"][0]["content"];
    assert_eq!(para[0]["text"], "ask ");
    assert_eq!(para[1]["attrs"]["label"], "Bob");
    // A short permission id is replaced only where it is a whole string.
    assert_eq!(para[2]["text"], " about demo");
    assert_eq!(para[2]["marks"][0]["attrs"]["originalText"], "@Alice");
    assert_eq!(para[3]["attrs"]["boardId"], "1XbZEplawr6y09");
    assert_eq!(para[3]["attrs"]["title"], "Plan");
    assert_eq!(card["location"]["position"]["x"], 4);
    assert_eq!(card["_id"], "1XbZEqlawr6y03");
    assert_eq!(value["boardIds"][0], "1XbZEplawr6y02");
    // A short value found under a sensitive key (a role) stays in content.
    assert_eq!(value["comments"]["c2"]["text"], "OWNER");
    assert_eq!(
        value["elements"]["1XbZEplawr6y02"]["content"]["title"],
        "Trip"
    );
}

#[test]
fn placeholders_are_the_same_for_the_same_person_everywhere() {
    let (value, _) = scrubbed();
    let board = &value["elements"]["1XbZEplawr6y02"];
    let alice = board["meta"]["creator"].as_str().unwrap().to_owned();
    assert!(alice.starts_with("user-"), "{alice}");
    assert_eq!(
        value["elements"]["1XbZEqlawr6y03"]["meta"]["creator"],
        alice.as_str()
    );
    // acl keyed by the person's id: the key is the same placeholder.
    assert!(board["acl"].get(&alice).is_some(), "{}", board["acl"]);
    assert_ne!(board["acl"][&alice]["role"], "OWNER");
    let bob = board["meta"]["modifiedBy"].as_str().unwrap();
    assert_eq!(value["comments"]["c1"]["userId"], bob);
    // The id inside a comment's text is replaced too.
    assert_eq!(value["comments"]["c1"]["text"], format!("seen by {bob}"));
    // A mention's id, and the permission id inside a URL.
    let para =
        &value["elements"]["1XbZEqlawr6y03"]["content"]["textContent"]["content"][0]["content"];
    assert_eq!(para[1]["attrs"]["id"], bob);
    assert_eq!(
        para[3]["attrs"]["url"],
        "https://app.milanote.com/1XbZEplawr6y09/plan?p=permission-1"
    );
    assert_eq!(value["tokens"][0], "token-1");
}

#[test]
fn sensitive_keys_are_found_by_name_at_any_depth() {
    for key in [
        "creator",
        "modifiedBy",
        "userId",
        "remoteUserIds",
        "acl",
        "permissionId",
        "tokens",
        "assignments",
        "mentionKey",
        "ownerEmail",
    ] {
        assert!(is_sensitive_key(key), "{key}");
    }
    for key in [
        "title",
        "content",
        "elementType",
        "boardId",
        "x",
        "_id",
        "text",
    ] {
        assert!(!is_sensitive_key(key), "{key}");
    }
    let mut value = json!({"a": [{"b": {"deep": {"lastEditorId": "1XbZ5iCarol03", "n": 5}}}],
                           "note": "Carol is 1XbZ5iCarol03"});
    let mut s = Scrubber::new("perm-long-enough");
    s.learn(&value);
    s.finish();
    s.scrub(&mut value);
    assert_eq!(value["a"][0]["b"]["deep"]["lastEditorId"], "user-1");
    assert_eq!(value["a"][0]["b"]["deep"]["n"], 5);
    assert_eq!(value["note"], "Carol is user-1");
}

#[test]
fn an_element_id_under_a_sensitive_key_is_not_replaced_elsewhere() {
    let mut value = json!({
        "elements": {"1XbZEqlawr6y03": {"_id": "1XbZEqlawr6y03", "ownerElement": "1XbZEqlawr6y03",
                                        "location": {"parentId": "1XbZEqlawr6y03x"}}}
    });
    let mut s = Scrubber::new("perm-long-enough");
    s.learn(&value);
    s.finish();
    s.scrub(&mut value);
    let element = &value["elements"]["1XbZEqlawr6y03"];
    assert_eq!(element["_id"], "1XbZEqlawr6y03");
    assert_eq!(element["location"]["parentId"], "1XbZEqlawr6y03x");
}

#[test]
fn hostile_nesting_is_cut_not_a_stack_overflow() {
    let mut deep = json!("1XbZ5iAlice001");
    for _ in 0..400 {
        deep = json!({ "userId": deep });
    }
    let mut value = json!({ "x": deep });
    let mut s = Scrubber::new("perm-long-enough");
    s.learn(&value);
    s.finish();
    s.scrub(&mut value);
    assert!(!value.to_string().contains("1XbZ5iAlice001"));
}

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

/// Scrubs `value` alone, with a permission id it does not hold.
fn scrub_alone(mut value: Value) -> (Value, Scrubber) {
    let mut s = Scrubber::new("perm-long-enough");
    s.learn(&value);
    s.finish();
    s.scrub(&mut value);
    (value, s)
}

#[test]
fn the_sanitizers_keys_in_any_case_and_the_wider_person_keys_lose_their_values() {
    let secrets = [
        "sess-SECRET-1",
        "api-SECRET-2",
        "cookie-SECRET-3",
        "internal-SECRET-4",
        "Bearer auth-SECRET-5",
        "private-SECRET-6",
        "1XbZ5iUpdater7",
        "1XbZ5iEditor08",
        "1XbZ5iDeleter9",
        "1XbZ5iSeer0010",
        "1XbZ5iSharer11",
        "1XbZ5iInviter2",
        "1XbZ5iPartic13",
        "1XbZ5iUid00014",
        "1XbZ5iBy000015",
        "1XbZ5iViewer16",
        "1XbZ5iPerson17",
        "mail-SECRET@example.org",
        "contact-SECRET-19",
        "1XbZ5iMention20",
        "1XbZ5iObjMent21",
    ];
    let value = json!({
        "sessionId": secrets[0], "APIKEY": secrets[1], "Cookie": secrets[2],
        "meta": {"InternalID": secrets[3], "authorization": secrets[4],
                 "privateMetadata": {"note": secrets[5]}},
        "updatedBy": secrets[6], "lastEditedBy": secrets[7], "deletedBy": secrets[8],
        "seenBy": [secrets[9]], "sharedBy": {"id": secrets[10]}, "invitedBy": secrets[11],
        "participants": [{"name": "P", "ref": secrets[12]}], "uid": secrets[13],
        "by": secrets[14], "viewers": {secrets[15]: {"at": 5}},
        "person": {"id": secrets[16]}, "e_mail": secrets[17], "contact": secrets[18],
        "doc": {"type": "doc", "content": [
            {"type": "Mention", "attrs": {"id": secrets[19], "label": "Ann"}},
            {"type": "mention", "attrs": {"id": {"userId": secrets[20], "kind": "user"}, "label": "Bo"}}
        ]},
        "note": format!("ask {} or 1XbZ5iSeer0010", secrets[17]),
        "text": "{\"blocks\":[{\"text\":\"hi\",\"data\":{\"sessionId\":\"sess-SECRET-1\",\"mail\":\"x@example.com\"}}]}"
    });
    let (value, s) = scrub_alone(value);
    let text = value.to_string();
    for secret in secrets.iter().chain(&["x@example.com"]) {
        assert!(!text.contains(secret), "{secret} in {text}");
    }
    // Keys stay (but a person-id key), content and labels stay.
    assert_eq!(value["doc"]["content"][0]["attrs"]["label"], "Ann");
    let viewers = value["viewers"].as_object().unwrap();
    assert!(
        viewers.keys().all(|k| k.starts_with("user-")),
        "{viewers:?}"
    );
    assert!(
        value["note"].as_str().unwrap().starts_with("ask user-"),
        "{}",
        value["note"]
    );
    let inner: Value = serde_json::from_str(value["text"].as_str().unwrap()).unwrap();
    assert_eq!(inner["blocks"][0]["text"], "hi");
    assert!(s.users() >= 10, "{}", s.users());
}

#[test]
fn a_json_string_that_holds_nothing_sensitive_is_kept_byte_for_byte() {
    let raw = "{\"blocks\": [{\"key\": \"k00\", \"text\": \"plain\"}], \"entityMap\": {}}";
    let (value, _) = scrub_alone(json!({ "textContent": raw, "n": [1, "[not json"] }));
    assert_eq!(value["textContent"], raw);
    assert_eq!(value["n"][1], "[not json");
}

#[test]
fn an_address_is_the_same_person_everywhere_and_a_path_is_no_address() {
    let (value, _) = scrub_alone(json!({
        "email": "a@b.io",
        "comment": "mail a@b.io",
        "a@b.io": true,
        "image": "https://cdn.example.com/i/icon@2x.png"
    }));
    let person = value["email"].as_str().unwrap().to_owned();
    assert!(person.starts_with("user-"), "{value}");
    assert_eq!(value["comment"], format!("mail {person}"));
    assert_eq!(value[&person], true);
    assert_eq!(value["image"], "https://cdn.example.com/i/icon@2x.png");
}

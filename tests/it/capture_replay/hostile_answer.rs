//! A provider answer carrying every key a capture must scrub (the
//! sanitizer's keys in other cases, person keys by the wider rule, mentions
//! of any case and shape, nodes and marks, e-mail addresses anywhere),
//! captured by the real binary: no value of them is in any file written, and the capture replays
//! to the document the provider's answer gives.

use super::*;
use serde_json::json;

const HOSTILE_BOARD: &str = "1XbZHostile001";
/// A person id used as a map key (`viewers`).
const VIEWER: &str = "1XbZ5iViewerK1";

/// Every value that must not reach a capture, by the key it is planted under.
fn planted() -> Vec<(&'static str, &'static str)> {
    vec![
        ("sessionId", "LEAK-session-id-1"),
        ("APIKEY", "LEAK-api-key-2"),
        ("Cookie", "LEAK-cookie-3"),
        ("internalId", "LEAK-internal-id-4"),
        ("authorization", "Bearer LEAK-authorization-5"),
        ("privateMetadata", "LEAK-private-metadata-6"),
        ("updatedBy", "LEAK-updated-by-7"),
        ("lastEditedBy", "LEAK-last-edited-by-8"),
        ("deletedBy", "LEAK-deleted-by-9"),
        ("seenBy", "LEAK-seen-by-10"),
        ("sharedBy", "LEAK-shared-by-11"),
        ("invitedBy", "LEAK-invited-by-12"),
        ("participants", "LEAK-participant-13"),
        ("uid", "LEAK-uid-14"),
        ("by", "LEAK-by-15"),
        ("viewers", VIEWER),
        ("person", "LEAK-person-id-17"),
        ("e_mail", "leak.e-mail@example.org"),
        ("contact", "LEAK-contact-19"),
        ("Mention", "LEAK-capital-mention-20"),
        ("mention", "LEAK-object-mention-21"),
        ("textMention", "LEAK-text-mention-22"),
        ("textMention id", "LEAK-text-mention-id-25"),
        ("userMention", "LEAK-user-mention-26"),
        ("mentionKey", "LEAK-mention-key-27"),
        ("(no key)", "leak.anywhere@example.net"),
        ("(JSON text)", "LEAK-draft-session-24"),
    ]
}

/// The root board's answer, every planted value in it.
fn hostile_answer() -> Value {
    let v: std::collections::HashMap<&str, &str> = planted().into_iter().collect();
    let draft = json!({"blocks": [{"key": "k0", "text": "draft", "type": "unstyled",
        "data": {"sessionId": v["(JSON text)"]}}], "entityMap": {}});
    json!({
        "elements": {
            HOSTILE_BOARD: {
                "_id": HOSTILE_BOARD, "elementType": "BOARD",
                "location": {"parentId": "1XbZHomeBoard1", "section": "CANVAS"},
                "content": {"title": "Hostile keys"},
                "sessionId": v["sessionId"], "APIKEY": v["APIKEY"], "Cookie": v["Cookie"],
                "meta": {"internalId": v["internalId"], "authorization": v["authorization"],
                         "privateMetadata": {"note": v["privateMetadata"]},
                         "updatedBy": v["updatedBy"], "lastEditedBy": v["lastEditedBy"]},
                "note": format!("ask {} about it", v["(no key)"])
            },
            "1XbZHostCard01": {
                "_id": "1XbZHostCard01", "elementType": "CARD",
                "location": {"parentId": HOSTILE_BOARD, "section": "CANVAS",
                             "position": {"x": 4, "y": 2, "score": 65536}},
                "content": {"textContent": {"type": "doc", "content": [
                    {"type": "paragraph", "attrs": {"key": "aK3e1"}, "content": [
                        {"type": "text", "text": "ask "},
                        {"type": "mention", "attrs": {"id": {"value": v["mention"], "kind": "user"}, "label": "Bo"}},
                        {"type": "text", "text": " today", "marks": [{"type": "textMention",
                            "id": v["textMention id"],
                            "attrs": {"userId": v["textMention"], "originalText": "@Bo"}}]},
                        {"type": "text", "text": " and "},
                        {"type": "userMention", "attrs": {"id": v["userMention"],
                            "mentionKey": v["mentionKey"], "label": "Di"}}
                    ]}
                ]}},
                "deletedBy": v["deletedBy"], "seenBy": [v["seenBy"]],
                "sharedBy": {"id": v["sharedBy"]}, "invitedBy": v["invitedBy"],
                "participants": [{"ref": v["participants"]}], "uid": v["uid"], "by": v["by"],
                "viewers": {VIEWER: {"at": 1_790_795_254_321_u64}},
                "person": {"id": v["person"]}, "e_mail": v["e_mail"], "contact": v["contact"],
                "activity": [{"type": "Mention", "attrs": {"id": v["Mention"], "label": "Cy"}}]
            },
            "1XbZHostCard02": {
                "_id": "1XbZHostCard02", "elementType": "CARD",
                "location": {"parentId": HOSTILE_BOARD, "section": "CANVAS",
                             "position": {"x": 40, "y": 2, "score": 131072}},
                "content": {"textContent": draft.to_string()}
            }
        },
        "comments": {},
        "canvasOrder": {},
        "fetchedTime": 1_790_795_254_321_u64
    })
}

/// The hostile answer as a capture directory: what the provider sends,
/// served by the sample upstream.
fn provider_dir(dir: &Path) -> PathBuf {
    let raw = dir.join("provider");
    std::fs::create_dir_all(&raw).expect("provider dir");
    let index = json!({
        "format": "shared-board-api capture 1", "board": HOSTILE_BOARD,
        "answers": [{"request": "boards", "ids": [HOSTILE_BOARD], "status": 200, "file": "02-boards.json"}]
    });
    std::fs::write(raw.join("index.json"), index.to_string()).expect("index");
    std::fs::write(raw.join("02-boards.json"), hostile_answer().to_string()).expect("answer");
    raw
}

/// A gateway in this process whose provider is `origin`.
fn gateway_for(origin: &str) -> Gateway {
    start_server(1, |server, addrs| {
        let mut settings = Settings::from_yaml(&config(addrs[0].port(), "", "")).expect("config");
        settings
            .api_mut()
            .set_provider_origin(origin)
            .expect("origin");
        shared_board_api::host::service::add_services(server, &settings).expect("services");
    })
    .0
}

#[test]
fn a_capture_of_an_answer_with_every_sensitive_key_holds_none_of_their_values_and_replays_equal() {
    let dir = temp_dir("hostile");
    let provider = SampleUpstream::start_in_thread_with(
        ([127, 0, 0, 1], 0).into(),
        Captured::load(&provider_dir(&dir)).expect("the provider's answer reads"),
    )
    .expect("provider upstream");

    // The real binary captures it from that provider.
    let conf = dir.join("gateway.yaml");
    let text = config(9, "", "").replace(&upstream_origin(), &provider.origin());
    std::fs::write(&conf, text).expect("configuration");
    let out = dir.join("capture");
    let link = capture_link(HOSTILE_BOARD, SECRET_PERMISSION);
    let run = Command::new(env!("CARGO_BIN_EXE_shared-board-api"))
        .arg("-c")
        .arg(&conf)
        .args(["--capture", &link, "--out"])
        .arg(&out)
        .output()
        .expect("binary runs");
    let said =
        String::from_utf8_lossy(&run.stdout).into_owned() + &String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{said}");

    for (name, content) in files(&out) {
        for (key, value) in planted() {
            assert!(
                !content.contains(value),
                "{name} holds the value planted under {key}: {content}"
            );
        }
        assert!(!content.contains(SECRET_PERMISSION), "{name}");
    }
    let answer: Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("02-boards.json")).expect("the root answer"),
    )
    .expect("JSON");
    let card = &answer["elements"]["1XbZHostCard01"];
    // Keys stay, values go; the mention's label and the board's text stay.
    let viewers = card["viewers"].as_object().expect("viewers");
    assert!(
        viewers.keys().all(|k| k.starts_with("user-")),
        "{viewers:?}"
    );
    let paragraph = &card["content"]["textContent"]["content"][0]["content"];
    assert_eq!(paragraph[1]["attrs"]["label"], "Bo");
    assert_eq!(paragraph[4]["attrs"]["label"], "Di");
    assert_eq!(paragraph[0]["text"], "ask ");

    // The capture replays to the document the provider's answer gives.
    let replay = SampleUpstream::start_in_thread_with(
        ([127, 0, 0, 1], 0).into(),
        Captured::load(&out).expect("the capture reads back"),
    )
    .expect("replay upstream");
    let live = gateway_for(&provider.origin());
    let replayed = gateway_for(&replay.origin());
    let expected = document(live.addr, HOSTILE_BOARD, PERMISSION, &provider.origin());
    let got = document(replayed.addr, HOSTILE_BOARD, "any", &replay.origin());
    assert_eq!(got, expected);
    assert!(
        expected.to_string().contains("Hostile keys") && expected.to_string().contains("draft"),
        "{expected}"
    );
    // The live document holds no mention's person either: the service and
    // the capture keep one rule for mentions (nodes and marks alike).
    let mentions = [
        "Mention",
        "mention",
        "textMention",
        "textMention id",
        "userMention",
        "mentionKey",
    ];
    for (key, value) in planted().into_iter().filter(|(k, _)| mentions.contains(k)) {
        assert!(
            !expected.to_string().contains(value),
            "the live document holds the value planted under {key}: {expected}"
        );
    }
    drop((live, replayed));
    let _ = std::fs::remove_dir_all(&dir);
}

//! Capture and replay over sockets: the real binary captures a board with
//! nested boards from the sample upstream (`--capture`), the capture holds
//! no token, no permission id and no person id, and the capture served
//! offline (what `--demo DIR` serves) gives the same document through the
//! same gateway, for another permission id. The modules beside it: an
//! answer with every key a capture must scrub, and `--demo DIR` on
//! directories that are not what a capture writes.

mod hostile_answer;
mod untrusted_dir;

use crate::common::*;
use serde_json::Value;
use shared_board_api::config::Settings;
use shared_board_api::demo::{Captured, SampleUpstream};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A permission id no fixture text contains, so finding it means a leak.
const SECRET_PERMISSION: &str = "CaptureSecret7Qx9";

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sba-capture-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// An upstream that serves `captured` (what `--demo DIR` serves), and a
/// gateway whose provider it is.
fn replaying(captured: Captured) -> (SampleUpstream, Gateway) {
    let replay = SampleUpstream::start_in_thread_with(([127, 0, 0, 1], 0).into(), captured)
        .expect("replay upstream");
    let (gw, _) = start_server(1, |server, addrs| {
        let mut settings = Settings::from_yaml(&config(addrs[0].port(), "", "")).expect("config");
        settings
            .api_mut()
            .set_provider_origin(&replay.origin())
            .expect("origin");
        shared_board_api::host::service::add_services(server, &settings).expect("services");
    });
    (replay, gw)
}

/// The binary with `args`, `-c` a configuration whose provider is the
/// sample upstream; exit code and output.
fn run_binary(dir: &Path, args: &[&str]) -> (i32, String) {
    let conf = dir.join("gateway.yaml");
    std::fs::write(&conf, config(9, "", "")).expect("write the configuration");
    let out = Command::new(env!("CARGO_BIN_EXE_shared-board-api"))
        .arg("-c")
        .arg(&conf)
        .args(args)
        .env("RUST_LOG", "debug")
        .output()
        .expect("binary runs");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), text)
}

fn capture_link(board: &str, p: &str) -> String {
    format!("https://app.milanote.com/{board}/slug?p={p}")
}

/// Every file of `dir`, as text.
fn files(dir: &Path) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = std::fs::read_dir(dir)
        .expect("capture directory")
        .map(|e| {
            let path = e.expect("entry").path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&path).expect("a text file"))
        })
        .collect();
    out.sort();
    out
}

/// The person ids the bundled fixtures hold, found the way a reader of a
/// real board finds them: `creator`, `modifiedBy`, `createdBy`, `userId`
/// at any depth, a mention node's `attrs.id`, the keys of an `acl`.
fn planted_person_ids() -> BTreeSet<String> {
    fn walk(v: &Value, out: &mut BTreeSet<String>) {
        match v {
            Value::Object(map) => {
                let mention = map.get("type").and_then(Value::as_str) == Some("mention");
                for (k, v) in map {
                    match (k.as_str(), v) {
                        ("creator" | "modifiedBy" | "createdBy" | "userId", Value::String(s)) => {
                            out.insert(s.clone());
                        }
                        ("attrs", Value::Object(a)) if mention => {
                            if let Some(Value::String(id)) = a.get("id") {
                                out.insert(id.clone());
                            }
                        }
                        ("acl", Value::Object(acl)) => out.extend(acl.keys().cloned()),
                        _ => {}
                    }
                    walk(v, out);
                }
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut ids = BTreeSet::new();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/demo/fixtures/boards");
    for entry in std::fs::read_dir(dir).expect("fixtures") {
        let text = std::fs::read_to_string(entry.expect("entry").path()).expect("fixture");
        walk(
            &serde_json::from_str(&text).expect("fixture JSON"),
            &mut ids,
        );
    }
    ids.retain(|id| id.len() >= 4);
    ids
}

/// The tokens the sample issued, read from the boards requests it received.
fn issued_tokens() -> BTreeSet<String> {
    sample()
        .requests()
        .iter()
        .filter_map(|t| url::Url::parse(&format!("http://x{t}")).ok())
        .flat_map(|u| {
            u.query_pairs()
                .filter(|(k, _)| k == "tokens")
                .map(|(_, v)| v.into_owned())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// `/api/detail` of `board` through `gateway`, `fetchedAt` removed and the
/// sample's own origin (in the bundled images' URLs) made neutral.
fn document(gateway: std::net::SocketAddr, board: &str, p: &str, origin: &str) -> Value {
    let r = request(
        gateway,
        "GET",
        &format!("/api/detail?url={}", link(board, p)),
        &[],
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let text = String::from_utf8_lossy(&r.body).replace(origin, "http://SAMPLE-ORIGIN");
    let mut v: Value = serde_json::from_str(&text).expect("JSON");
    v["data"].as_object_mut().expect("data").remove("fetchedAt");
    v
}

#[test]
fn a_captured_board_replays_to_the_same_document_and_holds_no_secret() {
    let dir = temp_dir("replay");
    let out = dir.join("capture");
    let link = capture_link(BOARD, SECRET_PERMISSION);
    let (code, text) = run_binary(&dir, &["--capture", &link, "--out", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("captured board 1W3ZZU1Qvua02H"), "{text}");
    assert!(
        !text.contains(SECRET_PERMISSION),
        "the command printed the permission id: {text}"
    );

    // Several boards answers, nested ones among them, listed by the index.
    let written = files(&out);
    let index: Value =
        serde_json::from_str(&written.iter().find(|(n, _)| n == "index.json").unwrap().1)
            .expect("index JSON");
    let answers = index["answers"].as_array().expect("answers");
    assert_eq!(answers[0]["request"], "token");
    assert!(
        answers.iter().filter(|a| a["request"] == "boards").count() >= 3,
        "{index}"
    );
    assert!(answers.iter().any(|a| a["nested"] == true), "{index}");
    assert_eq!(
        written.len(),
        answers.len() + 1,
        "one file per answer plus the index"
    );

    // Grep: no permission id, no token, no person id in any file.
    let tokens = issued_tokens();
    let people = planted_person_ids();
    assert!(
        !tokens.is_empty() && people.len() >= 2,
        "{tokens:?} {people:?}"
    );
    for token in &tokens {
        assert!(
            !text.contains(token.as_str()),
            "the command printed a token: {text}"
        );
    }
    for (name, content) in &written {
        assert!(
            !content.contains(SECRET_PERMISSION),
            "{name} holds the permission id"
        );
        for token in &tokens {
            assert!(!content.contains(token.as_str()), "{name} holds a token");
        }
        for person in &people {
            // As a whole string anywhere; an id's length also inside others.
            let quoted = format!("\"{person}\"");
            let inside = person.len() >= 8 && content.contains(person.as_str());
            assert!(
                !content.contains(&quoted) && !inside,
                "{name} holds person id {person}"
            );
        }
    }
    // ... while the board's content is there.
    let root = &written
        .iter()
        .find(|(n, _)| n == "02-boards.json")
        .expect("root answer")
        .1;
    let root: Value = serde_json::from_str(root).expect("root answer JSON");
    let elements = root["elements"].as_object().expect("elements");
    assert!(elements.len() > 5, "{root}");

    // Replay: the capture behind a gateway of its own, another permission id.
    let captured = Captured::load(&out).expect("the capture reads back");
    assert_eq!(captured.root(), Some(BOARD));
    assert!(
        captured.board_ids().len() >= 4,
        "{:?}",
        captured.board_ids()
    );
    let (replay, gw) = replaying(captured);
    let expected = document(gateway(), BOARD, PERMISSION, &upstream_origin());
    let replayed = document(gw.addr, BOARD, "any-other-permission", &upstream_origin());
    assert_eq!(replayed, expected);
    // Nested boards were loaded in both, from the capture in the replay.
    let loaded = |d: &Value| {
        d["data"]["board"]["children"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["type"] == "BOARD" && c["childrenLoaded"] == true)
            .count()
    };
    assert!(loaded(&replayed) >= 1, "{replayed}");
    assert!(replay
        .request_log()
        .iter()
        .any(|r| r.target.starts_with("/api/boards")));
    drop(gw);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_board_that_does_not_load_is_captured_with_what_came_and_exit_1() {
    let dir = temp_dir("denied");
    let out = dir.join("capture");
    let link = capture_link(BOARD, "fault-denied");
    let (code, text) = run_binary(&dir, &["--capture", &link, "--out", out.to_str().unwrap()]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("did not load"), "{text}");
    let index: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("index.json")).unwrap()).unwrap();
    assert_eq!(index["answers"].as_array().unwrap().len(), 1, "{index}");
    assert_eq!(
        std::fs::read_to_string(out.join("01-token.json")).unwrap(),
        r#"{"token":null}"#
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn capture_refusals_are_errors_that_name_the_cause() {
    let dir = temp_dir("refusals");
    let full = dir.join("full");
    std::fs::create_dir_all(&full).unwrap();
    std::fs::write(full.join("x"), "x").unwrap();
    let good = capture_link(BOARD, SECRET_PERMISSION);
    let cases: [(&[&str], &str); 3] = [
        (
            &["--capture", &good, "--out", full.to_str().unwrap()],
            "is not empty",
        ),
        (
            &[
                "--capture",
                "https://example.com/x?p=CaptureSecret7Qx9",
                "--out",
                "/nonexistent/x",
            ],
            "not a share link",
        ),
        (&["--capture", &good], "--out"),
    ];
    for (args, needle) in cases {
        let (code, text) = run_binary(&dir, args);
        assert_eq!(code, 2, "{args:?}: {text}");
        assert!(text.contains(needle), "{args:?}: {text}");
        assert!(!text.contains(SECRET_PERMISSION), "{args:?}: {text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_capture_directory_is_refused_by_demo_with_its_reason() {
    let dir = temp_dir("bad");
    let write_index = |text: &str| std::fs::write(dir.join("index.json"), text).unwrap();
    let demo = |dir: &Path| {
        let out = Command::new(env!("CARGO_BIN_EXE_shared-board-api"))
            .args(["-t", "--demo"])
            .arg(dir)
            .env("RUST_LOG", "error")
            .output()
            .expect("binary runs");
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.code().unwrap_or(-1), text)
    };
    let (code, text) = demo(&dir);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("index.json"), "{text}");
    let index = |file: &str, ids: &str| {
        format!(
            r#"{{"format":"shared-board-api capture 1","board":"b1","answers":[{{"request":"boards","ids":{ids},"status":200,"file":"{file}"}}]}}"#
        )
    };
    let cases = [
        ("{", "not a capture index"),
        (r#"{"format":"other","board":"b1","answers":[]}"#, "format"),
        (
            &index("../etc/passwd", r#"["b1"]"#),
            "not an answer file name",
        ),
        (&index("02-boards.json", r#"["b/1"]"#), "not board ids"),
        (&index("02-boards.json", r#"["b1"]"#), "02-boards.json"),
    ];
    for (text_in, needle) in cases {
        write_index(text_in);
        let (code, text) = demo(&dir);
        assert_eq!(code, 2, "{text_in}: {text}");
        assert!(text.contains(needle), "{text_in}: {text}");
    }
    // An answer that is not JSON, then one that is: the second is accepted.
    write_index(&index("02-boards.json", r#"["b1"]"#));
    std::fs::write(dir.join("02-boards.json"), "[1,2").unwrap();
    let (code, text) = demo(&dir);
    assert!(code == 2 && text.contains("is not JSON"), "{text}");
    std::fs::write(dir.join("02-boards.json"), r#"{"elements":{}}"#).unwrap();
    let (code, text) = demo(&dir);
    assert_eq!(code, 0, "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_checked_in_captured_shape_board_reads_and_serves() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/captured-board");
    let captured = Captured::load(&dir).expect("the fixture capture reads");
    assert_eq!(captured.root(), Some("1XbZEplawr6y02"));
    let (replay, gw) = replaying(captured);
    let doc = document(gw.addr, "1XbZEplawr6y02", "any", &replay.origin());
    let children = doc["data"]["board"]["children"]
        .as_array()
        .expect("children");
    let ids: Vec<&str> = children.iter().filter_map(|c| c["id"].as_str()).collect();
    for id in [
        "1XbZEqlawr6y03",
        "1XbZEqlawr6y04",
        "1XbZEqlawr6y05",
        "1XbZEqlawr6y08",
    ] {
        assert!(ids.contains(&id), "{id} missing from {ids:?}");
    }
    // The trashed card (parent `<board>-trash`) is never the board's.
    assert!(!doc.to_string().contains("TRASHED CARD TEXT"));
}

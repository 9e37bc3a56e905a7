//! What changed, over real sockets in front of the sample upstream: the
//! versions every answer carries, `/api/changes` (JSON, Markdown, ETag and
//! `304`, its errors, the permission of the current load) as a sample
//! board is edited, kept versions in a SQLite file on disk that the test
//! then corrupts, truncates and fills with foreign rows (each a `410`,
//! never a `5xx`), and the MCP `board_changes` tool.

use crate::common::mcp::{call, result};
use crate::common::*;
use serde_json::{json, Value};
use shared_board_api::config::Settings;
use shared_board_api::demo::SampleUpstream;
use shared_board_api::internals::pipeline::version::version_of;
use shared_board_api::internals::store::versions::{codec, owner};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A SQLite file of its own for each test, removed when dropped.
struct TempDb(PathBuf);

impl TempDb {
    fn new(name: &str) -> TempDb {
        let path = std::env::temp_dir().join(format!(
            "sbapi-changes-{}-{name}.sqlite",
            std::process::id()
        ));
        let db = TempDb(path);
        db.clean();
        db
    }

    fn clean(&self) {
        for side in ["", "-wal", "-shm"] {
            let mut name = self.0.as_os_str().to_owned();
            name.push(side);
            let _ = std::fs::remove_file(PathBuf::from(name));
        }
        for aside in self.moved_aside() {
            let _ = std::fs::remove_file(aside);
        }
    }

    /// The files the service moved aside (`<file>.unreadable-<secs>`, its
    /// `-wal` and `-shm`).
    fn moved_aside(&self) -> Vec<PathBuf> {
        let name = self
            .0
            .file_name()
            .expect("a name")
            .to_string_lossy()
            .into_owned();
        let Ok(dir) = std::fs::read_dir(self.0.parent().expect("a directory")) else {
            return Vec::new();
        };
        dir.filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| {
                p.file_name().is_some_and(|n| {
                    n.to_string_lossy()
                        .starts_with(&format!("{name}.unreadable-"))
                })
            })
            .collect()
    }

    fn conn(&self) -> rusqlite::Connection {
        let conn = rusqlite::Connection::open(&self.0).expect("opens the test's file");
        conn.busy_timeout(Duration::from_secs(5))
            .expect("busy timeout");
        conn
    }

    /// The versions kept of `board` as the tests' link ([`PERMISSION`])
    /// loads it.
    ///
    /// None while the service has not yet made the file or its table: the
    /// service opens its file in the background once it starts, so a test
    /// that asks early must neither create the file itself nor take a
    /// missing table for an error (it polls with [`wait_for`]).
    fn versions(&self, board: &str) -> Vec<String> {
        use rusqlite::OpenFlags;
        let Ok(conn) = rusqlite::Connection::open_with_flags(
            &self.0,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        ) else {
            return Vec::new();
        };
        conn.busy_timeout(Duration::from_secs(5))
            .expect("busy timeout");
        let Ok(mut stmt) = conn.prepare("SELECT version FROM board_versions WHERE board = ?1")
        else {
            return Vec::new();
        };
        let rows = stmt
            .query_map([owner(board, PERMISSION)], |r| r.get::<_, String>(0))
            .expect("reads");
        rows.filter_map(Result::ok).collect()
    }
}

impl Drop for TempDb {
    fn drop(&mut self) {
        self.clean();
    }
}

/// A gateway in front of a sample upstream of its own (each test edits its
/// boards, and a nested board shows in the boards above it), with `api`
/// under `board_api`.
struct Node {
    gateway: Gateway,
    upstream: SampleUpstream,
}

fn node(api: &str) -> Node {
    let upstream = SampleUpstream::start_in_thread(([127, 0, 0, 1], 0).into()).expect("starts");
    let origin = upstream.origin();
    let (gateway, _) = start_server(1, |server, addrs| {
        let text = format!(
            "version: 1\nthreads: 2\nboard_api:\n  server:\n    listen: [\"{}\"]\n  provider:\n    origin: {origin}\n{api}",
            addrs[0]
        );
        let settings = Settings::from_yaml(&text).expect("test config is valid");
        shared_board_api::host::service::add_services(server, &settings).expect("services build");
    });
    Node { gateway, upstream }
}

/// A node without a process cache (each request loads, so an edit shows
/// at once) keeping versions in `db`.
fn node_on(db: &Path) -> Node {
    node(&format!(
        "  cache:\n    enabled: false\n  changes:\n    store: sqlite\n    path: {}\n",
        db.display()
    ))
}

impl Node {
    fn edit(&self, board: &str) {
        let r = request(
            self.upstream.addr(),
            "POST",
            &format!("/demo/edit/{board}"),
            &[],
        );
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    }
}

fn changes(
    gw: std::net::SocketAddr,
    link: &str,
    since: &str,
    headers: &[(&str, &str)],
) -> Response {
    request(
        gw,
        "GET",
        &format!("/api/changes?url={link}&since={since}"),
        headers,
    )
}

fn ids(list: &Value) -> Vec<String> {
    list.as_array()
        .map(|l| {
            l.iter()
                .filter_map(|e| e["id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn changes_of_an_edited_board_from_a_sqlite_file_that_is_then_corrupted() {
    let db = TempDb::new("e2e");
    let node = node_on(&db.0);
    let gw = &node.gateway;
    let link = link(BOARD, PERMISSION);
    let first = request(gw.addr, "GET", &format!("/api/detail?url={link}"), &[]);
    assert_eq!(first.status, 200);
    let v1 = first.header("board-version").expect("a version").to_owned();
    let search = request(gw.addr, "GET", &format!("/api/search?url={link}"), &[]);
    assert_eq!(
        search.header("board-version"),
        Some(v1.as_str()),
        "search carries it too"
    );
    assert!(
        wait_for(|| db.versions(BOARD).contains(&v1)),
        "v1 kept on disk"
    );

    // Nothing changed yet: 200 with empty lists.
    let same = changes(gw.addr, &link, &v1, &[]);
    assert_eq!(same.status, 200, "{}", String::from_utf8_lossy(&same.body));
    let data = same.json()["data"].clone();
    assert_eq!(
        (data["from"].as_str(), data["to"].as_str()),
        (Some(v1.as_str()), Some(v1.as_str()))
    );
    for kind in ["added", "removed", "changed", "moved"] {
        assert_eq!(data[kind], json!([]), "{kind}");
    }

    node.edit(BOARD);
    let r = changes(gw.addr, &link, &v1, &[]);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let v2 = r.header("board-version").expect("a version").to_owned();
    assert_ne!(v1, v2);
    let data = r.json()["data"].clone();
    assert_eq!(data["boardId"], BOARD);
    assert_eq!(data["to"], v2.as_str());
    assert_eq!(data["complete"], true);
    let note = format!("Edit{BOARD}");
    assert_eq!(ids(&data["added"]), [note.as_str()]);
    assert_eq!(
        data["added"][0]["title"],
        "Edited 1 time by the demo upstream"
    );
    assert_eq!(data["added"][0]["parentId"], BOARD);
    let parent = |id: &Value| {
        data["parents"]
            .as_array()
            .and_then(|l| l.iter().find(|p| p["id"] == *id))
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(
        parent(&data["added"][0]["parentId"])["title"],
        "Lisbon & Porto — spring trip"
    );
    assert_eq!(data["counts"]["added"], 1);
    assert_eq!(data["truncated"], false);
    let changed = data["changed"].as_array().expect("a list");
    assert_eq!(changed.len(), 1, "{data}");
    assert_eq!(changed[0]["type"], "TASK");
    assert_eq!(changed[0]["fields"], json!(["completed"]));
    let up = parent(&changed[0]["parentId"]);
    assert!(
        up["parentId"].is_string(),
        "the task sits below the root board: {data}"
    );
    assert_eq!(data["removed"], json!([]));
    let etag = r.header("etag").expect("an ETag").to_owned();
    assert!(etag.starts_with("W/\""));
    let again = changes(gw.addr, &link, &v1, &[("If-None-Match", &etag)]);
    assert_eq!(again.status, 304);
    let md = changes(gw.addr, &link, &v1, &[("Accept", "text/markdown")]);
    assert_eq!(md.status, 200);
    assert_eq!(
        md.header("content-type"),
        Some("text/markdown; charset=utf-8; variant=GFM")
    );
    let text = String::from_utf8_lossy(&md.body).into_owned();
    assert!(text.starts_with("# Changes to Lisbon \\& Porto"), "{text}");
    assert!(
        text.contains(
            "## Added (1)\n\n- **Edited 1 time by the demo upstream** (CARD) in Lisbon \\& Porto"
        ),
        "{text}"
    );
    assert!(text.contains("## Changed (1)"), "{text}");
    assert_ne!(md.header("etag"), Some(etag.as_str()));

    // A second edit moves the note: moved, with where it was and is.
    node.edit(BOARD);
    assert!(
        wait_for(|| db.versions(BOARD).contains(&v2)),
        "v2 kept on disk"
    );
    let r = changes(gw.addr, &link, &v2, &[]);
    let data = r.json()["data"].clone();
    assert_eq!(ids(&data["moved"]), [note.as_str()], "{data}");
    assert_eq!(
        data["moved"][0]["from"],
        json!({"parentId": BOARD, "section": "INBOX"})
    );
    assert_eq!(
        data["moved"][0]["to"],
        json!({"parentId": BOARD, "section": "CANVAS"})
    );

    // The errors of `since`, and the permission of the current load.
    changes(gw.addr, &link, "", &[]).assert_error(400, "INVALID_REQUEST", Some("since"));
    changes(gw.addr, &link, "xyz", &[]).assert_error(400, "INVALID_REQUEST", Some("since"));
    let never = "0".repeat(32);
    changes(gw.addr, &link, &never, &[]).assert_error(410, "VERSION_NOT_KEPT", Some("since"));
    let denied = crate::common::link(BOARD, "fault-denied");
    changes(gw.addr, &denied, &v1, &[]).assert_error(403, "BOARD_ACCESS_DENIED", None);
    let r = request(
        gw.addr,
        "POST",
        &format!("/api/changes?url={link}&since={v1}"),
        &[],
    );
    assert_eq!(r.status, 405);

    // What the file holds is untrusted: each bad row is a 410, never a 5xx.
    let conn = db.conn();
    let key = owner(BOARD, PERMISSION);
    let bad = |sql: &str, version: &str| {
        conn.execute(sql, rusqlite::params![key, version])
            .expect("the test writes");
        let r = changes(gw.addr, &link, version, &[]);
        r.assert_error(410, "VERSION_NOT_KEPT", Some("since"));
    };
    // Truncated.
    bad(
        "UPDATE board_versions SET value = substr(value, 1, 40) WHERE board = ?1 AND version = ?2",
        &v1,
    );
    // Another type.
    bad(
        "UPDATE board_versions SET value = 'text' WHERE board = ?1 AND version = ?2",
        &v2,
    );
    // Random bytes under a version's token.
    let v3 = "ab".repeat(16);
    bad(
        "INSERT INTO board_versions (board, version, stored_at, bytes, value) VALUES (?1, ?2, 9999999999999, 4, randomblob(4000))",
        &v3,
    );
    // A time that is not a number.
    let v4 = "cd".repeat(16);
    bad(
        "INSERT INTO board_versions (board, version, stored_at, bytes, value) VALUES (?1, ?2, 'soon', 4, x'00')",
        &v4,
    );
    // Another board's document, sealed and under its own true token: the
    // hash checks out, the board does not.
    let other = br#"{"version":1,"source":{"provider":"milanote","boardId":"OTHER"},"fetchedAt":"t","board":{"id":"OTHER","type":"BOARD","title":"Secret","children":[]}}"#;
    let token = version_of(other);
    let sealed = codec::seal(other).expect("seals");
    conn.execute(
        "INSERT INTO board_versions (board, version, stored_at, bytes, value) VALUES (?1, ?2, 9999999999999, ?3, ?4)",
        rusqlite::params![key, &*token, sealed.len() as i64, sealed],
    )
    .expect("the test writes");
    let r = changes(gw.addr, &link, &token, &[]);
    r.assert_error(410, "VERSION_NOT_KEPT", Some("since"));
    assert!(!String::from_utf8_lossy(&r.body).contains("Secret"));
    // The rows that were not ours are gone; the service still answers.
    assert!(!db.versions(BOARD).contains(&v1));
    let ok = request(gw.addr, "GET", &format!("/api/detail?url={link}"), &[]);
    assert_eq!(ok.status, 200);
}

#[test]
fn a_file_that_is_not_a_store_is_moved_aside_and_the_service_starts_afresh() {
    let db = TempDb::new("garbage");
    std::fs::write(&db.0, b"not a database at all, just some bytes ....").expect("writes");
    let node = node_on(&db.0);
    let gw = &node.gateway;
    let link = link("3Hq7ZsWd2KpL8c", PERMISSION);
    let r = request(gw.addr, "GET", &format!("/api/detail?url={link}"), &[]);
    assert_eq!(r.status, 200);
    let v = r.header("board-version").expect("a version").to_owned();
    assert!(wait_for(|| db.versions("3Hq7ZsWd2KpL8c").contains(&v)));
    let aside = db.moved_aside();
    assert_eq!(aside.len(), 1, "moved aside, not deleted: {aside:?}");
    assert_eq!(
        std::fs::read(&aside[0]).expect("kept"),
        b"not a database at all, just some bytes ....",
    );
}

#[test]
fn a_kept_version_is_read_only_through_the_link_that_loaded_it() {
    let db = TempDb::new("owner");
    let node = node_on(&db.0);
    let gw = &node.gateway;
    let board = "3Hq7ZsWd2KpL8c";
    let mine = link(board, PERMISSION);
    let first = request(gw.addr, "GET", &format!("/api/detail?url={mine}"), &[]);
    assert_eq!(first.status, 200);
    let v1 = first.header("board-version").expect("a version").to_owned();
    assert!(wait_for(|| db.versions(board).contains(&v1)), "v1 kept");
    node.edit(board);
    // Another link to the same board: it opens the board now, but the
    // version kept is the first link's.
    let theirs = link(board, "another-permission");
    let other = changes(gw.addr, &theirs, &v1, &[]);
    other.assert_error(410, "VERSION_NOT_KEPT", Some("since"));
    let own = changes(gw.addr, &mine, &v1, &[]);
    assert_eq!(own.status, 200, "{}", String::from_utf8_lossy(&own.body));
    assert_eq!(own.json()["data"]["from"], v1.as_str());
}

#[test]
fn board_changes_answers_as_the_endpoint_does() {
    let db = TempDb::new("mcp");
    let node = node_on(&db.0);
    let gw = &node.gateway;
    let board = "2Xk9PqRt7LmN4v";
    let url = format!("https://app.milanote.com/{board}/slug?p={PERMISSION}");
    let read = result(&call(gw.addr, "read_board", json!({"url": url})));
    let v1 = read["structuredContent"]["version"]
        .as_str()
        .expect("read_board gives the version")
        .to_owned();
    assert_eq!(v1.len(), 32);
    assert!(wait_for(|| db.versions(board).contains(&v1)), "v1 kept");
    node.edit(board);
    let r = result(&call(
        gw.addr,
        "board_changes",
        json!({"url": url, "since": v1}),
    ));
    assert_eq!(r["isError"], false, "{r}");
    let text = r["content"][0]["text"].as_str().expect("text");
    assert!(
        text.starts_with("# Changes to Day-by-day itinerary"),
        "{text}"
    );
    assert!(text.contains("## Added (1)"), "{text}");
    assert!(
        r.get("structuredContent").is_none(),
        "Markdown only, unless asked"
    );
    let r = result(&call(
        gw.addr,
        "board_changes",
        json!({"url": url, "since": v1, "format": "json"}),
    ));
    assert_eq!(r["isError"], false, "{r}");
    let data = &r["structuredContent"];
    let text: Value =
        serde_json::from_str(r["content"][0]["text"].as_str().expect("text")).expect("JSON text");
    assert_eq!(&text, data, "the same JSON as text");
    assert_eq!(data["from"], v1.as_str());
    assert_eq!(ids(&data["added"]), [format!("Edit{board}")]);
    let endpoint = request(
        gw.addr,
        "GET",
        &format!(
            "/api/changes?url={}&since={v1}",
            crate::common::link(board, PERMISSION)
        ),
        &[],
    );
    assert_eq!(&endpoint.json()["data"], data);
    for (args, field) in [
        (json!({"url": url}), "since"),
        (json!({"url": url, "since": "nope"}), "since"),
        (json!({"url": url, "since": "0".repeat(32)}), "since"),
        (json!({"url": url, "since": v1, "view": "full"}), "view"),
        (json!({"url": url, "since": v1, "format": "html"}), "format"),
    ] {
        let r = result(&call(gw.addr, "board_changes", args.clone()));
        assert_eq!(r["isError"], true, "{args}");
        assert_eq!(r["structuredContent"]["error"]["field"], field, "{args}");
    }
}

/// The version keys of `redis` for `version`.
fn version_key(redis: &redis::Redis, version: &str) -> Option<String> {
    redis
        .keys()
        .into_iter()
        .find(|k| k.ends_with(&format!(":ver:{version}")))
}

#[test]
fn versions_in_the_fleet_tiers_redis_and_hostile_values_there() {
    let server = redis::Redis::start();
    let proxy = redis::Proxy::start(&server.socket());
    let api = format!(
        "  cache:\n    ttl_seconds: 1\n    shared:\n      url: {}\n      secret_env: {}\n  changes:\n    store: redis\n",
        proxy.url(),
        redis::fleet_key_var()
    );
    let node = node(&api);
    let gw = &node.gateway;
    let board = "4Rt5YuNm3BvC6x";
    let link = crate::common::link(board, PERMISSION);
    let version = || {
        let r = request(gw.addr, "GET", &format!("/api/detail?url={link}"), &[]);
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        r.header("board-version").expect("a version").to_owned()
    };
    let v1 = version();
    assert!(
        redis::wait_for(|| version_key(&server, &v1).is_some()),
        "v1 kept in Redis"
    );
    let key1 = version_key(&server, &v1).expect("kept");
    assert!(
        !key1.contains(PERMISSION) && key1.starts_with("sbapi:{"),
        "{key1}"
    );
    let life: i64 = server.cli(&["pttl", &key1]).parse().expect("a number");
    assert!(life > 604_800_000 - 60_000 && life <= 604_800_000, "{life}");
    node.edit(board);
    let mut v2 = v1.clone();
    assert!(redis::wait_for(|| {
        v2 = version();
        v2 != v1
    }));
    let r = changes(gw.addr, &link, &v1, &[]);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(ids(&r.json()["data"]["added"]), [format!("Edit{board}")]);

    // Hostile values, each under a token never asked for (an answer
    // already made is cached with the document): a 410, deleted, never a
    // 5xx, and the tier stays on.
    let forged = |n: u8| format!("{n:02x}").repeat(16);
    let key_of = |token: &str| key1.replace(&v1, token);
    server.set_bytes(&key_of(&forged(0xe0)), b"SBV1 not sealed", Some(60_000));
    server.set_bytes(&key_of(&forged(0xe1)), b"anything, no expiry", None);
    server.cli(&["rpush", &key_of(&forged(0xe2)), "a", "b"]);
    server.cli(&["pexpire", &key_of(&forged(0xe2)), "60000"]);
    for n in [0xe0, 0xe1, 0xe2] {
        let r = changes(gw.addr, &link, &forged(n), &[]);
        r.assert_error(410, "VERSION_NOT_KEPT", Some("since"));
        assert_eq!(
            server.cli(&["exists", &key_of(&forged(n))]),
            "0",
            "{n:x}: deleted"
        );
    }
    let forged_key = key_of(&forged(0xe3));
    let forged = forged(0xe3);
    // A value moved from another key (sealed for its own name) does not
    // open under this one.
    let v2_key = version_key(&server, &v2).expect("v2 kept");
    server.cli(&["copy", &v2_key, &forged_key]);
    server.cli(&["pexpire", &forged_key, "60000"]);
    changes(gw.addr, &link, &forged, &[]).assert_error(410, "VERSION_NOT_KEPT", Some("since"));
    // An index that is not ours: the board's kept versions start afresh.
    let index = v2_key.replace(&format!("ver:{v2}"), "vers");
    server.set_bytes(&index, b"SBVI1\nnot an index", Some(60_000));
    node.edit(board);
    let mut v3 = v2.clone();
    assert!(redis::wait_for(|| {
        v3 = version();
        v3 != v2
    }));
    let r = changes(gw.addr, &link, &v2, &[]);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(ids(&r.json()["data"]["moved"]), [format!("Edit{board}")]);
    // The index was written again, sealed, naming the new version.
    assert!(redis::wait_for(|| server
        .cli(&["get", &index])
        .contains(v3.as_str())));
}

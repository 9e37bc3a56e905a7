//! Feeds of a board's changes (`/api/changes` without `since`, Atom or
//! JSON Feed by `Accept`), over real sockets in front of a sample upstream
//! of each test's own: the entries after edits, newest first, with ids and
//! times that stay the same when the node restarts on its SQLite file, and
//! the same feed from two nodes keeping versions in one real Redis;
//! ETag and `304`; no share link or permission id in a feed; hostile card
//! text escaped and the Atom well formed to an XML parser (roxmltree); the
//! JSON Feed's required members; the endpoint's JSON errors before a feed;
//! and both feeds read by a real feed reader library (PyPI `feedparser`,
//! in a venv `.ci/run` makes; the test says SKIPPED without it).

use crate::common::*;
use serde_json::{json, Value};
use shared_board_api::config::Settings;
use shared_board_api::demo::{Captured, SampleUpstream};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

const ATOM: &str = "application/atom+xml";
const JSON_FEED: &str = "application/feed+json";
/// A permission id no text of a board holds, so that its absence from a
/// feed means something.
const SECRET_PERMISSION: &str = "pFeedSecret7731";

/// A file of the test's own (a SQLite file and its sides, or a capture
/// directory), removed when dropped.
struct Temp(PathBuf);

impl Temp {
    fn new(name: &str) -> Temp {
        let path = std::env::temp_dir().join(format!("sbapi-feeds-{}-{name}", std::process::id()));
        let temp = Temp(path);
        temp.clean();
        temp
    }

    fn clean(&self) {
        let _ = std::fs::remove_dir_all(&self.0);
        for side in ["", "-wal", "-shm"] {
            let mut name = self.0.as_os_str().to_owned();
            name.push(side);
            let _ = std::fs::remove_file(PathBuf::from(name));
        }
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        self.clean();
    }
}

/// No process cache: each request loads, so an edit shows at once.
const NO_CACHE: &str = "  cache:\n    enabled: false\n";

/// A gateway in front of `origin`, `api` under `board_api`.
fn gateway(origin: &str, api: &str) -> Gateway {
    start_server(1, |server, addrs| {
        let text = format!(
            "version: 1\nthreads: 2\nboard_api:\n  server:\n    listen: [\"{}\"]\n  provider:\n    origin: {origin}\n{api}",
            addrs[0]
        );
        let settings = Settings::from_yaml(&text).expect("test config is valid");
        shared_board_api::host::service::add_services(server, &settings).expect("services build");
    })
    .0
}

fn sqlite(db: &Path) -> String {
    format!(
        "{NO_CACHE}  changes:\n    store: sqlite\n    path: {}\n",
        db.display()
    )
}

fn upstream() -> SampleUpstream {
    SampleUpstream::start_in_thread(([127, 0, 0, 1], 0).into()).expect("starts")
}

fn edit(upstream: &SampleUpstream, board: &str) {
    let r = request(upstream.addr(), "POST", &format!("/demo/edit/{board}"), &[]);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
}

/// The board's version now, loading it (and so keeping it).
fn version(gw: SocketAddr, link: &str) -> String {
    let r = request(gw, "GET", &format!("/api/detail?url={link}"), &[]);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    r.header("board-version").expect("a version").to_owned()
}

fn feed(gw: SocketAddr, link: &str, accept: &str, headers: &[(&str, &str)]) -> Response {
    let mut all = vec![("Accept", accept)];
    all.extend_from_slice(headers);
    request(gw, "GET", &format!("/api/changes?url={link}"), &all)
}

/// One entry of an Atom feed, as an XML parser reads it.
#[derive(Debug, Clone, PartialEq)]
struct AtomEntry {
    id: String,
    title: String,
    updated: String,
    content: String,
}

/// The feed's id, updated and entries; panics unless the body is well
/// formed XML 1.0 and an Atom feed with every member RFC 4287 requires.
fn parse_atom(body: &[u8]) -> (String, String, Vec<AtomEntry>) {
    const NS: &str = "http://www.w3.org/2005/Atom";
    let text = std::str::from_utf8(body).expect("UTF-8");
    let doc = roxmltree::Document::parse(text)
        .unwrap_or_else(|e| panic!("not well formed XML ({e}):\n{text}"));
    let feed = doc.root_element();
    assert_eq!(feed.tag_name().name(), "feed");
    assert_eq!(feed.tag_name().namespace(), Some(NS), "{text}");
    let child = |node: roxmltree::Node<'_, '_>, name: &str| {
        let found: Vec<_> = node
            .children()
            .filter(|c| c.is_element() && c.tag_name().name() == name)
            .collect();
        assert_eq!(
            found.len(),
            1,
            "one <{name}> in <{}>: {text}",
            node.tag_name().name()
        );
        found[0].text().unwrap_or("").to_owned()
    };
    let id = child(feed, "id");
    let updated = child(feed, "updated");
    child(feed, "title");
    // Without an author of the feed, each entry would need one.
    assert!(feed.children().any(|c| c.tag_name().name() == "author"));
    let entries = feed
        .children()
        .filter(|c| c.tag_name().name() == "entry")
        .map(|e| {
            let content = e
                .children()
                .find(|c| c.tag_name().name() == "content")
                .expect("content");
            assert_eq!(content.attribute("type"), Some("text"));
            // Text only: nothing in it was read as markup.
            assert!(content.children().all(|c| c.is_text()), "{text}");
            AtomEntry {
                id: child(e, "id"),
                title: child(e, "title"),
                updated: child(e, "updated"),
                content: content.text().unwrap_or("").to_owned(),
            }
        })
        .collect();
    (id, updated, entries)
}

/// Checks the members JSON Feed 1.1 requires (and the ones this feed
/// always has); the items.
fn parse_json_feed(body: &[u8]) -> Vec<Value> {
    let feed: Value = serde_json::from_slice(body).expect("JSON");
    assert_eq!(feed["version"], "https://jsonfeed.org/version/1.1");
    assert!(feed["title"].as_str().is_some_and(|t| !t.is_empty()));
    let items = feed["items"].as_array().expect("items").clone();
    for item in &items {
        assert!(item["id"].as_str().is_some_and(|i| !i.is_empty()), "{item}");
        assert!(item["content_text"].is_string(), "{item}");
        assert!(item["title"].is_string(), "{item}");
        let date = item["date_modified"].as_str().expect("a date");
        assert!(date.len() == 20 && date.ends_with('Z'), "RFC 3339: {date}");
    }
    items
}

/// The feed once it has `n` entries (the versions are written off the
/// request's path: the last one may still be on its way).
fn atom_with(gw: SocketAddr, link: &str, n: usize) -> Response {
    let mut last = None;
    let ok = wait_for(|| {
        let r = feed(gw, link, ATOM, &[]);
        let done = r.status == 200 && parse_atom(&r.body).2.len() == n;
        last = Some(r);
        done
    });
    let r = last.expect("asked once");
    assert!(
        ok,
        "never {n} entries: {}",
        String::from_utf8_lossy(&r.body)
    );
    r
}

#[test]
fn the_feed_lists_edits_newest_first_and_keeps_its_ids_across_a_restart() {
    let db = Temp::new("restart.sqlite");
    let up = upstream();
    let link = link(BOARD, SECRET_PERMISSION);
    let gw = gateway(&up.origin(), &sqlite(&db.0));
    let v1 = version(gw.addr, &link);
    edit(&up, BOARD);
    let v2 = version(gw.addr, &link);
    edit(&up, BOARD);
    let v3 = version(gw.addr, &link);
    assert!(v1 != v2 && v2 != v3 && v1 != v3);

    let atom = atom_with(gw.addr, &link, 2);
    assert_eq!(
        atom.header("content-type"),
        Some("application/atom+xml; charset=utf-8")
    );
    assert_eq!(atom.header("board-version"), Some(v3.as_str()));
    assert_eq!(atom.header("vary"), Some("Accept, Accept-Encoding"));
    let (id, updated, entries) = parse_atom(&atom.body);
    assert_eq!(id, format!("urn:board:{BOARD}"));
    let ids: Vec<_> = entries.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            format!("urn:board-version:{v2}:{v3}"),
            format!("urn:board-version:{v1}:{v2}")
        ],
        "newest first"
    );
    assert!(entries[0].updated >= entries[1].updated, "{entries:?}");
    assert_eq!(
        updated, entries[0].updated,
        "the feed's time is its newest entry's"
    );
    // Titles count what the endpoint's JSON answer lists.
    assert_eq!(entries[1].title, "1 added, 1 changed");
    assert!(
        entries[1]
            .content
            .contains("Added (1):\n- Edited 1 time by the demo upstream (CARD)"),
        "{}",
        entries[1].content
    );
    let since_v2 = request(
        gw.addr,
        "GET",
        &format!("/api/changes?url={link}&since={v2}"),
        &[],
    )
    .json();
    let counts = &since_v2["data"]["counts"];
    let mut expected = Vec::new();
    for kind in ["added", "removed", "changed", "moved"] {
        let n = counts[kind].as_u64().expect("a count");
        if n > 0 {
            expected.push(format!("{n} {kind}"));
        }
    }
    assert_eq!(entries[0].title, expected.join(", "));
    assert!(entries[0]
        .content
        .contains("Edited 2 times by the demo upstream"));

    // No share link, no permission id, no owner key anywhere.
    let text = String::from_utf8_lossy(&atom.body).into_owned();
    let owner = shared_board_api::internals::store::versions::owner(BOARD, SECRET_PERMISSION);
    for secret in [
        SECRET_PERMISSION,
        "milanote.com",
        "?p=",
        &owner[BOARD.len() + 1..],
    ] {
        assert!(!text.contains(secret), "{secret} in {text}");
    }

    // ETag and 304.
    let etag = atom.header("etag").expect("an ETag").to_owned();
    assert!(etag.starts_with("W/\""), "{etag}");
    let again = feed(gw.addr, &link, ATOM, &[("If-None-Match", &etag)]);
    assert_eq!(again.status, 304);
    assert!(again.body.is_empty());
    assert_eq!(again.header("etag"), Some(etag.as_str()));

    // The JSON Feed: the same entries, its own ETag.
    let json = feed(gw.addr, &link, JSON_FEED, &[]);
    assert_eq!(json.status, 200);
    assert_eq!(
        json.header("content-type"),
        Some("application/feed+json; charset=utf-8")
    );
    assert_ne!(json.header("etag"), Some(etag.as_str()));
    let items = parse_json_feed(&json.body);
    let json_ids: Vec<_> = items
        .iter()
        .map(|i| i["id"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(json_ids, ids);
    assert_eq!(items[0]["title"], entries[0].title.as_str());
    let json_text = String::from_utf8_lossy(&json.body).into_owned();
    for secret in [SECRET_PERMISSION, "milanote.com", "?p="] {
        assert!(!json_text.contains(secret), "{secret} in {json_text}");
    }

    // A new node on the same file: the same feed, byte for byte, though
    // the file now also lists a newer version that is not one (random
    // bytes under a token): read back, rejected and left out.
    drop(gw);
    let conn = rusqlite::Connection::open(&db.0).expect("opens the test's file");
    conn.busy_timeout(Duration::from_secs(5))
        .expect("busy timeout");
    conn.execute(
        "INSERT INTO board_versions (board, version, stored_at, bytes, value, first_kept)
           VALUES (?1, ?2, 9999999999999, 4000, randomblob(4000), 9999999999999)",
        rusqlite::params![owner, "ab".repeat(16)],
    )
    .expect("the test writes");
    drop(conn);
    let gw = gateway(&up.origin(), &sqlite(&db.0));
    let after = feed(gw.addr, &link, ATOM, &[]);
    assert_eq!(
        after.status,
        200,
        "{}",
        String::from_utf8_lossy(&after.body)
    );
    assert_eq!(parse_atom(&after.body).2, entries, "ids and times survive");
    assert_eq!(after.body, atom.body);
    let cached = feed(gw.addr, &link, ATOM, &[("If-None-Match", &etag)]);
    assert_eq!(cached.status, 304, "a reader's ETag still holds");
}

#[test]
fn every_node_of_a_fleet_serves_the_same_feed() {
    let server = redis::Redis::start();
    let proxy = redis::Proxy::start(&server.socket());
    let api = format!(
        "  cache:\n    ttl_seconds: 1\n    shared:\n      url: {}\n      secret_env: {}\n  changes:\n    store: redis\n",
        proxy.url(),
        redis::fleet_key_var()
    );
    let up = upstream();
    let (a, b) = (gateway(&up.origin(), &api), gateway(&up.origin(), &api));
    let board = "3Hq7ZsWd2KpL8c";
    let link = link(board, SECRET_PERMISSION);
    let v1 = version(a.addr, &link);
    edit(&up, board);
    // The tier keeps a document a second: the edit shows after it.
    let mut v2 = v1.clone();
    assert!(redis::wait_for(|| {
        v2 = version(a.addr, &link);
        v2 != v1
    }));
    let from_a = atom_with(a.addr, &link, 1);
    let (_, _, entries) = parse_atom(&from_a.body);
    assert_eq!(entries[0].id, format!("urn:board-version:{v1}:{v2}"));
    // The other node reads the versions the first one kept.
    let from_b = atom_with(b.addr, &link, 1);
    assert_eq!(from_b.body, from_a.body, "the same feed, byte for byte");
    assert_eq!(from_b.header("etag"), from_a.header("etag"));
    let text = String::from_utf8_lossy(&from_b.body).into_owned();
    assert!(!text.contains(SECRET_PERMISSION), "{text}");
}

/// A captured board whose texts are hostile: a title and a task with
/// markup, an XML section end, references and control characters.
fn hostile_capture(dir: &Path) -> Captured {
    // Short: an entry names an element by its first 40 characters.
    const HOSTILE: &str = "<script>x</script>]]>&amp;\u{1}\u{b}'\"";
    let answer = json!({
        "elements": {
            "1XbZFeedHost01": {
                "_id": "1XbZFeedHost01", "elementType": "BOARD",
                "location": {"parentId": "1XbZHomeBoard1", "section": "CANVAS"},
                "content": {"title": format!("Board {HOSTILE}")}
            },
            "1XbZFeedTask01": {
                "_id": "1XbZFeedTask01", "elementType": "TASK",
                "location": {"parentId": "1XbZFeedHost01", "section": "CANVAS",
                             "position": {"x": 4, "y": 2, "score": 65536}},
                "content": {"textContent": format!("Task {HOSTILE}"), "isComplete": false}
            }
        },
        "comments": {}, "canvasOrder": {}, "fetchedTime": 1_790_795_254_321_u64
    });
    std::fs::create_dir_all(dir).expect("capture dir");
    let index = json!({
        "format": "shared-board-api capture 1", "board": "1XbZFeedHost01",
        "answers": [{"request": "boards", "ids": ["1XbZFeedHost01"], "status": 200, "file": "02-boards.json"}]
    });
    std::fs::write(dir.join("index.json"), index.to_string()).expect("index");
    std::fs::write(dir.join("02-boards.json"), answer.to_string()).expect("answer");
    Captured::load(dir).expect("the capture reads")
}

#[test]
fn hostile_card_text_stays_text_in_both_feeds() {
    let dir = Temp::new("hostile");
    let up =
        SampleUpstream::start_in_thread_with(([127, 0, 0, 1], 0).into(), hostile_capture(&dir.0))
            .expect("starts");
    let board = "1XbZFeedHost01";
    let link = link(board, SECRET_PERMISSION);
    let gw = gateway(&up.origin(), NO_CACHE);
    version(gw.addr, &link);
    edit(&up, board);
    version(gw.addr, &link);
    let atom = atom_with(gw.addr, &link, 1);
    let text = String::from_utf8_lossy(&atom.body).into_owned();
    assert!(!text.contains("<script"), "{text}");
    let (_, _, entries) = parse_atom(&atom.body);
    let content = &entries[0].content;
    assert!(
        content.contains("- Task <script>x</script>]]>&amp;  '\" (TASK)"),
        "read back as the very text: {content}"
    );
    assert_eq!(entries[0].title, "1 added, 1 changed");
    let doc = roxmltree::Document::parse(&text).expect("well formed");
    assert!(doc.descendants().all(|n| n.tag_name().name() != "script"));
    let title = doc
        .root_element()
        .children()
        .find(|c| c.tag_name().name() == "title")
        .and_then(|t| t.text())
        .expect("a title");
    assert!(
        title.starts_with("Changes to Board <script>x</script>]]>&amp;"),
        "{title}"
    );

    let json = feed(gw.addr, &link, JSON_FEED, &[]);
    let items = parse_json_feed(&json.body);
    let content = items[0]["content_text"].as_str().expect("text");
    assert!(
        content.contains("- Task <script>x</script>]]>&amp;  '\" (TASK)"),
        "{content}"
    );
    assert!(!String::from_utf8_lossy(&json.body).contains(SECRET_PERMISSION));
}

#[test]
fn errors_before_a_feed_are_the_endpoints_json_errors() {
    let up = upstream();
    let gw = gateway(&up.origin(), NO_CACHE);
    let good = link(BOARD, PERMISSION);
    let get = |query: &str| {
        request(
            gw.addr,
            "GET",
            &format!("/api/changes?{query}"),
            &[("Accept", ATOM)],
        )
    };
    get("").assert_error(400, "INVALID_REQUEST", Some("url"));
    get(&format!("url={good}&wait=5")).assert_error(400, "INVALID_REQUEST", Some("wait"));
    get(&format!("url={good}&view=full")).assert_error(400, "INVALID_REQUEST", Some("view"));
    get("url=https%3A%2F%2Fexample.com%2Fx").assert_error(400, "INVALID_SHARE_URL", Some("url"));
    get(&format!("url={}", link(BOARD, "fault-denied"))).assert_error(
        403,
        "BOARD_ACCESS_DENIED",
        None,
    );
    // Without a feed type, `since` is still required.
    request(gw.addr, "GET", &format!("/api/changes?url={good}"), &[]).assert_error(
        400,
        "INVALID_REQUEST",
        Some("since"),
    );
    // A feed of a board with one version: no entry yet, still a feed.
    let r = feed(gw.addr, &good, JSON_FEED, &[]);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert!(parse_json_feed(&r.body).is_empty());
}

/// The Python with `feedparser`, when one is named.
fn feedparser_python() -> Option<String> {
    match std::env::var("SBAPI_FEEDPARSER_PYTHON") {
        Ok(python) if !python.is_empty() => Some(python),
        _ => {
            eprintln!(
                "\n*** SKIPPED: the feedparser check needs SBAPI_FEEDPARSER_PYTHON (.ci/run sets it) ***\n"
            );
            None
        }
    }
}

#[test]
fn feedparser_reads_both_feeds_as_written() {
    let Some(python) = feedparser_python() else {
        return;
    };
    let dir = Temp::new("feedparser");
    std::fs::create_dir_all(&dir.0).expect("a directory");
    let up = upstream();
    let link = link(BOARD, SECRET_PERMISSION);
    let gw = gateway(&up.origin(), NO_CACHE);
    let v1 = version(gw.addr, &link);
    edit(&up, BOARD);
    let v2 = version(gw.addr, &link);
    let atom = atom_with(gw.addr, &link, 1);
    let json = feed(gw.addr, &link, JSON_FEED, &[]);
    assert_eq!(json.status, 200);
    let (atom_path, json_path) = (dir.0.join("feed.atom"), dir.0.join("feed.json"));
    std::fs::write(&atom_path, &atom.body).expect("writes");
    std::fs::write(&json_path, &json.body).expect("writes");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/feed_check.py");
    let out = std::process::Command::new(&python)
        .arg(script)
        .arg(&atom_path)
        .arg(&json_path)
        .arg(format!("http://{}/api/changes?url={link}", gw.addr))
        .output()
        .expect("the check script runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read: Value = serde_json::from_str(&stdout).expect("the script prints JSON");
    let id = format!("urn:board-version:{v1}:{v2}");
    for (name, version) in [("atom", "atom10"), ("json", "json11")] {
        let f = &read[name];
        assert_eq!(f["bozo"], false, "{name}: {f}");
        assert_eq!(f["version"], version, "{name}: {f}");
        assert_eq!(
            f["title"], "Changes to Lisbon & Porto — spring trip",
            "{name}: {f}"
        );
        let entries = f["entries"].as_array().expect("entries");
        assert_eq!(entries.len(), 1, "{name}: {f}");
        assert_eq!(entries[0]["id"], id.as_str(), "{name}");
        assert_eq!(entries[0]["title"], "1 added, 1 changed", "{name}");
        assert!(
            entries[0]["updated"]
                .as_str()
                .is_some_and(|u| !u.is_empty()),
            "{name}: {f}"
        );
        assert_eq!(entries[0]["updated_parsed"], true, "{name}: {f}");
        let content = entries[0]["content"].as_str().unwrap_or("");
        assert!(
            content.contains("Edited 1 time by the demo upstream"),
            "{name}: {content}"
        );
    }
    assert_eq!(read["atom"]["feed_id"], format!("urn:board:{BOARD}"));
    // Subscribed to the URL, feedparser's own Accept gets the same Atom.
    assert_eq!(read["fetched"], read["atom"], "{read}");
}

//! `read_board` and `search_board` on a large board: pages within the
//! character budget that join to the whole, cursors, nested boards read as
//! the root, and selectors given as arrays.

use super::*;

/// A gateway for the 6 MB board: its cold load in a debug build takes
/// seconds, so it gets a deadline that a busy 2-core machine cannot pass.
fn big_gateway() -> std::net::SocketAddr {
    static GATEWAY: std::sync::OnceLock<std::net::SocketAddr> = std::sync::OnceLock::new();
    *GATEWAY.get_or_init(|| {
        let gw = start_gateway("    fetch_deadline_ms: 120000\n", "");
        let addr = gw.addr;
        // Lives as long as the test process.
        std::mem::forget(gw);
        addr
    })
}

/// The text of a `read_board` result: its first content item (the page),
/// and the note on what is left (the second), if any.
fn page_of(r: &Value) -> (String, Option<String>) {
    let content = r["content"].as_array().expect("content");
    let text = |i: usize| {
        content
            .get(i)
            .and_then(|c| c["text"].as_str())
            .map(str::to_owned)
    };
    (text(0).unwrap_or_default(), text(1))
}

/// The 6 MB board, read within the default budget page by page: no
/// answer over 40,000 characters, and the pages joined are the Markdown
/// `/api/detail` answers, block for block.
#[test]
fn read_board_pages_a_large_board_and_the_pages_join_to_the_whole() {
    let gw = big_gateway();
    let url = format!("https://app.milanote.com/s-big/x?p={PERMISSION}");
    let whole = request(
        gw,
        "GET",
        &format!("/api/detail?url={}", link("s-big", PERMISSION)),
        &[("accept", "text/markdown")],
    );
    assert_eq!(whole.status, 200);
    let whole = String::from_utf8(whole.body).expect("UTF-8");
    assert!(whole.chars().count() > 1_000_000, "a large board");
    let mut joined = String::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut args = json!({"url": url});
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let r = result(&call(gw, "read_board", args));
        assert_eq!(r["isError"], false, "{r}");
        let (page, note) = page_of(&r);
        let shown = page.chars().count() + note.as_deref().map_or(0, |n| n.chars().count());
        assert!(shown <= 40_000, "page {pages}: {shown} characters");
        assert!(page.ends_with('\n'), "a page ends with a whole line");
        joined.push_str(&page);
        pages += 1;
        let s = &r["structuredContent"];
        assert_eq!(s["version"].as_str().map(str::len), Some(32));
        match s["nextCursor"].as_str() {
            Some(next) => {
                assert_eq!(s["truncated"], true);
                let note = note.expect("a note on what is left");
                assert!(note.contains(next), "{note}");
                cursor = Some(next.to_owned());
            }
            None => {
                assert_eq!(s["truncated"], false);
                break;
            }
        }
        assert!(pages < 500, "the cursor goes on forever");
    }
    assert!(pages > 10, "{pages} pages");
    assert!(
        joined == whole,
        "the pages joined differ from the whole render"
    );
}

#[test]
fn read_board_refuses_a_stale_cursor_a_bad_budget_and_an_unknown_board() {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let gw = big_gateway();
    let url = format!("https://app.milanote.com/s-big/x?p={PERMISSION}");
    let first = result(&call(gw, "read_board", json!({"url": url})));
    let version = first["structuredContent"]["version"]
        .as_str()
        .expect("version")
        .to_owned();
    let cursor = first["structuredContent"]["nextCursor"]
        .as_str()
        .expect("cursor");
    // The same cursor, as if made from another version of the board.
    let text = String::from_utf8(b64.decode(cursor).expect("base64")).expect("text");
    let stale = b64.encode(text.replace(&version, &"0".repeat(32)));
    let tool_error = |args: Value, field: &str| -> String {
        let r = result(&call(gw, "read_board", args.clone()));
        assert_eq!(r["isError"], true, "{args}: {r}");
        let e = &r["structuredContent"]["error"];
        assert_eq!(e["code"], "INVALID_REQUEST", "{args}");
        assert_eq!(e["field"], field, "{args}");
        e["message"].as_str().unwrap_or_default().to_owned()
    };
    let message = tool_error(json!({"url": url, "cursor": stale}), "cursor");
    assert!(
        message.contains(&version),
        "names the current version: {message}"
    );
    tool_error(json!({"url": url, "cursor": "not-a-cursor"}), "cursor");
    // A cursor for other arguments, and one for another board.
    tool_error(
        json!({"url": url, "cursor": cursor, "view": "compact"}),
        "cursor",
    );
    let other = format!("https://app.milanote.com/{BOARD}/x?p={PERMISSION}");
    tool_error(json!({"url": other, "cursor": cursor}), "cursor");
    for max in [json!(999), json!(400_001), json!(5.5), json!("40000")] {
        tool_error(json!({"url": url, "max_chars": max}), "max_chars");
    }
    tool_error(json!({"url": url, "board": "NoSuchBoard1"}), "board");
    tool_error(json!({"url": url, "board": "s-big-c1"}), "board");
    // JSON is not cut: over the budget, it says what to do instead.
    let message = tool_error(json!({"url": url, "format": "json"}), "max_chars");
    assert!(message.contains("Markdown"), "{message}");
}

/// Search says which nested board holds a match; reading that board shows
/// it, as the root of what is read.
#[test]
fn search_then_read_the_board_that_holds_the_match() {
    let gw = big_gateway();
    let url = format!("https://app.milanote.com/s-big/x?p={PERMISSION}");
    let found = result(&call(
        gw,
        "search_board",
        json!({"url": url, "query": "Note 4.17:"}),
    ));
    let matches = found["structuredContent"]["matches"]
        .as_array()
        .expect("matches");
    assert_eq!(matches.len(), 1, "{found}");
    assert_eq!(matches[0]["boardId"], "s-big-4");
    let r = result(&call(
        gw,
        "read_board",
        json!({"url": url, "board": "s-big-4"}),
    ));
    let (page, _) = page_of(&r);
    assert!(
        page.starts_with("# Chapter 4\n"),
        "{}",
        &page[..80.min(page.len())]
    );
    assert!(page.contains("Note 4.17:"));
    // A root-level match is held by the root board.
    let found = result(&call(
        gw,
        "search_board",
        json!({"url": url, "query": "Note 0.5:"}),
    ));
    assert_eq!(found["structuredContent"]["matches"][0]["boardId"], "s-big");
    // The nested board read whole, as JSON, has that board at its root.
    let small = result(&call(
        gw,
        "read_board",
        json!({"url": url, "board": "s-big-2", "format": "json", "view": "compact", "max_chars": 400_000}),
    ));
    assert_eq!(small["structuredContent"]["board"]["id"], "s-big-2");
}

#[test]
fn selectors_may_be_arrays() {
    let gw = gateway();
    let url = share(PERMISSION);
    let as_text = result(&call(
        gw,
        "read_board",
        json!({"url": url, "include": "board.title,board.children.title", "format": "json"}),
    ));
    let as_array = result(&call(
        gw,
        "read_board",
        json!({"url": url, "include": ["board.title", "board.children.title"], "format": "json"}),
    ));
    assert_eq!(as_text["structuredContent"], as_array["structuredContent"]);
    let exclude = result(&call(
        gw,
        "read_board",
        json!({"url": url, "exclude": ["board.children"]}),
    ));
    assert_eq!(exclude["isError"], false);
    let bad = result(&call(
        gw,
        "read_board",
        json!({"url": url, "include": [1, 2]}),
    ));
    assert_eq!(bad["structuredContent"]["error"]["field"], "include");
}

//! The demo board in the shape the web app stores (`_id`, grid units,
//! `CANVAS`/`INBOX`/`ATTACHED`/`TRASH`/`DELETED` sections, `isComplete`,
//! TipTap with mentions, board links and every node), read through the
//! real service in front of the sample upstream: the JSON, the compact
//! view and the Markdown (read back with a GFM parser). What the fixture
//! plants must never come out: the user ids of its people, the
//! permission id of a board link, and the text of trashed and deleted
//! elements and of what lies below them.

use crate::common::*;
use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};
use serde_json::Value;

/// Every person's id the fixture plants (element `meta`, the board's `acl`,
/// comments' `userId`, mentions' `id`, `textMention` marks).
const USER_IDS: [&str; 2] = ["u-4f2c91aa", "u-77d0be12"];
/// Text of what was trashed or deleted, and of what lies below it.
const REMOVED: [&str; 5] = [
    "TRASHED-CARD-TEXT",
    "DELETED-CARD-TEXT",
    "DELETED-COLUMN-TITLE",
    "BELOW-DELETED-TEXT",
    "TRASHED-BOARD-TITLE",
];
const REMOVED_IDS: [&str; 5] = [
    "Crd5Trashed001",
    "Crd6Deleted001",
    "Col6Deleted002",
    "Crd6BelowDel01",
    "9Tb0TrashBrd0x",
];

fn detail(query: &str, accept: Option<&str>) -> Response {
    let target = format!("/api/detail?url={}{query}", link(BOARD, PERMISSION));
    let headers: Vec<(&str, &str)> = accept.iter().map(|a| ("Accept", *a)).collect();
    let r = request(gateway(), "GET", &target, &headers);
    assert_eq!(r.status, 200, "{query}");
    r
}

/// Nothing planted, nothing removed, in a body.
fn assert_clean(body: &str, what: &str) {
    for id in USER_IDS {
        assert!(!body.contains(id), "{what}: user id {id}");
    }
    assert!(
        !body.contains("perm-PLANTED"),
        "{what}: a board link's permission id"
    );
    for text in REMOVED.iter().chain(REMOVED_IDS.iter()) {
        assert!(!body.contains(text), "{what}: {text}");
    }
    assert!(!body.contains("-trash"), "{what}: the trash");
}

fn nodes(node: &Value) -> Vec<&Value> {
    let mut out = vec![node];
    let mut i = 0;
    while i < out.len() {
        if let Some(children) = out[i]["children"].as_array() {
            out.extend(children.iter());
        }
        i += 1;
    }
    out
}

fn find<'a>(doc: &'a Value, id: &str) -> &'a Value {
    nodes(&doc["data"]["board"])
        .into_iter()
        .find(|n| n["id"] == id)
        .unwrap_or_else(|| panic!("{id} not in the document"))
}

#[test]
fn the_json_holds_the_board_as_the_web_app_has_it() {
    let r = detail("&view=full", None);
    let body = String::from_utf8(r.body.clone()).expect("UTF-8");
    assert_clean(&body, "full");
    let doc = r.json();
    // `_id` ids, grid-unit positions and sizes, as stored.
    let intro = find(&doc, "Wq3mTz8Lp0Ab1C");
    assert_eq!(intro["location"]["section"], "CANVAS");
    assert_eq!(intro["location"]["position"]["x"], 4);
    assert_eq!(intro["width"], 34);
    let nata = find(&doc, "Crd2NataRank0q");
    assert_eq!((&nata["width"], &nata["height"]), (&26.into(), &20.into()));
    assert_eq!(find(&doc, "Tbl9Budget0Xy1")["width"], 58);
    // A column's notes and the board's unsorted tray are INBOX children.
    let unsorted = find(&doc, "Crd7Unsorted01");
    assert_eq!(unsorted["location"]["section"], "INBOX");
    assert_eq!(unsorted["location"]["position"]["index"], 0);
    // `isComplete` is the task's state.
    assert_eq!(find(&doc, "Tsk1Passport00")["completed"], true);
    assert_eq!(find(&doc, "Tsk2Apartment0")["completed"], false);
    // The thread attached to the intro card is its child, with its comment.
    let thread = &intro["children"][0];
    assert_eq!(thread["id"], "Cth4Attached01");
    assert_eq!(thread["location"]["section"], "ATTACHED");
    assert_eq!(
        thread["comments"][0]["richText"]["plainText"],
        "@Ana is 11 April still the plan?"
    );
    // Every node's words are in plainText; a mention keeps its label, not its id.
    let every = find(&doc, "Crd9EveryNode1");
    let plain = every["richText"]["plainText"].as_str().expect("plain text");
    for words in [
        "Plan with @Ben and @Ana, day by day in Day-by-day itinerary, the Porto part in Porto day trip.",
        "Book the Alfa Pendular train",
        "Tram 28 fills up by 10 am: go early.",
        "cp boarding-pass.pdf ~/Trip/\nls ~/Trip",
        "Prices as of March 2027.",
        "Last line one\nlast line two",
    ] {
        assert!(plain.contains(words), "{words:?} not in {plain:?}");
    }
    let mention = &every["richText"]["blocks"][1]["content"][1];
    assert_eq!(mention["type"], "mention");
    assert_eq!(mention["attrs"], serde_json::json!({"label": "Ben"}));
    let board_link = &every["richText"]["blocks"][1]["content"][5];
    assert_eq!(board_link["attrs"]["title"], "Day-by-day itinerary");
    assert!(board_link["attrs"].get("permissionId").is_none());
    // The trashed board is not counted as a board that did not load.
    assert_eq!(r.header("board-completeness"), Some("complete"));
}

#[test]
fn the_compact_view_leaves_out_what_was_removed() {
    let r = detail("&view=compact", None);
    let body = String::from_utf8(r.body.clone()).expect("UTF-8");
    assert_clean(&body, "compact");
    let doc = r.json();
    let ids: Vec<&str> = nodes(&doc["data"]["board"])
        .iter()
        .filter_map(|n| n["id"].as_str())
        .collect();
    for id in ["Crd9EveryNode1", "Crd7Unsorted01", "Cth4Attached01"] {
        assert!(ids.contains(&id), "{id}");
    }
}

/// What a GFM reader finds in the Markdown.
#[derive(Debug, Default)]
struct Read {
    /// (start, items) of each ordered list.
    ordered: Vec<(u64, usize)>,
    fences: Vec<String>,
    /// Checked state of each task item.
    tasks: Vec<bool>,
    /// (destination, text) of each link.
    links: Vec<(String, String)>,
    text: String,
}

fn read(markdown: &str) -> Read {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_GFM;
    let mut read = Read::default();
    let mut lists: Vec<Option<u64>> = Vec::new();
    let mut link: Option<(String, String)> = None;
    for event in Parser::new_ext(markdown, options) {
        match event {
            Event::Start(Tag::List(start)) => {
                lists.push(start);
                if let Some(start) = start {
                    read.ordered.push((start, 0));
                }
            }
            Event::End(TagEnd::List(_)) => {
                lists.pop();
            }
            Event::Start(Tag::Item) => {
                if let (Some(Some(_)), Some(last)) = (lists.last(), read.ordered.last_mut()) {
                    last.1 += 1;
                }
            }
            Event::TaskListMarker(done) => read.tasks.push(done),
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(language))) => {
                read.fences.push(language.to_string())
            }
            Event::Start(Tag::Link { dest_url, .. }) => {
                link = Some((dest_url.to_string(), String::new()))
            }
            Event::End(TagEnd::Link) => read.links.extend(link.take()),
            Event::Text(t) | Event::Code(t) => {
                if let Some((_, text)) = link.as_mut() {
                    text.push_str(&t);
                }
                read.text.push_str(&t);
                read.text.push('\n');
            }
            _ => {}
        }
    }
    read
}

#[test]
fn the_markdown_reads_in_rows_with_every_node() {
    let r = detail("", Some("text/markdown"));
    let md = String::from_utf8(r.body.clone()).expect("UTF-8");
    assert_clean(&md, "markdown");
    let read = read(&md);
    assert!(
        read.ordered.contains(&(3, 2)),
        "ordered list from 3: {:?}",
        read.ordered
    );
    assert!(
        read.fences.contains(&"bash".to_owned()),
        "{:?}",
        read.fences
    );
    for (done, text) in [
        (true, "Book the Alfa Pendular train"),
        (false, "Buy a Lisboa Card"),
    ] {
        assert!(read.text.contains(text), "{text}");
        assert!(read.tasks.contains(&done));
    }
    let board_link = (
        "https://app.milanote.com/2Xk9PqRt7LmN4v/day-by-day-itinerary".to_owned(),
        "Day-by-day itinerary".to_owned(),
    );
    assert!(read.links.contains(&board_link), "{:?}", read.links);
    // A board link whose URL is not a web URL is its title, as text.
    assert!(read.links.iter().all(|(_, text)| text != "Porto day trip"));
    assert!(md.contains("the Porto part in Porto day trip."), "{md}");
    assert!(
        md.contains("Plan with @Ben and @Ana, day by day in ["),
        "{md}"
    );
    // Styling marks are plain text; a callout is a quote; smallText a paragraph.
    assert!(md.contains(", underlined, highlighted, in red, @Ben and commented on."));
    assert!(md.contains("\n> Tram 28 fills up by 10 am: go early.\n"));
    assert!(md.contains("\nPrices as of March 2027.\n"));
    // Reading order: rows top to bottom, left to right; the attached thread
    // right after its card; the unsorted tray after the canvas.
    let at = |text: &str| {
        md.find(text)
            .unwrap_or_else(|| panic!("{text} not in {md}"))
    };
    let order = [
        "## Lisbon \\& Porto, 10 days in April",
        "> @Ana is 11 April still the plan?",
        "![tram-28.jpg]",
        "## Day-by-day itinerary",
        "## Colours, sketches and arrows",
        "## Before we go",
        "Pastéis de nata ranking",
        "[The best things to do in Lisbon]",
        "[Train tickets Lisbon → Porto]",
        "| Item |",
        "> Can we keep food under 400 each?",
        "### Everything a note can hold",
        "Unsorted: ask Chloé about the Sintra day",
    ];
    for pair in order.windows(2) {
        assert!(
            at(pair[0]) < at(pair[1]),
            "{:?} before {:?}",
            pair[0],
            pair[1]
        );
    }
}

#[test]
fn the_compact_markdown_keeps_the_document_order() {
    // `compact` has no `location`: the document's own order, nothing removed.
    let r = detail("&view=compact", Some("text/markdown"));
    let md = String::from_utf8(r.body.clone()).expect("UTF-8");
    assert_clean(&md, "compact markdown");
    let json = detail("&view=compact", None).json();
    let top: Vec<&str> = json["data"]["board"]["children"]
        .as_array()
        .expect("children")
        .iter()
        .filter(|c| c["type"] == "BOARD" || c["type"] == "COLUMN")
        .filter_map(|c| c["title"].as_str())
        .collect();
    assert_eq!(
        top,
        [
            "Day-by-day itinerary",
            "Before we go",
            "Colours, sketches and arrows"
        ]
    );
    let at = |text: &str| {
        md.find(text)
            .unwrap_or_else(|| panic!("{text} not in {md}"))
    };
    assert!(at("## Day-by-day itinerary") < at("## Before we go"));
    assert!(at("## Before we go") < at("## Colours, sketches and arrows"));
}

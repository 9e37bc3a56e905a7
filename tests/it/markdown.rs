//! The board as Markdown: golden files (the demo boards through the real
//! load path, a hand-written document with every node type), and the
//! renders read back with a GFM parser (pulldown-cmark) to check that
//! hostile board text stays text: no HTML, no link to anything but a web
//! URL, no heading, list or table cell the board did not have.
//!
//! `UPDATE_GOLDEN=1 cargo test --test it markdown::` rewrites the golden files;
//! review the diff by eye before committing it.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use serde_json::{json, Value};
use shared_board_api::demo::SampleUpstream;
use shared_board_api::internals::document::Coverage;
use shared_board_api::internals::governance::Limits;
use shared_board_api::internals::pipeline::{markdown, Representation};
use shared_board_api::internals::provider::client::ProviderSettings;
use shared_board_api::internals::select::{Selection, View};
use shared_board_api::internals::store::{Boards, CacheSettings};
use std::path::{Path, PathBuf};

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/markdown")
}

/// Compares `text` with the golden file `name`, or rewrites it.
fn golden(name: &str, text: &str) {
    let path = golden_dir().join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, text).expect("golden file written");
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{name}: {e} (UPDATE_GOLDEN=1 writes it)"));
    assert_eq!(text, expected, "{name} differs from its golden file");
}

/// The Markdown of the whole of `doc`, through the serving reader, checked
/// against the reference reader on the way.
fn render(doc: &Value) -> String {
    let json = serde_json::to_vec(doc).expect("serializes");
    let text = markdown::render(&Selection::view(View::Full), &json).expect("renders");
    assert_eq!(
        text,
        markdown::render_reference(&json).expect("renders"),
        "the two readers differ"
    );
    text
}

/// What a GFM reader sees in a render.
#[derive(Debug, Default)]
struct Read {
    html: Vec<String>,
    links: Vec<String>,
    headings: Vec<String>,
    lists: usize,
    items: usize,
    /// Cells per row of each table, the header row first.
    tables: Vec<Vec<usize>>,
    text: String,
}

fn read(markdown: &str) -> Read {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_GFM;
    let mut read = Read::default();
    let mut heading: Option<String> = None;
    for event in Parser::new_ext(markdown, options) {
        match event {
            Event::Html(h) | Event::InlineHtml(h) => read.html.push(h.to_string()),
            Event::Start(Tag::HtmlBlock) => read.html.push("<block>".into()),
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                read.links.push(dest_url.to_string())
            }
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::End(TagEnd::Heading(_)) => read.headings.extend(heading.take()),
            Event::Start(Tag::List(_)) => read.lists += 1,
            Event::Start(Tag::Item) => read.items += 1,
            Event::Start(Tag::Table(_)) => read.tables.push(Vec::new()),
            Event::Start(Tag::TableHead | Tag::TableRow) => {
                if let Some(table) = read.tables.last_mut() {
                    table.push(0);
                }
            }
            Event::Start(Tag::TableCell) => {
                if let Some(row) = read.tables.last_mut().and_then(|t| t.last_mut()) {
                    *row += 1;
                }
            }
            Event::Text(t) | Event::Code(t) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                }
                read.text.push_str(&t);
            }
            Event::SoftBreak | Event::HardBreak => read.text.push(' '),
            Event::End(_) => read.text.push('\n'),
            _ => {}
        }
    }
    read
}

fn is_web(url: &str) -> bool {
    url.starts_with("http://") || url.starts_with("https://")
}

#[test]
fn every_node_type() {
    let text = std::fs::read_to_string(golden_dir().join("every-type.json")).expect("fixture");
    let doc: Value = serde_json::from_str(&text).expect("json");
    let md = render(&doc);
    golden("every-type.md", &md);
    let r = read(&md);
    assert!(r.html.is_empty(), "{:?}", r.html);
    assert!(r.links.iter().all(|l| is_web(l)), "{:?}", r.links);
    assert!(r
        .links
        .contains(&"https://example.com/a%20b%28c%29".to_string()));
    assert_eq!(
        r.headings,
        [
            "Every node type",
            "A heading in a card",
            "Draft.js heading",
            "A column",
            "Tasks",
            "Cut off (not loaded: DEADLINE)",
            "Nested board",
            "Connections",
            "Connections",
        ]
    );
    // The table keeps its three rows of three cells, `|` and newline inside.
    assert_eq!(r.tables, [vec![3, 3, 3]]);
    assert!(r.text.contains("Cost | EUR") && r.text.contains("two lines"));
    // The drawing's SVG is never written.
    assert!(!md.contains("svg"));
}

#[test]
fn hostile_text_stays_text() {
    let hostile = [
        "<script>alert(1)</script>",
        "[x](javascript:alert(1))",
        "# not a heading",
        "- not a list",
        "1. not a list either",
        "> not a quote",
        "    not code",
        "a | pipe",
        "<img src=x onerror=alert(1)>",
        "![i](javascript:alert(1))",
        "<http://autolink.test>",
        "***",
        "==",
        "&lt;entity&gt;",
        "```",
        "[ref]: javascript:alert(1)",
    ];
    let card = |i: usize, text: &str| {
        json!({"id": format!("c{i}"), "type": "CARD", "children": [],
            "richText": {"plainText": text, "blocks": [
                {"type": "paragraph", "content": [{"type": "text", "text": text}]},
                {"type": "heading", "attrs": {"level": 2}, "content": [{"type": "text", "text": text, "marks": [{"type": "link", "attrs": {"href": "javascript:alert(1)"}}]}]}]}})
    };
    let mut children: Vec<Value> = hostile
        .iter()
        .enumerate()
        .map(|(i, t)| card(i, t))
        .collect();
    let joined = hostile.join("\n");
    children.push(json!({"id": "plain", "type": "CARD", "children": [], "richText": {"plainText": joined, "blocks": []}}));
    children.push(json!({"id": "col", "type": "COLUMN", "title": joined, "children": []}));
    children.push(json!({"id": "task", "type": "TASK", "completed": false, "children": [], "richText": {"plainText": joined, "blocks": []}}));
    children.push(json!({"id": "link", "type": "LINK", "title": "[x](javascript:alert(1))", "url": "javascript:alert(1)", "children": []}));
    children.push(json!({"id": "img", "type": "IMAGE", "children": [], "image": {"url": "data:text/html,<script>"}}));
    children.push(
        json!({"id": "table", "type": "TABLE", "children": [], "table": {"rows": [
            hostile.iter().map(|t| json!({"value": t})).collect::<Vec<_>>(),
            hostile.iter().map(|t| json!({"value": format!("{t}\n{t}")})).collect::<Vec<_>>(),
        ]}}),
    );
    children.push(
        json!({"id": "thread", "type": "COMMENT_THREAD", "children": [], "comments": [
        {"id": "x", "richText": {"plainText": joined, "blocks": []}, "createdAt": "<b>"}]}),
    );
    children.push(json!({"id": "sub", "type": "BOARD", "title": joined, "childrenLoaded": false, "unloadedReason": "<script>", "children": []}));
    let doc = json!({"board": {"id": "r", "type": "BOARD", "title": joined, "children": children}});
    let md = render(&doc);
    let r = read(&md);
    assert!(
        r.html.is_empty(),
        "HTML from board text: {:?}\n{md}",
        r.html
    );
    assert!(
        r.links.is_empty(),
        "links from board text: {:?}\n{md}",
        r.links
    );
    // Headings: the root, the card headings, the column, the nested board;
    // lists: only the task. Nothing from the text's `#`, `-` or `1.`.
    assert_eq!(
        r.headings.len(),
        1 + hostile.len() + 2,
        "{:?}\n{md}",
        r.headings
    );
    assert_eq!((r.lists, r.items), (1, 1), "{md}");
    assert_eq!(r.tables, [vec![hostile.len(); 2]], "{md}");
    // The text reads back as written.
    for t in hostile {
        let t = t.trim_start();
        assert!(r.text.lines().any(|l| l == t), "{t:?} lost:\n{}", r.text);
    }
}

#[test]
fn a_pruned_selection_is_an_outline() {
    let doc = json!({"version": 1, "board": {"id": "b", "type": "BOARD", "title": "T", "children": [
        {"id": "c", "type": "CARD", "children": []},
        {"id": "k", "type": "COLUMN", "title": "K", "children": [{"id": "t", "type": "TASK", "children": []}]}]}});
    assert_eq!(render(&doc), "# T\n\n*Card*\n\n## K\n\n- *Task*\n");
    assert_eq!(render(&json!({})), "");
    assert_eq!(
        render(&json!({"board": {"title": 5, "children": "no"}})),
        "# Untitled board\n"
    );
}

#[test]
fn long_and_deep_lists_render() {
    let items: Vec<Value> = (0..12_000)
        .map(|i| json!({"key": "k", "type": "ordered-list-item", "text": "x", "depth": i % 12}))
        .collect();
    let nested = (0..15).fold(json!({"type": "paragraph", "content": [{"type": "text", "text": "deep"}]}), |inner, i| {
        let list = if i % 2 == 0 { "orderedList" } else { "bulletList" };
        json!({"type": list, "attrs": {"start": u64::MAX}, "content": [{"type": "listItem", "content": [inner]}]})
    });
    let doc = json!({"board": {"title": "L", "children": [
        {"type": "CARD", "richText": {"blocks": items}},
        {"type": "CARD", "richText": {"blocks": [nested]}}]}});
    let md = render(&doc);
    let r = read(&md);
    // Every item is read back as an item: none became code or text.
    assert_eq!(
        r.items,
        12_000 + 15,
        "{}",
        &md[md.len().saturating_sub(400)..]
    );
    assert!(r.html.is_empty() && r.text.contains("deep"));
}

/// The demo boards, loaded from the sample upstream as the gateway loads
/// them, rendered as the gateway renders them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_boards() {
    let sample = SampleUpstream::start(([127, 0, 0, 1], 0).into())
        .await
        .expect("sample upstream");
    let provider = ProviderSettings {
        origin: url::Url::parse(&sample.origin()).expect("origin"),
        ..ProviderSettings::default()
    };
    let boards = Boards::new(
        provider,
        "milanote".into(),
        Some(CacheSettings::default()),
        None,
        &Limits::default(),
    )
    .expect("boards");
    for (board, file) in [("1W3ZZU1Qvua02H", "demo"), ("7Ed9GeCa5eS0zZ", "edge-cases")] {
        let (doc, _) = boards.document(board, "demo", Coverage::Full).await;
        let doc = doc.expect("loads");
        for view in [View::Full, View::Compact] {
            let selection = Selection::view(view);
            let rendered = doc
                .board
                .render_as(Representation::Markdown, "detail", &selection)
                .expect("renders");
            let md = String::from_utf8(rendered.body.to_vec()).expect("UTF-8");
            // The sample upstream serves the demo's images on its own
            // ephemeral port: the golden file names it by a fixed origin.
            let md = md.replace(&sample.origin(), "http://sample-upstream.test");
            golden(&format!("{file}-{}.md", view.as_str()), &md);
            let r = read(&md);
            assert!(
                r.html.is_empty() && r.links.iter().all(|l| is_web(l)),
                "{file}"
            );
            let json = doc.board.render("detail", &selection).expect("renders");
            assert_ne!(json.etag, rendered.etag);
            assert!(md.len() < json.body.len(), "{file}: Markdown not smaller");
            assert!(!md.contains("p=demo") && !md.to_lowercase().contains("token"));
        }
    }
}

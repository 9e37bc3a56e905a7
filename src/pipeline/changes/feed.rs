//! A board's recent changes as a feed, for `/changes` without `since` and
//! with `Accept: application/atom+xml` (Atom 1.0, RFC 4287) or
//! `application/feed+json` (JSON Feed 1.1): one entry per pair of
//! consecutive kept versions, newest first, which the API computes with
//! [`super::compare_flat`] and hands here as [`Step`]s. Pure: bytes in,
//! bytes out.
//!
//! - **Ids** name the two versions, `urn:board-version:<from>:<to>`, and
//!   the feed the board, `urn:board:<boardId>`: the same on every node and
//!   after a restart, so a reader never shows an entry twice.
//! - **Nothing from a card is markup**: titles and the change list are
//!   text (Atom `type="text"`, JSON Feed `content_text`), XML-escaped in
//!   Atom, with the characters XML 1.0 cannot carry replaced by U+FFFD, and
//!   each title flattened to one line.
//! - **No share link, no permission id**: the feed has no link at all (a
//!   self link would hold the URL, and the URL holds the share link).
//! - **Bounded**: an entry lists at most [`LINES`] elements, then says how
//!   many more there were.

use super::{Changes, Counts, Entry, Place};
use std::fmt::Write as _;

/// Elements listed at most in one entry's text.
pub const LINES: usize = 100;

/// The media types of the two feeds.
pub const ATOM: &str = "application/atom+xml";
pub const JSON_FEED: &str = "application/feed+json";

/// Which feed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Atom,
    JsonFeed,
}

impl Format {
    /// The `Content-Type` of a `200`.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Atom => "application/atom+xml; charset=utf-8",
            Format::JsonFeed => "application/feed+json; charset=utf-8",
        }
    }
}

/// One entry: the changes from one kept version to the next, and when the
/// newer one was first kept (ms since the Unix epoch).
#[derive(Debug, Clone)]
pub struct Step {
    pub changes: Changes,
    pub updated_ms: u64,
}

/// The feed of board `board_id`, titled after the board's title now
/// (`title`), with `steps` newest first.
pub fn render(format: Format, board_id: &str, title: &str, steps: &[Step]) -> Vec<u8> {
    let feed_title = format!("Changes to {}", one_line(title));
    match format {
        Format::Atom => atom(board_id, &feed_title, steps),
        Format::JsonFeed => json_feed(board_id, &feed_title, steps),
    }
}

fn atom(board_id: &str, title: &str, steps: &[Step]) -> Vec<u8> {
    let mut out = String::with_capacity(1024 + steps.len() * 1024);
    out.push_str("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n");
    out.push_str("<feed xmlns=\"http://www.w3.org/2005/Atom\">\n");
    element(&mut out, "  ", "id", &format!("urn:board:{board_id}"));
    out.push_str("  <title type=\"text\">");
    escape_into(&mut out, title);
    out.push_str("</title>\n");
    // The newest entry's time; the epoch for a feed with none, so that an
    // unchanged feed stays byte for byte the same.
    let updated = steps.first().map_or(0, |s| s.updated_ms);
    element(&mut out, "  ", "updated", &rfc3339(updated));
    out.push_str("  <author><name>shared-board-api</name></author>\n");
    out.push_str("  <generator>shared-board-api</generator>\n");
    for step in steps {
        out.push_str("  <entry>\n");
        element(&mut out, "    ", "id", &entry_id(&step.changes));
        element(&mut out, "    ", "title", &summary(&step.changes.counts));
        element(&mut out, "    ", "updated", &rfc3339(step.updated_ms));
        out.push_str("    <content type=\"text\">");
        escape_into(&mut out, &text(&step.changes));
        out.push_str("</content>\n  </entry>\n");
    }
    out.push_str("</feed>\n");
    out.into_bytes()
}

fn json_feed(board_id: &str, title: &str, steps: &[Step]) -> Vec<u8> {
    let items: Vec<serde_json::Value> = steps
        .iter()
        .map(|step| {
            let date = rfc3339(step.updated_ms);
            serde_json::json!({
                "id": entry_id(&step.changes),
                "title": summary(&step.changes.counts),
                "content_text": text(&step.changes),
                "date_published": date,
                "date_modified": date,
            })
        })
        .collect();
    let feed = serde_json::json!({
        "version": "https://jsonfeed.org/version/1.1",
        "title": title,
        "description": format!("What changed on the board {board_id}, one item per new version."),
        "authors": [{"name": "shared-board-api"}],
        "_board": {"id": format!("urn:board:{board_id}")},
        "items": items,
    });
    // A `Value` of strings and arrays always serializes.
    let mut body = serde_json::to_vec(&feed).unwrap_or_default();
    body.push(b'\n');
    body
}

/// `urn:board-version:<from>:<to>`.
pub fn entry_id(changes: &Changes) -> String {
    format!("urn:board-version:{}:{}", changes.from, changes.to)
}

/// `2 added, 1 changed`: each list's full count, the empty ones left out.
pub fn summary(counts: &Counts) -> String {
    let parts: Vec<String> = [
        (counts.added, "added"),
        (counts.removed, "removed"),
        (counts.changed, "changed"),
        (counts.moved, "moved"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, what)| format!("{n} {what}"))
    .collect();
    if parts.is_empty() {
        "no element changed".to_owned()
    } else {
        parts.join(", ")
    }
}

/// The change list as plain text: a heading per kind, then a line per
/// element (`- title (TYPE) in A › B: fields`), at most [`LINES`] lines.
pub fn text(changes: &Changes) -> String {
    let mut out = String::new();
    let mut left = LINES;
    let counts = &changes.counts;
    for (heading, list, count) in [
        ("Added", &changes.added, counts.added),
        ("Removed", &changes.removed, counts.removed),
        ("Changed", &changes.changed, counts.changed),
        ("Moved", &changes.moved, counts.moved),
    ] {
        let count = count.max(list.len());
        if count == 0 {
            continue;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        let _ = writeln!(out, "{heading} ({count}):");
        let shown = list.len().min(left);
        for entry in &list[..shown] {
            line(&mut out, changes, entry);
        }
        left -= shown;
        if count > shown {
            let _ = writeln!(out, "- and {} more", count - shown);
        }
    }
    if out.is_empty() {
        out.push_str("No element was added, removed, changed or moved.\n");
    }
    if !changes.complete {
        out.push_str(
            "\nSome nested boards were not loaded: their elements may show as added or removed.\n",
        );
    }
    out
}

fn line(out: &mut String, changes: &Changes, entry: &Entry) {
    let _ = write!(
        out,
        "- {} ({})",
        one_line(&entry.title),
        one_line(&entry.kind)
    );
    let path = changes.path(entry);
    if !path.is_empty() {
        out.push_str(" in ");
        let shown = &path[path.len().saturating_sub(super::markdown::PATH_STEPS)..];
        if shown.len() < path.len() {
            out.push_str("… › ");
        }
        let steps: Vec<String> = shown.iter().map(|s| one_line(s)).collect();
        out.push_str(&steps.join(" › "));
    }
    if let Some(fields) = &entry.fields {
        let _ = write!(out, ": {}", one_line(&fields.join(", ")));
    }
    if let (Some(from), Some(to)) = (&entry.from, &entry.to) {
        let _ = write!(
            out,
            ": from {} to {}",
            place(changes, from),
            place(changes, to)
        );
    }
    out.push('\n');
}

/// Where an element was or is: its parent's title (else id) and section.
fn place(changes: &Changes, place: &Place) -> String {
    let mut text = match &place.parent_id {
        Some(id) => changes
            .parents
            .iter()
            .find(|p| p.id == *id)
            .map_or_else(|| one_line(id), |p| one_line(&p.title)),
        None => "the root".to_owned(),
    };
    if let Some(section) = &place.section {
        let _ = write!(text, " ({})", one_line(section));
    }
    text
}

/// `text` on one line: every control character (line breaks included) a
/// space.
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// `<name>value</name>` on a line of its own, `value` escaped.
fn element(out: &mut String, indent: &str, name: &str, value: &str) {
    out.push_str(indent);
    let _ = write!(out, "<{name}>");
    escape_into(out, value);
    let _ = writeln!(out, "</{name}>");
}

/// `text` as XML character data or an attribute value: `& < > " '` as
/// references, a carriage return as `&#13;` (so a parser does not fold
/// it), and every character XML 1.0 cannot carry (C0 controls but tab and
/// line feed, U+FFFE, U+FFFF) as U+FFFD.
pub fn escape_into(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\r' => out.push_str("&#13;"),
            '\t' | '\n' => out.push(c),
            '\u{0}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
}

/// The latest time an RFC 3339 date of four digits can carry.
const MAX_MS: u64 = 253_402_300_799_999;

/// `ms` since the Unix epoch as `2026-12-02T09:45:00Z` (an untrusted store's
/// time past year 9999 as the last second of it).
pub fn rfc3339(ms: u64) -> String {
    let ms = i64::try_from(ms.min(MAX_MS)).unwrap_or(0);
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_else(|| "1970-01-01T00:00:00Z".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::changes::Parent;

    const FROM: &str = "0123456789abcdef0123456789abcdef";
    const TO: &str = "fedcba9876543210fedcba9876543210";

    fn hostile() -> Changes {
        let mut changes = Changes::none("B1", FROM, true);
        changes.to = TO.into();
        changes.parents = vec![Parent {
            id: "B1".into(),
            kind: "BOARD".into(),
            title: "Root <b>&amp;</b>".into(),
            parent_id: None,
        }];
        let entry = |title: &str| Entry {
            id: "c".into(),
            kind: "CARD".into(),
            title: title.into(),
            parent_id: Some("B1".into()),
            fields: None,
            from: None,
            to: None,
        };
        changes.added.push(entry(
            "<script>alert(1)</script> ]]> \u{1}\u{8}\u{fffe} \"q\" 'a'\r\nline",
        ));
        let mut changed = entry("<![CDATA[x]]>");
        changed.fields = Some(vec!["richText".into()]);
        changes.changed.push(changed);
        changes.counts = Counts {
            added: 1,
            removed: 0,
            changed: 1,
            moved: 0,
        };
        changes
    }

    #[test]
    fn titles_count_the_lists() {
        let c = |added, removed, changed, moved| Counts {
            added,
            removed,
            changed,
            moved,
        };
        for (counts, title) in [
            (c(2, 0, 1, 0), "2 added, 1 changed"),
            (c(0, 3, 0, 1), "3 removed, 1 moved"),
            (c(1, 1, 1, 1), "1 added, 1 removed, 1 changed, 1 moved"),
            (c(0, 0, 0, 0), "no element changed"),
        ] {
            assert_eq!(summary(&counts), title);
        }
    }

    #[test]
    fn escaping_leaves_no_markup_and_nothing_xml_cannot_carry() {
        let mut out = String::new();
        escape_into(
            &mut out,
            "<a href='x'>&\"\r\n\t\u{0}\u{1b}\u{fffe}\u{ffff}é😀</a>",
        );
        assert_eq!(
            out,
            "&lt;a href=&apos;x&apos;&gt;&amp;&quot;&#13;\n\t\u{fffd}\u{fffd}\u{fffd}\u{fffd}é😀&lt;/a&gt;"
        );
    }

    #[test]
    fn an_atom_feed_holds_card_text_only_as_text() {
        let steps = [Step {
            changes: hostile(),
            updated_ms: 1_796_000_000_000,
        }];
        let body = String::from_utf8(render(Format::Atom, "B1", "My <board>", &steps)).unwrap();
        assert!(body.contains("<id>urn:board:B1</id>"), "{body}");
        assert!(body.contains(&format!("<id>urn:board-version:{FROM}:{TO}</id>")));
        assert!(body.contains("<title>1 added, 1 changed</title>"), "{body}");
        assert!(body.contains("<updated>2026-11-30T"), "{body}");
        assert!(body.contains("Changes to My &lt;board&gt;"), "{body}");
        assert!(
            body.contains("&lt;script&gt;alert(1)&lt;/script&gt; ]]&gt;"),
            "{body}"
        );
        assert!(body.contains("&lt;![CDATA[x]]&gt;"), "{body}");
        assert!(body.contains("Root &lt;b&gt;&amp;amp;&lt;/b&gt;"), "{body}");
        assert!(
            !body.contains("<script") && !body.contains("<![CDATA"),
            "{body}"
        );
        // Control characters of a title flatten to spaces: one line each.
        assert!(
            !body.chars().any(|c| c.is_control() && c != '\n'),
            "{body:?}"
        );
        assert!(!body.contains("<link"), "no link at all");
    }

    #[test]
    fn a_json_feed_has_the_required_members() {
        let steps = [Step {
            changes: hostile(),
            updated_ms: 0,
        }];
        let body = render(Format::JsonFeed, "B1", "T", &steps);
        let feed: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
        assert_eq!(feed["version"], "https://jsonfeed.org/version/1.1");
        assert_eq!(feed["title"], "Changes to T");
        let item = &feed["items"][0];
        assert_eq!(item["id"], format!("urn:board-version:{FROM}:{TO}"));
        assert_eq!(item["date_modified"], "1970-01-01T00:00:00Z");
        let text = item["content_text"].as_str().expect("text");
        assert!(
            text.starts_with("Added (1):\n- <script>alert(1)</script>"),
            "{text}"
        );
        assert!(
            text.contains("Changed (1):\n- <![CDATA[x]]> (CARD) in Root <b>&amp;</b>: richText\n"),
            "{text}"
        );
        assert!(feed.get("home_page_url").is_none() && feed.get("feed_url").is_none());
    }

    #[test]
    fn a_long_list_is_cut_and_says_how_many_more() {
        let mut changes = hostile();
        changes.added = (0..LINES + 5).map(|_| changes.added[0].clone()).collect();
        changes.counts.added = 5000;
        let text = text(&changes);
        assert_eq!(
            text.lines()
                .filter(|l| l.starts_with("- ") && !l.starts_with("- and"))
                .count(),
            LINES
        );
        assert!(
            text.contains(&format!("- and {} more", 5000 - LINES)),
            "{text}"
        );
        assert!(text.contains("Changed (1):\n- and 1 more"), "{text}");
    }

    #[test]
    fn times_are_rfc3339_and_bounded() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_796_000_000_999), "2026-11-30T00:53:20Z");
        assert_eq!(rfc3339(u64::MAX), "9999-12-31T23:59:59Z");
    }
}

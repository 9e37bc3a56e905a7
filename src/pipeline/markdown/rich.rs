//! Rich text (`{blocks, plainText}`, TipTap/ProseMirror or Draft.js
//! blocks) as Markdown: paragraphs (and `smallText`, a paragraph in small
//! type), headings below the current section's level, bullet, ordered
//! (keeping `start`) and task lists, quotes and callouts, code blocks (with
//! their language), hard breaks, and bold, italic, strike, inline code and
//! web links. A mention is `@` and its label, a link to a board `[title](url)`
//! (its title as text when the URL is not a web URL). Marks that only
//! style (underline, highlight, text colour) and those that point elsewhere
//! (a comment, a mention's original text) leave their text plain. A node it
//! does not know gives its plain text; text without blocks is written as
//! its plain text.

use super::draft;
use super::out::{is_web_url, Flow, Out, Sep};
use super::value::V;

/// Inline marks, as bits.
pub(super) const BOLD: u8 = 1;
pub(super) const ITALIC: u8 = 2;
pub(super) const STRIKE: u8 = 4;
pub(super) const CODE: u8 = 8;

/// One piece of a paragraph's inline content.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Piece<'v> {
    Text {
        text: &'v str,
        marks: u8,
        href: Option<&'v str>,
    },
    Break,
    Image {
        alt: &'v str,
        src: &'v str,
    },
}

/// The rich text `rich` as blocks of a section at heading level `level`.
pub fn blocks(out: &mut Out, rich: &V, level: usize) {
    let blocks = rich.list("blocks");
    if blocks.is_empty() {
        if let Some(plain) = rich.str("plainText").filter(|t| !t.trim().is_empty()) {
            out.begin_block();
            out.text(plain, Flow::Breaks);
            out.end_block();
        }
        return;
    }
    let mut i = 0;
    while i < blocks.len() {
        i += if draft::is_draft(&blocks[i]) {
            draft::group(out, &blocks[i..], level)
        } else {
            tiptap_block(out, &blocks[i], level);
            1
        };
    }
}

/// The rich text `rich` on the current line: marks kept, blocks joined
/// with spaces.
pub fn inline(out: &mut Out, rich: &V) {
    let blocks = rich.list("blocks");
    if blocks.is_empty() {
        if let Some(plain) = rich.str("plainText") {
            out.text(plain, Flow::OneLine);
        }
        return;
    }
    let mut pieces = Vec::new();
    for block in blocks {
        if !pieces.is_empty() {
            pieces.push(Piece::Break);
        }
        if draft::is_draft(block) {
            draft::pieces(block, &mut pieces);
        } else {
            tiptap_pieces(block, &mut pieces);
        }
    }
    write_pieces(out, &pieces, Flow::OneLine);
}

fn tiptap_block(out: &mut Out, node: &V, level: usize) {
    let kind = node.str("type").unwrap_or_default();
    match kind {
        "paragraph" | "smallText" => paragraph(out, node),
        "heading" => {
            let own = node
                .get("attrs")
                .and_then(|a| a.get("level"))
                .and_then(V::as_num)
                .map_or(1, |n| match n.to_string().parse::<usize>() {
                    Ok(l) => l.clamp(1, 6),
                    Err(_) => 1,
                });
            let mut pieces = Vec::new();
            tiptap_pieces(node, &mut pieces);
            heading(out, level + own, &pieces);
        }
        "bulletList" | "orderedList" | "taskList" => list(out, node, level),
        "blockquote" | "callout" => {
            out.begin_block();
            out.within("> ", Sep::Blank, |out| {
                for child in node.list("content") {
                    tiptap_block(out, child, level);
                }
            });
            out.end_block();
        }
        "codeBlock" => {
            let language = node.get("attrs").and_then(|a| a.str("language"));
            let mut code = String::new();
            plain_text(node, &mut code);
            code_block(out, language, code.lines());
        }
        "horizontalRule" => {
            out.begin_block();
            out.markup("***");
            out.end_block();
        }
        _ if node.get("content").is_some() && node.list("content").iter().all(is_block) => {
            for child in node.list("content") {
                tiptap_block(out, child, level);
            }
        }
        _ => {
            let mut text = String::new();
            plain_text(node, &mut text);
            if !text.trim().is_empty() {
                out.begin_block();
                out.text(&text, Flow::Breaks);
                out.end_block();
            }
        }
    }
}

/// Whether a TipTap node is a block (not a text or inline node).
fn is_block(node: &V) -> bool {
    !matches!(
        node.str("type"),
        Some("text" | "hardBreak" | "image" | "mention" | "inlineBoardLink" | "emoji") | None
    )
}

fn paragraph(out: &mut Out, node: &V) {
    let mut pieces = Vec::new();
    tiptap_pieces(node, &mut pieces);
    if pieces.iter().any(has_content) {
        out.begin_block();
        write_pieces(out, &pieces, Flow::Breaks);
        out.end_block();
    }
}

fn has_content(piece: &Piece) -> bool {
    match piece {
        Piece::Text { text, .. } => !text.trim().is_empty(),
        Piece::Break => false,
        Piece::Image { .. } => true,
    }
}

/// A heading at `level`, or a bold line below level 6.
pub fn heading_text(out: &mut Out, level: usize, text: &str) {
    let pieces = [Piece::Text {
        text,
        marks: 0,
        href: None,
    }];
    heading(out, level, &pieces);
}

pub(super) fn heading(out: &mut Out, level: usize, pieces: &[Piece]) {
    if !pieces.iter().any(has_content) {
        return;
    }
    out.begin_block();
    if level <= 6 {
        out.markup(&"######"[..level]);
        out.markup(" ");
        write_pieces(out, pieces, Flow::OneLine);
    } else {
        out.markup("**");
        let mut plain = String::new();
        for piece in pieces {
            match piece {
                Piece::Text { text, .. } => plain.push_str(text),
                Piece::Break => plain.push(' '),
                Piece::Image { alt, .. } => plain.push_str(alt),
            }
        }
        out.text(plain.trim(), Flow::OneLine);
        out.markup("**");
    }
    out.end_block();
}

fn list(out: &mut Out, node: &V, level: usize) {
    let kind = node.str("type").unwrap_or_default();
    let start = node
        .get("attrs")
        .and_then(|a| a.get("start"))
        .and_then(V::as_num)
        .and_then(|n| n.to_string().parse::<u64>().ok())
        .unwrap_or(1)
        .min(999_999_000);
    out.begin_block();
    for (i, item) in node.list("content").iter().enumerate() {
        // The first item stays on the line of an enclosing item's marker.
        if i > 0 {
            out.end_line();
        }
        let marker = match kind {
            "orderedList" => format!("{}. ", start + i as u64),
            "taskList" => {
                let checked = item.get("attrs").and_then(|a| a.get("checked"));
                task_marker(checked.and_then(V::as_bool) == Some(true)).to_owned()
            }
            _ => "- ".to_owned(),
        };
        let indent = if kind == "orderedList" {
            marker.len()
        } else {
            2
        };
        out.marker(&marker);
        out.within(&" ".repeat(indent), Sep::Line, |out| {
            for child in item.list("content") {
                tiptap_block(out, child, level);
            }
        });
    }
    out.end_block();
}

/// `- [x] ` or `- [ ] `.
pub fn task_marker(done: bool) -> &'static str {
    if done {
        "- [x] "
    } else {
        "- [ ] "
    }
}

pub(super) fn code_block<'t>(
    out: &mut Out,
    language: Option<&str>,
    lines: impl Iterator<Item = &'t str> + Clone,
) {
    let fence = lines
        .clone()
        .map(|l| super::out::longest_run(l.trim_start(), '`'))
        .max()
        .unwrap_or(0)
        .max(2)
        + 1;
    let fence = "`".repeat(fence);
    out.begin_block();
    out.markup(&fence);
    if let Some(language) = language.filter(|l| {
        !l.is_empty()
            && l.len() <= 32
            && l.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"+-_.#".contains(&b))
    }) {
        out.markup(language);
    }
    out.end_line();
    for line in lines {
        out.code_line(line);
    }
    out.markup(&fence);
    out.end_block();
}

/// The inline pieces of a TipTap node, depth first; blocks inside it are
/// separated by breaks.
fn tiptap_pieces<'v>(node: &'v V, pieces: &mut Vec<Piece<'v>>) {
    match node.str("type") {
        Some("text") => {
            let (mut marks, mut href) = (0, None);
            for mark in node.list("marks") {
                match mark.str("type").unwrap_or_default() {
                    "bold" | "strong" => marks |= BOLD,
                    "italic" | "em" => marks |= ITALIC,
                    "strike" | "strikethrough" => marks |= STRIKE,
                    "code" => marks |= CODE,
                    "link" => {
                        href = mark
                            .get("attrs")
                            .and_then(|a| a.str("href"))
                            .filter(|h| is_web_url(h));
                    }
                    _ => {}
                }
            }
            if let Some(text) = node.str("text") {
                // Blanks carry no marks: emphasis around them would not parse.
                if text.trim().is_empty() {
                    (marks, href) = (0, None);
                }
                pieces.push(Piece::Text { text, marks, href });
            }
        }
        Some("hardBreak") => pieces.push(Piece::Break),
        Some("mention") => {
            let label = attr(node, "label").map(str::trim).unwrap_or_default();
            if !label.is_empty() {
                if !label.starts_with('@') {
                    pieces.push(plain("@"));
                }
                pieces.push(plain(label));
            }
        }
        Some("inlineBoardLink") => {
            let url = attr(node, "url").filter(|u| is_web_url(u));
            let title = attr(node, "title").filter(|t| !t.trim().is_empty());
            if let Some(text) = title.or(url) {
                pieces.push(Piece::Text {
                    text,
                    marks: 0,
                    href: url,
                });
            }
        }
        Some("image") => {
            let attrs = node.get("attrs");
            let src = attrs.and_then(|a| a.str("src")).filter(|s| is_web_url(s));
            let alt = attrs.and_then(|a| a.str("alt")).unwrap_or("image");
            if let Some(src) = src {
                pieces.push(Piece::Image { alt, src });
            }
        }
        _ => {
            if let Some(text) = node.str("text") {
                pieces.push(Piece::Text {
                    text,
                    marks: 0,
                    href: None,
                });
            }
            for (i, child) in node.list("content").iter().enumerate() {
                if i > 0 && is_block(child) {
                    pieces.push(Piece::Break);
                }
                tiptap_pieces(child, pieces);
            }
        }
    }
}

/// A string attribute of a TipTap node.
fn attr<'v>(node: &'v V, key: &str) -> Option<&'v str> {
    node.get("attrs").and_then(|a| a.str(key))
}

/// Unmarked text.
fn plain<'v>(text: &'v str) -> Piece<'v> {
    Piece::Text {
        text,
        marks: 0,
        href: None,
    }
}

/// Plain text of a node: `text`, hard breaks as newlines, a mention's
/// `@label`, a board link's title, children of blocks other than
/// paragraphs, headings and the like on lines of their own.
fn plain_text(node: &V, into: &mut String) {
    if let Some(text) = node.str("text") {
        into.push_str(text);
    }
    match node.str("type") {
        Some("hardBreak") => into.push('\n'),
        Some("mention") => {
            let label = attr(node, "label").map(str::trim).unwrap_or_default();
            if !label.is_empty() && !label.starts_with('@') {
                into.push('@');
            }
            into.push_str(label);
        }
        Some("inlineBoardLink") => into.push_str(attr(node, "title").unwrap_or_default()),
        _ => {}
    }
    let joins = !matches!(
        node.str("type"),
        Some("paragraph" | "heading" | "listItem" | "codeBlock" | "smallText" | "taskItem")
    );
    for (i, child) in node.list("content").iter().enumerate() {
        if joins && i > 0 && !into.ends_with('\n') {
            into.push('\n');
        }
        plain_text(child, into);
    }
}

/// Writes inline pieces: runs of text with the same marks share one pair
/// of delimiters, and blanks at a run's ends go outside them (emphasis
/// next to a blank does not open or close).
pub(super) fn write_pieces(out: &mut Out, pieces: &[Piece], flow: Flow) {
    let same = |a: Option<&Piece>, b: &Piece| match (a, b) {
        (
            Some(Piece::Text {
                marks: m1,
                href: h1,
                ..
            }),
            Piece::Text {
                marks: m2,
                href: h2,
                ..
            },
        ) => m1 == m2 && h1 == h2 && m1 & CODE == 0,
        _ => false,
    };
    for (i, piece) in pieces.iter().enumerate() {
        match *piece {
            Piece::Break => match flow {
                Flow::Breaks => out.hard_break(),
                Flow::OneLine => out.text(" ", flow),
            },
            Piece::Image { alt, src } => {
                out.markup("![");
                out.text(alt, Flow::OneLine);
                out.markup("](");
                out.url(src);
                out.markup(")");
            }
            Piece::Text { text, marks, href } => {
                if marks == 0 && href.is_none() {
                    out.text(text, flow);
                    continue;
                }
                if text.trim().is_empty() {
                    out.text(text, flow);
                    continue;
                }
                let opens = !same(i.checked_sub(1).and_then(|p| pieces.get(p)), piece);
                let closes = !same(pieces.get(i + 1), piece);
                let mut core = text;
                if opens {
                    let trimmed = core.trim_start();
                    out.text(&core[..core.len() - trimmed.len()], flow);
                    core = trimmed;
                }
                let tail = if closes {
                    core.len() - core.trim_end().len()
                } else {
                    0
                };
                let (core, tail) = core.split_at(core.len() - tail);
                if opens {
                    open(out, marks, href);
                }
                if marks & CODE != 0 {
                    out.code_span(core);
                } else {
                    out.text(core, flow);
                }
                if closes {
                    close(out, marks, href);
                }
                out.text(tail, flow);
            }
        }
    }
}

fn open(out: &mut Out, marks: u8, href: Option<&str>) {
    if href.is_some() {
        out.markup("[");
    }
    if marks & STRIKE != 0 {
        out.markup("~~");
    }
    if marks & BOLD != 0 {
        out.markup("**");
    }
    if marks & ITALIC != 0 {
        out.markup("*");
    }
}

fn close(out: &mut Out, marks: u8, href: Option<&str>) {
    if marks & ITALIC != 0 {
        out.markup("*");
    }
    if marks & BOLD != 0 {
        out.markup("**");
    }
    if marks & STRIKE != 0 {
        out.markup("~~");
    }
    if let Some(href) = href {
        out.markup("](");
        out.url(href);
        out.markup(")");
    }
}

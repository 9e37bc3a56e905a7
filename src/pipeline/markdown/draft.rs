//! Draft.js blocks as Markdown: `unstyled` paragraphs, `header-*`
//! headings, bullet, ordered and checkable list items (nested by `depth`,
//! consecutive items one list), quotes and code blocks; inline styles
//! (`BOLD`, `ITALIC`, `STRIKETHROUGH`, `CODE`) from their UTF-16 ranges.

use super::out::Flow;
use super::out::{Out, Sep};
use super::rich::{
    code_block, heading, task_marker, write_pieces, Piece, BOLD, CODE, ITALIC, STRIKE,
};
use super::value::V;

const TYPES: &[&str] = &[
    "unstyled",
    "header-one",
    "header-two",
    "header-three",
    "header-four",
    "header-five",
    "header-six",
    "unordered-list-item",
    "ordered-list-item",
    "checkable-list-item",
    "code-block",
    "atomic",
];

/// Whether a block is Draft.js (it has Draft.js members or a Draft.js type).
pub fn is_draft(block: &V) -> bool {
    block.get("inlineStyleRanges").is_some()
        || block.get("depth").is_some()
        || block.get("key").is_some()
        || block.str("type").is_some_and(|t| TYPES.contains(&t))
}

fn is_list(block: &V) -> bool {
    matches!(
        block.str("type"),
        Some("unordered-list-item" | "ordered-list-item" | "checkable-list-item")
    )
}

/// Writes the Draft.js blocks that start `blocks` and form one Markdown
/// block (a list, a code block, or one block); returns how many it used.
pub fn group(out: &mut Out, blocks: &[V], level: usize) -> usize {
    let first = &blocks[0];
    let run = |pred: &dyn Fn(&V) -> bool| {
        blocks
            .iter()
            .take_while(|b| is_draft(b) && pred(b))
            .count()
            .max(1)
    };
    match first.str("type").unwrap_or_default() {
        _ if is_list(first) => {
            let n = run(&is_list);
            list(out, &blocks[..n]);
            n
        }
        "code-block" => {
            let n = run(&|b: &V| b.str("type") == Some("code-block"));
            let lines = blocks[..n]
                .iter()
                .flat_map(|b| b.str("text").unwrap_or_default().lines());
            code_block(out, None, lines);
            n
        }
        kind => {
            let mut parts = Vec::new();
            pieces(first, &mut parts);
            let header = [
                "header-one",
                "header-two",
                "header-three",
                "header-four",
                "header-five",
                "header-six",
            ]
            .iter()
            .position(|h| *h == kind);
            if let Some(h) = header {
                heading(out, level + h + 1, &parts);
            } else if !parts.is_empty() {
                out.begin_block();
                if kind == "blockquote" {
                    out.within("> ", Sep::Blank, |out| {
                        write_pieces(out, &parts, Flow::Breaks)
                    });
                } else {
                    write_pieces(out, &parts, Flow::Breaks);
                }
                out.end_block();
            }
            1
        }
    }
}

/// Consecutive list items as one tight list, nested by `depth` (under the
/// content of the item one level up, at most one level deeper than the item before).
fn list(out: &mut Out, items: &[V]) {
    /// Deeper `depth`s are written at this one.
    const MAX_DEPTH: usize = 7;
    let mut numbers: Vec<u64> = Vec::new();
    // Where the items of each depth start: the content column of the item
    // before them one level up, so a wide number still nests what follows.
    let mut columns: Vec<usize> = vec![0];
    out.begin_block();
    for item in items {
        let depth = item
            .get("depth")
            .and_then(V::as_num)
            .and_then(|n| n.to_string().parse::<usize>().ok())
            .unwrap_or(0)
            .min(numbers.len())
            .min(MAX_DEPTH);
        numbers.truncate(depth + 1);
        numbers.resize(depth + 1, 0);
        // An ordered run counts from 1 again after another kind of item.
        if item.str("type") == Some("ordered-list-item") {
            numbers[depth] += 1;
        } else {
            numbers[depth] = 0;
        }
        let marker = match item.str("type") {
            Some("ordered-list-item") => format!("{}. ", numbers[depth]),
            Some("checkable-list-item") => {
                let checked = item.get("data").and_then(|d| d.get("checked"));
                task_marker(checked.and_then(V::as_bool) == Some(true)).to_owned()
            }
            _ => "- ".to_owned(),
        };
        let width = if marker.starts_with('-') {
            2
        } else {
            marker.len()
        };
        let start = columns.get(depth).copied().unwrap_or(0);
        columns.truncate(depth + 1);
        columns.push(start + width);
        out.end_line();
        out.markup(&" ".repeat(start));
        out.marker(&marker);
        let mut parts = Vec::new();
        pieces(item, &mut parts);
        out.within(&" ".repeat(start + width), Sep::Line, |out| {
            write_pieces(out, &parts, Flow::Breaks);
        });
    }
    out.end_block();
}

/// The text of a block cut at its style boundaries, each cut with its marks.
pub fn pieces<'v>(block: &'v V, pieces: &mut Vec<Piece<'v>>) {
    let text = block.str("text").unwrap_or_default();
    let ranges: Vec<(usize, usize, u8)> = block
        .list("inlineStyleRanges")
        .iter()
        .filter_map(|r| {
            let at = |k| {
                r.get(k)
                    .and_then(V::as_num)
                    .and_then(|n| n.to_string().parse::<usize>().ok())
            };
            let mark = match r.str("style")? {
                "BOLD" => BOLD,
                "ITALIC" => ITALIC,
                "STRIKETHROUGH" => STRIKE,
                "CODE" => CODE,
                _ => return None,
            };
            let (offset, length) = (at("offset")?, at("length")?);
            Some((offset, offset.saturating_add(length), mark))
        })
        .collect();
    if ranges.is_empty() {
        if !text.is_empty() {
            pieces.push(Piece::Text {
                text,
                marks: 0,
                href: None,
            });
        }
        return;
    }
    let marks_at = |unit: usize| {
        ranges
            .iter()
            .filter(|(from, to, _)| *from <= unit && unit < *to)
            .fold(0, |m, (_, _, mark)| m | mark)
    };
    let (mut start, mut unit, mut current) = (0, 0, marks_at(0));
    for (byte, c) in text.char_indices() {
        let marks = marks_at(unit);
        if marks != current && byte > start {
            push(pieces, &text[start..byte], current);
            start = byte;
        }
        current = marks;
        unit += c.len_utf16();
    }
    push(pieces, &text[start..], current);
}

fn push<'v>(pieces: &mut Vec<Piece<'v>>, text: &'v str, marks: u8) {
    if text.is_empty() {
        return;
    }
    let marks = if text.trim().is_empty() { 0 } else { marks };
    pieces.push(Piece::Text {
        text,
        marks,
        href: None,
    });
}

//! The board tree as Markdown: the root board's title as `# `, then its
//! children in reading order ([`crate::document::reading`]: an attached
//! thread right after its element, the canvas in rows by `y` then `x`, a
//! column's or a task list's notes by `index`; the document's own order
//! where the selection left `location` out), the order the value already
//! holds them in ([`super::value`]). A column, task list or nested board opens a
//! section one heading level deeper (a bold line below level 6); other
//! elements are blocks separated by blank lines, and a board's lines are
//! listed under `Connections` at its end. A field the selection left out is
//! simply not written, so `compact` gives an outline of titles and types.

use super::out::{is_web_url, Flow, Out, Sep};
use super::pages::BoardMark;
use super::rich::{self, heading_text, task_marker};
use super::value::{prefetch, V};
use std::borrow::Cow;
use std::collections::HashMap;

/// Elements by id, for naming the ends of lines; built on the first line.
type Labels<'d, 'a> = HashMap<&'d str, &'d V<'a>>;

/// Writes the selected document `data`.
pub fn document(out: &mut Out, data: &V) {
    let Some(board) = data.get("board") else {
        return;
    };
    let mut labels = None;
    section(out, board, 1, data, &mut labels);
}

/// The children of `holder` as a board at the top level writes them, with
/// no heading of its own and no `Connections` (its lines are left out).
pub fn held(out: &mut Out, holder: &V) {
    children(out, holder, 1, holder, &mut None, &mut Vec::new());
}

/// A board: its heading, its children, its connections.
fn section<'d, 'a>(
    out: &mut Out,
    board: &'d V<'a>,
    level: usize,
    data: &'d V<'a>,
    labels: &mut Option<Labels<'d, 'a>>,
) {
    let mut title = board.str("title").unwrap_or("Untitled board").to_owned();
    if board.get("childrenLoaded").and_then(V::as_bool) == Some(false) {
        match board.str("unloadedReason") {
            Some(reason) => title.push_str(&format!(" (not loaded: {reason})")),
            None => title.push_str(" (not loaded)"),
        }
    }
    let start = out.len();
    heading_text(out, level, &title);
    out.boards.push(BoardMark {
        // The heading's own block: the text before it ends a block.
        start: out
            .blocks
            .last()
            .copied()
            .filter(|&b| b >= start)
            .unwrap_or(start),
        id: board.str("id").map(str::to_owned),
        title: board.str("title").unwrap_or("Untitled board").to_owned(),
        level,
        elements: count(board),
    });
    let mut lines = Vec::new();
    children(out, board, level, data, labels, &mut lines);
    if lines.is_empty() {
        return;
    }
    let labels = labels.get_or_insert_with(|| {
        let mut map = HashMap::new();
        if let Some(root) = data.get("board") {
            index(root, &mut map);
        }
        map
    });
    heading_text(out, level + 1, "Connections");
    out.begin_block();
    for line in lines {
        out.end_line();
        out.marker("- ");
        end_name(out, line.get("start"), labels);
        out.markup(" → ");
        end_name(out, line.get("end"), labels);
    }
    out.end_block();
}

/// Writes the children of `node` and what lies below them, but for
/// nested boards' own; gathers their lines (in the order read) on `lines`
/// for the board's `Connections`, in the same walk.
fn children<'d, 'a>(
    out: &mut Out,
    node: &'d V<'a>,
    level: usize,
    data: &'d V<'a>,
    labels: &mut Option<Labels<'d, 'a>>,
    lines: &mut Vec<&'d V<'a>>,
) {
    let mut after_task = false;
    let list = node.list("children");
    for (i, child) in list.iter().enumerate() {
        if let Some(next) = list.get(i + 1) {
            prefetch(next);
        }
        let kind = child.str("type").unwrap_or_default();
        match kind {
            "BOARD" => section(out, child, level + 1, data, labels),
            "COLUMN" | "TASK_LIST" => {
                let fallback = if kind == "COLUMN" { "Column" } else { "Tasks" };
                heading_text(out, level + 1, child.str("title").unwrap_or(fallback));
                children(out, child, level + 1, data, labels, lines);
            }
            "TASK" => {
                // Consecutive tasks are one list.
                if after_task {
                    out.end_line();
                } else {
                    out.begin_block();
                }
                task(out, child);
                out.end_block();
                children(out, child, level, data, labels, lines);
            }
            "LINE" => {
                lines.push(child);
                board_lines(child, lines);
            }
            _ => {
                element(out, child, kind, level);
                children(out, child, level, data, labels, lines);
            }
        }
        after_task = kind == "TASK";
    }
}

/// One element that is neither a section nor a task.
fn element(out: &mut Out, node: &V, kind: &str, level: usize) {
    match kind {
        "CARD" | "DOCUMENT" => {
            if let Some(title) = node.str("title").filter(|t| !t.trim().is_empty()) {
                line(out, |out| {
                    out.markup("**");
                    out.text(title.trim(), Flow::OneLine);
                    out.markup("**");
                });
            }
            match node.get("richText") {
                Some(rich) => rich::blocks(out, rich, level),
                None if node.get("title").is_none() => note(out, &kind_name(kind), None),
                None => {}
            }
        }
        "LINK" => line(out, |out| {
            let url = node.str("url");
            let title = node.str("title").filter(|t| !t.trim().is_empty());
            match (title, url) {
                (Some(title), Some(url)) if !is_web_url(url) => {
                    out.text(title, Flow::OneLine);
                    out.text(&format!(" ({url})"), Flow::OneLine);
                }
                (Some(title), url) => out.link(title, url),
                (None, Some(url)) => out.link(url, Some(url)),
                (None, None) => note_inline(out, "Link", None),
            }
            if let Some(caption) = node.get("caption") {
                out.text(" — ", Flow::OneLine);
                rich::inline(out, caption);
            }
        }),
        "IMAGE" => line(out, |out| {
            let name = file_name(node);
            match node.get("image").and_then(|i| i.str("url")) {
                Some(url) if is_web_url(url) => {
                    out.markup("![");
                    out.text(name.unwrap_or("image"), Flow::OneLine);
                    out.markup("](");
                    out.url(url);
                    out.markup(")");
                }
                _ => note_inline(out, "Image", name),
            }
        }),
        "FILE" => line(out, |out| {
            let name = node.str("title").or_else(|| file_name(node));
            let url = node.get("file").and_then(|f| f.str("url"));
            match (name, url) {
                (None, None) => note_inline(out, "File", None),
                (name, url) => out.link(name.unwrap_or("file"), url),
            }
            if let Some(size) = node
                .get("file")
                .and_then(|f| f.get("sizeBytes"))
                .and_then(V::as_num)
            {
                if let Ok(bytes) = size.to_string().parse::<f64>() {
                    out.text(&format!(" ({})", human_size(bytes)), Flow::OneLine);
                }
            }
        }),
        "TABLE" => match node.get("table") {
            Some(table) => super::table::table(out, table),
            None => note(out, "Table", None),
        },
        "COMMENT_THREAD" => comments(out, node, level),
        "COLOR_SWATCH" => line(out, |out| {
            out.text("Colour", Flow::OneLine);
            if let Some(color) = node.str("color") {
                out.text(" ", Flow::OneLine);
                out.text(color, Flow::OneLine);
            }
            if let Some(caption) = node.get("caption") {
                out.text(" — ", Flow::OneLine);
                rich::inline(out, caption);
            }
        }),
        "SKETCH" | "ANNOTATION" => note(out, &kind_name(kind), Some("a drawing")),
        "SKELETON" => note(out, "Element of another board", Some("not loaded")),
        "UNKNOWN" => note(
            out,
            "Unknown element",
            node.str("elementType").filter(|t| !t.trim().is_empty()),
        ),
        _ => {
            if let Some(title) = node.str("title") {
                line(out, |out| out.text(title, Flow::OneLine));
            } else if !kind.is_empty() {
                note(out, &kind_name(kind), None);
            }
        }
    }
}

/// `- [x] ` or `- [ ] ` and the task's text, with its due date; a task
/// whose state the selection left out is an item without a box.
fn task(out: &mut Out, node: &V) {
    match node.get("completed").and_then(V::as_bool) {
        Some(done) => out.marker(task_marker(done)),
        None => out.marker("- "),
    }
    out.within("  ", Sep::Line, |out| {
        match node.get("richText") {
            Some(rich) => rich::inline(out, rich),
            None => note_inline(out, "Task", None),
        }
        if let Some(due) = node.get("dueDate").and_then(scalar) {
            out.text(&format!(" (due {due})"), Flow::OneLine);
        }
    });
}

/// Each comment as a quote, its date on the quote's last line.
fn comments(out: &mut Out, node: &V, level: usize) {
    let comments = node.list("comments");
    if comments.is_empty() {
        note(out, "Comments", None);
        return;
    }
    for comment in comments {
        out.begin_block();
        out.within("> ", Sep::Blank, |out| {
            if let Some(rich) = comment.get("richText") {
                rich::blocks(out, rich, level);
            }
            if let Some(at) = comment.str("createdAt") {
                line(out, |out| out.text(&format!("— {at}"), Flow::OneLine));
            }
        });
        out.end_block();
    }
}

/// How many elements lie below `node`, nested boards' own included.
fn count(node: &V) -> usize {
    node.list("children").iter().map(|c| 1 + count(c)).sum()
}

/// The lines below `node` (a line's own children, which nothing else
/// writes): its descendants of type `LINE`, not those of boards nested in it.
fn board_lines<'d, 'a>(node: &'d V<'a>, into: &mut Vec<&'d V<'a>>) {
    for child in node.list("children") {
        match child.str("type") {
            Some("LINE") => into.push(child),
            Some("BOARD") => continue,
            _ => {}
        }
        board_lines(child, into);
    }
}

fn index<'d, 'a>(node: &'d V<'a>, into: &mut Labels<'d, 'a>) {
    if let Some(id) = node.str("id") {
        into.insert(id, node);
    }
    for child in node.list("children") {
        index(child, into);
    }
}

/// A line's end: the element it names (an id, or an object whose
/// `elementId` or `id` is one), a point, or `?`.
fn end_name(out: &mut Out, end: Option<&V>, labels: &Labels) {
    let Some(end) = end else {
        return out.text("?", Flow::OneLine);
    };
    let id = end
        .as_str()
        .or_else(|| end.str("elementId"))
        .or_else(|| end.str("id"));
    if let Some(id) = id {
        match labels.get(id) {
            Some(node) => out.text(&label(node), Flow::OneLine),
            None => out.text("an element not in this selection", Flow::OneLine),
        }
        return;
    }
    match (
        end.get("x").and_then(V::as_num),
        end.get("y").and_then(V::as_num),
    ) {
        (Some(x), Some(y)) => out.text(&format!("point ({x}, {y})"), Flow::OneLine),
        _ => out.text("?", Flow::OneLine),
    }
}

/// What names an element: its title, else the first words of its text,
/// else its type.
fn label(node: &V) -> String {
    if let Some(title) = node.str("title").filter(|t| !t.trim().is_empty()) {
        return title.to_owned();
    }
    let text = ["richText", "caption"]
        .iter()
        .find_map(|k| node.get(k).and_then(|r| r.str("plainText")))
        .or_else(|| node.str("url"));
    match text {
        Some(text) if !text.trim().is_empty() => {
            let mut words = text.split_whitespace();
            let mut label = words.by_ref().take(8).collect::<Vec<_>>().join(" ");
            if words.next().is_some() {
                label.push('…');
            }
            label
        }
        _ => kind_name(node.str("type").unwrap_or("element")).into_owned(),
    }
}

/// One block on one line, written by `write`.
fn line(out: &mut Out, write: impl FnOnce(&mut Out)) {
    out.begin_block();
    write(out);
    out.end_block();
}

/// An element with nothing else to show: `*What: detail*`.
fn note(out: &mut Out, what: &str, detail: Option<&str>) {
    line(out, |out| note_inline(out, what, detail));
}

fn note_inline(out: &mut Out, what: &str, detail: Option<&str>) {
    out.markup("*");
    out.text(what, Flow::OneLine);
    if let Some(detail) = detail {
        out.text(": ", Flow::OneLine);
        out.text(detail, Flow::OneLine);
    }
    out.markup("*");
}

/// `TASK_LIST` -> `Task list`: written for every element without a title,
/// so the types a board holds are named without an allocation.
fn kind_name(kind: &str) -> Cow<'static, str> {
    Cow::Borrowed(match kind {
        "BOARD" => "Board",
        "CARD" => "Card",
        "COLUMN" => "Column",
        "DOCUMENT" => "Document",
        "TASK" => "Task",
        "TASK_LIST" => "Task list",
        "LINK" => "Link",
        "IMAGE" => "Image",
        "FILE" => "File",
        "TABLE" => "Table",
        "LINE" => "Line",
        "COMMENT_THREAD" => "Comment thread",
        "COLOR_SWATCH" => "Color swatch",
        "SKETCH" => "Sketch",
        "ANNOTATION" => "Annotation",
        "UNKNOWN" => "Unknown",
        other => return Cow::Owned(spelled(other)),
    })
}

/// A type name spelled out: underscores as spaces, the first letter capital.
fn spelled(kind: &str) -> String {
    let mut name = kind.replace('_', " ").to_lowercase();
    if let Some(first) = name.get(..1) {
        let upper = first.to_uppercase();
        name.replace_range(..1, &upper);
    }
    name
}

fn file_name<'v>(node: &'v V) -> Option<&'v str> {
    let name = node.get("file").and_then(|f| f.str("filename"));
    name.filter(|n| !n.trim().is_empty())
}

/// A scalar as text (a date passes through as the provider sent it).
fn scalar(value: &V) -> Option<String> {
    match value {
        V::Str(s) if !s.trim().is_empty() => Some(s.to_string()),
        V::Num(n) => Some(n.to_string()),
        _ => None,
    }
}

/// `980 B`, `12.3 KiB`, `4.0 MiB`.
fn human_size(bytes: f64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024.0 {
        return format!("{bytes} B");
    }
    let mut size = bytes / 1024.0;
    let mut unit = 0;
    while size >= 1024.0 && unit < UNITS.len() - 1 {
        size /= 1024.0;
        unit += 1;
    }
    format!("{size:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_names_are_the_types_spelled_out() {
        for kind in [
            "BOARD",
            "CARD",
            "COLUMN",
            "DOCUMENT",
            "TASK",
            "TASK_LIST",
            "LINK",
            "IMAGE",
            "FILE",
            "TABLE",
            "LINE",
            "COMMENT_THREAD",
            "COLOR_SWATCH",
            "SKETCH",
            "ANNOTATION",
            "UNKNOWN",
        ] {
            assert!(matches!(kind_name(kind), Cow::Borrowed(_)), "{kind}");
            assert_eq!(kind_name(kind), spelled(kind), "{kind}");
        }
        assert_eq!(kind_name("NEW_KIND"), "New kind");
        assert_eq!(kind_name("element"), "Element");
    }
}

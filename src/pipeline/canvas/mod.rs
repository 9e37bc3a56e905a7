//! The board as a JSON Canvas 1.0 document (the open format Obsidian and
//! others read), for `GET {prefix}/canvas`: written from the compact JSON
//! of a sanitized full document, on the work pool, and cached like any
//! render ([`super::LoadedBoard::render_as`]).
//!
//! What becomes what (docs/api.md says it to clients; docs/decisions.md why):
//!
//! - the root board's elements become nodes in pixels: grid units times
//!   [`UNIT`], widths as stored or the web app's defaults, heights
//!   estimated from what the node shows (`layout`);
//! - cards, documents, tasks, task lists, tables, files, comment threads
//!   and the rest are `text` nodes holding their Markdown, written by the
//!   board's Markdown writer ([`super::markdown::element`]); images are
//!   `text` nodes holding a Markdown image;
//! - links to a web page are `link` nodes;
//! - columns are `group` nodes labelled with their title, their elements
//!   stacked inside;
//! - nested boards are `text` nodes with their title (their own elements
//!   are not drawn: each board is a canvas of its own);
//! - lines are edges between the nodes they join (an end at a point of the
//!   board gets a small empty node there); a line an end of which is not on
//!   this canvas is left out;
//! - colours are canvas colours (`style::canvas_color`);
//! - no permission id: URLs that carry one are dropped (`style::scrub`);
//! - finally, a node that overlaps another is moved down (`layout::settle`).
//!
//! The nodes follow the document's order, which is the board's stacking
//! order, as JSON Canvas wants (a group before what it holds).

mod layout;
mod read;
mod style;

pub use layout::UNIT;

use layout::Rect;
use read::{
    collect_lines, id, image_height, is_web_url, kind, markdown, number, position, shown,
    width_units,
};
use serde::Serialize;
use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// A board written as JSON Canvas: the document, and the name a download
/// of it takes.
#[derive(Debug, Clone, PartialEq)]
pub struct Canvas {
    /// The `.canvas` file: compact JSON.
    pub body: Vec<u8>,
    /// The board's title (a download is named [`file_name`] of it).
    pub title: String,
}

/// The JSON Canvas document of `doc`, the compact JSON of a sanitized full
/// document.
///
/// # Errors
/// `doc` is not JSON, nests deeper than serde_json allows, or an element
/// could not be read back for its Markdown (never, for a document the
/// pipeline wrote).
pub fn render(doc: &[u8]) -> Result<Canvas, serde_json::Error> {
    let doc: Value = serde_json::from_slice(doc)?;
    let board = doc.get("board").unwrap_or(&Value::Null);
    let mut writer = Writer::default();
    let children = shown(board);
    let mut lines = Vec::new();
    for child in &children {
        collect_lines(child, &mut lines);
    }
    let mut loose = Vec::new();
    for child in children {
        if kind(child) == "LINE" {
            continue;
        }
        match position(child) {
            Some((x, y)) => writer.top(child, x * UNIT, y * UNIT)?,
            None => loose.push(child),
        }
    }
    writer.loose(&loose)?;
    for line in lines {
        writer.edge(line);
    }
    writer.settle();
    let title = board
        .get("title")
        .and_then(Value::as_str)
        .unwrap_or("Untitled board")
        .to_owned();
    let body = serde_json::to_vec(&Document {
        nodes: &writer.nodes,
        edges: &writer.edges,
    })?;
    Ok(Canvas { body, title })
}

/// A download's file name for a board called `title`: `<title>.canvas`
/// with the characters no file system or header takes replaced by `_`,
/// those that hide or reorder what a reader sees dropped (controls, line
/// and paragraph separators, bidi overrides and isolates, zero-width and
/// other invisible format characters), at most 100 characters before the
/// extension; `board.canvas` when nothing is left. A name Windows reserves
/// for a device (`CON`, `PRN`, `AUX`, `NUL`, `COM1`-`COM9`, `LPT1`-`LPT9`,
/// in any case, before the first `.`) gets a leading `_`.
pub fn file_name(title: &str) -> String {
    let mut name: String = title
        .chars()
        .filter(|c| !is_hidden(*c))
        .map(|c| match c {
            '/' | '\\' | ':' | '*' | '?' | '"' | '<' | '>' | '|' | ';' | '%' => '_',
            c => c,
        })
        .take(100)
        .collect();
    name = name
        .trim_matches(|c: char| c.is_whitespace() || c == '.')
        .to_owned();
    if name.is_empty() {
        name.push_str("board");
    }
    if is_reserved(&name) {
        name.insert(0, '_');
    }
    name.push_str(".canvas");
    name
}

/// Characters a file name must not keep: controls, the line and paragraph
/// separators, and the invisible format characters (bidi marks, overrides
/// and isolates, zero-width characters, the BOM, soft hyphen, ...).
fn is_hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{00AD}'
                | '\u{034F}'
                | '\u{061C}'
                | '\u{115F}'
                | '\u{1160}'
                | '\u{17B4}'
                | '\u{17B5}'
                | '\u{180B}'..='\u{180F}'
                | '\u{200B}'..='\u{200F}'
                | '\u{2028}'..='\u{202E}'
                | '\u{2060}'..='\u{206F}'
                | '\u{3164}'
                | '\u{FE00}'..='\u{FE0F}'
                | '\u{FEFF}'
                | '\u{FFA0}'
                | '\u{FFF9}'..='\u{FFFB}'
                | '\u{1D173}'..='\u{1D17A}'
                | '\u{E0000}'..='\u{E0FFF}'
        )
}

/// Whether Windows reserves `name` for a device: its part before the first
/// `.` (trailing spaces aside) is `CON`, `PRN`, `AUX`, `NUL`, `COM1`-`COM9`
/// or `LPT1`-`LPT9`, in any case.
fn is_reserved(name: &str) -> bool {
    let stem = name
        .split('.')
        .next()
        .unwrap_or("")
        .trim_end()
        .to_ascii_uppercase();
    match stem.as_str() {
        "CON" | "PRN" | "AUX" | "NUL" => true,
        _ => {
            let b = stem.as_bytes();
            b.len() == 4
                && (stem.starts_with("COM") || stem.starts_with("LPT"))
                && (b'1'..=b'9').contains(&b[3])
        }
    }
}

#[derive(Serialize)]
struct Document<'a> {
    nodes: &'a [Node],
    edges: &'a [Edge],
}

/// One node as JSON Canvas writes it; `x`..`height` in whole pixels.
#[derive(Debug, Serialize)]
struct Node {
    id: String,
    #[serde(rename = "type")]
    kind: &'static str,
    x: i64,
    y: i64,
    width: i64,
    height: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    color: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    label: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Edge {
    id: String,
    from_node: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    from_end: Option<&'static str>,
    to_node: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    to_end: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    color: Option<String>,
}

/// The nodes and edges written so far.
#[derive(Default)]
struct Writer {
    nodes: Vec<Node>,
    edges: Vec<Edge>,
    /// Each top-level node: its index, and how many nodes it holds after
    /// it (a group's elements), which move with it.
    tops: Vec<(usize, usize)>,
    /// Which node shows each element of the board (an element folded into
    /// another's text, such as a task of a task list, names that node).
    shown_by: HashMap<String, usize>,
    /// The node ids taken: JSON Canvas wants them unique.
    taken: HashSet<String>,
    /// Where the elements placed so far end, for the loose ones below.
    bottom: f64,
    left: Option<f64>,
}

impl Writer {
    /// Adds `node`, its id made unique first (an element's id is unique in
    /// a document; an empty one, or a point's node named after its line,
    /// gets `-2`, `-3`, ... when taken); returns its index.
    fn push(&mut self, mut node: Node) -> usize {
        if node.id.is_empty() {
            node.id.push_str("node");
        }
        if self.taken.contains(&node.id) {
            let base = std::mem::take(&mut node.id);
            let mut n = 2;
            node.id = loop {
                let id = format!("{base}-{n}");
                if !self.taken.contains(&id) {
                    break id;
                }
                n += 1;
            };
        }
        self.taken.insert(node.id.clone());
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    /// A top-level element with its top-left corner at (`x`, `y`) px.
    fn top(&mut self, node: &Value, x: f64, y: f64) -> Result<(), serde_json::Error> {
        let first = self.nodes.len();
        let width = width_units(node) * UNIT;
        let height = if kind(node) == "COLUMN" {
            self.group(node, x, y, width)?
        } else {
            self.element(node, x, y, width)?
        };
        self.tops.push((first, self.nodes.len() - first - 1));
        self.bottom = self.bottom.max(y + height);
        self.left = Some(self.left.map_or(x, |l| l.min(x)));
        Ok(())
    }

    /// The elements with no place on the canvas (the board's unsorted
    /// tray, an answer without positions): in a row below the rest.
    fn loose(&mut self, nodes: &[&Value]) -> Result<(), serde_json::Error> {
        let y = if self.tops.is_empty() {
            0.0
        } else {
            self.bottom + 80.0
        };
        let mut x = self.left.unwrap_or(0.0);
        for node in nodes {
            self.top(node, x, y)?;
            x += width_units(node) * UNIT + 40.0;
        }
        Ok(())
    }

    /// A column: a group around its elements, stacked inside it in reading
    /// order; returns its height.
    fn group(
        &mut self,
        column: &Value,
        x: f64,
        y: f64,
        width: f64,
    ) -> Result<f64, serde_json::Error> {
        let index = self.push(Node {
            label: Some(
                column
                    .get("title")
                    .and_then(Value::as_str)
                    .unwrap_or("Column")
                    .to_owned(),
            ),
            ..node(column, "group", x, y, width, 0.0)
        });
        self.shown_by.insert(id(column).to_owned(), index);
        let mut held = shown(column);
        held.retain(|c| kind(c) != "LINE");
        held.sort_by_key(|c| {
            let index = c
                .get("location")
                .and_then(|l| l.get("position"))
                .and_then(|p| p.get("index"))
                .and_then(Value::as_f64)
                .unwrap_or(f64::MAX);
            (index * 1024.0) as i64
        });
        let inner = width - 2.0 * layout::GROUP_PAD;
        let mut at = y + layout::GROUP_PAD;
        for child in held {
            at += self.element(child, x + layout::GROUP_PAD, at, inner)? + layout::GROUP_PAD;
        }
        let height = (at - y).max(80.0);
        self.nodes[index].height = height.round() as i64;
        Ok(height)
    }

    /// One element as a `link` or `text` node at (`x`, `y`), `width` px
    /// wide; returns its height.
    fn element(
        &mut self,
        element: &Value,
        x: f64,
        y: f64,
        width: f64,
    ) -> Result<f64, serde_json::Error> {
        let kind_name = kind(element);
        let stored = layout::stored_units(element.get("height")).map(|h| h * UNIT);
        let url = (kind_name == "LINK")
            .then(|| element.get("url").and_then(Value::as_str))
            .flatten()
            .filter(|u| is_web_url(u) && !style::carries_permission(u));
        let node = match url {
            Some(url) => {
                let height = stored.unwrap_or(width * 0.6);
                Node {
                    url: Some(url.to_owned()),
                    ..node(element, "link", x, y, width, height)
                }
            }
            None => {
                let text = markdown(element)?;
                let image = image_height(element, width);
                let height = stored.unwrap_or_else(|| layout::text_height(&text, width, image));
                Node {
                    text: Some(text),
                    ..node(element, "text", x, y, width, height)
                }
            }
        };
        let height = node.height as f64;
        let index = self.push(node);
        self.fold(element, index);
        Ok(height)
    }

    /// Notes that `element` and everything it holds (a task list's tasks,
    /// an attached thread) are shown by node `index`.
    fn fold(&mut self, element: &Value, index: usize) {
        self.shown_by.insert(id(element).to_owned(), index);
        if kind(element) == "BOARD" {
            return;
        }
        for child in shown(element) {
            self.fold(child, index);
        }
    }

    /// A line as an edge, when both its ends are on this canvas.
    fn edge(&mut self, line: &Value) {
        let line_id = id(line);
        let (Some(from), Some(to)) = (self.end(line, "start"), self.end(line, "end")) else {
            return;
        };
        let style = line.get("lineStyle");
        let flag = |key| style.and_then(|s| s.get(key)).and_then(Value::as_bool);
        self.edges.push(Edge {
            id: line_id.to_owned(),
            from_node: from,
            from_end: (flag("startArrow") == Some(true)).then_some("arrow"),
            to_node: to,
            to_end: (flag("endArrow") == Some(false)).then_some("none"),
            color: style
                .and_then(|s| s.get("color"))
                .and_then(Value::as_str)
                .and_then(style::canvas_color),
        });
    }

    /// The node a line's end (`key`, `start` or `end`) names: an element
    /// shown on this canvas (its id, or an object whose `elementId` or `id`
    /// is one), or a new small node, `<line id>-<key>`, at a point of the
    /// board.
    fn end(&mut self, line: &Value, key: &str) -> Option<String> {
        let end = line.get(key)?;
        let named = end
            .as_str()
            .or_else(|| end.get("elementId").and_then(Value::as_str))
            .or_else(|| end.get("id").and_then(Value::as_str));
        if let Some(element) = named {
            let index = *self.shown_by.get(element)?;
            return Some(self.nodes[index].id.clone());
        }
        let (x, y) = (number(end.get("x")?)?, number(end.get("y")?)?);
        let first = self.push(Node {
            id: format!("{}-{key}", id(line)),
            kind: "text",
            x: (x * UNIT - 10.0).round() as i64,
            y: (y * UNIT - 10.0).round() as i64,
            width: 20,
            height: 20,
            color: None,
            text: Some(String::new()),
            url: None,
            label: None,
        });
        self.tops.push((first, 0));
        Some(self.nodes[first].id.clone())
    }

    /// Moves top-level nodes (a group with what it holds) down until none
    /// overlaps another.
    fn settle(&mut self) {
        let rects: Vec<Rect> = self
            .tops
            .iter()
            .map(|&(i, _)| {
                let n = &self.nodes[i];
                // Canvas apps draw a group's label above its box: keep
                // room for it.
                let label = if n.label.is_some() {
                    layout::LABEL
                } else {
                    0.0
                };
                Rect {
                    x: n.x as f64,
                    y: n.y as f64 - label,
                    w: n.width as f64,
                    h: n.height as f64 + label,
                }
            })
            .collect();
        let moved = layout::settle(&rects);
        for (&(first, held), dy) in self.tops.iter().zip(moved) {
            let dy = dy.round() as i64;
            for node in &mut self.nodes[first..=first + held] {
                node.y += dy;
            }
        }
    }
}

/// A node of `kind` for `element` at (`x`, `y`), `width` × `height` px,
/// coloured as the element is.
fn node(element: &Value, kind: &'static str, x: f64, y: f64, width: f64, height: f64) -> Node {
    let color = ["background", "color"]
        .iter()
        .find_map(|k| element.get(*k).and_then(Value::as_str))
        .and_then(style::canvas_color);
    Node {
        id: id(element).to_owned(),
        kind,
        x: x.round() as i64,
        y: y.round() as i64,
        width: width.round().max(1.0) as i64,
        height: height.round().max(1.0) as i64,
        color,
        text: None,
        url: None,
        label: None,
    }
}

#[cfg(test)]
mod tests;

//! Search in a loaded board: which elements hold a piece of text, across the
//! board and the nested boards loaded with it, in reading order.
//!
//! What is searched, per element: its title, the plain text of its rich
//! text (cards, tasks, documents), a link's or swatch's caption, a link's
//! URL, an image's or file's file name, the cells of a table and the
//! comments of a thread. Matching is case-insensitive by Unicode's case
//! mapping (`ß`, `İ`, Greek and Cyrillic included): both sides are
//! lower-cased character by character, and a match is mapped back to the
//! original text for its snippet. Text is not otherwise normalized (a
//! composed `é` does not match a decomposed one).
//!
//! Each matching element is counted once, at its first matching field (in
//! the order above); the first `limit` in reading order are listed with the
//! path of titles from the root board to their parent and a short snippet.
//!
//! CPU work over the whole document: callers run it on the work pool and
//! cache the answer. The document is read with borrowed strings and the
//! walk keeps its own stack (no recursion), so a deep board costs memory in
//! proportion to its depth, not the thread's stack.

use crate::document::reading::{number, reading_order, ReadingKey};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::HashMap;

/// Longest query accepted, in characters.
pub const MAX_QUERY_CHARS: usize = 256;
/// Matches listed when the caller names no limit.
pub const DEFAULT_LIMIT: usize = 20;
/// Most matches listed in one answer.
pub const MAX_LIMIT: usize = 100;
/// Characters of context on each side of a match in its snippet.
const CONTEXT_CHARS: usize = 60;
/// Characters of an untitled element's text that name it in a path.
const LABEL_CHARS: usize = 40;

/// What a search found.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Found {
    pub board: BoardRef,
    pub query: String,
    /// Every matching element, listed or not.
    pub total: usize,
    /// The first `limit` matches in reading order.
    pub matches: Vec<Match>,
    /// Nested boards that were not loaded, so not searched.
    pub unloaded_boards: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BoardRef {
    pub id: String,
    pub title: String,
}

/// One matching element.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Match {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    /// Titles (or first words) from the root board to the element's parent;
    /// for the root board itself, its own title.
    pub path: Vec<String>,
    /// The board that holds the element (the root board's id for the root
    /// itself): what to read to see it in context.
    #[serde(rename = "boardId")]
    pub board_id: String,
    /// Where the text was found: `title`, `text`, `caption`, `url`,
    /// `fileName`, `table` or `comment`.
    pub field: &'static str,
    /// The match with some text around it, on one line.
    pub snippet: String,
}

/// The document could not be read (a bug: the cache holds what the
/// pipeline wrote).
#[derive(Debug)]
pub struct SearchError(serde_json::Error);

impl std::fmt::Display for SearchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "board document not searchable: {}", self.0)
    }
}

impl std::error::Error for SearchError {}

/// Searches `doc` (the compact JSON of a sanitized full document) for
/// `query` (already trimmed, non-empty), listing at most `limit` matches.
/// A field of another type than a document's counts as absent, and an
/// element that is not an object, or names a member twice, is left out
/// (see `readable`): any document the fleet tier's check accepts is
/// searched. Each element is read by a parser of its own, so the reader's
/// depth follows the document's; elements nested deeper than
/// [`MAX_NESTED`] are left out (no document the service writes or the
/// fleet tier accepts has them), so no input overflows a stack.
///
/// # Errors
/// [`SearchError`] when `doc` is not a board document.
pub fn search(doc: &[u8], query: &str, limit: usize) -> Result<Found, SearchError> {
    let members: Members<'_> = serde_json::from_slice(doc).map_err(SearchError)?;
    let root: Node<'_> = members
        .get("board")
        .and_then(|board| serde_json::from_str(board.get()).ok())
        .unwrap_or_default();
    let root = &root;
    let needle = query.to_lowercase();
    let mut found = Found {
        board: BoardRef {
            id: root.id.to_string(),
            title: root.title.as_deref().unwrap_or_default().to_owned(),
        },
        query: query.to_owned(),
        total: 0,
        matches: Vec::new(),
        unloaded_boards: 0,
    };
    let mut path: Vec<String> = Vec::new();
    // `owners[k]`: the innermost board on the path down to (and with) the
    // element at depth `k`.
    let mut owners: Vec<&str> = Vec::new();
    // Pre-order: an element, then its children in reading order.
    let mut stack: Vec<(&Node<'_>, usize)> = vec![(root, 0)];
    while let Some((node, depth)) = stack.pop() {
        path.truncate(depth);
        owners.truncate(depth);
        let holder = owners.last().copied().unwrap_or(&root.id);
        if node.kind == "BOARD" && node.children_loaded == Some(false) {
            found.unloaded_boards += 1;
        }
        if let Some((field, snippet)) = first_match(node, &needle) {
            found.total += 1;
            if found.matches.len() < limit {
                found.matches.push(Match {
                    id: node.id.to_string(),
                    kind: node.kind.to_string(),
                    // The root board itself has no parent: its own
                    // title (or first words) is its path, never an empty one.
                    path: if depth == 0 {
                        vec![node.label()]
                    } else {
                        path.clone()
                    },
                    board_id: holder.to_owned(),
                    field,
                    snippet,
                });
            }
        }
        path.push(node.label());
        owners.push(if node.kind == "BOARD" {
            &node.id
        } else {
            holder
        });
        let keys: Vec<ReadingKey> = node.children.iter().map(Node::reading_key).collect();
        for i in reading_order(&keys).into_iter().rev() {
            stack.push((&node.children[i], depth + 1));
        }
    }
    Ok(found)
}

/// The fields of `node` that hold text, in the order they are searched.
fn texts<'n>(node: &'n Node<'_>) -> impl Iterator<Item = (&'static str, &'n str)> {
    let one = |field: &'static str, text: Option<&'n str>| text.map(|t| (field, t));
    let file = node.file.as_ref().and_then(|f| f.filename.as_ref());
    let cells = node.table.iter().flat_map(|t| t.rows.iter().flatten());
    one("title", node.title.as_deref())
        .into_iter()
        .chain(one("text", node.rich_text.as_ref().map(Text::plain)))
        .chain(one("caption", node.caption.as_ref().map(Text::plain)))
        .chain(one("url", node.url.as_deref()))
        .chain(one("fileName", file.and_then(Value::as_str)))
        .chain(cells.filter_map(|c| c.text()).map(|t| ("table", t)))
        .chain(
            node.comments
                .iter()
                .filter_map(|c| c.rich_text.as_ref())
                .map(|t| ("comment", t.plain())),
        )
}

/// The first field of `node` that holds `needle` (lower-cased), with its snippet.
fn first_match(node: &Node<'_>, needle: &str) -> Option<(&'static str, String)> {
    texts(node).find_map(|(field, text)| {
        let (start, end) = find_caseless(text, needle)?;
        Some((field, snippet(text, start, end)))
    })
}

/// Where `needle` (lower-cased) is in `text`, case-insensitively: the byte
/// range in `text`.
fn find_caseless(text: &str, needle: &str) -> Option<(usize, usize)> {
    if needle.is_empty() {
        return None;
    }
    // Each byte of the lower-cased text remembers where its character
    // started in `text`; one more entry for the end.
    let mut lower = String::with_capacity(text.len());
    let mut origin = Vec::with_capacity(text.len() + 1);
    for (at, c) in text.char_indices() {
        let before = lower.len();
        lower.extend(c.to_lowercase());
        origin.resize(origin.len() + (lower.len() - before), at);
    }
    origin.push(text.len());
    let start = lower.find(needle)?;
    let end = start + needle.len();
    // A match that ends inside one character's lower-case expansion takes
    // the whole character: it ends where the next character starts.
    let last = origin[end - 1];
    let end_at = origin[end..]
        .iter()
        .copied()
        .find(|&o| o != last)
        .unwrap_or(text.len());
    Some((origin[start], end_at))
}

/// The match at `start..end` of `text` with up to [`CONTEXT_CHARS`] on each
/// side, whitespace runs as one space, `…` where text was cut.
fn snippet(text: &str, start: usize, end: usize) -> String {
    let before: Vec<(usize, char)> = text[..start].char_indices().collect();
    let from = before
        .len()
        .checked_sub(CONTEXT_CHARS)
        .map_or(0, |i| before[i].0);
    let to = text[end..]
        .char_indices()
        .nth(CONTEXT_CHARS)
        .map_or(text.len(), |(i, _)| end + i);
    let mut out = String::with_capacity(to - from + 8);
    if from > 0 {
        out.push('…');
    }
    let mut space = false;
    for c in text[from..to].chars() {
        if c.is_whitespace() {
            space = true;
            continue;
        }
        if space && !out.is_empty() && !out.ends_with('…') {
            out.push(' ');
        }
        space = false;
        out.push(c);
    }
    if to < text.len() {
        out.push('…');
    }
    out
}

/// The top-level members of a document, as a map: a member named twice
/// (never written by this service) is read once, the last, rather than
/// failing the search as a struct would.
type Members<'a> = HashMap<Cow<'a, str>, &'a RawValue>;

/// An element as the search reads it: the members of another type, or an
/// object that names a member twice, read as the default (nothing).
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Node<'a> {
    #[serde(borrow, default, deserialize_with = "readable")]
    id: Cow<'a, str>,
    #[serde(rename = "type", borrow, default, deserialize_with = "readable")]
    kind: Cow<'a, str>,
    #[serde(borrow, default, deserialize_with = "readable")]
    title: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "readable")]
    rich_text: Option<Text<'a>>,
    #[serde(borrow, default, deserialize_with = "readable")]
    caption: Option<Text<'a>>,
    #[serde(borrow, default, deserialize_with = "readable")]
    url: Option<Cow<'a, str>>,
    #[serde(default, deserialize_with = "readable")]
    file: Option<FileRef>,
    #[serde(borrow, default, deserialize_with = "readable")]
    table: Option<Table<'a>>,
    #[serde(borrow, default, deserialize_with = "readable_items")]
    comments: Vec<Comment<'a>>,
    #[serde(borrow, default, deserialize_with = "readable")]
    location: Option<Location<'a>>,
    #[serde(default, deserialize_with = "readable")]
    children_loaded: Option<bool>,
    #[serde(borrow, default, deserialize_with = "nested_nodes")]
    children: Vec<Node<'a>>,
}

/// How deep elements are read: each is at least two containers below its
/// parent (a `children` array, then the element), so a document within
/// the walks' bound (`select::stream::MAX_DEPTH`, 127 containers) nests
/// fewer than this.
pub const MAX_NESTED: usize = crate::select::stream::MAX_DEPTH / 2 + 1;

thread_local! {
    /// Elements being read on this thread, outermost first.
    static NESTED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// An element's `children`, read as [`readable_items`] reads a list, one
/// level deeper; none past [`MAX_NESTED`]. Each element is read by a fresh
/// parser, whose own depth limit starts again, so this count is what
/// bounds the reader's recursion.
fn nested_nodes<'de, D>(d: D) -> Result<Vec<Node<'de>>, D::Error>
where
    D: Deserializer<'de>,
{
    /// Restores the count however the read ends.
    struct Level(usize);
    impl Drop for Level {
        fn drop(&mut self) {
            NESTED.set(self.0);
        }
    }
    let depth = NESTED.get();
    if depth >= MAX_NESTED {
        <&'de RawValue>::deserialize(d)?;
        return Ok(Vec::new());
    }
    let _level = Level(depth);
    NESTED.set(depth + 1);
    readable_items(d)
}

impl Node<'_> {
    /// How the element is named in a path: its title, else its first words,
    /// else its type.
    fn label(&self) -> String {
        if let Some(title) = self.title.as_deref().filter(|t| !t.trim().is_empty()) {
            return title.trim().to_owned();
        }
        let text = self.rich_text.as_ref().map_or("", Text::plain);
        let words: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
        if words.is_empty() {
            return self.kind.to_string();
        }
        match words.char_indices().nth(LABEL_CHARS) {
            Some((i, _)) => format!("{}…", &words[..i]),
            None => words,
        }
    }

    fn reading_key(&self) -> ReadingKey {
        let location = self.location.as_ref();
        let position = location.and_then(|l| l.position.as_ref());
        let coord =
            |pick: fn(&Position) -> Option<&Value>| position.and_then(pick).and_then(number);
        ReadingKey::new(
            location.and_then(|l| l.section.as_deref()),
            coord(|p| p.x.as_ref()),
            coord(|p| p.y.as_ref()),
            coord(|p| p.index.as_ref()),
        )
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Text<'a> {
    #[serde(borrow, default, deserialize_with = "readable")]
    plain_text: Cow<'a, str>,
}

/// A field as this reader types it, or its default when the document holds
/// something else there: a document read back from the fleet tier is
/// checked for its structure, not for the type of every field (a node of
/// another version may write another shape), and a search must not fail
/// on it.
fn readable<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    let raw = <&'de RawValue>::deserialize(d)?;
    Ok(serde_json::from_str(raw.get()).unwrap_or_default())
}

/// A list as [`readable`] reads a field, item by item: an item that cannot
/// be read is left out (with what is below it), the others are kept.
fn readable_items<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    let raw = <&'de RawValue>::deserialize(d)?;
    let items: Vec<&'de RawValue> = serde_json::from_str(raw.get()).unwrap_or_default();
    Ok(items
        .into_iter()
        .filter_map(|item| serde_json::from_str(item.get()).ok())
        .collect())
}

impl Text<'_> {
    fn plain(&self) -> &str {
        &self.plain_text
    }
}

#[derive(Deserialize)]
struct FileRef {
    #[serde(default)]
    filename: Option<Value>,
}

#[derive(Deserialize)]
struct Table<'a> {
    #[serde(borrow, default, deserialize_with = "readable")]
    rows: Vec<Vec<Cell<'a>>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Cell<'a> {
    #[serde(default)]
    value: Option<Value>,
    #[serde(borrow, default, deserialize_with = "readable")]
    rich_text: Option<Text<'a>>,
}

impl Cell<'_> {
    fn text(&self) -> Option<&str> {
        match (&self.rich_text, &self.value) {
            (Some(t), _) if !t.plain_text.is_empty() => Some(t.plain()),
            (_, Some(Value::String(s))) => Some(s),
            _ => None,
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Comment<'a> {
    #[serde(borrow, default, deserialize_with = "readable")]
    rich_text: Option<Text<'a>>,
}

#[derive(Deserialize)]
struct Location<'a> {
    #[serde(borrow, default, deserialize_with = "readable")]
    section: Option<Cow<'a, str>>,
    #[serde(default, deserialize_with = "readable")]
    position: Option<Position>,
}

#[derive(Deserialize)]
struct Position {
    #[serde(default)]
    x: Option<Value>,
    #[serde(default)]
    y: Option<Value>,
    #[serde(default)]
    index: Option<Value>,
}

#[cfg(test)]
mod tests;

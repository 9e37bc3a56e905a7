//! What changed between two versions of a board: [`compare`] reads two
//! sanitized full documents flat ([`flat`]) and matches their elements by
//! id, nested boards included. The API's `/changes` endpoint and the MCP
//! `board_changes` tool answer with it, as JSON or as Markdown
//! ([`markdown`]).
//!
//! - **added**: an id only in the newer version; **removed**: only in the
//!   older one;
//! - **changed**: in both, with a field that differs (`fields` names them:
//!   the document's own member names, `position` for the place on the
//!   canvas, `location.<name>` for the rest of `location`); the element's
//!   times (`timestamps`) are not compared: they change with every edit
//!   and say nothing a field does not;
//! - **moved**: in both, under another parent or in another section.
//!
//! An element can be both changed and moved. Added, changed and moved are
//! listed in the newer version's reading order, removed in the older
//! one's, each with the path of titles from the root board to its parent.
//!
//! CPU work over two whole documents: callers run it on the work pool and
//! cache the answer.

pub mod flat;
pub mod markdown;

use flat::{Element, Flat};
use serde::Serialize;

#[cfg(any(test, feature = "internals"))]
pub use flat::Unreadable;

/// The changes from one version of a board to another.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Changes {
    pub board_id: String,
    /// The older version's token (`since`).
    pub from: String,
    /// The newer version's token (the board now).
    pub to: String,
    /// Whether both versions held every nested board: when not, elements of
    /// a nested board loaded in one version only show as added or removed.
    pub complete: bool,
    pub added: Vec<Entry>,
    pub removed: Vec<Entry>,
    pub changed: Vec<Entry>,
    pub moved: Vec<Entry>,
}

/// One element in a list of [`Changes`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Entry {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    /// Its title, or its first words.
    pub title: String,
    /// Titles from the root board to its parent (empty for the root).
    pub path: Vec<String>,
    /// `changed` only: which fields differ.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fields: Option<Vec<String>>,
    /// `moved` only: where it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<Place>,
    /// `moved` only: where it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<Place>,
}

/// Where an element sits: its parent's id and its section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Place {
    pub parent_id: Option<String>,
    pub section: Option<String>,
}

impl Changes {
    /// No change from `version` to itself, for the board `board_id`.
    pub fn none(board_id: &str, version: &str, complete: bool) -> Changes {
        Changes {
            board_id: board_id.to_owned(),
            from: version.to_owned(),
            to: version.to_owned(),
            complete,
            added: Vec::new(),
            removed: Vec::new(),
            changed: Vec::new(),
            moved: Vec::new(),
        }
    }

    /// Whether no element was added, removed, changed or moved.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty()
            && self.removed.is_empty()
            && self.changed.is_empty()
            && self.moved.is_empty()
    }
}

/// Compares `older` (version `from`) with `newer` (version `to`), both the
/// compact JSON of a sanitized full document of one board.
///
/// # Errors
/// [`Unreadable`] when either is not a board document.
// The service reads each side itself (`/changes` and a watch run check the
// kept side's board first): only the tests and benches compare bytes.
#[cfg(any(test, feature = "internals"))]
pub fn compare(older: &[u8], from: &str, newer: &[u8], to: &str) -> Result<Changes, Unreadable> {
    let old = flat::read(older)?;
    let new = flat::read(newer)?;
    Ok(compare_flat(&old, from, &new, to))
}

/// [`compare`] on boards already read.
pub fn compare_flat(old: &Flat<'_>, from: &str, new: &Flat<'_>, to: &str) -> Changes {
    let complete =
        !old.elements.iter().any(|e| e.unloaded) && !new.elements.iter().any(|e| e.unloaded);
    let mut changes = Changes::none(&new.board_id, from, complete);
    changes.to = to.to_owned();
    let mut new_paths = Paths::new(new);
    let mut old_paths = Paths::new(old);
    for (at, element) in new.elements.iter().enumerate() {
        let key = element.key;
        let Some(&was) = old.by_id.get(key) else {
            changes.added.push(new_paths.entry(at));
            continue;
        };
        let before = &old.elements[was];
        let fields = differing(before, element);
        if !fields.is_empty() {
            let mut entry = new_paths.entry(at);
            entry.fields = Some(fields);
            changes.changed.push(entry);
        }
        let from = place(old, before);
        let to = place(new, element);
        if from != to {
            let mut entry = new_paths.entry(at);
            entry.from = Some(from);
            entry.to = Some(to);
            changes.moved.push(entry);
        }
    }
    for at in 0..old.elements.len() {
        if !new.by_id.contains_key(old.elements[at].key) {
            changes.removed.push(old_paths.entry(at));
        }
    }
    changes
}

/// The names of the fields that differ, each once, in the newer element's
/// order, then those only the older one has. While both elements' fields
/// have the same names in the same order (as the service writes them),
/// fields are compared pair by pair; from the first that does not, by
/// name: the first field of a name on each side (as [`Element::field`]).
fn differing(before: &Element<'_>, after: &Element<'_>) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let mut note = |name: &str| {
        if !names.iter().any(|n| n == name) {
            names.push(name.to_owned());
        }
    };
    // Whether every field so far sits at its own index in both.
    let mut aligned = before.fields.len() == after.fields.len();
    for (at, (name, value)) in after.fields.iter().enumerate() {
        let old = match before.fields.get(at) {
            Some((same, v)) if aligned && same == name => Some(*v),
            _ => {
                aligned = false;
                if after.fields[..at].iter().any(|(n, _)| n == name) {
                    // A later field of a name already compared.
                    continue;
                }
                before.field(name)
            }
        };
        if old.map(|v| v.get()) != Some(value.get()) {
            note(name);
        }
    }
    if !aligned {
        for (name, _) in &before.fields {
            if after.field(name).is_none() {
                note(name);
            }
        }
    }
    names
}

fn place(flat: &Flat<'_>, element: &Element<'_>) -> Place {
    Place {
        parent_id: element.parent.map(|p| flat.elements[p].id.to_string()),
        section: element.section.as_ref().map(|s| s.to_string()),
    }
}

/// Entries with their paths; labels are made once per element that needs
/// one (a reported element, or the parent of one).
struct Paths<'f, 'a> {
    flat: &'f Flat<'a>,
    labels: Vec<Option<String>>,
}

impl<'f, 'a> Paths<'f, 'a> {
    fn new(flat: &'f Flat<'a>) -> Self {
        Paths {
            flat,
            labels: vec![None; flat.elements.len()],
        }
    }

    fn label(&mut self, at: usize) -> String {
        if let Some(label) = &self.labels[at] {
            return label.clone();
        }
        let label = self.flat.elements[at].label();
        self.labels[at] = Some(label.clone());
        label
    }

    fn entry(&mut self, at: usize) -> Entry {
        let mut path = Vec::new();
        let mut up = self.flat.elements[at].parent;
        // Parents come before their children in the list, so this ends.
        while let Some(p) = up.filter(|&p| p < at) {
            path.push(self.label(p));
            up = self.flat.elements[p].parent;
        }
        path.reverse();
        let element = &self.flat.elements[at];
        Entry {
            id: element.id.to_string(),
            kind: element.kind.to_string(),
            title: self.label(at),
            path,
            fields: None,
            from: None,
            to: None,
        }
    }
}

/// The answer to "what changed since `from`" for the board `board_id`,
/// now `newer` (version `to`), rendered for the endpoint named `scope` as
/// `representation`: `older` is the kept document of version `from`, or
/// `None` when `from` is `to`. `None` when `older` is not a document of
/// `board_id` (a value kept under another board's key): not a version of
/// this board. The ETag covers the representation, the endpoint, `from`
/// and the body. CPU work: callers run it on the work pool.
///
/// # Errors
/// A message for the log when `newer` is not a board document (a bug).
pub fn answer(
    scope: &str,
    representation: super::Representation,
    board_id: &str,
    older: Option<&[u8]>,
    from: &str,
    newer: &[u8],
    to: &str,
) -> Result<Option<super::Rendered>, String> {
    let new = flat::read(newer).map_err(|e| e.to_string())?;
    let changes = match older {
        None => {
            let complete = !new.elements.iter().any(|e| e.unloaded);
            let mut none = Changes::none(board_id, from, complete);
            none.to = to.to_owned();
            none
        }
        Some(older) => match flat::read(older) {
            Ok(old) if old.board_id == board_id => compare_flat(&old, from, &new, to),
            // Unreadable (though it hashed to its token) or another board's.
            _ => return Ok(None),
        },
    };
    let rendered = match representation {
        // No canvas of changes: anything but Markdown is JSON.
        super::Representation::Json | super::Representation::Canvas => {
            let data = serde_json::to_value(&changes).map_err(|e| e.to_string())?;
            super::render::render(scope, from, &data).map_err(|e| e.to_string())?
        }
        super::Representation::Markdown => {
            let title = new.elements.first().map(Element::label).unwrap_or_default();
            super::render::markdown_rendered(scope, from, markdown::render(&changes, &title))
        }
    };
    Ok(Some(rendered))
}

#[cfg(test)]
mod tests;

//! What changed between two versions of a board: [`compare`] reads two
//! sanitized full documents flat ([`flat`]) and matches their elements by
//! id, nested boards included. The API's `/changes` endpoint and the MCP
//! `board_changes` tool answer with it, as JSON or as Markdown
//! ([`markdown`]); a board's feed lists it between each pair of its kept
//! versions ([`feed`]).
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
//! one's, each with its parent's id.
//!
//! **Bounded**: the answer grows with the board, not with its depth. Each
//! entry names its parent (`parentId`), and every parent an entry needs is
//! listed once in `parents` (its type, title and own parent): a path of
//! titles is followed there, never repeated per entry. Each list holds at
//! most [`MAX_LIST`] entries; `counts` gives every list's full length and
//! `truncated` says when one was cut.
//!
//! CPU work over two whole documents: callers run it on the work pool and
//! cache the answer.

pub mod feed;
pub mod flat;
pub mod markdown;

use flat::{Element, Flat};
use serde::Serialize;

#[cfg(any(test, feature = "internals"))]
pub use flat::Unreadable;

/// Entries listed at most per kind; past it the list is cut (`truncated`)
/// and `counts` still says how many there were.
pub const MAX_LIST: usize = 1000;

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
    /// Whether a list was cut at [`MAX_LIST`] (or, in a webhook, to fit
    /// its body's bound).
    pub truncated: bool,
    /// How many entries each list has in full.
    pub counts: Counts,
    pub added: Vec<Entry>,
    pub removed: Vec<Entry>,
    pub changed: Vec<Entry>,
    pub moved: Vec<Entry>,
    /// Every parent an entry (or another parent) names, once: follow
    /// `parentId` up to the root board for an entry's path.
    pub parents: Vec<Parent>,
}

/// The full length of each list of [`Changes`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub added: usize,
    pub removed: usize,
    pub changed: usize,
    pub moved: usize,
}

/// An element that holds an entry (a board, a column, a group), listed
/// once in [`Changes::parents`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Parent {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    /// Its title, or its first words.
    pub title: String,
    /// Its own parent (`None` for the root board).
    pub parent_id: Option<String>,
}

/// One element in a list of [`Changes`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    /// Its title, or its first words.
    pub title: String,
    /// The element that holds it (in [`Changes::parents`]); `None` for the
    /// root board.
    pub parent_id: Option<String>,
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
            truncated: false,
            counts: Counts::default(),
            added: Vec::new(),
            removed: Vec::new(),
            changed: Vec::new(),
            moved: Vec::new(),
            parents: Vec::new(),
        }
    }

    /// The titles from the root board to `entry`'s parent, read from
    /// [`Changes::parents`] (at most [`MAX_LIST`] steps: a table that loops
    /// ends there).
    pub fn path(&self, entry: &Entry) -> Vec<&str> {
        let mut path = Vec::new();
        let mut up = entry.parent_id.as_deref();
        while let Some(id) = up {
            let Some(parent) = self.parents.iter().find(|p| p.id == id) else {
                break;
            };
            if path.len() >= MAX_LIST {
                break;
            }
            path.push(parent.title.as_str());
            up = parent.parent_id.as_deref();
        }
        path.reverse();
        path
    }

    /// Cuts every list to `max` entries, recording the full counts and
    /// whether anything was cut; parents no entry needs any more go too.
    pub fn truncate(&mut self, max: usize) {
        for list in [
            &mut self.added,
            &mut self.removed,
            &mut self.changed,
            &mut self.moved,
        ] {
            if list.len() > max {
                list.truncate(max);
                self.truncated = true;
            }
        }
        self.keep_needed_parents();
    }

    /// Drops the parents that no entry (nor a parent of one) names.
    fn keep_needed_parents(&mut self) {
        let mut needed: std::collections::HashSet<&str> = std::collections::HashSet::new();
        let mut stack: Vec<&str> = [&self.added, &self.removed, &self.changed, &self.moved]
            .into_iter()
            .flat_map(|l| l.iter().filter_map(|e| e.parent_id.as_deref()))
            .collect();
        let by_id: std::collections::HashMap<&str, &Parent> =
            self.parents.iter().map(|p| (p.id.as_str(), p)).collect();
        while let Some(id) = stack.pop() {
            if needed.insert(id) {
                if let Some(up) = by_id.get(id).and_then(|p| p.parent_id.as_deref()) {
                    stack.push(up);
                }
            }
        }
        let needed: std::collections::HashSet<String> =
            needed.into_iter().map(str::to_owned).collect();
        self.parents.retain(|p| needed.contains(&p.id));
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
    let mut counts = Counts::default();
    let mut parents = Parents::default();
    for (at, element) in new.elements.iter().enumerate() {
        let key = element.key;
        let Some(&was) = old.by_id.get(key) else {
            counts.added += 1;
            if changes.added.len() < MAX_LIST {
                changes.added.push(parents.entry(new, at));
            }
            continue;
        };
        let before = &old.elements[was];
        let fields = differing(before, element);
        if !fields.is_empty() {
            counts.changed += 1;
            if changes.changed.len() < MAX_LIST {
                let mut entry = parents.entry(new, at);
                entry.fields = Some(fields);
                changes.changed.push(entry);
            }
        }
        let from = place(old, before);
        let to = place(new, element);
        if from != to {
            counts.moved += 1;
            if changes.moved.len() < MAX_LIST {
                let mut entry = parents.entry(new, at);
                entry.from = Some(from);
                entry.to = Some(to);
                changes.moved.push(entry);
            }
        }
    }
    for at in 0..old.elements.len() {
        if !new.by_id.contains_key(old.elements[at].key) {
            counts.removed += 1;
            if changes.removed.len() < MAX_LIST {
                changes.removed.push(parents.entry(old, at));
            }
        }
    }
    changes.truncated = counts.added > MAX_LIST
        || counts.removed > MAX_LIST
        || counts.changed > MAX_LIST
        || counts.moved > MAX_LIST;
    changes.counts = counts;
    changes.parents = parents.list;
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

/// The parents entries name, each listed once (the newer version's first:
/// an element in both versions is listed as it is now).
#[derive(Default)]
struct Parents {
    list: Vec<Parent>,
    listed: std::collections::HashSet<String>,
}

impl Parents {
    /// The entry of element `at` of `flat`, listing its parents up to the
    /// root (or to one already listed).
    fn entry(&mut self, flat: &Flat<'_>, at: usize) -> Entry {
        let element = &flat.elements[at];
        // Parents come before their children in the list, so this ends.
        let parent = element.parent.filter(|&p| p < at);
        let mut up = parent;
        while let Some(p) = up {
            let id = flat.elements[p].id.to_string();
            if !self.listed.insert(id.clone()) {
                break;
            }
            let grand = flat.elements[p].parent.filter(|&g| g < p);
            self.list.push(Parent {
                id,
                kind: flat.elements[p].kind.to_string(),
                title: flat.elements[p].label(),
                parent_id: grand.map(|g| flat.elements[g].id.to_string()),
            });
            up = grand;
        }
        Entry {
            id: element.id.to_string(),
            kind: element.kind.to_string(),
            title: element.label(),
            parent_id: parent.map(|p| flat.elements[p].id.to_string()),
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

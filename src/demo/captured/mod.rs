//! Captured boards (`--demo DIR`), served by the sample upstream beside the
//! bundled ones.
//!
//! A capture holds the provider's answers as they came: one per request,
//! and a request for nested boards asks for several at once. The sample
//! answers whatever batch the client asks for, so each answer is split
//! into one fixture per board it was asked for, in the shape of the bundled
//! fixtures, and served by the same code ([`super::boards`]):
//!
//! - an element belongs to the first board asked for that its `parentId`
//!   chain reaches (a board asked for is its own; `<board>-trash` counts as
//!   the board);
//! - a comment belongs with its thread's element, a `canvasOrder` list with
//!   its parent, an `errors` or `childrenReturned` entry with its board;
//! - what belongs to none of them (an orphan) goes with every board of
//!   that answer, as it came with all of them;
//! - `fetchedTime` goes with each.
//!
//! A captured board wins over a bundled one of the same id. The directory's
//! format, written by `crate::capture`, is in [`index`].

pub mod index;

use index::ReadError;
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// Boards read from one capture directory, by board id.
#[derive(Debug, Default, Clone)]
pub struct Captured {
    root: Option<String>,
    boards: HashMap<String, Map<String, Value>>,
}

impl Captured {
    /// Reads the capture in `dir` (see `shared-board-api --capture`).
    ///
    /// # Errors
    /// A `ReadError` naming the file and the fault; a capture file is
    /// untrusted input (sizes are bounded, names and ids checked).
    pub fn load(dir: &Path) -> Result<Captured, ReadError> {
        let loaded = index::read(dir)?;
        let mut captured = Captured {
            root: Some(loaded.board),
            boards: HashMap::new(),
        };
        for (ids, answer) in loaded.answers {
            for (id, part) in split(&ids, answer) {
                let board = captured.boards.entry(id).or_default();
                merge(board, part);
            }
        }
        Ok(captured)
    }

    /// The captured root board's id.
    pub fn root(&self) -> Option<&str> {
        self.root.as_deref()
    }

    /// The ids of every captured board, sorted.
    pub fn board_ids(&self) -> Vec<&str> {
        let mut ids: Vec<&str> = self.boards.keys().map(String::as_str).collect();
        ids.sort_unstable();
        ids
    }

    /// The fixture of board `id`, when captured.
    pub(crate) fn fixture(&self, id: &str) -> Option<&Map<String, Value>> {
        self.boards.get(id)
    }
}

/// Adds `part` to `board`: maps are joined, other members replaced.
fn merge(board: &mut Map<String, Value>, part: Map<String, Value>) {
    for (key, value) in part {
        match (board.get_mut(&key), value) {
            (Some(Value::Object(into)), Value::Object(from)) => into.extend(from),
            (_, value) => {
                board.insert(key, value);
            }
        }
    }
}

/// The members split by board (see the module's doc).
const SPLIT: &[&str] = &[
    "elements",
    "comments",
    "canvasOrder",
    "errors",
    "childrenReturned",
];

/// One answer to a request for `ids`, as one fixture per board id.
fn split(ids: &[String], answer: Value) -> Vec<(String, Map<String, Value>)> {
    let Value::Object(mut answer) = answer else {
        return Vec::new();
    };
    let asked: HashSet<&str> = ids.iter().map(String::as_str).collect();
    let mut parts: Vec<(String, Map<String, Value>)> =
        ids.iter().map(|id| (id.clone(), Map::new())).collect();
    let slot: HashMap<&str, usize> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| (id.as_str(), i))
        .collect();
    let elements = match answer.remove("elements") {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    };
    let owners = Owners::of(&elements, &asked);
    let put = |parts: &mut Vec<(String, Map<String, Value>)>,
               member: &str,
               owner: Option<&str>,
               key: String,
               value: Value| {
        let targets: Vec<usize> = match owner.and_then(|o| slot.get(o)) {
            Some(&i) => vec![i],
            None => (0..parts.len()).collect(),
        };
        for i in targets {
            let map = parts[i]
                .1
                .entry(member)
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(map) = map {
                map.insert(key.clone(), value.clone());
            }
        }
    };
    for (key, element) in elements {
        let owner = owners.of_element(&key, &element);
        put(&mut parts, "elements", owner.as_deref(), key, element);
    }
    for member in &SPLIT[1..] {
        let Some(Value::Object(map)) = answer.remove(*member) else {
            continue;
        };
        for (key, value) in map {
            let owner = match *member {
                "comments" => value
                    .get("threadId")
                    .and_then(Value::as_str)
                    .and_then(|t| owners.threads.get(t).cloned()),
                "canvasOrder" => owners.of_id(&key),
                _ => asked.contains(key.as_str()).then(|| key.clone()),
            };
            put(&mut parts, member, owner.as_deref(), key, value);
        }
    }
    if let Some(time) = answer.get("fetchedTime") {
        for (_, part) in &mut parts {
            part.insert("fetchedTime".to_owned(), time.clone());
        }
    }
    parts
}

/// Which asked-for board each element id belongs to.
struct Owners<'a> {
    parent: HashMap<String, String>,
    asked: &'a HashSet<&'a str>,
    /// Thread ids (a thread element's id and its `content.threadId`) to
    /// their board.
    threads: HashMap<String, String>,
}

impl<'a> Owners<'a> {
    fn of(elements: &Map<String, Value>, asked: &'a HashSet<&'a str>) -> Owners<'a> {
        let mut owners = Owners {
            parent: HashMap::new(),
            asked,
            threads: HashMap::new(),
        };
        for (key, element) in elements {
            let parent = element
                .get("location")
                .and_then(|l| l.get("parentId"))
                .or_else(|| element.get("parentId"))
                .and_then(Value::as_str);
            if let Some(parent) = parent {
                owners.parent.insert(id_of(key, element), parent.to_owned());
            }
        }
        for (key, element) in elements {
            let Some(owner) = owners.of_element(key, element) else {
                continue;
            };
            owners.threads.insert(id_of(key, element), owner.clone());
            let thread = element.get("content").and_then(|c| c.get("threadId"));
            if let Some(thread) = thread.and_then(Value::as_str) {
                owners.threads.insert(thread.to_owned(), owner);
            }
        }
        owners
    }

    fn of_element(&self, key: &str, element: &Value) -> Option<String> {
        self.of_id(&id_of(key, element))
    }

    /// The first asked-for board up the `parentId` chain from `id`.
    fn of_id(&self, id: &str) -> Option<String> {
        let mut current = id;
        // A chain longer than the map has a cycle.
        for _ in 0..=self.parent.len() {
            if self.asked.contains(current) {
                return Some(current.to_owned());
            }
            if let Some(board) = current.strip_suffix("-trash") {
                if self.asked.contains(board) {
                    return Some(board.to_owned());
                }
            }
            current = self.parent.get(current)?;
        }
        None
    }
}

/// An element's id as the normalizer reads it: `id`, else `_id`, else its key.
fn id_of(key: &str, element: &Value) -> String {
    ["id", "_id"]
        .iter()
        .find_map(|k| element.get(*k).and_then(Value::as_str))
        .filter(|id| !id.is_empty())
        .unwrap_or(key)
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ids(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_batch_splits_into_one_fixture_per_board() {
        let answer = json!({
            "elements": {
                "a": {"_id": "a", "elementType": "BOARD", "location": {"parentId": "root"}},
                "a1": {"_id": "a1", "location": {"parentId": "a"}},
                "a2": {"_id": "a2", "location": {"parentId": "a1", "section": "INBOX"}},
                "b": {"_id": "b", "elementType": "BOARD", "location": {"parentId": "root"}},
                "bt": {"_id": "bt", "location": {"parentId": "b-trash", "section": "TRASH"}},
                "th": {"_id": "th", "location": {"parentId": "b", "section": "CANVAS"}, "content": {"threadId": "T"}},
                "lost": {"_id": "lost", "location": {"parentId": "nowhere"}}
            },
            "comments": {"c1": {"threadId": "T", "text": "hi"}, "c2": {"threadId": "a1"}},
            "canvasOrder": {"a": ["a1"], "b": ["th"]},
            "errors": {},
            "childrenReturned": {"a": true, "b": true},
            "fetchedTime": 5
        });
        let parts: HashMap<String, Map<String, Value>> =
            split(&ids(&["a", "b"]), answer).into_iter().collect();
        let keys = |board: &str, member: &str| -> Vec<String> {
            parts[board][member]
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect()
        };
        assert_eq!(keys("a", "elements"), ["a", "a1", "a2", "lost"]);
        assert_eq!(keys("b", "elements"), ["b", "bt", "th", "lost"]);
        assert_eq!(keys("a", "comments"), ["c2"]);
        assert_eq!(keys("b", "comments"), ["c1"]);
        assert_eq!(keys("a", "canvasOrder"), ["a"]);
        assert_eq!(keys("b", "childrenReturned"), ["b"]);
        assert_eq!(parts["b"]["fetchedTime"], 5);
    }

    #[test]
    fn a_parent_cycle_ends() {
        let answer = json!({"elements": {
            "x": {"location": {"parentId": "y"}}, "y": {"location": {"parentId": "x"}}
        }});
        let parts = split(&ids(&["r"]), answer);
        assert_eq!(parts[0].1["elements"].as_object().unwrap().len(), 2);
    }
}

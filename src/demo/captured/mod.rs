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
//!   that answer, as it came with all of them: it is kept once per answer
//!   and served once with any batch holding one of those boards, so an
//!   answer for 50 boards holding many orphans is not copied 50 times;
//! - `fetchedTime` goes with each.
//!
//! Start-up is linear in what is read: each element's board is found once
//! up its `parentId` chain and remembered for every element on the way, so a
//! long chain that reaches no asked-for board costs its length, not its
//! length squared. The directory's limits are in [`index`].
//!
//! A captured board wins over a bundled one of the same id. The directory's
//! format, written by `crate::capture`, is in [`index`].

pub mod index;

use index::ReadError;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::Path;

/// Boards read from one capture directory, by board id.
#[derive(Debug, Default, Clone)]
pub struct Captured {
    root: Option<String>,
    boards: HashMap<String, Map<String, Value>>,
    /// What belonged to none of the boards an answer asked for, one map per
    /// such answer, in the shape of a fixture.
    orphans: Vec<Map<String, Value>>,
    /// For each board id, the [`Captured::orphans`] of the answers that
    /// asked for it.
    orphans_of: HashMap<String, Vec<usize>>,
}

impl Captured {
    /// Reads the capture in `dir` (see `shared-board-api --capture`).
    ///
    /// # Errors
    /// A `ReadError` naming the file and the fault; a capture directory is
    /// untrusted input (only its regular files are read, sizes and counts
    /// are bounded, names and ids checked; see the `index` module).
    pub fn load(dir: &Path) -> Result<Captured, ReadError> {
        let loaded = index::read(dir)?;
        let mut captured = Captured {
            root: Some(loaded.board),
            ..Captured::default()
        };
        for (ids, answer) in loaded.answers {
            let (parts, orphans) = split(&ids, answer);
            for (id, part) in parts {
                let board = captured.boards.entry(id).or_default();
                merge(board, part);
            }
            if orphans.is_empty() {
                continue;
            }
            let n = captured.orphans.len();
            captured.orphans.push(orphans);
            for id in ids {
                let of = captured.orphans_of.entry(id).or_default();
                if of.last() != Some(&n) {
                    of.push(n);
                }
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

    /// What belonged to none of the boards of the answers that asked for
    /// any of `ids`: each answer's once, in the order they were captured.
    pub(crate) fn orphans<'a>(&'a self, ids: &[&str]) -> Vec<&'a Map<String, Value>> {
        let mut which: Vec<usize> = ids
            .iter()
            .filter_map(|id| self.orphans_of.get(*id))
            .flatten()
            .copied()
            .collect();
        which.sort_unstable();
        which.dedup();
        which.into_iter().map(|n| &self.orphans[n]).collect()
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

/// One board's part of an answer, or the orphans' (in the shape of a fixture).
type Part = Map<String, Value>;

/// One answer to a request for `ids`: one fixture per board id, and what
/// belongs to none of them.
fn split(ids: &[String], answer: Value) -> (Vec<(String, Part)>, Part) {
    let mut parts: Vec<(String, Part)> = ids.iter().map(|id| (id.clone(), Map::new())).collect();
    let mut orphans = Map::new();
    let Value::Object(mut answer) = answer else {
        return (parts, orphans);
    };
    let elements = match answer.remove("elements") {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    };
    let mut owners = Owners::of(&elements, ids);
    let mut put = |member: &str, owner: Option<usize>, key: String, value: Value| {
        let part = match owner {
            Some(i) => &mut parts[i].1,
            None => &mut orphans,
        };
        let map = part
            .entry(member)
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(map) = map {
            map.insert(key, value);
        }
    };
    for (key, element) in elements {
        let owner = owners.of_id(&id_of(&key, &element));
        put("elements", owner, key, element);
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
                    .and_then(|t| owners.threads.get(t).copied()),
                "canvasOrder" => owners.of_id(&key),
                _ => owners.slot.get(key.as_str()).copied(),
            };
            put(member, owner, key, value);
        }
    }
    if let Some(time) = answer.get("fetchedTime") {
        for (_, part) in &mut parts {
            part.insert("fetchedTime".to_owned(), time.clone());
        }
    }
    (parts, orphans)
}

/// An id's board, as far as it is known: on the walk being made (a second
/// visit is a cycle), or found (the slot of the board asked for; none for
/// an orphan).
#[derive(Clone, Copy)]
enum Walk {
    Pending,
    Done(Option<usize>),
}

/// Which asked-for board (its slot in the answer's ids) each id belongs to.
struct Owners<'a> {
    /// The boards asked for, to their slot (the last, for an id asked twice).
    slot: HashMap<&'a str, usize>,
    parent: HashMap<String, String>,
    /// Every id walked so far.
    walked: HashMap<String, Walk>,
    /// Thread ids (a thread element's id and its `content.threadId`) to
    /// their board.
    threads: HashMap<String, usize>,
}

impl<'a> Owners<'a> {
    fn of(elements: &Map<String, Value>, ids: &'a [String]) -> Owners<'a> {
        let mut owners = Owners {
            slot: ids
                .iter()
                .enumerate()
                .map(|(i, id)| (id.as_str(), i))
                .collect(),
            parent: HashMap::new(),
            walked: HashMap::new(),
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
            let id = id_of(key, element);
            let Some(owner) = owners.of_id(&id) else {
                continue;
            };
            let thread = element.get("content").and_then(|c| c.get("threadId"));
            if let Some(thread) = thread.and_then(Value::as_str) {
                owners.threads.insert(thread.to_owned(), owner);
            }
            owners.threads.insert(id, owner);
        }
        owners
    }

    /// The board asked for itself (`<board>-trash` counts as the board).
    fn asked(&self, id: &str) -> Option<usize> {
        self.slot.get(id).copied().or_else(|| {
            id.strip_suffix("-trash")
                .and_then(|board| self.slot.get(board).copied())
        })
    }

    /// The first asked-for board up the `parentId` chain from `id`. Each id
    /// is walked once: the answer found is kept for every id on the way.
    fn of_id(&mut self, id: &str) -> Option<usize> {
        let mut path: Vec<String> = Vec::new();
        let mut current = id.to_owned();
        let owner = loop {
            if let Some(slot) = self.asked(&current) {
                break Some(slot);
            }
            match self.walked.get(&current) {
                Some(Walk::Done(owner)) => break *owner,
                // Back on the walk being made: a cycle reaches no board.
                Some(Walk::Pending) => break None,
                None => {}
            }
            self.walked.insert(current.clone(), Walk::Pending);
            let parent = self.parent.get(&current).cloned();
            path.push(current);
            match parent {
                Some(parent) => current = parent,
                None => break None,
            }
        };
        for id in path {
            self.walked.insert(id, Walk::Done(owner));
        }
        owner
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
        let (parts, orphans) = split(&ids(&["a", "b"]), answer);
        let parts: HashMap<String, Map<String, Value>> = parts.into_iter().collect();
        let keys = |board: &str, member: &str| -> Vec<String> {
            parts[board][member]
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect()
        };
        assert_eq!(keys("a", "elements"), ["a", "a1", "a2"]);
        assert_eq!(keys("b", "elements"), ["b", "bt", "th"]);
        // The orphan is kept once, beside the boards.
        let orphaned: Vec<&String> = orphans["elements"].as_object().unwrap().keys().collect();
        assert_eq!(orphaned, ["lost"]);
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
        let (parts, orphans) = split(&ids(&["r"]), answer);
        assert!(parts[0].1.is_empty());
        assert_eq!(orphans["elements"].as_object().unwrap().len(), 2);
    }

    /// `n` elements, each the parent of the one before: `c0` is the deepest,
    /// `c{n-1}`'s parent is `top`.
    fn chain(n: usize, top: &str) -> Value {
        let mut elements = Map::new();
        for i in 0..n {
            let parent = if i + 1 == n {
                top.to_owned()
            } else {
                format!("c{}", i + 1)
            };
            elements.insert(
                format!("c{i}"),
                json!({"_id": format!("c{i}"), "location": {"parentId": parent}}),
            );
        }
        json!({ "elements": elements })
    }

    #[test]
    fn a_long_chain_is_walked_once() {
        // Walked once per element this would be over 10^9 steps.
        let (_, orphans) = split(&ids(&["r"]), chain(50_000, "nowhere"));
        assert_eq!(orphans["elements"].as_object().unwrap().len(), 50_000);
        let (parts, orphans) = split(&ids(&["q", "r"]), chain(50_000, "r"));
        assert_eq!(parts[1].1["elements"].as_object().unwrap().len(), 50_000);
        assert!(parts[0].1.is_empty() && orphans.is_empty());
    }

    #[test]
    fn orphans_are_kept_once_and_served_once_per_batch() {
        let asked: Vec<String> = (0..50).map(|i| format!("b{i}")).collect();
        let mut captured = Captured::default();
        let (parts, orphans) = split(&asked, chain(1000, "nowhere"));
        for (id, part) in parts {
            assert!(part.get("elements").is_none(), "{id}");
            captured.boards.insert(id, part);
        }
        captured.orphans.push(orphans);
        captured.orphans_of = asked.iter().map(|id| (id.clone(), vec![0])).collect();
        assert_eq!(captured.orphans(&["b1", "b7", "b49"]).len(), 1);
        assert!(captured.orphans(&["other"]).is_empty());
        // A batch of the sample's: the orphans once, as the answer had them.
        let body = super::super::boards::boards_body(&["b1", "b7"], true, "http://x", &captured);
        assert_eq!(body["elements"].as_object().unwrap().len(), 1000);
        assert_eq!(body["boardIds"], json!(["b1", "b7"]));
    }
}

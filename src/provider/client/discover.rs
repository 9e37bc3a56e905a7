//! Which nested boards to fetch next: `BOARD` elements below a loaded board
//!, found by following `location.parentId` chains.

use super::rules::is_board_id;
use crate::provider::fetched::Fetched;
use crate::provider::head::Head;
use std::collections::HashSet;

/// Longest `location.parentId` chain followed when placing a nested board.
const MAX_PARENT_CHAIN: usize = 64;

/// `BOARD` elements below a loaded board that are not in `known`, in element
/// id order. "Below" means the `location.parentId` chain reaches a loaded
/// board through non-board elements (columns, ...), none of them (nor the
/// board itself) in a `TRASH` or `DELETED` section: what was trashed is not
/// part of the board and is never fetched.
pub fn boards_to_fetch(fetched: &Fetched, known: &HashSet<String>) -> Vec<String> {
    // Sorted: the elements map keeps the provider's key order, and which
    // boards land in which batch must not depend on it.
    let mut ids: Vec<String> = fetched
        .elements
        .iter()
        .filter(|(id, el)| {
            let id: &str = id;
            el.head.element_type() == "BOARD"
                && !known.contains(id)
                && !fetched.loaded_boards.contains(id)
                && is_board_id(id)
                && below_loaded_board(fetched, &el.head)
        })
        .map(|(id, _)| id.to_string())
        .collect();
    ids.sort_unstable();
    ids
}

/// `location.parentId`, as the normalizer reads it.
fn parent_id(element: &Head) -> Option<&str> {
    element.location.as_ref()?.parent_id.as_deref()
}

fn below_loaded_board(fetched: &Fetched, element: &Head) -> bool {
    let mut current = element;
    for _ in 0..MAX_PARENT_CHAIN {
        // Trashed or deleted, or below such an element: not in the board.
        if current.is_removed() {
            return false;
        }
        let Some(parent) = parent_id(current) else {
            return false;
        };
        if fetched.loaded_boards.contains(parent) {
            return true;
        }
        match fetched.elements.get(parent) {
            Some(p) if p.head.element_type() != "BOARD" => current = &p.head,
            _ => return false,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Map, Value};

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn finds_boards_below_loaded_boards_only() {
        let mut f = Fetched::new("r", 0);
        f.loaded_boards.insert("r".into());
        f.merge_response(&obj(json!({"elements": {
            "r": {"elementType": "BOARD", "location": {"parentId": "home"}},
            "col": {"elementType": "COLUMN", "location": {"parentId": "r"}},
            "b1": {"elementType": "BOARD", "location": {"parentId": "r"}},
            "b2": {"elementType": "BOARD", "location": {"parentId": "col"}},
            "b3": {"elementType": "BOARD", "location": {"parentId": "b1"}},
            "b4": {"elementType": "BOARD", "location": {"parentId": "elsewhere"}},
            "bad id": {"elementType": "BOARD", "location": {"parentId": "r"}},
            "loop1": {"elementType": "COLUMN", "location": {"parentId": "loop2"}},
            "loop2": {"elementType": "COLUMN", "location": {"parentId": "loop1"}},
            "b5": {"elementType": "BOARD", "location": {"parentId": "loop1"}},
            "c": {"elementType": "CARD", "location": {"parentId": "r"}},
            "tb": {"elementType": "BOARD", "location": {"parentId": "r-trash", "section": "TRASH"}},
            "db": {"elementType": "BOARD", "location": {"parentId": "r", "section": "DELETED"}},
            "tcol": {"elementType": "COLUMN", "location": {"parentId": "r", "section": "TRASH"}},
            "b6": {"elementType": "BOARD", "location": {"parentId": "tcol", "section": "INBOX"}}
        }})));
        let known: HashSet<String> = ["b1".to_owned()].into();
        assert_eq!(boards_to_fetch(&f, &known), ["b2"]);
        assert_eq!(boards_to_fetch(&f, &HashSet::new()), ["b1", "b2"]);
        f.loaded_boards.insert("b1".into());
        assert_eq!(
            boards_to_fetch(&f, &["b1".to_owned(), "b2".to_owned()].into()),
            ["b3"]
        );
    }
}

//! A nested board of a loaded document as a document of its own: what an
//! agent reads when it asks for one board of a large tree. The result is
//! the document with `board` replaced by that nested board (version,
//! source and `fetchedAt` kept), so every selection and representation
//! applies to it as to the whole.
//!
//! CPU work over the whole document: callers run it on the work pool and
//! cache what they make of it.

use serde_json::{Map, Value};

/// Why a nested board could not be taken out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NestedError {
    /// No board of the loaded tree has that id.
    NotFound,
    /// The document is not a board document (a bug: the cache holds what
    /// the pipeline wrote).
    Unreadable(String),
}

impl std::fmt::Display for NestedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NestedError::NotFound => f.write_str("no board with this id in the loaded board"),
            NestedError::Unreadable(e) => write!(f, "board document not readable: {e}"),
        }
    }
}

impl std::error::Error for NestedError {}

/// The compact JSON of `doc` (a sanitized document) with the board whose
/// id is `board_id` as its root board. The root's own id gives the
/// document back as it is.
///
/// # Errors
/// [`NestedError::NotFound`] when no board of the tree has that id.
pub fn nested_document(doc: &[u8], board_id: &str) -> Result<Vec<u8>, NestedError> {
    let mut value: Map<String, Value> =
        serde_json::from_slice(doc).map_err(|e| NestedError::Unreadable(e.to_string()))?;
    let root = value.remove("board").ok_or(NestedError::NotFound)?;
    let found = find_board(root, board_id).ok_or(NestedError::NotFound)?;
    value.insert("board".into(), found);
    serde_json::to_vec(&value).map_err(|e| NestedError::Unreadable(e.to_string()))
}

/// The board node with id `id` in the tree under `root` (itself
/// included), found with a stack of its own rather than recursion.
fn find_board(root: Value, id: &str) -> Option<Value> {
    let mut stack = vec![root];
    while let Some(mut node) = stack.pop() {
        let is_it = node.get("type").and_then(Value::as_str) == Some("BOARD")
            && node.get("id").and_then(Value::as_str) == Some(id);
        if is_it {
            return Some(node);
        }
        if let Some(Value::Array(children)) = node.get_mut("children").map(Value::take) {
            stack.extend(children.into_iter().rev());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_nested_board_becomes_the_root() {
        let doc = json!({"version": 1, "source": {"boardId": "r"}, "fetchedAt": "t",
            "board": {"id": "r", "type": "BOARD", "children": [
                {"id": "c", "type": "COLUMN", "children": [
                    {"id": "n", "type": "BOARD", "title": "Inner", "children": [{"id": "x", "type": "CARD"}]}]},
                {"id": "x2", "type": "CARD"}]}});
        let bytes = serde_json::to_vec(&doc).expect("json");
        let inner: Value =
            serde_json::from_slice(&nested_document(&bytes, "n").expect("found")).expect("json");
        assert_eq!(inner["board"]["title"], "Inner");
        assert_eq!(inner["source"], doc["source"]);
        assert_eq!(inner["fetchedAt"], "t");
        let same: Value =
            serde_json::from_slice(&nested_document(&bytes, "r").expect("root")).expect("json");
        assert_eq!(same, doc);
        // A card's id, or an unknown one, is no board.
        for id in ["x", "c", "nope"] {
            assert_eq!(nested_document(&bytes, id), Err(NestedError::NotFound));
        }
    }
}

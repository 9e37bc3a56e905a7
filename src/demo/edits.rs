//! Boards of the sample upstream that change on request, so that the demo
//! (and the tests) can show `/changes` answering: `POST /demo/edit/{boardId}`
//! counts one more edit of a bundled board, and every later boards answer
//! that holds the board shows it edited that many times:
//!
//! - a note card `Edit<boardId>` is added to the board (edit 1), its text
//!   says how many edits were made, and it moves between the board's
//!   unsorted tray (odd edits) and its canvas (even edits);
//! - the first task of the answer (by id) is toggled after odd edits and
//!   as it was after even ones.
//!
//! Nothing changes until asked, so every other test sees the fixtures.

use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Mutex;

/// Edits counted per board id.
#[derive(Debug, Default)]
pub struct Edits {
    count: Mutex<HashMap<String, u32>>,
}

impl Edits {
    /// One more edit of `board_id`; the number of edits so far.
    pub fn bump(&self, board_id: &str) -> u32 {
        let mut count = self.count.lock().unwrap_or_else(|e| e.into_inner());
        let n = count.entry(board_id.to_owned()).or_insert(0);
        *n = n.saturating_add(1);
        *n
    }

    fn of(&self, board_id: &str) -> u32 {
        let count = self.count.lock().unwrap_or_else(|e| e.into_inner());
        count.get(board_id).copied().unwrap_or(0)
    }

    /// Applies the edits of every board in `ids` to a boards answer.
    pub fn apply(&self, body: &mut Value, ids: &[&str]) {
        for &id in ids {
            let n = self.of(id);
            if n == 0 {
                continue;
            }
            let Some(elements) = body.get_mut("elements").and_then(Value::as_object_mut) else {
                return;
            };
            let location = if n % 2 == 1 {
                json!({"parentId": id, "section": "INBOX", "position": {"index": 99, "score": 99 * 65536}})
            } else {
                json!({"parentId": id, "section": "CANVAS", "position": {"x": 0, "y": -20, "score": 1}})
            };
            let text = format!(
                "Edited {n} time{} by the demo upstream",
                if n == 1 { "" } else { "s" }
            );
            let note = format!("Edit{id}");
            elements.insert(
                note.clone(),
                json!({"_id": note, "elementType": "CARD", "location": location,
                       "content": {"textContent": {"type": "doc", "content": [
                           {"type": "paragraph", "content": [{"type": "text", "text": text}]}]}}}),
            );
            let task = elements
                .iter()
                .filter(|(_, e)| e.get("elementType").and_then(Value::as_str) == Some("TASK"))
                .map(|(k, _)| k.clone())
                .min();
            if let Some(content) = task
                .and_then(|k| elements.get_mut(&k))
                .and_then(|e| e.get_mut("content"))
                .and_then(Value::as_object_mut)
            {
                let was = content
                    .get("isComplete")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                content.insert("isComplete".into(), json!(was ^ (n % 2 == 1)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_show_only_once_asked() {
        let edits = Edits::default();
        let body = || json!({"elements": {"t1": {"elementType": "TASK", "content": {}}}});
        let mut untouched = body();
        edits.apply(&mut untouched, &["b"]);
        assert_eq!(untouched, body());
        assert_eq!(edits.bump("b"), 1);
        let mut once = body();
        edits.apply(&mut once, &["b"]);
        assert_eq!(once["elements"]["t1"]["content"]["isComplete"], true);
        assert_eq!(once["elements"]["Editb"]["location"]["section"], "INBOX");
        edits.bump("b");
        let mut twice = body();
        edits.apply(&mut twice, &["b"]);
        assert_eq!(twice["elements"]["Editb"]["location"]["section"], "CANVAS");
        assert_eq!(twice["elements"]["t1"]["content"]["isComplete"], false);
    }
}

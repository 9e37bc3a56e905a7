//! How complete a loaded board is: how many nested boards were not loaded,
//! and whether any of those holes may fill on a later load. Computed once
//! when a document is built, carried beside it by every cache level, and
//! reported to clients in the `Board-Completeness` header.

use super::kinds::UnloadedReason;
#[cfg(any(test, feature = "internals"))]
use super::types::{BoardDocument, NodeKind};
#[cfg(any(test, feature = "internals"))]
use serde_json::Value;
use std::fmt;

/// The nested boards of one document whose children were not loaded.
///
/// A property of the loaded board, whatever selection is rendered from it.
/// The default is a complete board.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Completeness {
    /// Nested `BOARD` nodes with `childrenLoaded: false`.
    pub unloaded: u32,
    /// Whether one of them is `DEADLINE` or `UPSTREAM_ERROR`
    /// ([`UnloadedReason::is_transient`]): a later load may fill it, so the
    /// document is kept only briefly.
    pub transient: bool,
}

impl Completeness {
    /// Counts one nested board that was not loaded, for `reason`.
    pub fn add(&mut self, reason: UnloadedReason) {
        self.unloaded = self.unloaded.saturating_add(1);
        self.transient |= reason.is_transient();
    }

    /// Whether every nested board was loaded.
    pub fn is_complete(&self) -> bool {
        self.unloaded == 0
    }

    /// Counted over a built document: every node below the root.
    #[cfg(any(test, feature = "internals"))]
    pub fn of_document(document: &BoardDocument) -> Completeness {
        let mut out = Completeness::default();
        let mut stack: Vec<_> = document.board.children.iter().collect();
        while let Some(node) = stack.pop() {
            if let NodeKind::Board(board) = &node.kind {
                if !board.children_loaded {
                    out.add(
                        board
                            .unloaded_reason
                            .unwrap_or(UnloadedReason::UpstreamError),
                    );
                }
            }
            stack.extend(node.children.iter());
        }
        out
    }

    /// Counted over a document held as a value tree (`data` of a full
    /// view), the way a client would read it: every `BOARD` node below
    /// `board` whose `childrenLoaded` is `false`.
    #[cfg(any(test, feature = "internals"))]
    pub fn of_value(document: &Value) -> Completeness {
        fn children(node: &Value) -> Vec<&Value> {
            node.get("children")
                .and_then(Value::as_array)
                .map(|c| c.iter().collect())
                .unwrap_or_default()
        }
        let mut out = Completeness::default();
        let mut stack = document.get("board").map(children).unwrap_or_default();
        while let Some(node) = stack.pop() {
            if node.get("type") == Some(&Value::from("BOARD"))
                && node.get("childrenLoaded") == Some(&Value::Bool(false))
            {
                let transient = matches!(
                    node.get("unloadedReason").and_then(Value::as_str),
                    Some("DEADLINE" | "UPSTREAM_ERROR") | None
                );
                out.unloaded = out.unloaded.saturating_add(1);
                out.transient |= transient;
            }
            stack.extend(children(node));
        }
        out
    }
}

/// The `Board-Completeness` header value: `complete`, or
/// `partial; unloaded=<n>`.
impl fmt::Display for Completeness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_complete() {
            f.write_str("complete")
        } else {
            write!(f, "partial; unloaded={}", self.unloaded)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn header_text() {
        assert_eq!(Completeness::default().to_string(), "complete");
        let mut c = Completeness::default();
        c.add(UnloadedReason::BoardLimit);
        assert_eq!(
            (c.to_string().as_str(), c.transient),
            ("partial; unloaded=1", false)
        );
        c.add(UnloadedReason::Deadline);
        assert_eq!(
            (c.to_string().as_str(), c.transient),
            ("partial; unloaded=2", true)
        );
    }

    #[test]
    fn transient_reasons_table() {
        for (reason, transient) in [
            (UnloadedReason::BoardLimit, false),
            (UnloadedReason::Deadline, true),
            (UnloadedReason::AccessDenied, false),
            (UnloadedReason::NotFound, false),
            (UnloadedReason::UpstreamError, true),
        ] {
            assert_eq!(reason.is_transient(), transient, "{reason:?}");
        }
    }

    #[test]
    fn counted_below_the_root_only() {
        let board = |id: &str, loaded: bool, reason: Option<&str>, children: Value| {
            let mut b =
                json!({"id": id, "type": "BOARD", "childrenLoaded": loaded, "children": children});
            if let Some(r) = reason {
                b["unloadedReason"] = json!(r);
            }
            b
        };
        let doc = json!({"board": board("r", false, Some("DEADLINE"), json!([
            board("a", false, Some("NOT_FOUND"), json!([])),
            {"id": "c", "type": "CARD", "childrenLoaded": false, "children": [
                board("b", false, Some("ACCESS_DENIED"), json!([])),
                board("d", true, None, json!([]))
            ]}
        ]))});
        assert_eq!(
            Completeness::of_value(&doc),
            Completeness {
                unloaded: 2,
                transient: false
            }
        );
    }
}

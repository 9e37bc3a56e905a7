//! Raw Milanote board responses ([`Fetched`]) -> [`BoardDocument`] v1
//! Called by the provider after the fetch and before
//! sanitize; pure, no I/O.
//!
//! The work is split by concern: `raw` (lenient readers, depth-bounded raw
//! copies), `content` (an element's content read from its text, its rich
//! text without a value tree), `fields` (one element's fields, one row per
//! element type), `order` (children order), `tree` (the tree, built without
//! recursion). [`write`] (the serving path) reads rich text from the text;
//! [`normalize`] (the reference) parses all content into values, so the
//! tests that hold the two equal compare the two readers.
//! Same input, same bytes: nothing depends on hash-map iteration order.

mod content;
pub(crate) mod fields;
mod node_json;
mod order;
mod table;
mod tree;

use crate::document::{
    BoardDocument, BoardType, Completeness, Coverage, Node, NodeKind, RootBoard, Source, Version1,
};
use crate::provider::time::format_epoch_ms;
use crate::provider::Fetched;
use crate::select::stream::entries;
use std::fmt;
use std::ops::Range;

/// Most node levels below the root that are output (the root is level 0).
///
/// A node at this level is output with `children: []`; the elements below it
/// are cut. With [`crate::provider::raw::MAX_RAW_DEPTH`] this keeps every document within 120
/// JSON levels: a node at level `n` is `2 + 2n` levels deep (`board`, then
/// `children` and the node per level), and the deepest fixed path inside a
/// node (`table.rows[][].richText.blocks[]`) adds 6 more before raw JSON.
pub const MAX_NODE_DEPTH: usize = 32;

/// `fetchedAt` when neither time can be formatted (both outside 0000..=9999).
const EPOCH: &str = "1970-01-01T00:00:00.000Z";

/// Why a [`Fetched`] could not be normalized. The provider client normally
/// rejects both cases before calling [`normalize`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NormalizeError {
    /// No element has the root board's id.
    RootMissing { board_id: String },
    /// The root element's `elementType` is not `BOARD` (e.g. a `SKELETON`).
    RootNotBoard {
        board_id: String,
        element_type: String,
    },
    /// [`write`] could not write the document (serde_json refused a value;
    /// not expected with these types).
    Unwritable,
}

impl fmt::Display for NormalizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NormalizeError::RootMissing { board_id } => {
                write!(f, "root board {board_id} is not among the elements")
            }
            NormalizeError::RootNotBoard {
                board_id,
                element_type,
            } => write!(
                f,
                "root element {board_id} is a {element_type:?}, not a BOARD"
            ),
            NormalizeError::Unwritable => f.write_str("the document could not be written"),
        }
    }
}

impl std::error::Error for NormalizeError {}

/// Normalizes the merged raw responses of one board into a BoardDocument v1.
///
/// `provider_name` becomes `source.provider`. `fetchedAt` is
/// `fetched.fetched_time_ms`, else `fetched.fetched_at_ms`. The root's
/// `childrenLoaded` and every nested board's come from `fetched.loaded_boards`,
/// and `unloadedReason` from [`Fetched::unloaded_reason`].
///
/// # Errors
///
/// [`NormalizeError::RootMissing`] when no element has `fetched.root_id`, and
/// [`NormalizeError::RootNotBoard`] when that element is not a `BOARD`. Any
/// other malformed input is read leniently (wrong types omitted), never an error.
#[cfg(any(test, feature = "internals"))]
pub fn normalize(fetched: &Fetched, provider_name: &str) -> Result<BoardDocument, NormalizeError> {
    let index = tree::Index::new(&fetched.elements);
    let root = root_entry(&index, fetched)?;
    let mut sink = tree::TreeSink::default();
    tree::walk(
        &index,
        root,
        fetched,
        Coverage::Full,
        tree::ContentReader::Tree,
        &mut sink,
    );
    sink.into_root()
        .and_then(|node| document(fetched, provider_name, node))
        .ok_or_else(|| not_a_board(fetched))
}

/// What [`write`] wrote, besides the bytes.
#[derive(Debug)]
pub struct Written {
    /// How complete the document is: the nested boards written with
    /// `childrenLoaded: false`.
    pub completeness: Completeness,
    /// The byte ranges of the document's top-level entries (`"key":value`,
    /// offsets from where the document starts), noted as they were written,
    /// so that the full view's ETag hashes them without walking the
    /// document to find where its last entry, the board, starts.
    pub entries: Vec<Range<usize>>,
}

/// [`normalize`], written as compact JSON to `out` while the tree is walked:
/// the same bytes as serializing the document, without holding it. An
/// [`Coverage::Outline`] leaves the element bodies out (and never builds
/// them).
///
/// # Errors
/// As [`normalize`].
pub fn write(
    fetched: &Fetched,
    provider_name: &str,
    coverage: Coverage,
    out: &mut Vec<u8>,
) -> Result<Written, NormalizeError> {
    let index = tree::Index::new(&fetched.elements);
    let root = root_entry(&index, fetched)?;
    let start = out.len();
    let mut writer = Writer {
        fetched,
        provider_name,
        out,
        first_child: Vec::new(),
        entries: Vec::new(),
        failed: false,
    };
    let reader = tree::ContentReader::Text;
    let completeness = tree::walk(&index, root, fetched, coverage, reader, &mut writer);
    if writer.failed {
        return Err(NormalizeError::Unwritable);
    }
    let mut entries = writer.entries;
    // The last entry, the board, ends where the document's `}` is now.
    let end = writer.out.len() - start - 1;
    if let Some(board) = entries.last_mut() {
        board.end = end;
    }
    Ok(Written {
        completeness,
        entries,
    })
}

/// The root's entry, when it is there and a `BOARD`.
fn root_entry(index: &tree::Index<'_>, fetched: &Fetched) -> Result<usize, NormalizeError> {
    let board_id = fetched.root_id.clone();
    let Some(root) = index.find(&fetched.root_id) else {
        return Err(NormalizeError::RootMissing { board_id });
    };
    let element_type = index.entry(root).head.element_type();
    if element_type != "BOARD" {
        let element_type = element_type.to_owned();
        return Err(NormalizeError::RootNotBoard {
            board_id,
            element_type,
        });
    }
    Ok(root)
}

/// Unreachable once [`root_entry`] accepted the root: the root node is not a board.
#[cfg(any(test, feature = "internals"))]
fn not_a_board(fetched: &Fetched) -> NormalizeError {
    NormalizeError::RootNotBoard {
        board_id: fetched.root_id.clone(),
        element_type: String::new(),
    }
}

/// The document around the root node (`None` when it is not a board).
fn document(fetched: &Fetched, provider_name: &str, node: Node) -> Option<BoardDocument> {
    let NodeKind::Board(fields) = node.kind else {
        return None;
    };
    let fetched_at = fetched
        .fetched_time_ms
        .and_then(format_epoch_ms)
        .or_else(|| format_epoch_ms(fetched.fetched_at_ms))
        .unwrap_or_else(|| EPOCH.to_owned());
    Some(BoardDocument {
        version: Version1,
        source: Source {
            provider: provider_name.to_owned(),
            board_id: fetched.root_id.clone(),
        },
        fetched_at,
        board: RootBoard {
            id: node.id,
            kind: BoardType::Board,
            fields: *fields,
            size: node.size,
            location: node.location,
            timestamps: node.timestamps,
            children: node.children,
        },
    })
}

/// Writes each node as it is opened, children after it. A node is written
/// as serde writes it with no children ([`node_json::open`]), which ends in
/// `"children":[]}` (`children` is its last field); the `]}` is held back
/// until the node closes, and its children go between. The root is written
/// inside the document, which ends in `[]}}`.
struct Writer<'a> {
    fetched: &'a Fetched,
    provider_name: &'a str,
    out: &'a mut Vec<u8>,
    /// Per open node: whether its next child is its first.
    first_child: Vec<bool>,
    /// The document's top-level entries, the last one ending where the
    /// document written with its root's children empty ends.
    entries: Vec<Range<usize>>,
    failed: bool,
}

impl Writer<'_> {
    /// Writes the document less the end of its root's empty `children`
    /// (`]}}`), and notes the document's top-level entries.
    fn write_document(&mut self, doc: &BoardDocument) {
        const CLOSING: &[u8] = b"[]}}";
        let start = self.out.len();
        let written = serde_json::to_writer(&mut *self.out, doc).is_ok();
        if !written || !self.out[start..].ends_with(CLOSING) {
            self.failed = true;
            return;
        }
        let object = &self.out[start..];
        let noted = entries(object, |_, entry| {
            let at = entry.as_ptr() as usize - object.as_ptr() as usize;
            self.entries.push(at..at + entry.len());
        });
        // Not expected of what serde_json just wrote; without the entries,
        // the full view's ETag walks the document instead.
        if noted.is_err() {
            self.entries.clear();
        }
        // Keep the `[` of `"children":[`, hold back the rest.
        self.out.truncate(self.out.len() - (CLOSING.len() - 1));
    }
}

impl tree::Sink for Writer<'_> {
    fn open(&mut self, node: tree::Opened<'_>) {
        if self.failed {
            return;
        }
        match self.first_child.last_mut() {
            None => match document(self.fetched, self.provider_name, node.into_node()) {
                Some(doc) => self.write_document(&doc),
                None => self.failed = true,
            },
            Some(first) => {
                if !std::mem::replace(first, false) {
                    self.out.push(b',');
                }
                if !node_json::open(self.out, &node) {
                    self.failed = true;
                }
            }
        }
        self.first_child.push(true);
    }

    fn close(&mut self) {
        self.first_child.pop();
        let closing: &[u8] = if self.first_child.is_empty() {
            b"]}}"
        } else {
            b"]}"
        };
        self.out.extend_from_slice(closing);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Map, Value};

    fn fetched(root: &str, elements: Value) -> Fetched {
        let elements: Map<String, Value> = serde_json::from_value(elements).unwrap();
        let mut f = Fetched::from_elements(root, elements);
        f.loaded_boards.insert(root.to_owned());
        f
    }

    fn card(parent: &str) -> Value {
        json!({"elementType": "CARD", "location": {"parentId": parent}})
    }

    /// Ids along the first-child chain from the root.
    fn chain(doc: &BoardDocument) -> Vec<String> {
        let mut out = Vec::new();
        let mut level = &doc.board.children;
        while let Some(first) = level.first() {
            out.push(first.id.clone());
            level = &first.children;
        }
        out
    }

    #[test]
    fn root_errors() {
        let missing = normalize(&fetched("r", json!({"x": card("r")})), "milanote");
        assert_eq!(
            missing,
            Err(NormalizeError::RootMissing {
                board_id: "r".into()
            })
        );
        let skeleton = normalize(
            &fetched("r", json!({"r": {"elementType": "SKELETON"}})),
            "m",
        );
        assert_eq!(
            skeleton,
            Err(NormalizeError::RootNotBoard {
                board_id: "r".into(),
                element_type: "SKELETON".into()
            })
        );
        let not_object = normalize(&fetched("r", json!({"r": "BOARD"})), "m");
        assert!(matches!(
            not_object,
            Err(NormalizeError::RootMissing { .. })
        ));
        let untyped = normalize(&fetched("r", json!({"r": {}})), "m");
        assert!(matches!(untyped, Err(NormalizeError::RootNotBoard { .. })));
    }

    #[test]
    fn minimal_document() {
        let mut f = fetched("r", json!({"r": {"elementType": "BOARD"}}));
        f.fetched_at_ms = 1_700_000_000_000;
        let doc = serde_json::to_value(normalize(&f, "milanote").unwrap()).unwrap();
        assert_eq!(
            doc,
            json!({
                "version": 1,
                "source": {"provider": "milanote", "boardId": "r"},
                "fetchedAt": "2023-11-14T22:13:20.000Z",
                "board": {"id": "r", "type": "BOARD", "title": "Untitled board", "childrenLoaded": true, "children": []}
            })
        );
        f.fetched_time_ms = Some(1);
        assert_eq!(
            normalize(&f, "m").unwrap().fetched_at,
            "1970-01-01T00:00:00.001Z"
        );
        f.fetched_time_ms = Some(i64::MAX);
        f.fetched_at_ms = i64::MIN;
        assert_eq!(normalize(&f, "m").unwrap().fetched_at, EPOCH);
    }

    #[test]
    fn cycles_and_orphans_are_not_output() {
        let f = fetched(
            "r",
            json!({
                "r": {"elementType": "BOARD", "location": {"parentId": "b"}},
                "a": card("r"),
                "b": card("a"),
                "self": card("self"),
                "x": card("y"),
                "y": card("x"),
                "orphan": card("nowhere"),
                "noparent": {"elementType": "CARD"}
            }),
        );
        let doc = normalize(&f, "m").unwrap();
        assert_eq!(chain(&doc), ["a", "b"]);
        assert_eq!(doc.board.children.len(), 1);
        assert!(doc.board.children[0].children[0].children.is_empty());
    }

    #[test]
    fn trashed_and_deleted_elements_and_what_is_below_them_are_not_output() {
        let f = fetched(
            "r",
            json!({
                "r": {"elementType": "BOARD"},
                "kept": {"elementType": "CARD", "location": {"parentId": "r", "section": "CANVAS"},
                         "content": {"width": 34, "height": 12, "textContent": "kept"}},
                "trashed": {"elementType": "CARD", "location": {"parentId": "r-trash", "section": "TRASH"}},
                "trashed-here": {"elementType": "CARD", "location": {"parentId": "r", "section": "TRASH"}},
                "deleted": {"elementType": "COLUMN", "location": {"parentId": "r", "section": "DELETED"}},
                "below": {"elementType": "CARD", "location": {"parentId": "deleted", "section": "INBOX"}},
                "under-kept": {"elementType": "CARD", "location": {"parentId": "kept", "section": "deleted"}}
            }),
        );
        let doc = normalize(&f, "m").unwrap();
        assert_eq!(chain(&doc), ["kept"]);
        assert_eq!(doc.board.children.len(), 1);
        let kept = serde_json::to_value(&doc.board.children[0]).unwrap();
        assert_eq!((&kept["width"], &kept["height"]), (&json!(34), &json!(12)));
        // The streaming writer gives the same bytes.
        let mut out = Vec::new();
        write(&f, "m", Coverage::Full, &mut out).unwrap();
        assert_eq!(out, serde_json::to_vec(&doc).unwrap());
    }

    #[test]
    fn duplicate_ids_keep_one_element() {
        let f = fetched(
            "r",
            json!({
                "r": {"elementType": "BOARD"},
                "k1": {"id": "c", "elementType": "COLUMN", "location": {"parentId": "r"}},
                "c": {"elementType": "CARD", "location": {"parentId": "r"}},
                "k2": {"id": "c", "elementType": "TASK", "location": {"parentId": "r"}}
            }),
        );
        let doc = serde_json::to_value(normalize(&f, "m").unwrap()).unwrap();
        // The later claim wins, as when responses are merged.
        assert_eq!(
            doc["board"]["children"],
            json!([{"id": "c", "type": "TASK", "location": {"parentId": "r"}, "children": []}])
        );
    }

    /// Nesting depth of arrays/objects (a scalar is 0), without recursion.
    fn max_depth(value: &Value) -> usize {
        let mut deepest = 0;
        let mut stack = vec![(value, 1)];
        while let Some((v, d)) = stack.pop() {
            match v {
                Value::Array(items) => {
                    deepest = deepest.max(d);
                    stack.extend(items.iter().map(|i| (i, d + 1)));
                }
                Value::Object(map) => {
                    deepest = deepest.max(d);
                    stack.extend(map.values().map(|i| (i, d + 1)));
                }
                _ => {}
            }
        }
        deepest
    }

    #[test]
    fn depth_is_bounded_and_the_document_reparses() {
        let mut elements = Map::new();
        elements.insert("r".into(), json!({"elementType": "BOARD"}));
        let levels = MAX_NODE_DEPTH + 20;
        let mut parent = "r".to_owned();
        for i in 0..levels {
            let id = format!("n{i}");
            // A deep rich text at every level, to fill the raw budget too:
            // as deep as a provider answer may nest it (`MAX_CONTENT_DEPTH`).
            let mut deep = json!({"type": "text", "text": "t"});
            for _ in 0..55 {
                let mut wrapper = Map::new();
                wrapper.insert("type".into(), json!("blockquote"));
                wrapper.insert("content".into(), Value::Array(vec![deep]));
                deep = Value::Object(wrapper);
            }
            let cell = json!({"draftContent": {"type": "doc", "content": [deep]}});
            elements.insert(
                id.clone(),
                json!({"elementType": "TABLE", "location": {"parentId": parent},
                       "content": {"tableContent": {"data": [[cell]]}}}),
            );
            parent = id;
        }
        let f = Fetched::from_elements("r", elements);
        let doc = normalize(&f, "m").unwrap();
        assert_eq!(chain(&doc).len(), MAX_NODE_DEPTH);
        let bytes = serde_json::to_vec(&doc).unwrap();
        let back: Value = serde_json::from_slice(&bytes).expect("within serde_json's depth limit");
        assert_eq!(
            max_depth(&back),
            120,
            "the documented bound, reached by table cells"
        );
        assert_eq!(
            back["board"]["children"][0]["table"]["rows"][0][0]["value"],
            "t"
        );
    }

    #[test]
    fn shared_thread_ids_copy_comments_within_a_budget() {
        let mut f = fetched(
            "r",
            json!({
                "r": {"elementType": "BOARD"},
                "t1": {"elementType": "COMMENT_THREAD", "location": {"parentId": "r", "section": "a"}, "content": {"threadId": "T"}},
                "t2": {"elementType": "COMMENT_THREAD", "location": {"parentId": "r", "section": "b"}, "content": {"threadId": "T"}},
                "t3": {"elementType": "COMMENT_THREAD", "location": {"parentId": "r", "section": "c"}},
                "t4": {"elementType": "COMMENT_THREAD", "location": {"parentId": "r", "section": "d"}, "content": {"threadId": "T"}},
                "t5": {"elementType": "COMMENT_THREAD", "location": {"parentId": "r", "section": "e"}, "content": {"threadId": "T"}}
            }),
        );
        f.comments = crate::provider::fetched::comments_of(
            &serde_json::from_value(json!({
                "c1": {"threadId": "T", "text": "one", "createdAt": 2},
                "c2": {"threadId": "T", "text": "two", "createdAt": 1},
                "c3": {"threadId": "t3", "text": "three"},
                "c4": {"text": "no thread"}
            }))
            .unwrap(),
        );
        let doc = serde_json::to_value(normalize(&f, "m").unwrap()).unwrap();
        let ids = |i: usize| -> Vec<Value> {
            let list = doc["board"]["children"][i]["comments"].as_array().unwrap();
            list.iter().map(|c| c["id"].clone()).collect()
        };
        assert_eq!(ids(0), [json!("c2"), json!("c1")]);
        assert_eq!(ids(1), [json!("c2"), json!("c1")]);
        assert_eq!(ids(2), [json!("c3")]);
        // The budget (4 comments in the input) paid t2's and t4's copies.
        assert_eq!(ids(3), [json!("c2"), json!("c1")]);
        assert!(ids(4).is_empty());
    }
}

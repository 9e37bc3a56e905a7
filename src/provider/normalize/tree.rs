//! Raw elements -> the node tree below the root, walked without recursion
//! and handed to a [`Sink`] node by node: built as a tree (`normalize`) or
//! written as it is walked (`write`).
//!
//! - Index: each raw element (an object) gets its id (`id`, `_id`, map key).
//!   When two entries claim one id, the later one wins, except that a
//!   `SKELETON` never replaces a `BOARD` (`raw::find_element`, the rule the
//!   provider client checks the root with); the other is dropped.
//! - Children of a node are the elements whose `location.parentId` is its id,
//!   ordered by [`super::order`]. Every element has one parent, so each is
//!   output at most once: the output grows linearly with the input.
//! - An element in a `TRASH` or `DELETED` section is no one's child,
//!   whatever its `parentId`: it is not part of the board, and neither is
//!   anything below it (unreachable from the root, like an orphan).
//! - A child already on the path (the root, when its own `parentId` points
//!   below it) is skipped, so a cycle never loops. Elements whose parent is
//!   missing or unreachable from the root (orphans) are not output.
//! - Nodes deeper than [`super::MAX_NODE_DEPTH`] levels are cut.
//! - Comments: a `COMMENT_THREAD` gets every comment whose `threadId` equals
//!   its `threadId` (else its id). When several thread elements share one
//!   `threadId`, the copies beyond the first are paid from a budget of as many
//!   comments as the input has, in document (pre-order) order, a whole thread
//!   at a time; a thread the budget cannot pay gets `[]`. So N threads sharing
//!   an id cannot multiply M comments into N x M.

use super::order::order_children;
use super::MAX_NODE_DEPTH;
use super::{content, fields};
use crate::document::leaves::Size;
use crate::document::{Comment, Completeness, Coverage, Node, NodeKind};
use crate::provider::answer::{CanvasOrder, Elements, JsonText};
use crate::provider::fetched::{outline_content, parse_content, Comments, IdHasher};
use crate::provider::head::{Head, HeldLocation};
use crate::provider::rich_text::CopyBuffers;
use crate::provider::Fetched;
use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// One indexed element.
#[derive(Clone, Copy)]
pub struct Entry<'a> {
    pub id: &'a str,
    pub head: &'a Head,
    /// The element's raw `content`.
    pub content: Option<&'a JsonText>,
}

/// The merged elements by id, and children by parent id. An element is
/// its place in the merged table, which is keyed by the id each element
/// claims ([`Fetched::elements`]): the table's own lookup finds an id, so
/// the index holds no second map of ids and no list of entries.
pub struct Index<'a> {
    elements: &'a Elements,
    children: HashMap<&'a str, Vec<usize>, IdHasher>,
}

impl<'a> Index<'a> {
    /// Indexes merged elements; entries that are not objects are no
    /// elements (no id finds them, and they are no one's children).
    pub fn new(elements: &'a Elements) -> Index<'a> {
        let mut children: HashMap<&'a str, Vec<usize>, IdHasher> = HashMap::default();
        for (i, element) in elements.values().enumerate() {
            let head = &element.head;
            if !head.is_object || head.is_removed() {
                continue;
            }
            let parent = head.location.as_ref().and_then(|l| l.parent_id.as_deref());
            if let Some(parent) = parent {
                children.entry(parent).or_default().push(i);
            }
        }
        Index { elements, children }
    }

    /// The element that is `id`.
    pub fn find(&self, id: &str) -> Option<usize> {
        let (i, _, element) = self.elements.get_full(id)?;
        element.head.is_object.then_some(i)
    }

    /// Element `i` (of [`Index::len`]); out of range (no index this index
    /// made), no element.
    pub fn entry(&self, i: usize) -> Entry<'a> {
        static NONE: Head = Head::NONE;
        match self.elements.get_index(i) {
            Some((id, element)) => Entry {
                id,
                head: &element.head,
                content: element.content.as_ref(),
            },
            None => Entry {
                id: "",
                head: &NONE,
                content: None,
            },
        }
    }

    /// The number of places in the table (elements and entries that are not).
    pub fn len(&self) -> usize {
        self.elements.len()
    }

    fn ordered_children(&self, id: &str, canvas_order: &CanvasOrder) -> Vec<usize> {
        let Some(children) = self.children.get(id) else {
            return Vec::new();
        };
        let child = |i: usize| {
            let entry = self.entry(i);
            (entry.id, entry.head.location.as_ref())
        };
        order_children(children, child, canvas_order.get(id))
    }
}

/// A node being walked: its children still to visit.
struct Frame {
    entry: usize,
    pending: Vec<usize>,
    next: usize,
    depth: usize,
}

/// Receives the tree in document (pre-)order: [`Sink::open`] for each node,
/// then the node's children, then [`Sink::close`]. The tree is never held
/// whole unless the sink holds it.
pub trait Sink {
    fn open(&mut self, node: Opened<'_>);
    fn close(&mut self);
}

/// A node as the walk hands it to a [`Sink`]: what was made of the element
/// (its kind and size), and the element's id and head, from which its
/// `location` and `timestamps` come. A writer writes those two from the
/// head, without the strings a [`Node`] would hold for them (about seven
/// an element: the id, the place's strings, four times).
pub struct Opened<'a> {
    pub id: &'a str,
    pub kind: NodeKind,
    pub size: Size,
    pub head: &'a Head,
}

impl Opened<'_> {
    /// The node, its `children` empty.
    pub fn into_node(self) -> Node {
        Node {
            id: self.id.to_owned(),
            kind: self.kind,
            size: self.size,
            location: self.head.location.as_ref().map(HeldLocation::location),
            timestamps: self.head.timestamps(),
            children: Vec::new(),
        }
    }
}

/// A sink that builds the tree.
#[derive(Default)]
#[cfg(any(test, feature = "internals"))]
pub struct TreeSink {
    open: Vec<Node>,
    root: Option<Node>,
}

#[cfg(any(test, feature = "internals"))]
impl TreeSink {
    /// The root, once the walk is done.
    pub fn into_root(self) -> Option<Node> {
        self.root
    }
}

#[cfg(any(test, feature = "internals"))]
impl Sink for TreeSink {
    fn open(&mut self, node: Opened<'_>) {
        self.open.push(node.into_node());
    }

    fn close(&mut self) {
        let Some(done) = self.open.pop() else { return };
        match self.open.last_mut() {
            Some(parent) => parent.children.push(done),
            None => self.root = Some(done),
        }
    }
}

/// Comments grouped by `threadId`, each group sorted by `createdAt` then id
/// (missing times last).
fn comments_by_thread(
    comments: &Comments,
    bodies: bool,
    reader: ContentReader,
) -> HashMap<String, Vec<Comment>> {
    let mut groups: HashMap<String, Vec<(Comment, &str)>> = HashMap::new();
    for (key, raw) in comments {
        if !raw.is_object {
            continue;
        }
        let comment = fields::comment(key, raw, bodies, reader);
        if let Some(thread) = comment.thread_id.clone() {
            groups.entry(thread).or_default().push((comment, key));
        }
    }
    groups
        .into_iter()
        .map(|(thread, mut list)| {
            // ISO strings of one fixed width sort chronologically; map keys are
            // unique, so the order is total.
            list.sort_by(|(a, ka), (b, kb)| {
                (a.created_at.is_none(), &a.created_at, &a.id, ka).cmp(&(
                    b.created_at.is_none(),
                    &b.created_at,
                    &b.id,
                    kb,
                ))
            });
            (thread, list.into_iter().map(|(c, _)| c).collect())
        })
        .collect()
}

/// Comment groups and what is left of the budget for repeated copies.
struct Threads {
    groups: HashMap<String, Vec<Comment>>,
    claimed: HashSet<String>,
    budget: usize,
}

impl Threads {
    fn claim(&mut self, thread: &str) -> Vec<Comment> {
        let Some(group) = self.groups.get(thread) else {
            return Vec::new();
        };
        if self.claimed.insert(thread.to_owned()) {
            return group.clone();
        }
        match self.budget.checked_sub(group.len()) {
            Some(left) => {
                self.budget = left;
                group.clone()
            }
            None => Vec::new(),
        }
    }
}

/// How the walk reads the content of elements whose body is rich text or
/// a table ([`fields::rich_key`]), and comments' rich text; other content
/// is parsed into a value either way.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum ContentReader {
    /// Straight from its text, the rich text into blocks and plain text
    /// without a value tree ([`content::read`]): the serving path.
    Text,
    /// Parsed into a value, then read: the reference pipeline.
    #[cfg(any(test, feature = "internals"))]
    Tree,
}

/// Walks the tree from `root` (an element of `index`), handing
/// each node to `sink` in document order; an outline's nodes come without
/// bodies (see [`Coverage`]). Returns the nested boards output whose
/// children were not loaded (the same for either coverage).
pub fn walk(
    index: &Index<'_>,
    root: usize,
    fetched: &Fetched,
    coverage: Coverage,
    reader: ContentReader,
    sink: &mut impl Sink,
) -> Completeness {
    let bodies = coverage == Coverage::Full;
    let mut threads = Threads {
        groups: comments_by_thread(&fetched.comments, bodies, reader),
        claimed: HashSet::new(),
        budget: fetched.comments.len(),
    };
    let mut seen = vec![false; index.len()];
    let mut on_path = vec![false; index.len()];
    let mut completeness = Completeness::default();
    // The rich-text copy's buffers, grown once for the whole walk.
    let mut copy = CopyBuffers::default();
    let mut make =
        |i: usize, depth: usize, threads: &mut Threads, completeness: &mut Completeness| {
            let entry = index.entry(i);
            // Only a board has children of its own to load.
            let unloaded = match entry.head.element_type() {
                "BOARD" => fetched.unloaded_reason(entry.id),
                _ => None,
            };
            let element_type = entry.head.element_type();
            let (mut kind, size) = match (entry.content, fields::rich_key(element_type), reader) {
                (Some(raw), Some(key), ContentReader::Text) if bodies => {
                    let read = content::read(raw, key, &mut copy);
                    let c = &read.members;
                    let mut rich = read.body;
                    let kind = fields::kind_of(entry.head, c, None, &mut rich, unloaded, bodies);
                    (kind, fields::size(Some(c)))
                }
                _ => {
                    let content = entry.content.and_then(|raw| {
                        if bodies {
                            parse_content(raw)
                        } else {
                            outline_content(raw)
                        }
                    });
                    let content = content.as_ref();
                    // A body read from a value is the reference's only.
                    let rich = match reader {
                        ContentReader::Text => fields::Rich::Read(None),
                        #[cfg(any(test, feature = "internals"))]
                        ContentReader::Tree => fields::Rich::Tree,
                    };
                    let kind = fields::kind(entry.head, content, rich, unloaded, bodies);
                    (kind, fields::size(content.and_then(Value::as_object)))
                }
            };
            if let NodeKind::Board(board) = &kind {
                if let (Some(reason), true) = (board.unloaded_reason, depth > 0) {
                    completeness.add(reason);
                }
            }
            if let NodeKind::CommentThread(thread) = &mut kind {
                let key = thread.thread_id.as_deref().unwrap_or(entry.id);
                thread.comments = threads.claim(key);
            }
            let pending = if depth < MAX_NODE_DEPTH {
                index.ordered_children(entry.id, &fetched.canvas_order)
            } else {
                Vec::new()
            };
            let node = Opened {
                id: entry.id,
                kind,
                size,
                head: entry.head,
            };
            let frame = Frame {
                entry: i,
                pending,
                next: 0,
                depth,
            };
            (frame, node)
        };
    seen[root] = true;
    on_path[root] = true;
    let (top_level, node) = make(root, 0, &mut threads, &mut completeness);
    sink.open(node);
    let mut stack: Vec<Frame> = Vec::new();
    for &first in &top_level.pending {
        if on_path[first] || seen[first] {
            continue;
        }
        seen[first] = true;
        on_path[first] = true;
        let (frame, node) = make(first, 1, &mut threads, &mut completeness);
        sink.open(node);
        stack.push(frame);
        while let Some(top) = stack.last_mut() {
            if let Some(&child) = top.pending.get(top.next) {
                top.next += 1;
                if on_path[child] || seen[child] {
                    continue;
                }
                let depth = top.depth + 1;
                seen[child] = true;
                on_path[child] = true;
                let (frame, node) = make(child, depth, &mut threads, &mut completeness);
                sink.open(node);
                stack.push(frame);
                continue;
            }
            if let Some(done) = stack.pop() {
                on_path[done.entry] = false;
                sink.close();
            }
        }
    }
    sink.close();
    completeness
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::fetched::comments_of;
    use crate::provider::head::find_element;
    use serde_json::json;

    #[test]
    fn comments_sorted_by_created_at_then_id_missing_last() {
        let raw = json!({
            "k1": {"id": "b", "threadId": "T", "createdAt": 5},
            "k2": {"id": "a", "threadId": "T", "createdAt": "1970-01-01T00:00:00.005Z"},
            "k3": {"id": "c", "threadId": "T"},
            "k4": {"id": "d", "threadId": "T", "createdAt": "garbage"},
            "k5": {"id": "e", "threadId": "T", "createdAt": 1},
            "k6": {"id": "a", "threadId": "T", "createdAt": 5},
            "k7": {"id": "z", "threadId": "U"},
            "k8": {"id": "y"},
            "k9": "not an object"
        });
        let comments = comments_of(raw.as_object().unwrap());
        let groups = comments_by_thread(&comments, true, ContentReader::Text);
        let ids = |t: &str| -> Vec<String> { groups[t].iter().map(|c| c.id.clone()).collect() };
        assert_eq!(ids("T"), ["e", "a", "a", "b", "c", "d"]);
        assert_eq!(ids("U"), ["z"]);
        assert_eq!(groups.len(), 2);
    }

    #[test]
    fn index_resolves_duplicate_ids() {
        let elements = json!({
            "a": {"id": "x"},
            "b": {"id": "x", "elementType": "SECOND"},
            "x": {"elementType": "KEYED"},
            "y": {"id": "w", "elementType": "FIRST"},
            "z": {"id": "w"},
            "v": {"id": "b", "elementType": "BOARD"},
            "u": {"id": "b", "elementType": "SKELETON"},
            "n": 5,
            "m": {"id": "n"}
        });
        let map = elements.as_object().unwrap();
        let fetched = Fetched::from_elements("r", map.clone());
        let index = Index::new(&fetched.elements);
        let kind = |id: &str| {
            let found = index.find(id).expect("indexed");
            index.entry(found).head.element_type().to_owned()
        };
        // The later claim wins, except a SKELETON over a BOARD; the same
        // element as the provider client's root check finds.
        assert_eq!(kind("x"), "KEYED");
        assert_eq!(kind("w"), "");
        assert_eq!(kind("b"), "BOARD");
        let heads: Vec<(String, Head)> = map
            .iter()
            .map(|(k, v)| (k.clone(), Head::read_under(k, v)))
            .collect();
        for id in ["x", "w", "b", "n"] {
            let found = find_element(heads.iter().map(|(k, h)| (k.as_str(), h)), id);
            let indexed = index.find(id).map(|i| index.entry(i).head);
            assert_eq!(found, indexed, "{id}");
        }
        let elements = (0..index.len()).filter(|&i| index.entry(i).head.is_object);
        assert_eq!(elements.count(), 4);
        assert!(!index.entry(index.len()).head.is_object);
        // A non-object claims its key and can be replaced; alone it is no element.
        let lone = Fetched::from_elements("r", json!({"n": 5}).as_object().unwrap().clone());
        assert_eq!(Index::new(&lone.elements).find("n"), None);
    }
}

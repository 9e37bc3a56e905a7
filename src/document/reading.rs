//! Where an element sits on its board, as a person reads it: which sections
//! are not the board at all ([`is_removed_section`]), and the order in which
//! a node's children are read ([`reading_order`]).
//!
//! The document's JSON keeps the stored order (`canvasOrder`, then section,
//! score, ...), which is stacking order: the card drawn on top comes first.
//! Renders meant to be read (Markdown, search results) use the reading
//! order instead. For the children of one node:
//!
//! 1. `ATTACHED` children first: a comment thread attached to an element is
//!    read right after that element (a pre-order walk writes the element,
//!    then its children).
//! 2. `CANVAS` children in rows: by `position.y`, then `position.x`, top to
//!    bottom and left to right (grid units; smaller first).
//! 3. `INBOX` children (the notes of a column or a task list, a board's
//!    unsorted tray) by `position.index`.
//! 4. Everything else (`QUICK_NOTES`, a section this code does not know).
//!
//! A child without a section counts as on the canvas when it has `x` or
//! `y`, else in the inbox when it has an `index` (older samples carry no
//! section). A number that is missing sorts after every number of its
//! group, and ties keep the order the children were given in (the sort is
//! stable), so a selection that left `location` out (the `compact` view)
//! reads in the document's own order: the reading order is always computed
//! from what the selection kept, never from fields it dropped.
//!
//! To read a whole board, walk it in pre-order and take each node's children
//! in [`reading_order`] ([`in_reading_order`] for [`Node`]s).

#[cfg(any(test, feature = "internals"))]
use super::leaves::{Location, Scalar};
#[cfg(any(test, feature = "internals"))]
use super::types::Node;
use serde_json::Value;

/// The sections that hold what was trashed or deleted: an element there, and
/// everything below it, is not part of the board (ASCII case ignored).
pub const REMOVED_SECTIONS: [&str; 2] = ["TRASH", "DELETED"];

/// Whether `section` is one of [`REMOVED_SECTIONS`].
pub fn is_removed_section(section: &str) -> bool {
    REMOVED_SECTIONS
        .iter()
        .any(|s| s.eq_ignore_ascii_case(section))
}

/// The groups of the reading order, in the order they are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Group {
    Attached,
    Canvas,
    Inbox,
    Other,
}

/// What the reading order compares for one child (see the module docs),
/// as one value that sorts in reading order: the group, then `first` and
/// `second` as `sortable` integers. Comparing two keys is comparing
/// integers, so sorting the 7,000 children of a large canvas costs little.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ReadingKey {
    group: Group,
    /// `y` on the canvas, `index` in the inbox.
    first: u64,
    /// `x` on the canvas.
    second: u64,
}

impl ReadingKey {
    /// The key of a child in `section` at `x`, `y` (canvas) or `index`
    /// (inbox); non-finite numbers count as missing.
    pub fn new(
        section: Option<&str>,
        x: Option<f64>,
        y: Option<f64>,
        index: Option<f64>,
    ) -> ReadingKey {
        let [x, y, index] = [x, y, index].map(|n| n.filter(|f| f.is_finite()));
        let group = match section {
            Some(s) if s.eq_ignore_ascii_case("ATTACHED") => Group::Attached,
            Some(s) if s.eq_ignore_ascii_case("CANVAS") => Group::Canvas,
            Some(s) if s.eq_ignore_ascii_case("INBOX") => Group::Inbox,
            Some(_) => Group::Other,
            None if x.is_some() || y.is_some() => Group::Canvas,
            None if index.is_some() => Group::Inbox,
            None => Group::Other,
        };
        let (first, second) = match group {
            Group::Canvas => (y, x),
            Group::Inbox => (index, None),
            Group::Attached | Group::Other => (None, None),
        };
        ReadingKey {
            group,
            first: sortable(first),
            second: sortable(second),
        }
    }

    /// The key of a document node's `location`.
    #[cfg(any(test, feature = "internals"))]
    pub fn of_location(location: Option<&Location>) -> ReadingKey {
        let section = location
            .and_then(|l| l.section.as_ref())
            .and_then(|s| s.0.as_str());
        let position = location.and_then(|l| l.position.as_ref());
        let coord = |pick: fn(&super::leaves::Position) -> Option<&Scalar>| {
            position.and_then(pick).and_then(|s| number(&s.0))
        };
        ReadingKey::new(
            section,
            coord(|p| p.x.as_ref()),
            coord(|p| p.y.as_ref()),
            coord(|p| p.index.as_ref()),
        )
    }
}

/// A number as an integer in the same order ([`f64::total_cmp`]'s: the
/// sign bit set for a positive number, every bit flipped for a negative
/// one), and a missing number as `u64::MAX`, after every finite number.
fn sortable(n: Option<f64>) -> u64 {
    match n {
        Some(f) if f.is_sign_positive() => f.to_bits() | 1 << 63,
        Some(f) => !f.to_bits(),
        None => u64::MAX,
    }
}

/// A position coordinate as a number: a JSON number, or a string that is a
/// finite decimal number (Milanote has written some positions as strings).
pub fn number(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64().filter(|f| f.is_finite()),
        Value::String(s) => numeric(s),
        _ => None,
    }
}

/// A finite number written as a decimal string (`"12"`, `"-0.5"`, `"1e3"`;
/// not `"inf"`, `"NaN"` or `" 1"`).
pub fn numeric(s: &str) -> Option<f64> {
    let first = s.bytes().next()?;
    if !(first.is_ascii_digit() || matches!(first, b'-' | b'+' | b'.')) {
        return None;
    }
    s.parse::<f64>().ok().filter(|f| f.is_finite())
}

/// The reading order of children whose keys are `keys`: indexes into
/// `keys`, first read first. Ties keep the given order.
pub fn reading_order(keys: &[ReadingKey]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..keys.len()).collect();
    if !in_order(keys.iter().copied()) {
        order.sort_by_key(|&i| keys[i]);
    }
    order
}

/// Whether `keys` are already in reading order (a column's inbox, most
/// canvases written in rows, children without `location`): then there is
/// nothing to sort.
pub fn in_order(keys: impl IntoIterator<Item = ReadingKey>) -> bool {
    let mut keys = keys.into_iter();
    let Some(mut previous) = keys.next() else {
        return true;
    };
    keys.all(|key| {
        let ordered = previous <= key;
        previous = key;
        ordered
    })
}

/// Sorts `keyed`, children paired with their keys in the given order, into
/// reading order (stable: ties keep the given order).
pub fn sort<T>(keyed: &mut [(ReadingKey, T)]) {
    keyed.sort_by_key(|(key, _)| *key);
}

/// `nodes` (the children of one node) in reading order.
#[cfg(any(test, feature = "internals"))]
pub fn in_reading_order(nodes: &[Node]) -> Vec<&Node> {
    let keys: Vec<ReadingKey> = nodes
        .iter()
        .map(|n| ReadingKey::of_location(n.location.as_ref()))
        .collect();
    reading_order(&keys)
        .into_iter()
        .map(|i| &nodes[i])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn canvas(x: f64, y: f64) -> ReadingKey {
        ReadingKey::new(Some("CANVAS"), Some(x), Some(y), None)
    }

    #[test]
    fn removed_sections() {
        for s in ["TRASH", "DELETED", "trash", "Deleted"] {
            assert!(is_removed_section(s), "{s}");
        }
        for s in ["CANVAS", "INBOX", "ATTACHED", "QUICK_NOTES", "", "TRASHED"] {
            assert!(!is_removed_section(s), "{s}");
        }
    }

    #[test]
    fn canvas_reads_in_rows_then_inbox_attached_first() {
        let keys = [
            canvas(40.0, 2.0),                                      // 0: row 1, right
            ReadingKey::new(Some("INBOX"), None, None, Some(1.0)),  // 1
            canvas(4.0, 30.0),                                      // 2: row 2
            canvas(4.0, 2.0),                                       // 3: row 1, left
            ReadingKey::new(Some("QUICK_NOTES"), None, None, None), // 4
            ReadingKey::new(Some("ATTACHED"), None, None, None),    // 5
            ReadingKey::new(Some("INBOX"), None, None, Some(0.0)),  // 6
            ReadingKey::new(Some("CANVAS"), None, None, None),      // 7: no position
        ];
        assert_eq!(reading_order(&keys), [5, 3, 0, 2, 7, 6, 1, 4]);
    }

    #[test]
    fn missing_positions_keep_the_given_order() {
        let none = ReadingKey::new(None, None, None, None);
        assert_eq!(reading_order(&[none, none, none]), [0, 1, 2]);
        // No section: placed by what position it has.
        let keys = [
            ReadingKey::new(None, None, None, Some(2.0)),
            ReadingKey::new(None, Some(9.0), Some(1.0), None),
            ReadingKey::new(None, None, None, Some(1.0)),
            ReadingKey::new(None, None, Some(0.0), None),
        ];
        assert_eq!(reading_order(&keys), [3, 1, 2, 0]);
        // Not finite: missing.
        let keys = [canvas(f64::NAN, 1.0), canvas(0.0, 1.0)];
        assert_eq!(reading_order(&keys), [1, 0]);
    }

    #[test]
    fn keys_order_numbers_as_total_cmp_and_missing_last() {
        let numbers = [
            f64::MIN,
            -2.5,
            -1e-300,
            -0.0,
            0.0,
            1e-300,
            1.0,
            2.5,
            f64::MAX,
        ];
        for pair in numbers.windows(2) {
            assert!(
                sortable(Some(pair[0])) < sortable(Some(pair[1])),
                "{pair:?}"
            );
        }
        assert!(sortable(Some(f64::MAX)) < sortable(None));
        assert!(in_order([
            canvas(1.0, 0.0),
            canvas(0.0, 1.0),
            canvas(0.0, 1.0)
        ]));
        assert!(!in_order([canvas(0.0, 1.0), canvas(1.0, 0.0)]));
        let mut keyed = [
            (canvas(0.0, 1.0), 'b'),
            (canvas(9.0, 0.0), 'a'),
            (canvas(0.0, 1.0), 'c'),
        ];
        sort(&mut keyed);
        assert_eq!(keyed.map(|(_, c)| c), ['a', 'b', 'c']);
    }

    #[test]
    fn numbers_from_json() {
        assert_eq!(number(&json!(3)), Some(3.0));
        assert_eq!(number(&json!("-0.5")), Some(-0.5));
        assert_eq!(number(&json!("1e3")), Some(1000.0));
        for v in [
            json!("inf"),
            json!(" 1"),
            json!("a"),
            json!(null),
            json!(true),
        ] {
            assert_eq!(number(&v), None, "{v}");
        }
    }

    #[test]
    fn nodes_in_reading_order() {
        let node = |id: &str, location: Value| -> Node {
            serde_json::from_value::<NodeIn>(json!({"id": id, "location": location}))
                .map(NodeIn::into_node)
                .unwrap()
        };
        let nodes = vec![
            node(
                "top-right",
                json!({"section": "CANVAS", "position": {"x": 40, "y": 0, "score": 1}}),
            ),
            node(
                "below",
                json!({"section": "CANVAS", "position": {"x": 0, "y": 20, "score": 2}}),
            ),
            node(
                "top-left",
                json!({"section": "CANVAS", "position": {"x": "4", "y": 0, "score": 3}}),
            ),
        ];
        let ids: Vec<&str> = in_reading_order(&nodes)
            .iter()
            .map(|n| n.id.as_str())
            .collect();
        assert_eq!(ids, ["top-left", "top-right", "below"]);
    }

    /// A node read from test JSON: only its id and location matter here.
    #[derive(serde::Deserialize)]
    struct NodeIn {
        id: String,
        location: Value,
    }

    impl NodeIn {
        fn into_node(self) -> Node {
            let l = &self.location;
            let s = |v: &Value| Scalar::from_value(v);
            let p = &l["position"];
            Node {
                id: self.id,
                kind: crate::document::NodeKind::Column(Default::default()),
                size: Default::default(),
                location: Some(Location {
                    section: s(&l["section"]),
                    position: Some(crate::document::Position {
                        x: s(&p["x"]),
                        y: s(&p["y"]),
                        index: s(&p["index"]),
                        score: s(&p["score"]),
                    }),
                    ..Location::default()
                }),
                timestamps: None,
                children: Vec::new(),
            }
        }
    }
}

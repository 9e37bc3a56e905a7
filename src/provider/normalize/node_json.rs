//! A node below the root as the writer writes it, with its children still
//! to come: the bytes serde_json writes for the [`Node`] with no children,
//! less the closing `]}`.
//!
//! The place and the times, which nearly every node has and whose shapes
//! are fixed, are written here by hand, and so is a card (id, type, its
//! fields, size), the most common node. Through serde each key is scanned
//! for escapes and each member goes through a map serializer (the kind's
//! and the size's fields are flattened into the node's): a card of the
//! benchmark board took about 7,900 instructions that way, 3,600 here.
//! Other kinds go through serde for their id, type, fields and size. What
//! is written here is what serde writes, byte for byte (the tests compare
//! the two on generated nodes, and the reference pipeline's differential
//! tests compare whole documents).

use crate::document::leaves::{Location, Position, RichText, Scalar, Size, Timestamps};
use crate::document::{Node, NodeKind};
use crate::provider::rich_text::write_str;
use serde::Serialize;

/// The node's id, type, type fields and size, as serde writes them.
#[derive(Serialize)]
struct Head<'a> {
    id: &'a str,
    #[serde(flatten)]
    kind: &'a NodeKind,
    #[serde(flatten)]
    size: &'a Size,
}

/// Appends `node` without its children and the end of its `children`
/// array: `{..."children":[`. `false` when serde refused a value (then
/// what was appended is unspecified).
pub(super) fn open(out: &mut Vec<u8>, node: &Node) -> bool {
    match &node.kind {
        // Most nodes of a board are cards: their fields are written here too.
        NodeKind::Card(card) => {
            let mut m = Members::open(out);
            m.string(b"\"id\":", Some(&node.id));
            m.key(b"\"type\":").extend_from_slice(b"\"CARD\"");
            if let Some(rich) = &card.rich_text {
                write_rich_text(m.key(b"\"richText\":"), rich);
            }
            m.scalar(b"\"background\":", card.background.as_ref());
            if let Some(transparent) = card.transparent {
                let value: &[u8] = if transparent { b"true" } else { b"false" };
                m.key(b"\"transparent\":").extend_from_slice(value);
            }
            m.scalar(b"\"width\":", node.size.width.as_ref());
            m.scalar(b"\"height\":", node.size.height.as_ref());
        }
        _ => {
            let head = Head {
                id: &node.id,
                kind: &node.kind,
                size: &node.size,
            };
            if serde_json::to_writer(&mut *out, &head).is_err() || out.pop() != Some(b'}') {
                return false;
            }
        }
    }
    // The object is open, with its id at least.
    if let Some(location) = &node.location {
        out.extend_from_slice(b",\"location\":");
        write_location(out, location);
    }
    if let Some(timestamps) = &node.timestamps {
        out.extend_from_slice(b",\"timestamps\":");
        write_timestamps(out, timestamps);
    }
    out.extend_from_slice(b",\"children\":[");
    true
}

/// An object's members, each optional: the comma before all but the first.
struct Members<'a> {
    out: &'a mut Vec<u8>,
    first: bool,
}

impl<'a> Members<'a> {
    fn open(out: &'a mut Vec<u8>) -> Self {
        out.push(b'{');
        Members { out, first: true }
    }

    /// `key` quoted with its colon: `"parentId":`.
    fn key(&mut self, key: &[u8]) -> &mut Vec<u8> {
        if !std::mem::replace(&mut self.first, false) {
            self.out.push(b',');
        }
        self.out.extend_from_slice(key);
        self.out
    }

    fn string(&mut self, key: &[u8], value: Option<&str>) {
        if let Some(value) = value {
            write_str(self.key(key), value);
        }
    }

    fn scalar(&mut self, key: &[u8], value: Option<&Scalar>) {
        if let Some(value) = value {
            write_scalar(self.key(key), value);
        }
    }

    fn close(self) {
        self.out.push(b'}');
    }
}

fn write_rich_text(out: &mut Vec<u8>, rich: &RichText) {
    out.extend_from_slice(b"{\"blocks\":[");
    for (i, block) in rich.blocks.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(block.json().as_bytes());
    }
    out.extend_from_slice(b"],\"plainText\":");
    write_str(out, &rich.plain_text);
    out.push(b'}');
}

fn write_location(out: &mut Vec<u8>, location: &Location) {
    let mut m = Members::open(out);
    m.string(b"\"parentId\":", location.parent_id.as_deref());
    m.scalar(b"\"section\":", location.section.as_ref());
    m.scalar(b"\"rootBoard\":", location.root_board.as_ref());
    if let Some(position) = &location.position {
        write_position(m.key(b"\"position\":"), position);
    }
    m.close();
}

fn write_position(out: &mut Vec<u8>, position: &Position) {
    let mut m = Members::open(out);
    m.scalar(b"\"x\":", position.x.as_ref());
    m.scalar(b"\"y\":", position.y.as_ref());
    m.scalar(b"\"index\":", position.index.as_ref());
    m.scalar(b"\"score\":", position.score.as_ref());
    m.close();
}

fn write_timestamps(out: &mut Vec<u8>, times: &Timestamps) {
    let mut m = Members::open(out);
    m.string(b"\"createdAt\":", times.created_at.as_deref());
    m.string(b"\"modifiedAt\":", times.modified_at.as_deref());
    m.string(
        b"\"significantModifiedAt\":",
        times.significant_modified_at.as_deref(),
    );
    m.string(
        b"\"locationModifiedAt\":",
        times.location_modified_at.as_deref(),
    );
    m.close();
}

/// A scalar (a string, number or boolean) as serde_json writes it.
fn write_scalar(out: &mut Vec<u8>, scalar: &Scalar) {
    match &scalar.0 {
        serde_json::Value::String(s) => write_str(out, s),
        // Numbers keep serde_json's own form (integers, floats, and any
        // feature that changes how it writes them).
        other => {
            let _ = serde_json::to_writer(out, other);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::leaves::Raw;
    use crate::document::{CardFields, ColumnFields};
    use proptest::prelude::*;
    use serde_json::{json, Value};

    /// What serde writes for `node` with its children empty, less `]}`.
    fn by_serde(node: &Node) -> Vec<u8> {
        let mut text = serde_json::to_vec(node).expect("serializes");
        assert!(text.ends_with(b"[]}"));
        text.truncate(text.len() - 2);
        text
    }

    fn by_hand(node: &Node) -> Vec<u8> {
        let mut out = b"prefix".to_vec();
        assert!(open(&mut out, node));
        out.split_off(6)
    }

    /// Strings with and without what JSON escapes, and non-ASCII.
    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-zA-Z0-9:.-]{0,24}",
            "[\\x00-\\x7f]{0,12}",
            "[\"\\\\\\x00-\\x1f\\x7f é😀a]{0,8}",
        ]
    }

    fn scalar() -> impl Strategy<Value = Scalar> {
        prop_oneof![
            text().prop_map(|s| Scalar(Value::String(s))),
            any::<i64>().prop_map(|n| Scalar(json!(n))),
            any::<u64>().prop_map(|n| Scalar(json!(n))),
            (-1e300f64..1e300).prop_map(|f| Scalar(json!(f))),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(|f| Scalar(json!(f))),
            any::<bool>().prop_map(|b| Scalar(Value::Bool(b))),
        ]
    }

    prop_compose! {
        fn position()(
            x in proptest::option::of(scalar()),
            y in proptest::option::of(scalar()),
            index in proptest::option::of(scalar()),
            score in proptest::option::of(scalar()),
        ) -> Position {
            Position { x, y, index, score }
        }
    }

    prop_compose! {
        fn location()(
            parent_id in proptest::option::of(text()),
            section in proptest::option::of(scalar()),
            root_board in proptest::option::of(scalar()),
            position in proptest::option::of(position()),
        ) -> Location {
            Location { parent_id, section, root_board, position }
        }
    }

    prop_compose! {
        fn timestamps()(
            created_at in proptest::option::of(text()),
            modified_at in proptest::option::of(text()),
            significant_modified_at in proptest::option::of(text()),
            location_modified_at in proptest::option::of(text()),
        ) -> Timestamps {
            Timestamps { created_at, modified_at, significant_modified_at, location_modified_at }
        }
    }

    prop_compose! {
        fn rich_text()(
            blocks in proptest::collection::vec(
                prop_oneof![
                    text().prop_map(|t| json!({"type": "paragraph", "text": t})),
                    Just(json!([])),
                    Just(json!({})),
                    scalar().prop_map(|s| s.0),
                ],
                0..4,
            ),
            plain_text in text(),
        ) -> RichText {
            RichText {
                blocks: blocks.iter().map(Raw::verbatim).collect(),
                plain_text,
            }
        }
    }

    prop_compose! {
        fn node()(
            id in text(),
            card in any::<bool>(),
            title in proptest::option::of(text()),
            background in proptest::option::of(scalar()),
            rich_text in proptest::option::of(rich_text()),
            transparent in proptest::option::of(any::<bool>()),
            width in proptest::option::of(scalar()),
            height in proptest::option::of(scalar()),
            location in proptest::option::of(location()),
            timestamps in proptest::option::of(timestamps()),
        ) -> Node {
            let kind = if card {
                NodeKind::Card(CardFields { rich_text, background, transparent })
            } else {
                NodeKind::Column(ColumnFields { title })
            };
            Node {
                id,
                kind,
                size: Size { width, height },
                location,
                timestamps,
                children: Vec::new(),
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        /// Every shape of place and times, written by hand, is serde's text.
        #[test]
        fn written_as_serde_writes(node in node()) {
            prop_assert_eq!(
                String::from_utf8(by_hand(&node)).unwrap(),
                String::from_utf8(by_serde(&node)).unwrap()
            );
        }
    }

    #[test]
    fn escapes_and_empty_objects() {
        let node = Node {
            id: "a\"b\\c\u{1}".into(),
            kind: NodeKind::Column(ColumnFields::default()),
            size: Size::default(),
            location: Some(Location {
                parent_id: Some("p\n".into()),
                position: Some(Position::default()),
                ..Location::default()
            }),
            timestamps: Some(Timestamps::default()),
            children: Vec::new(),
        };
        let written = String::from_utf8(by_hand(&node)).unwrap();
        assert_eq!(
            written,
            r#"{"id":"a\"b\\c\u0001","type":"COLUMN","location":{"parentId":"p\n","position":{}},"timestamps":{},"children":["#
        );
        assert_eq!(written.as_bytes(), by_serde(&node));
    }
}

//! A node below the root as the writer writes it, with its children still
//! to come: the bytes serde_json writes for the [`Node`](crate::document::Node)
//! with no children, less the closing `]}`.
//!
//! The place and the times, which nearly every node has and whose shapes
//! are fixed, are written here by hand, straight from the element's head
//! (no `String` is made for the id, the place's strings or the times),
//! and so is a card (id, type, its
//! fields, size), the most common node. Through serde each key is scanned
//! for escapes and each member goes through a map serializer (the kind's
//! and the size's fields are flattened into the node's): a card of the
//! benchmark board took about 7,900 instructions that way, 3,600 here.
//! Other kinds go through serde for their id, type, fields and size. What
//! is written here is what serde writes, byte for byte (the tests compare
//! the two on generated nodes, and the reference pipeline's differential
//! tests compare whole documents).

use super::tree::Opened;
use crate::document::leaves::{RichText, Scalar, Size};
use crate::document::NodeKind;
use crate::provider::head::{HeldLocation, HeldScalar, MetaTimes};
use crate::provider::rich_text::{quote, write_str};
use serde::Serialize;

/// The node's id, type, type fields and size, as serde writes them.
#[derive(Serialize)]
struct Own<'a> {
    id: &'a str,
    #[serde(flatten)]
    kind: &'a NodeKind,
    #[serde(flatten)]
    size: &'a Size,
}

/// Appends `node` without its children and the end of its `children`
/// array: `{..."children":[`. `false` when serde refused a value (then
/// what was appended is unspecified). Its place and times are written
/// from its head, as [`Opened::into_node`] would hold them.
pub(super) fn open(out: &mut Vec<u8>, node: &Opened<'_>) -> bool {
    match &node.kind {
        // Most nodes of a board are cards: their fields are written here too.
        NodeKind::Card(card) => {
            let mut m = Members::open(out);
            m.string(b"\"id\":", Some(node.id));
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
            let own = Own {
                id: node.id,
                kind: &node.kind,
                size: &node.size,
            };
            if serde_json::to_writer(&mut *out, &own).is_err() || out.pop() != Some(b'}') {
                return false;
            }
        }
    }
    // The object is open, with its id at least.
    if let Some(location) = &node.head.location {
        out.extend_from_slice(b",\"location\":");
        write_location(out, location);
    }
    write_timestamps(out, &node.head.times);
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

    fn held(&mut self, key: &[u8], value: Option<&HeldScalar>) {
        if let Some(value) = value {
            write_held(self.key(key), value);
        }
    }

    fn close(self) {
        self.out.push(b'}');
    }
}

fn write_rich_text(out: &mut Vec<u8>, rich: &RichText) {
    out.extend_from_slice(b"{\"blocks\":");
    out.extend_from_slice(rich.blocks.json().as_bytes());
    out.extend_from_slice(b",\"plainText\":");
    write_str(out, &rich.plain_text);
    out.push(b'}');
}

/// What [`HeldLocation::location`] holds, as serde writes it: `position`
/// only when a coordinate is there.
fn write_location(out: &mut Vec<u8>, location: &HeldLocation) {
    const POSITION: [&[u8]; 4] = [b"\"x\":", b"\"y\":", b"\"index\":", b"\"score\":"];
    let mut m = Members::open(out);
    m.string(b"\"parentId\":", location.parent_id.as_deref());
    m.held(b"\"section\":", location.section.as_ref());
    m.held(b"\"rootBoard\":", location.root_board.as_ref());
    if location.position.iter().any(Option::is_some) {
        let mut p = Members::open(m.key(b"\"position\":"));
        for (key, coordinate) in POSITION.into_iter().zip(&location.position) {
            p.held(key, coordinate.as_ref());
        }
        p.close();
    }
    m.close();
}

/// `,"timestamps":{...}` with what [`MetaTimes::timestamps`] holds, as
/// serde writes it; nothing when it holds no time.
fn write_timestamps(out: &mut Vec<u8>, times: &MetaTimes) {
    const KEYS: [&[u8]; 4] = [
        b"\"createdAt\":",
        b"\"modifiedAt\":",
        b"\"significantModifiedAt\":",
        b"\"locationModifiedAt\":",
    ];
    let texts = times.texts();
    if texts.iter().all(Option::is_none) {
        return;
    }
    out.extend_from_slice(b",\"timestamps\":");
    let mut m = Members::open(out);
    for (key, text) in KEYS.into_iter().zip(&texts) {
        if let Some(text) = text {
            // Digits and separators: nothing to escape.
            quote(m.key(key), text.bytes());
        }
    }
    m.close();
}

/// A held scalar as serde_json writes the [`Scalar`] it stands for.
fn write_held(out: &mut Vec<u8>, held: &HeldScalar) {
    match held {
        HeldScalar::Text(s) => write_str(out, s),
        HeldScalar::Name(s) => write_str(out, s),
        HeldScalar::Shared(s) => write_str(out, s),
        HeldScalar::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        // serde_json's own form, as for a number in a value.
        HeldScalar::Number(n) => {
            let _ = serde_json::to_writer(out, n);
        }
    }
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
    use crate::document::leaves::{Blocks, Raw};
    use crate::document::{CardFields, ColumnFields};
    use crate::provider::head::{Head, SharedStr};
    use proptest::prelude::*;
    use serde_json::{json, Value};

    /// A node as the walk opens it, with what it borrows.
    #[derive(Debug, Clone)]
    struct Case {
        id: String,
        kind: NodeKind,
        size: Size,
        head: Head,
    }

    impl Case {
        fn opened(&self) -> Opened<'_> {
            Opened {
                id: &self.id,
                kind: self.kind.clone(),
                size: self.size.clone(),
                head: &self.head,
            }
        }
    }

    /// What serde writes for the case's node with its children empty,
    /// less `]}`.
    fn by_serde(case: &Case) -> Vec<u8> {
        let mut text = serde_json::to_vec(&case.opened().into_node()).expect("serializes");
        assert!(text.ends_with(b"[]}"));
        text.truncate(text.len() - 2);
        text
    }

    fn by_hand(case: &Case) -> Vec<u8> {
        let mut out = b"prefix".to_vec();
        assert!(open(&mut out, &case.opened()));
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

    // Boxed: the node's strategy nests these many times over, and unboxed
    // its value tree overflows a test thread's stack in a debug build.
    fn held() -> BoxedStrategy<HeldScalar> {
        prop_oneof![
            scalar().prop_filter_map("a scalar", |s| HeldScalar::of(Some(&s.0))),
            proptest::sample::select(vec!["CANVAS", "canvas", "TRASH"]).prop_map(HeldScalar::text),
        ]
        .boxed()
    }

    prop_compose! {
        fn location()(
            parent_id in proptest::option::of(text()),
            section in proptest::option::of(held()),
            root_board in proptest::option::of(held()),
            position in proptest::array::uniform4(proptest::option::of(held())),
        ) -> HeldLocation {
            HeldLocation { parent_id: parent_id.as_deref().map(SharedStr::from), section, root_board, position }
        }
    }

    /// What the provider sends as a time, and what it must not be taken for.
    fn time() -> impl Strategy<Value = HeldScalar> {
        prop_oneof![
            (-62_167_219_200_000i64..=253_402_300_799_999)
                .prop_map(|ms| HeldScalar::Number(ms.into())),
            any::<i64>().prop_map(|ms| HeldScalar::Number(ms.into())),
            (-1e13f64..1e13).prop_filter_map("finite", |f| {
                serde_json::Number::from_f64(f).map(HeldScalar::Number)
            }),
            Just(HeldScalar::owned("2024-03-01T10:20:30+01:00")),
            Just(HeldScalar::owned(" 1700000000123 ")),
            text().prop_map(|t| HeldScalar::owned(&t)),
            any::<bool>().prop_map(HeldScalar::Bool),
        ]
    }

    fn times() -> BoxedStrategy<MetaTimes> {
        proptest::array::uniform4(proptest::option::of(time()))
            .prop_map(MetaTimes::new)
            .boxed()
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
                blocks: Blocks::of(&blocks.iter().map(Raw::verbatim).collect::<Vec<_>>()),
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
            times in times(),
        ) -> Case {
            let kind = if card {
                NodeKind::Card(CardFields { rich_text, background, transparent })
            } else {
                NodeKind::Column(ColumnFields { title })
            };
            let mut head = Head::default();
            (head.location, head.times) = (location, times);
            Case { id, kind, size: Size { width, height }, head }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        /// Every shape of place and times, written by hand from the head,
        /// is serde's text of the node the head makes.
        #[test]
        fn written_as_serde_writes(case in node()) {
            prop_assert_eq!(
                String::from_utf8(by_hand(&case)).unwrap(),
                String::from_utf8(by_serde(&case)).unwrap()
            );
        }
    }

    #[test]
    fn escapes_and_what_is_left_out() {
        // No coordinate, no position; no time the document can write, no
        // timestamps.
        let unwritable = HeldScalar::Number(253_402_300_800_000i64.into());
        let mut head = Head::default();
        head.location = Some(HeldLocation {
            parent_id: Some("p\n".into()),
            ..HeldLocation::default()
        });
        head.times = MetaTimes::new([None, Some(unwritable), None, None]);
        let case = Case {
            id: "a\"b\\c\u{1}".into(),
            kind: NodeKind::Column(ColumnFields::default()),
            size: Size::default(),
            head,
        };
        let written = String::from_utf8(by_hand(&case)).unwrap();
        assert_eq!(
            written,
            r#"{"id":"a\"b\\c\u0001","type":"COLUMN","location":{"parentId":"p\n"},"children":["#
        );
        assert_eq!(written.as_bytes(), by_serde(&case));
    }
}

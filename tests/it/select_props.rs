//! Property tests of sanitize + select over random BoardDocuments built from
//! the `types.rs` structs: no sensitive key or planted secret in any output,
//! selector order never matters, include and exclude partition the full view,
//! and every unpruned document validates against `boardDocumentSchema`.

use proptest::prelude::*;
use serde_json::{json, Map, Value};
use shared_board_api::internals::document::model::{self, Model};
use shared_board_api::internals::document::sanitize::{is_sensitive, sanitize, SENSITIVE_KEYS};
use shared_board_api::internals::document::*;
use shared_board_api::internals::pipeline::{markdown, reference, LoadedBoard, Representation};
use shared_board_api::internals::select::{Selection, View};
use std::collections::BTreeMap;
use std::sync::LazyLock;

/// Every planted secret contains this; no output may.
const SECRET: &str = "SECRET-d4c0";

static VALIDATOR: LazyLock<jsonschema::Validator> = LazyLock::new(|| {
    jsonschema::draft202012::new(&schema::generate()).expect("the generated schema compiles")
});

// ---------------------------------------------------------------- generators

/// A sensitive key in a random ASCII case.
fn sensitive_key() -> impl Strategy<Value = String> {
    (0..SENSITIVE_KEYS.len(), any::<u32>()).prop_map(|(i, mask)| {
        SENSITIVE_KEYS[i]
            .chars()
            .enumerate()
            .map(|(j, c)| {
                if mask >> (j % 32) & 1 == 1 {
                    c.to_ascii_uppercase()
                } else {
                    c
                }
            })
            .collect()
    })
}

fn text() -> impl Strategy<Value = String> {
    "[a-z]{0,6}"
}

fn scalar() -> impl Strategy<Value = Scalar> {
    prop_oneof![
        text().prop_map(|s| Scalar(Value::from(s))),
        any::<i32>().prop_map(|n| Scalar(Value::from(n))),
        any::<bool>().prop_map(|b| Scalar(Value::from(b))),
    ]
}

/// Raw provider JSON (blocks, unknown content), sometimes carrying secrets.
fn raw() -> impl Strategy<Value = Raw> {
    (text(), sensitive_key(), any::<u8>()).prop_map(|(t, key, pick)| {
        Raw::verbatim(&match pick % 4 {
            0 => json!({"type": "text", "text": t}),
            1 => json!({"type": "paragraph", "content": [{"type": "text", "text": t, "attrs": {key: SECRET}}]}),
            2 => json!({"id": t, "title": t, key: {"nested": SECRET}, "timestamps": {}}),
            _ => json!([t, {"data": {key: [SECRET]}}]),
        })
    })
}

fn rich_text() -> impl Strategy<Value = RichText> {
    (prop::collection::vec(raw(), 0..3), text()).prop_map(|(blocks, plain_text)| RichText {
        blocks: Blocks::of(&blocks),
        plain_text,
    })
}

fn opt<S: Strategy>(s: S) -> impl Strategy<Value = Option<S::Value>> {
    prop::option::of(s)
}

fn icon() -> impl Strategy<Value = Icon> {
    (opt(scalar()), opt(scalar()), opt(text()), opt(text())).prop_map(|(kind, id, svg, png)| Icon {
        kind,
        id,
        name: None,
        svg_url: svg,
        png_url: png,
    })
}

fn image() -> impl Strategy<Value = Image> {
    (
        opt(text()),
        opt(scalar()),
        opt(prop::collection::vec(raw(), 0..2)),
    )
        .prop_map(|(url, width, colors)| Image {
            url,
            width,
            colors,
            ..Image::default()
        })
}

fn file() -> impl Strategy<Value = File> {
    (opt(scalar()), opt(text()), opt(text())).prop_map(|(kind, url, modified_at)| File {
        kind,
        url,
        modified_at,
        ..File::default()
    })
}

fn location() -> impl Strategy<Value = Location> {
    (opt(text()), opt(scalar()), opt(scalar())).prop_map(|(parent_id, x, score)| Location {
        parent_id,
        position: (x.is_some() || score.is_some()).then(|| Position {
            x,
            score,
            ..Position::default()
        }),
        ..Location::default()
    })
}

fn timestamps() -> impl Strategy<Value = Timestamps> {
    (opt(text()), opt(text())).prop_map(|(created_at, modified_at)| Timestamps {
        created_at,
        modified_at,
        ..Timestamps::default()
    })
}

fn board_fields() -> impl Strategy<Value = BoardFields> {
    (
        text(),
        opt(scalar()),
        opt(prop::collection::vec(raw(), 0..2)),
        opt(icon()),
        opt(image()),
        opt(file()),
        opt(prop::sample::select(vec![
            UnloadedReason::BoardLimit,
            UnloadedReason::Deadline,
            UnloadedReason::AccessDenied,
            UnloadedReason::NotFound,
            UnloadedReason::UpstreamError,
        ])),
    )
        .prop_map(
            |(title, color, palette, icon, image, file, unloaded)| BoardFields {
                title,
                color,
                secondary_color: None,
                default_color_palette: palette,
                published: None,
                icon,
                image,
                file,
                children_loaded: unloaded.is_none(),
                unloaded_reason: unloaded,
            },
        )
}

fn table() -> impl Strategy<Value = Table> {
    let cell = (
        opt(scalar()),
        opt(rich_text()),
        opt(prop::collection::vec(raw(), 0..2)),
    )
        .prop_map(|(value, rich_text, text_styles)| TableCell {
            value,
            rich_text,
            text_styles,
            background: None,
        });
    (
        prop::collection::vec(prop::collection::vec(cell, 0..3), 0..3),
        opt(prop::collection::vec(raw(), 0..2)),
        opt(scalar()),
    )
        .prop_map(|(rows, column_widths, version)| Table {
            rows,
            column_widths,
            version,
        })
}

fn comment() -> impl Strategy<Value = Comment> {
    (text(), opt(rich_text()), opt(text())).prop_map(|(id, rich_text, created_at)| Comment {
        id,
        thread_id: None,
        rich_text,
        created_at,
        updated_at: None,
    })
}

fn kind() -> impl Strategy<Value = NodeKind> {
    prop_oneof![
        board_fields().prop_map(|b| NodeKind::Board(Box::new(b))),
        opt(text()).prop_map(|title| NodeKind::Column(ColumnFields { title })),
        (opt(rich_text()), opt(scalar()), opt(any::<bool>())).prop_map(|(r, b, t)| {
            NodeKind::Card(CardFields {
                rich_text: r,
                background: b,
                transparent: t,
            })
        }),
        (opt(image()), opt(file()))
            .prop_map(|(image, file)| NodeKind::Image(Box::new(ImageFields { image, file }))),
        (opt(text()), opt(file()), opt(image())).prop_map(|(title, file, preview_image)| {
            NodeKind::File(Box::new(FileFields {
                title,
                file,
                preview_image,
                ..FileFields::default()
            }))
        }),
        (opt(text()), opt(text()), opt(rich_text()), opt(scalar())).prop_map(
            |(url, title, caption, name)| NodeKind::Link(Box::new(LinkFields {
                url,
                title,
                caption,
                provider: name.map(|n| LinkProvider {
                    name: Some(n),
                    ..LinkProvider::default()
                }),
                ..LinkFields::default()
            }))
        ),
        opt(text()).prop_map(|title| NodeKind::TaskList(TaskListFields {
            title,
            show_title: None
        })),
        (opt(rich_text()), opt(any::<bool>())).prop_map(|(rich_text, completed)| {
            NodeKind::Task(TaskFields {
                rich_text,
                completed,
                ..TaskFields::default()
            })
        }),
        opt(table()).prop_map(|table| NodeKind::Table(TableFields { table })),
        (opt(text()), prop::collection::vec(comment(), 0..3)).prop_map(|(thread_id, comments)| {
            NodeKind::CommentThread(CommentThreadFields {
                thread_id,
                comments,
            })
        }),
        (opt(text()), opt(rich_text())).prop_map(|(title, rich_text)| {
            NodeKind::Document(DocumentFields { title, rich_text })
        }),
        (opt(text()), opt(rich_text())).prop_map(|(color, caption)| NodeKind::ColorSwatch(
            ColorSwatchFields { color, caption }
        )),
        opt(raw()).prop_map(|drawing| NodeKind::Sketch(DrawingFields { drawing })),
        opt(raw()).prop_map(|drawing| NodeKind::Annotation(DrawingFields { drawing })),
        (opt(raw()), opt(raw()), opt(raw()), opt(raw())).prop_map(
            |(start, end, control, line_style)| NodeKind::Line(LineFields {
                start,
                end,
                control,
                line_style,
            })
        ),
        opt(scalar()).prop_map(|root_board| NodeKind::Skeleton(SkeletonFields { root_board })),
        (text(), opt(raw())).prop_map(|(element_type, content)| {
            NodeKind::Unknown(UnknownFields {
                element_type,
                content,
            })
        }),
    ]
}

fn node() -> impl Strategy<Value = Node> {
    let size = (opt(scalar()), opt(scalar())).prop_map(|(width, height)| Size { width, height });
    let leaf = (text(), kind(), size, opt(location()), opt(timestamps())).prop_map(
        |(id, kind, size, location, timestamps)| Node {
            id,
            kind,
            size,
            location,
            timestamps,
            children: Vec::new(),
        },
    );
    leaf.prop_recursive(3, 24, 4, |inner| {
        (
            text(),
            kind(),
            opt(location()),
            prop::collection::vec(inner, 0..4),
        )
            .prop_map(|(id, kind, location, children)| Node {
                id,
                kind,
                size: Size::default(),
                location,
                timestamps: None,
                children,
            })
    })
}

fn document() -> impl Strategy<Value = BoardDocument> {
    (
        text(),
        board_fields(),
        opt(location()),
        opt(timestamps()),
        prop::collection::vec(node(), 0..4),
    )
        .prop_map(
            |(id, fields, location, timestamps, children)| BoardDocument {
                version: Version1,
                source: Source {
                    provider: "milanote".into(),
                    board_id: id.clone(),
                },
                fetched_at: "2026-01-01T00:00:00.000Z".into(),
                board: RootBoard {
                    id,
                    kind: BoardType::Board,
                    fields,
                    size: Size::default(),
                    location,
                    timestamps,
                    children,
                },
            },
        )
}

/// A serialized document with secrets planted under sensitive keys in some of
/// its objects (chosen by `seed`), on top of those inside raw values.
fn planted(doc: &BoardDocument, seed: u64, key: &str) -> Value {
    let mut value = serde_json::to_value(doc).expect("documents serialize");
    let mut stack = vec![&mut value];
    let mut i = 0u32;
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(map) => {
                if seed >> (i % 64) & 1 == 1 {
                    map.insert(key.to_owned(), json!({"v": SECRET}));
                }
                i += 1;
                stack.extend(map.values_mut());
            }
            Value::Array(items) => stack.extend(items.iter_mut()),
            _ => {}
        }
    }
    value
}

/// A selector that matches the model: a random walk from the root, each step
/// written as its name, `*` or `**`, sometimes with an extra zero-level `**`.
fn selector() -> impl Strategy<Value = String> {
    prop::collection::vec((any::<u8>(), any::<u8>()), 1..6).prop_map(|steps| {
        let model = model::get();
        let mut node = Model::ROOT;
        let mut out: Vec<String> = Vec::new();
        for (choice, render) in steps {
            let fields: Vec<(&str, usize)> = model.node(node).fields().collect();
            if fields.is_empty() {
                break;
            }
            let (name, next) = fields[usize::from(choice) % fields.len()];
            match render % 10 {
                0..=5 => out.push(name.to_owned()),
                6 | 7 => out.push("*".to_owned()),
                8 => out.push("**".to_owned()),
                _ => {
                    out.push("**".to_owned());
                    out.push(name.to_owned());
                }
            }
            node = next;
        }
        out.join(".")
    })
}

fn selector_list() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(selector(), 1..6)
}

// ---------------------------------------------------------------- helpers

fn views() -> [View; 3] {
    [View::Compact, View::Standard, View::Full]
}

/// Fails on the first sensitive key or secret found anywhere in `value`.
fn assert_clean(value: &Value, what: &str) {
    let text = value.to_string();
    assert!(!text.contains(SECRET), "{what}: secret in {text}");
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(map) => {
                for (k, child) in map {
                    assert!(!is_sensitive(k), "{what}: key {k} in {text}");
                    stack.push(child);
                }
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
}

/// Multiset of primitive leaves, by path (array indices written as `[]`).
fn primitives(value: &Value) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    let mut stack = vec![(String::new(), value)];
    while let Some((path, v)) = stack.pop() {
        match v {
            Value::Object(map) => {
                for (k, child) in map {
                    stack.push((format!("{path}.{k}"), child));
                }
            }
            Value::Array(items) => {
                for child in items {
                    stack.push((format!("{path}[]"), child));
                }
            }
            leaf => *out.entry(format!("{path}={leaf}")).or_default() += 1,
        }
    }
    out
}

fn merge(mut a: BTreeMap<String, usize>, b: BTreeMap<String, usize>) -> BTreeMap<String, usize> {
    for (k, n) in b {
        *a.entry(k).or_default() += n;
    }
    a
}

// ---------------------------------------------------------------- properties

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn no_output_holds_a_sensitive_key_or_secret(
        doc in document(),
        seed in any::<u64>(),
        key in sensitive_key(),
        list in selector_list(),
        extra in prop::sample::select(SENSITIVE_KEYS.to_vec()),
    ) {
        let mut value = planted(&doc, seed, &key);
        sanitize(&mut value);
        assert_clean(&value, "sanitized");
        prop_assert!(VALIDATOR.is_valid(&value), "sanitized full document fails the schema");
        let list = list.join(",");
        for view in views() {
            assert_clean(&Selection::view(view).apply(&value), view.as_str());
            let exc = Selection::exclude(view, &list).expect("generated selectors are valid");
            assert_clean(&exc.apply(&value), &list);
        }
        let inc = Selection::include(&list).expect("generated selectors are valid");
        assert_clean(&inc.apply(&value), &list);
        // Asking for a sensitive field is refused, whatever the path.
        let asked = format!("{list},board.**.{extra}");
        prop_assert!(Selection::include(&asked).is_err());
        prop_assert!(Selection::exclude(View::Full, &asked).is_err());
    }

    /// The serving path (selection over the document's bytes) gives the
    /// reference's bytes and ETag for every view, include and exclude, as
    /// JSON and as Markdown.
    #[test]
    fn byte_rendering_matches_the_reference(
        doc in document(),
        seed in any::<u64>(),
        key in sensitive_key(),
        list in selector_list(),
    ) {
        let mut value = planted(&doc, seed, &key);
        sanitize(&mut value);
        let board = LoadedBoard::from_json(serde_json::to_vec(&value).expect("serializes"));
        let list = list.join(",");
        let mut selections: Vec<Selection> = views().into_iter().map(Selection::view).collect();
        selections.push(Selection::include(&list).expect("valid"));
        for view in views() {
            selections.push(Selection::exclude(view, &list).expect("valid"));
        }
        for selection in &selections {
            for scope in ["search", "detail"] {
                let fast = board.render(scope, selection).expect("renders");
                let slow = reference::rendered(scope, selection, &value).expect("renders");
                prop_assert_eq!(
                    String::from_utf8_lossy(&fast.body),
                    String::from_utf8_lossy(&slow.body),
                    "{}", selection.canonical()
                );
                prop_assert_eq!(fast.etag, slow.etag);
                let fast = board
                    .render_as(Representation::Markdown, scope, selection)
                    .expect("renders");
                let slow = reference::rendered_markdown(scope, selection, board.document_json())
                    .expect("renders");
                prop_assert_eq!(
                    String::from_utf8_lossy(&fast.body),
                    String::from_utf8_lossy(&slow.body),
                    "Markdown {}", selection.canonical()
                );
                prop_assert_eq!(fast.etag, slow.etag);
                let mut selected = Vec::new();
                selection.apply_bytes(board.document_json(), &mut selected).expect("selects");
                prop_assert_eq!(
                    markdown::read(selection, board.document_json()).expect("reads"),
                    markdown::read_reference(&selected).expect("reads"),
                    "Markdown value {}", selection.canonical()
                );
            }
        }
    }

    #[test]
    fn selector_order_does_not_matter(
        doc in document(),
        list in selector_list(),
        shuffle in any::<prop::sample::Index>(),
        rotate in any::<usize>(),
    ) {
        let mut value = serde_json::to_value(&doc).expect("serializes");
        sanitize(&mut value);
        let mut other = list.clone();
        let len = other.len();
        other.rotate_left(rotate % len);
        other.swap(0, shuffle.index(len));
        other.push(list[0].clone()); // a duplicate changes nothing either
        let (a, b) = (list.join(","), other.join(" , "));
        let (ia, ib) = (Selection::include(&a).expect("valid"), Selection::include(&b).expect("valid"));
        prop_assert_eq!(ia.apply(&value), ib.apply(&value));
        prop_assert_eq!(ia.canonical(), ib.canonical());
        for view in views() {
            let (ea, eb) = (
                Selection::exclude(view, &a).expect("valid"),
                Selection::exclude(view, &b).expect("valid"),
            );
            prop_assert_eq!(ea.apply(&value), eb.apply(&value));
            prop_assert_eq!(ea.canonical(), eb.canonical());
        }
    }

    #[test]
    fn include_and_exclude_partition_the_full_view(doc in document(), list in selector_list()) {
        let mut value = serde_json::to_value(&doc).expect("serializes");
        sanitize(&mut value);
        let list = list.join(",");
        let included = Selection::include(&list).expect("valid").apply(&value);
        let excluded = Selection::exclude(View::Full, &list).expect("valid").apply(&value);
        prop_assert_eq!(primitives(&value), merge(primitives(&included), primitives(&excluded)), "{}", list);
    }

    #[test]
    fn full_view_is_the_sanitized_document(doc in document()) {
        let mut value = serde_json::to_value(&doc).expect("serializes");
        prop_assert!(VALIDATOR.is_valid(&value));
        sanitize(&mut value);
        prop_assert_eq!(Selection::view(View::Full).apply(&value), value.clone());
        prop_assert!(VALIDATOR.is_valid(&Selection::view(View::Full).apply(&value)));
    }
}

#[test]
fn pruned_views_need_not_validate() {
    let doc = BoardDocument {
        version: Version1,
        source: Source {
            provider: "milanote".into(),
            board_id: "b".into(),
        },
        fetched_at: "2026-01-01T00:00:00.000Z".into(),
        board: RootBoard {
            id: "b".into(),
            kind: BoardType::Board,
            fields: BoardFields {
                title: "T".into(),
                ..BoardFields::default()
            },
            size: Size::default(),
            location: None,
            timestamps: None,
            children: vec![],
        },
    };
    let value = serde_json::to_value(&doc).expect("serializes");
    assert!(VALIDATOR.is_valid(&value));
    // Compact drops `fetchedAt` and `childrenLoaded`, both required.
    let compact = Selection::view(View::Compact).apply(&value);
    assert!(!VALIDATOR.is_valid(&compact), "{compact}");
    assert!(!VALIDATOR.is_valid(&Value::Object(Map::new())));
}

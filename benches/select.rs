//! Selection on a 20,000-node BoardDocument: the three presets, a 10-item
//! include and a `**` exclude. The document is built from the `types.rs`
//! structs and sanitized once, as the gateway does before caching it.
//!
//! Run: `cargo bench --bench select -- --warm-up-time 1 --measurement-time 3`
//! Outputs are dropped outside the timed section; `drop_full_output` measures
//! what dropping a full-size output costs on its own.

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::{json, Value};
use shared_board_api::internals::document::sanitize::sanitize;
use shared_board_api::internals::document::*;
use shared_board_api::internals::select::{Selection, View};
use std::hint::black_box;

const NODES: usize = 20_000;

const INCLUDE_10: &str = "version,source,board.id,board.**.title,board.**.type,\
board.children.id,**.timestamps,board.**.richText.plainText,board.**.table.rows.value,**.file.url";

fn scalar(v: impl Into<Value>) -> Scalar {
    Scalar(v.into())
}

fn rich(text: &str) -> RichText {
    RichText {
        blocks: Blocks::of(&[Raw::verbatim(
            &json!({"type": "paragraph", "content": [{"type": "text", "text": text}]}),
        )]),
        plain_text: text.to_owned(),
    }
}

fn location(parent: &str, i: usize) -> Location {
    Location {
        parent_id: Some(parent.to_owned()),
        section: Some(scalar("canvas")),
        root_board: None,
        position: Some(Position {
            x: Some(scalar(i * 10)),
            y: Some(scalar(i * 7)),
            index: Some(scalar(i)),
            score: None,
        }),
    }
}

fn timestamps() -> Timestamps {
    Timestamps {
        created_at: Some("2026-01-01T00:00:00.000Z".into()),
        modified_at: Some("2026-01-02T00:00:00.000Z".into()),
        significant_modified_at: None,
        location_modified_at: None,
    }
}

fn leaf_kind(i: usize) -> NodeKind {
    let file = || File {
        kind: Some(scalar("file")),
        url: Some(format!("https://files.example/{i}.pdf")),
        ..File::default()
    };
    match i % 8 {
        0..=2 => NodeKind::Card(CardFields {
            rich_text: Some(rich(&format!("card {i}"))),
            background: Some(scalar("white")),
            transparent: Some(false),
        }),
        3 => NodeKind::Task(TaskFields {
            rich_text: Some(rich(&format!("task {i}"))),
            completed: Some(i.is_multiple_of(2)),
            ..TaskFields::default()
        }),
        4 => NodeKind::Link(Box::new(LinkFields {
            url: Some(format!("https://example.com/{i}")),
            title: Some(format!("link {i}")),
            caption: Some(rich("caption")),
            ..LinkFields::default()
        })),
        5 => NodeKind::Table(TableFields {
            table: Some(Table {
                rows: (0..3)
                    .map(|r| {
                        (0..3)
                            .map(|c| TableCell {
                                value: Some(scalar(format!("r{r}c{c}"))),
                                rich_text: Some(rich("cell")),
                                ..TableCell::default()
                            })
                            .collect()
                    })
                    .collect(),
                column_widths: Some(vec![Raw::verbatim(&json!(100)), Raw::verbatim(&json!(200))]),
                version: Some(scalar(2)),
            }),
        }),
        6 => NodeKind::File(Box::new(FileFields {
            title: Some(format!("file {i}")),
            file: Some(file()),
            ..FileFields::default()
        })),
        _ => NodeKind::CommentThread(CommentThreadFields {
            thread_id: Some(format!("t{i}")),
            comments: vec![Comment {
                id: format!("cm{i}"),
                thread_id: Some(format!("t{i}")),
                rich_text: Some(rich("a comment")),
                created_at: Some("2026-01-01T00:00:00.000Z".into()),
                updated_at: None,
            }],
        }),
    }
}

/// Root → boards → columns → items, until `NODES` nodes below the root.
fn document() -> BoardDocument {
    let mut count = 0usize;
    let mut boards = Vec::new();
    'boards: for b in 0.. {
        let board_id = format!("board{b}");
        count += 1;
        let mut columns = Vec::new();
        for c in 0..20 {
            if count == NODES {
                break;
            }
            let column_id = format!("{board_id}-col{c}");
            count += 1;
            let mut items = Vec::new();
            for i in 0..24 {
                if count == NODES {
                    break;
                }
                count += 1;
                items.push(Node {
                    id: format!("{column_id}-{i}"),
                    kind: leaf_kind(i),
                    size: Default::default(),
                    location: Some(location(&column_id, i)),
                    timestamps: Some(timestamps()),
                    children: vec![],
                });
            }
            columns.push(Node {
                id: column_id,
                kind: NodeKind::Column(ColumnFields {
                    title: Some(format!("Column {c}")),
                }),
                size: Default::default(),
                location: Some(location(&board_id, c)),
                timestamps: Some(timestamps()),
                children: items,
            });
        }
        boards.push(Node {
            id: board_id.clone(),
            kind: NodeKind::Board(Box::new(BoardFields {
                title: format!("Board {b}"),
                color: Some(scalar("blue")),
                children_loaded: true,
                ..BoardFields::default()
            })),
            size: Default::default(),
            location: Some(location("root", b)),
            timestamps: Some(timestamps()),
            children: columns,
        });
        if count == NODES {
            break 'boards;
        }
    }
    BoardDocument {
        version: Version1,
        source: Source {
            provider: "milanote".into(),
            board_id: "root".into(),
        },
        fetched_at: "2026-01-01T00:00:00.000Z".into(),
        board: RootBoard {
            id: "root".into(),
            kind: BoardType::Board,
            fields: BoardFields {
                title: "Root".into(),
                color: Some(scalar("red")),
                children_loaded: true,
                ..BoardFields::default()
            },
            size: Default::default(),
            location: None,
            timestamps: Some(timestamps()),
            children: boards,
        },
    }
}

fn count_nodes(value: &Value) -> usize {
    value["children"]
        .as_array()
        .map(|c| c.iter().map(|n| 1 + count_nodes(n)).sum())
        .unwrap_or(0)
}

fn bench(c: &mut Criterion) {
    let mut doc = serde_json::to_value(document()).expect("serializes");
    sanitize(&mut doc);
    assert_eq!(count_nodes(&doc["board"]), NODES);
    let bytes = serde_json::to_vec(&doc).map(|v| v.len()).unwrap_or(0);
    eprintln!("document: {NODES} nodes below the root, {bytes} bytes of JSON");

    let cases = [
        ("compact", Selection::view(View::Compact)),
        ("standard", Selection::view(View::Standard)),
        ("full", Selection::view(View::Full)),
        ("include_10", Selection::include(INCLUDE_10).expect("valid")),
        (
            "full_exclude_timestamps",
            Selection::exclude(View::Full, "**.timestamps").expect("valid"),
        ),
    ];
    let mut group = c.benchmark_group("select_20k");
    for (name, selection) in &cases {
        // The output is dropped outside the timing: `drop_full_output` shows that cost.
        group.bench_function(*name, |b| {
            b.iter_with_large_drop(|| selection.apply(black_box(&doc)))
        });
    }
    group.bench_function("compile_include_10", |b| {
        b.iter(|| Selection::include(black_box(INCLUDE_10)))
    });
    group.bench_function("drop_full_output", |b| {
        b.iter_batched(|| doc.clone(), drop, criterion::BatchSize::LargeInput)
    });
    group.bench_function("sanitize", |b| {
        b.iter_batched_ref(|| doc.clone(), sanitize, criterion::BatchSize::LargeInput)
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

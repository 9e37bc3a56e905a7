//! `read_board` in pages: what a page of a large board costs once its
//! paged Markdown is cached, against rendering a small board whole.
//!
//! - `first-page/tiptap-7000`: the 7,000-card board's paged Markdown read
//!   back from its cached bytes, its first page cut within the default
//!   budget, the boards not shown listed and the page quoted as JSON: the
//!   CPU work of a `read_board` call whose page is not cached yet.
//! - `whole-render/tiptap-<n>`: the Markdown render of a board of the same
//!   shape whose whole text is about 40,000 characters, from its document
//!   (what a `read_board` of such a board costs the first time).
//! - `paged-render/tiptap-7000`: the paged render itself, made once per
//!   document and selection.
//!
//! The goal: the first page under twice the small board's whole render, so
//! paging never re-renders the board.
//!
//! Run: `cargo bench --bench pages -- --warm-up-time 1 --measurement-time 3`

#[path = "support/tiptap_board.rs"]
mod tiptap_board;

use criterion::{criterion_group, criterion_main, Criterion};
use shared_board_api::internals::document::Coverage;
use shared_board_api::internals::pipeline::markdown::{self, pages::Paged};
use shared_board_api::internals::pipeline::{load, LoadedBoard};
use shared_board_api::internals::provider::answer::Answer;
use shared_board_api::internals::provider::Fetched;
use shared_board_api::internals::select::{Selection, View};
use std::hint::black_box;

/// A generated board of `cards` cards, loaded.
fn board_of(cards: usize) -> LoadedBoard {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/gen_board.py");
    let out = std::process::Command::new("python3")
        .args([script, "--cards", &cards.to_string()])
        .output()
        .expect("python3 runs benches/gen_board.py");
    let body: serde_json::Value = serde_json::from_slice(&out.stdout).expect("an answer");
    let root = body["boardIds"][0].as_str().expect("a root").to_owned();
    let raw = bytes::Bytes::from(out.stdout);
    let answer = Answer::parse_bytes(&raw).expect("an answer");
    let mut fetched = Fetched::new(&root, 0);
    fetched.merge_answer(answer);
    fetched.loaded_boards.insert(root.clone());
    load::build(fetched, &root, "milanote", Coverage::Full).expect("the board loads")
}

fn pages(c: &mut Criterion) {
    let full = Selection::view(View::Full);
    let (big, _) = tiptap_board::loaded();
    let paged = markdown::render_paged(&full, big.document_json()).expect("renders");
    let total = paged.total_chars();
    let encoded = paged.encode();
    // A board of the same shape whose Markdown is about 40,000 characters.
    let cards = (7_000 * 40_000 / total).max(1);
    let small = board_of(cards);
    let small_chars = markdown::render(&full, small.document_json())
        .expect("renders")
        .chars()
        .count();
    println!(
        "7,000-card board: {total} characters of Markdown, {} bytes paged; \
         the small board: {cards} cards, {small_chars} characters",
        encoded.len()
    );
    let mut group = c.benchmark_group("pages");
    group.bench_function("first-page/tiptap-7000", |b| {
        b.iter(|| {
            let paged = Paged::decode(black_box(&encoded)).expect("decodes");
            let page = paged.page(0, 36_000).expect("a page");
            let unread = paged.unread_boards(page.end).len();
            let quoted = serde_json::to_string(page.text).expect("quotes");
            black_box((quoted.len(), unread))
        })
    });
    group.bench_function(format!("whole-render/tiptap-{cards}"), |b| {
        b.iter(|| {
            black_box(
                markdown::render(&full, small.document_json())
                    .expect("renders")
                    .len(),
            )
        })
    });
    group.sample_size(10);
    group.bench_function("paged-render/tiptap-7000", |b| {
        b.iter(|| {
            black_box(
                markdown::render_paged(&full, big.document_json())
                    .expect("renders")
                    .encode()
                    .len(),
            )
        })
    });
    group.finish();
}

criterion_group!(benches, pages);
criterion_main!(benches);

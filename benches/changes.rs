//! What changed, on the ~5.3 MB board of 7,000 TipTap cards that
//! `benches/gen_board.py` writes and a later version of it
//! (`benches/edit_board.py`: 1 % of the cards' text changed, 10 moved, 10
//! deleted, 10 added), all in one run:
//!
//! - `normalize`: one cold normalize of the later version (its raw answer
//!   read and merged, then `pipeline::load::build`), the yardstick;
//! - `compare`: `pipeline::changes::compare` of the two loaded versions;
//! - `answer/json`, `answer/markdown`: the compare and its rendered body,
//!   what a `/changes` miss computes on the work pool;
//! - `seal`, `open`: a version as it is kept (zstd) and read back (inflate
//!   and the hash check), with the stored bytes printed first.
//!
//! Run: `cargo bench --bench changes -- --warm-up-time 1 --measurement-time 5`

#[path = "support/tiptap_board.rs"]
mod tiptap_board;

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::Value;
use shared_board_api::internals::document::Coverage;
use shared_board_api::internals::pipeline::{changes, load, LoadedBoard, Representation};
use shared_board_api::internals::provider::answer::Answer;
use shared_board_api::internals::provider::Fetched;
use shared_board_api::internals::store::versions::codec;
use std::hint::black_box;
use std::io::Write as _;
use std::process::{Command, Stdio};

fn build(raw: &Bytes, root: &str) -> LoadedBoard {
    let answer = Answer::parse_bytes(raw).expect("an answer");
    let mut fetched = Fetched::new(root, 0);
    fetched.fetched_time_ms = answer.fields.get("fetchedTime").and_then(Value::as_i64);
    fetched.merge_answer(answer);
    fetched.loaded_boards.insert(root.to_owned());
    load::build(fetched, root, "milanote", Coverage::Full).expect("the board loads")
}

/// The later version of `raw`, as `benches/edit_board.py` edits it.
fn edited(raw: &[u8]) -> Vec<u8> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/edit_board.py");
    let mut child = Command::new("python3")
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs benches/edit_board.py");
    let mut stdin = child.stdin.take().expect("stdin");
    let input = raw.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().expect("the editor ends");
    writer.join().expect("writes").expect("writes");
    out.stdout
}

fn bench(c: &mut Criterion) {
    let (raw, root) = tiptap_board::raw().expect("python3 runs benches/gen_board.py");
    let later = Bytes::from(edited(&raw));
    let raw = Bytes::from(raw);
    let (v1, v2) = (build(&raw, &root), build(&later, &root));
    let (t1, t2) = (
        v1.version().expect("full").to_owned(),
        v2.version().expect("full").to_owned(),
    );
    let (d1, d2) = (v1.document_json(), v2.document_json());
    let found = changes::compare(d1, &t1, d2, &t2).expect("compares");
    let sealed = codec::seal(d2).expect("seals");
    println!(
        "versions: {} and {} bytes of JSON; changes: {} added, {} removed, {} changed, {} moved; a kept version: {} bytes ({:.1} % of its JSON)",
        d1.len(),
        d2.len(),
        found.added.len(),
        found.removed.len(),
        found.changed.len(),
        found.moved.len(),
        sealed.len(),
        100.0 * sealed.len() as f64 / d2.len() as f64,
    );
    let mut group = c.benchmark_group("changes/tiptap-7000");
    group.sample_size(10);
    group.bench_function("normalize", |b| b.iter(|| build(black_box(&later), &root)));
    group.bench_function("compare", |b| {
        b.iter(|| changes::compare(black_box(d1), &t1, black_box(d2), &t2))
    });
    for (name, representation) in [
        ("answer/json", Representation::Json),
        ("answer/markdown", Representation::Markdown),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| changes::answer("changes", representation, &root, Some(d1), &t1, d2, &t2))
        });
    }
    group.bench_function("seal", |b| b.iter(|| codec::seal(black_box(d2))));
    group.bench_function("open", |b| {
        b.iter(|| codec::open(black_box(&sealed), &t2, 64 << 20))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

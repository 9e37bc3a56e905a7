//! A fleet tier read, piece by piece, on the ~5.3 MB document of the
//! 7,000-card TipTap board (`benches/gen_board.py`): what a shared hit costs
//! a node before the document is served.
//!
//! - `open`: the HMAC-SHA256 tag over the stored value (about 1 MB);
//! - `inflate`: zstd to the document's compact JSON;
//! - `check`: the document check (`store::shared::check::document`);
//! - `decode`: `format::decode` (tag, header, inflate, `fetchedAt`);
//! - `read`: `decode` then `check`, the whole CPU work of a shared hit;
//! - `utf8`: `std::str::from_utf8` over the document, a floor for any pass
//!   that reads every byte;
//! - `full/walked` and `full/noted`: the full view's render (its ETag) on
//!   the board as a provider load keeps it, which walks the document for
//!   its top-level entries, and as a shared hit keeps it, with the entries
//!   the check noted.
//!
//! Run: `cargo bench --bench tier -- --warm-up-time 1 --measurement-time 3`

#[path = "support/tiptap_board.rs"]
mod tiptap_board;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use shared_board_api::internals::document::Coverage;
use shared_board_api::internals::pipeline::LoadedBoard;
use shared_board_api::internals::select::{Selection, View};
use shared_board_api::internals::store::shared::check;
use shared_board_api::internals::store::shared::format::{self, Header};
use shared_board_api::internals::store::shared::seal::{Seal, Secret};
use std::hint::black_box;

const NAME: &str = "sbapi:{00112233445566778899aabbccddeeff}:doc:full";

/// The loaded 7,000-card board's document JSON and its board id.
fn document() -> (Vec<u8>, String) {
    let (board, root) = tiptap_board::loaded();
    (board.document_json().to_vec(), root)
}

fn tier(c: &mut Criterion) {
    let (json, board_id) = document();
    let seal = Seal::new(
        &Secret::new(b"bench-fleet-key-bench-fleet-key-".to_vec()).expect("32 bytes"),
        None,
    );
    let header = Header {
        coverage: Coverage::Full,
        unloaded: 0,
        transient: false,
        expires_at_ms: i64::MAX,
    };
    let value = format::encode(&header, &json, &seal, NAME).expect("encodes");
    let max = 64 << 20;
    let nodes = 1_000_000;
    println!("document {} bytes, value {} bytes", json.len(), value.len());
    check::document(&json, &board_id, nodes).expect("the service's own document checks out");

    let mut g = c.benchmark_group("tier/tiptap-7000");
    g.throughput(Throughput::Bytes(json.len() as u64));
    g.bench_function("open", |b| {
        b.iter(|| black_box(seal.open(NAME, black_box(&value)).is_some()))
    });
    // The format's body: zstd at its level (1).
    let body = zstd::bulk::compress(&json, 1).expect("compresses");
    g.bench_function("inflate", |b| {
        b.iter(|| black_box(zstd::bulk::decompress(black_box(&body), json.len()).is_ok()))
    });
    g.bench_function("utf8", |b| {
        b.iter(|| black_box(std::str::from_utf8(black_box(&json)).is_ok()))
    });
    g.bench_function("check", |b| {
        b.iter(|| black_box(check::document(black_box(&json), &board_id, nodes).is_ok()))
    });
    g.bench_function("decode", |b| {
        b.iter(|| black_box(format::decode(black_box(&value), max, &seal, NAME).is_ok()))
    });
    g.bench_function("read", |b| {
        b.iter(|| {
            let (_, json) = format::decode(black_box(&value), max, &seal, NAME).expect("decodes");
            black_box(check::document(&json, &board_id, nodes).is_ok())
        })
    });
    let full = Selection::view(View::Full);
    let walked = LoadedBoard::from_json(json.clone());
    let checked = check::document(&json, &board_id, nodes).expect("checks out");
    let noted = LoadedBoard::from_json(json.clone()).with_entries(checked.entries);
    for (name, board) in [("full/walked", &walked), ("full/noted", &noted)] {
        g.bench_function(name, |b| {
            b.iter(|| black_box(board.render("detail", &full).is_ok()))
        });
    }
    g.finish();
}

criterion_group!(benches, tier);
criterion_main!(benches);

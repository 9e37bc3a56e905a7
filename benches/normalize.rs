//! Normalizer cost against the serde_json floor, on generated raw boards of
//! 100, 2,000 and 20,000 elements shaped like Milanote's `/api/boards` body
//! (columns of TipTap and Draft.js cards, tasks, images, links, tables,
//! comment threads, nested boards; rich text partly stored as JSON strings).
//!
//! - `pipeline`: parse the raw body, build a `Fetched`, normalize, serialize.
//! - `floor`: parse the same body into a `serde_json::Value` and serialize it.
//!
//! Run: `cargo bench --bench normalize -- --warm-up-time 1 --measurement-time 3`

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use serde_json::{Map, Value};
use shared_board_api::internals::provider::fetched::{canvas_order_of, comments_of};
use shared_board_api::internals::provider::normalize::normalize;
use shared_board_api::internals::provider::Fetched;
use std::hint::black_box;

#[path = "support/raw_board.rs"]
mod raw_board;

use raw_board::{raw_board, ROOT};

fn pipeline(raw: &[u8]) -> Vec<u8> {
    let Ok(Value::Object(mut body)) = serde_json::from_slice::<Value>(raw) else {
        return Vec::new();
    };
    let mut take = |k: &str| match body.remove(k) {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    let mut fetched = Fetched::from_elements(ROOT, take("elements"));
    fetched.comments = comments_of(&take("comments"));
    fetched.canvas_order = canvas_order_of(&take("canvasOrder"));
    fetched.loaded_boards = [ROOT.to_owned()].into_iter().collect();
    fetched.fetched_time_ms = body.get("fetchedTime").and_then(Value::as_i64);
    match normalize(&fetched, "milanote") {
        Ok(doc) => serde_json::to_vec(&doc).unwrap_or_default(),
        Err(_) => Vec::new(),
    }
}

fn floor(raw: &[u8]) -> Vec<u8> {
    match serde_json::from_slice::<Value>(raw) {
        Ok(v) => serde_json::to_vec(&v).unwrap_or_default(),
        Err(_) => Vec::new(),
    }
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("normalize");
    for n in [100, 2_000, 20_000] {
        let raw = raw_board(n);
        assert!(!pipeline(&raw).is_empty(), "generated board normalizes");
        group.throughput(Throughput::Bytes(raw.len() as u64));
        if n >= 20_000 {
            group.sample_size(10);
        }
        group.bench_with_input(BenchmarkId::new("pipeline", n), &raw, |b, raw| {
            b.iter(|| pipeline(black_box(raw)))
        });
        group.bench_with_input(BenchmarkId::new("floor", n), &raw, |b, raw| {
            b.iter(|| floor(black_box(raw)))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

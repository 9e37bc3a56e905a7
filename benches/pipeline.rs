//! The whole cold pipeline, raw `/api/boards` bytes to response body and
//! ETag, against the serde_json floor (parse the same bytes into a `Value`
//! and serialize it back), on generated boards of 100, 2,000 and 20,000
//! elements and on the ~5.3 MB board of 7,000 TipTap cards that
//! `benches/gen_board.py` writes.
//!
//! - `fast/<view>`: parse the answer, merge it into a `Fetched` (as the
//!   provider client does), `pipeline::load::build`, render the selection;
//! - `reference/<view>`: the same with `pipeline::reference` (value tree,
//!   sanitize walk, selection on the tree);
//! - `floor`: `serde_json::from_slice::<Value>` then `to_vec`, and freeing
//!   both (the whole cost of a round trip); `floor-unfreed` leaves the
//!   frees out of the timing.
//!
//! Views: `full`, `standard`, `compact` and a 10-item include. Before the
//! timings, one cold `full` load per board is run under a counting
//! allocator and its peak heap above the raw body is printed.
//!
//! `render/tiptap-7000/canvas/full`: the JSON Canvas file of the same board.
//!
//! `render/tiptap-7000/<json|markdown>/<view>`: the render alone, on the
//! loaded 7,000-card board, as JSON and as Markdown, per view; the body
//! sizes (identity and gzip) are printed first. `markdown-two-pass` is the
//! reference Markdown render (select into JSON bytes, read them with
//! serde_json), the serving path before the one-pass reader; `<json|markdown>+gzip`
//! the render and its gzip body, as the cache compresses it once.
//!
//! Run: `cargo bench --bench pipeline -- --warm-up-time 1 --measurement-time 3`
//! (only the renders: add `render/`)

#[path = "support/raw_board.rs"]
mod raw_board;
#[path = "support/tiptap_board.rs"]
mod tiptap_board;

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use serde_json::Value;
use shared_board_api::internals::document::Coverage;
use shared_board_api::internals::encoding::{compress, Encoding};
use shared_board_api::internals::pipeline::{load, reference, Rendered, Representation};
use shared_board_api::internals::provider::answer::Answer;
use shared_board_api::internals::provider::Fetched;
use shared_board_api::internals::select::{Selection, View};
use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};

/// Counts live heap bytes and their peak, for the memory figure, while
/// [`COUNTING`] is set: only around the memory probes, since two atomic
/// operations per allocation would slow the allocation-heavy floor far more
/// than the pipeline and flatter the timing ratios.
struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            let size = layout.size() as isize;
            let live = LIVE.fetch_add(size, Ordering::Relaxed) + size;
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if COUNTING.load(Ordering::Relaxed) {
            LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        }
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            let grow = new_size as isize - layout.size() as isize;
            let live = LIVE.fetch_add(grow, Ordering::Relaxed) + grow;
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const INCLUDE_10: &str = "version,source.boardId,fetchedAt,board.id,board.title,board.children.id,board.children.type,board.children.title,board.children.richText.plainText,board.children.url";

/// The provider client's half: the answer read and merged (as the client
/// does, from the body's `Bytes`, whose slices the answer keeps).
fn fetched(raw: &Bytes, root: &str) -> Fetched {
    let answer = Answer::parse_bytes(raw).unwrap_or_default();
    let mut fetched = Fetched::new(root, 0);
    fetched.fetched_time_ms = answer.fields.get("fetchedTime").and_then(Value::as_i64);
    fetched.merge_answer(answer);
    fetched.loaded_boards.insert(root.to_owned());
    fetched
}

fn fast(raw: &Bytes, root: &str, selection: &Selection) -> Option<Rendered> {
    let board = load::build(fetched(raw, root), root, "milanote", selection.coverage()).ok()?;
    board.render("detail", selection).ok()
}

fn slow(raw: &Bytes, root: &str, selection: &Selection) -> Option<Rendered> {
    let doc = reference::build(&fetched(raw, root), root, "milanote").ok()?;
    reference::rendered("detail", selection, &doc).ok()
}

fn floor(raw: &[u8]) -> Vec<u8> {
    match serde_json::from_slice::<Value>(raw) {
        Ok(v) => serde_json::to_vec(&v).unwrap_or_default(),
        Err(_) => Vec::new(),
    }
}

fn boards() -> Vec<(String, Vec<u8>, String)> {
    let mut out: Vec<(String, Vec<u8>, String)> = [100, 2_000, 20_000]
        .into_iter()
        .map(|n| {
            (
                n.to_string(),
                raw_board::raw_board(n),
                raw_board::ROOT.to_owned(),
            )
        })
        .collect();
    match tiptap_board::raw() {
        Some((raw, root)) => out.push(("tiptap-7000".into(), raw, root)),
        None => eprintln!("benches/gen_board.py did not run: the TipTap board is skipped"),
    }
    out
}

fn bench(c: &mut Criterion) {
    let selections = [
        ("full", Selection::view(View::Full)),
        ("standard", Selection::view(View::Standard)),
        ("compact", Selection::view(View::Compact)),
        ("include10", Selection::include(INCLUDE_10).expect("valid")),
    ];
    for (name, raw, root) in boards() {
        let raw = Bytes::from(raw);
        // The full view's body: what a load must hold at its end whatever
        // its reader, so the peak heap has a floor to be read against.
        let mut full_body = 0;
        for (view, selection) in &selections {
            let a = fast(&raw, &root, selection).expect("fast path renders");
            if *view == "full" {
                full_body = a.body.len();
            }
            let b = slow(&raw, &root, selection).expect("reference renders");
            assert!(
                a == b,
                "{name} {view}: the fast path differs from the reference"
            );
        }
        // Heap above what is live before the load (the raw body is), counted
        // from zero for each probe.
        let probe = |run: &dyn Fn()| {
            LIVE.store(0, Ordering::Relaxed);
            PEAK.store(0, Ordering::Relaxed);
            COUNTING.store(true, Ordering::Relaxed);
            run();
            COUNTING.store(false, Ordering::Relaxed);
            PEAK.load(Ordering::Relaxed).max(0) as usize
        };
        let peak = probe(&|| drop(fast(&raw, &root, &selections[0].1)));
        let peak_reference = probe(&|| drop(slow(&raw, &root, &selections[0].1)));
        eprintln!(
            "memory {name}: raw {} B; cold full load peak heap {} B = {:.2}x raw (reference {:.2}x); \
             the full body {} B = {:.2}x raw",
            raw.len(),
            peak,
            peak as f64 / raw.len() as f64,
            peak_reference as f64 / raw.len() as f64,
            full_body,
            full_body as f64 / raw.len() as f64
        );

        let mut group = c.benchmark_group(format!("pipeline/{name}"));
        group.throughput(Throughput::Bytes(raw.len() as u64));
        if raw.len() > 1_000_000 {
            group.sample_size(10);
        }
        group.bench_function("floor", |b| b.iter(|| floor(black_box(&raw))));
        // The floor without freeing the value tree (criterion drops it
        // outside the timing): the round trip as examples/json_roundtrip
        // times it. The pipeline's own frees are always inside its time.
        group.bench_function("floor-unfreed", |b| {
            b.iter_with_large_drop(|| {
                let value = serde_json::from_slice::<Value>(black_box(&raw)).unwrap_or_default();
                let out = serde_json::to_vec(&value).unwrap_or_default();
                (value, out)
            })
        });
        group.bench_function("answer", |b| b.iter(|| fetched(black_box(&raw), &root)));
        for (view, selection) in &selections {
            group.bench_with_input(BenchmarkId::new("fast", view), selection, |b, s| {
                b.iter(|| fast(black_box(&raw), &root, s))
            });
            group.bench_with_input(BenchmarkId::new("reference", view), selection, |b, s| {
                b.iter(|| slow(black_box(&raw), &root, s))
            });
        }
        group.finish();
    }
}

/// JSON and Markdown renders of one loaded board, per view.
fn render(c: &mut Criterion) {
    let Some((raw, root)) = tiptap_board::raw() else {
        eprintln!("benches/gen_board.py did not run: the render bench is skipped");
        return;
    };
    let raw = Bytes::from(raw);
    let Ok(board) = load::build(fetched(&raw, &root), &root, "milanote", Coverage::Full) else {
        eprintln!("the TipTap board did not load: the render bench is skipped");
        return;
    };
    let mut group = c.benchmark_group("render/tiptap-7000");
    group.sample_size(10);
    for (view, selection) in [
        ("full", Selection::view(View::Full)),
        ("standard", Selection::view(View::Standard)),
        ("compact", Selection::view(View::Compact)),
    ] {
        let size = |representation| {
            let body = board
                .render_as(representation, "detail", &selection)
                .map(|r| r.body)
                .unwrap_or_default();
            let gzip = compress(Encoding::Gzip, &body).map_or(0, |b| b.len());
            (body.len(), gzip)
        };
        let (json, md) = (size(Representation::Json), size(Representation::Markdown));
        eprintln!(
            "size tiptap-7000 {view}: JSON {} B (gzip {}), Markdown {} B (gzip {}), Markdown/JSON {:.2}",
            json.0,
            json.1,
            md.0,
            md.1,
            md.0 as f64 / json.0.max(1) as f64
        );
        for (name, representation) in [
            ("json", Representation::Json),
            ("markdown", Representation::Markdown),
        ] {
            group.bench_with_input(BenchmarkId::new(name, view), &selection, |b, s| {
                b.iter(|| board.render_as(representation, "detail", black_box(s)))
            });
        }
        // The first compressed answer of a representation: its render, then
        // gzip as the cache compresses it once (what every browser and agent
        // that sends Accept-Encoding costs the first time).
        for (name, representation) in [
            ("json+gzip", Representation::Json),
            ("markdown+gzip", Representation::Markdown),
        ] {
            group.bench_with_input(BenchmarkId::new(name, view), &selection, |b, s| {
                b.iter(|| {
                    board
                        .render_as(representation, "detail", black_box(s))
                        .map(|r| compress(Encoding::Gzip, &r.body))
                })
            });
        }
        // The Markdown as it was rendered before the one-pass reader: the
        // selection into JSON bytes, then serde_json reading those.
        group.bench_with_input(
            BenchmarkId::new("markdown-two-pass", view),
            &selection,
            |b, s| {
                b.iter(|| {
                    reference::rendered_markdown("detail", black_box(s), board.document_json())
                })
            },
        );
    }
    // The whole board as a JSON Canvas file (`/api/canvas`): a card's
    // Markdown each, the layout and its overlap pass.
    let full = Selection::view(View::Full);
    let canvas = board
        .render_as(Representation::Canvas, "canvas", &full)
        .map(|r| r.body)
        .unwrap_or_default();
    eprintln!(
        "size tiptap-7000 canvas: {} B (gzip {})",
        canvas.len(),
        compress(Encoding::Gzip, &canvas).map_or(0, |b| b.len())
    );
    group.bench_function("canvas/full", |b| {
        b.iter(|| board.render_as(Representation::Canvas, "canvas", black_box(&full)))
    });
    group.finish();
}

criterion_group!(benches, bench, render);
criterion_main!(benches);

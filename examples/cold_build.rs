//! One cold load of the 7,000-card TipTap board (`benches/gen_board.py`),
//! raw answer bytes to the loaded document, a fixed number of times, with
//! none of criterion's setup: for instruction counts under callgrind, which
//! a busy machine does not move, and for the peak heap of one load.
//!
//!   cargo build --profile bench --example cold_build
//!   valgrind --tool=callgrind --toggle-collect='cold_build::load_once*' \
//!       target/release/examples/cold_build full 3
//!
//! Arguments: the coverage (`full` or `outline`; default `full`), the
//! number of loads (default 3) and the reader (`parts`, as the provider
//! client reads an answer while it arrives: `AnswerStream` handed 64 KiB
//! parts of one buffer; or `whole`: `Answer::parse_bytes`; default
//! `parts`), and the board (`tiptap`, the default; or `varied2000`: the
//! criterion benchmarks' board of every element kind, with that many
//! elements). Each load reads the answer, merges it as the provider client
//! does and runs `pipeline::load::build`; the generator, the file read and
//! the body's buffer stay outside `load_once`. Prints the document's
//! length, the peak heap of the last load above what was live before it
//! (as a multiple of the raw body), and what the read and merged answer
//! holds before the build, and the median and fastest wall time of a load
//! and of its reading and merging of the answer (natively; under valgrind,
//! ignore them).

#[path = "../benches/support/raw_board.rs"]
mod raw_board;
#[path = "../benches/support/tiptap_board.rs"]
mod tiptap_board;

use bytes::BytesMut;
use serde_json::Value;
use shared_board_api::internals::document::Coverage;
use shared_board_api::internals::pipeline::{load, LoadedBoard};
use shared_board_api::internals::provider::answer::{Answer, AnswerStream};
use shared_board_api::internals::provider::Fetched;
use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::{Duration, Instant};

/// Counts live heap bytes and their peak.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);
/// Live bytes once the answer is read and merged, before the build.
static MERGED: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let size = layout.size() as isize;
        let live = LIVE.fetch_add(size, Ordering::Relaxed) + size;
        PEAK.fetch_max(live, Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let grow = new_size as isize - layout.size() as isize;
        let live = LIVE.fetch_add(grow, Ordering::Relaxed) + grow;
        PEAK.fetch_max(live, Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The part of the body the provider client hands its reader at least.
const PART: usize = 64 * 1024;

/// The load, and how long reading and merging the answer took of it (the
/// part of a service's load that `Server-Timing` counts in `upstream`).
#[inline(never)]
fn load_once(
    raw: BytesMut,
    parts: bool,
    root: &str,
    coverage: Coverage,
) -> (Option<LoadedBoard>, Duration) {
    let start = Instant::now();
    let answer = if parts {
        let mut raw = raw;
        let mut stream = AnswerStream::new();
        while raw.len() > PART {
            stream.read_more(raw.split_to(PART));
        }
        stream.finish(raw).1
    } else {
        Answer::parse_bytes(&raw.freeze())
    };
    let Ok(answer) = answer else {
        return (None, start.elapsed());
    };
    let mut fetched = Fetched::new(root, 0);
    fetched.fetched_time_ms = answer.fields.get("fetchedTime").and_then(Value::as_i64);
    fetched.merge_answer(answer);
    fetched.loaded_boards.insert(root.to_owned());
    MERGED.store(LIVE.load(Ordering::Relaxed), Ordering::Relaxed);
    let read = start.elapsed();
    (load::build(fetched, root, "milanote", coverage).ok(), read)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let coverage = match args.next().as_deref() {
        None | Some("full") => Coverage::Full,
        Some("outline") => Coverage::Outline,
        Some(other) => {
            eprintln!("unknown coverage {other}: full or outline");
            std::process::exit(2)
        }
    };
    let runs: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(3);
    let parts = match args.next().as_deref() {
        None | Some("parts") => true,
        Some("whole") => false,
        Some(other) => {
            eprintln!("unknown reader {other}: parts or whole");
            std::process::exit(2)
        }
    };
    let (raw, root) = match args.next().as_deref() {
        None | Some("tiptap") => tiptap_board::raw().expect("python3 runs benches/gen_board.py"),
        Some(varied) => match varied.strip_prefix("varied").map(str::parse::<usize>) {
            Some(Ok(n)) => (raw_board::raw_board(n), raw_board::ROOT.to_owned()),
            _ => {
                eprintln!("unknown board {varied}: tiptap or variedN (N elements)");
                std::process::exit(2)
            }
        },
    };
    let raw = bytes::Bytes::from(raw);
    let mut length = 0;
    let mut peak = 0;
    let mut merged = 0;
    let mut times = Vec::with_capacity(runs);
    let mut reads = Vec::with_capacity(runs);
    for _ in 0..runs {
        // The body's buffer, as the transport fills it, is not the load's.
        let body = BytesMut::from(&raw[..]);
        let before = LIVE.load(Ordering::Relaxed);
        PEAK.store(before, Ordering::Relaxed);
        let start = Instant::now();
        let (board, read) = load_once(black_box(body), parts, &root, coverage);
        times.push(start.elapsed());
        reads.push(read);
        peak = PEAK.load(Ordering::Relaxed) - before;
        merged = MERGED.load(Ordering::Relaxed) - before;
        length = board.map(|b| b.document_json().len()).unwrap_or_default();
    }
    let ratio = peak as f64 / raw.len() as f64;
    times.sort();
    reads.sort();
    let ms = |d: Option<&Duration>| d.map_or(0.0, |d| d.as_secs_f64() * 1e3);
    println!(
        "{length} bytes of document from {} raw, {runs} loads; peak heap of a load {peak} B = {ratio:.2}x the raw body; {merged} B held once the answer is read and merged; a load took {:.2} ms (median), {:.2} ms (fastest), of which reading and merging the answer {:.2} ms (median), {:.2} ms (fastest)",
        raw.len(),
        ms(times.get(times.len() / 2)),
        ms(times.first()),
        ms(reads.get(reads.len() / 2)),
        ms(reads.first()),
    );
}

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
//!   and the hash check), with the stored bytes printed first; beside the
//!   seal, the streaming encoder at the same level (`seal/stream`) and at
//!   level 3 (`seal/level-3`).
//!
//! `changes/cached-s-big`: whole requests through `BoardApi::respond`, in
//! process, on the sample upstream's 6 MB board `s-big` (7,000 cards over
//! seven boards), every one answered from the process cache: a cached
//! `/api/detail` (JSON, full) beside a cached `/api/changes` since the
//! version before one edit of the board (the sample upstream's
//! `POST /demo/edit/s-big`), versions kept in a SQLite file.
//!
//! Run: `cargo bench --bench changes -- --warm-up-time 1 --measurement-time 5`

#[path = "support/tiptap_board.rs"]
mod tiptap_board;

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::Value;
use shared_board_api::config::ApiSettings;
use shared_board_api::demo::SampleUpstream;
use shared_board_api::internals::document::Coverage;
use shared_board_api::internals::pipeline::{changes, load, LoadedBoard, Representation};
use shared_board_api::internals::provider::answer::Answer;
use shared_board_api::internals::provider::Fetched;
use shared_board_api::internals::store::versions::codec;
use shared_board_api::{BoardApi, RequestParts};
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
    // The level kept versions were sealed at before, beside the one they
    // are sealed at now, and the sizes of both.
    let level_3 = zstd::bulk::compress(d2, 3).expect("compresses");
    println!(
        "a kept version: {} bytes at zstd level {}, {} bytes at level 3",
        sealed.len(),
        codec::LEVEL,
        level_3.len() + 4,
    );
    // The streaming encoder at the level kept now (how versions were sealed
    // before the single pass; `codec::seal`'s doc says why it is slower) and
    // at level 3 (the level they were sealed at before that).
    for (name, level) in [("seal/stream", codec::LEVEL), ("seal/level-3", 3)] {
        group.bench_function(name, |b| {
            b.iter(|| {
                let mut encoder =
                    zstd::stream::write::Encoder::new(Vec::new(), level).expect("encoder");
                std::io::Write::write_all(&mut encoder, black_box(d2)).expect("writes");
                encoder.finish().expect("finishes")
            })
        });
    }
    group.bench_function("open", |b| {
        b.iter(|| codec::open(black_box(&sealed), &t2, 64 << 20))
    });
    group.finish();
}

/// `{prefix}/...?query` through `api`, in `rt`: the status, a header and the
/// body's length.
fn call(
    rt: &tokio::runtime::Runtime,
    api: &BoardApi,
    path: &str,
    query: &str,
) -> (u16, Option<String>, usize) {
    let (method, headers) = (http::Method::GET, http::HeaderMap::new());
    let parts = RequestParts::new(&method, path, Some(query), &headers);
    let answer = rt.block_on(api.respond(parts)).expect("ours");
    let version = answer
        .headers
        .get("board-version")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (answer.status.as_u16(), version, answer.body.len())
}

fn cached(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let upstream = rt
        .block_on(SampleUpstream::start(([127, 0, 0, 1], 0).into()))
        .expect("the sample upstream starts");
    let db = std::env::temp_dir().join(format!("sbapi-bench-{}.sqlite", std::process::id()));
    let settings = ApiSettings::builder()
        .set("provider.origin", upstream.origin())
        .set("cache.ttl_seconds", 3600)
        .set("changes.store", "sqlite")
        .set("changes.path", db.to_string_lossy().into_owned())
        .build()
        .expect("valid settings");
    let link = "url=https%3A%2F%2Fapp.milanote.com%2Fs-big%2Fx%3Fp%3Ddemo";
    let first = BoardApi::new(&settings).expect("builds");
    let (_, v1, _) = call(&rt, &first, "/api/detail", link);
    let v1 = v1.expect("a version");
    let conn = rusqlite::Connection::open(&db).expect("the file");
    let kept = || {
        conn.query_row(
            "SELECT COUNT(*) FROM board_versions WHERE version = ?1",
            [&v1],
            |r| r.get::<_, i64>(0),
        )
        .unwrap_or(0)
            > 0
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !kept() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(kept(), "the first version is kept");
    let mut edit = std::net::TcpStream::connect(upstream.addr()).expect("connects");
    edit.write_all(b"POST /demo/edit/s-big HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        .expect("asks for an edit");
    let mut reply = String::new();
    std::io::Read::read_to_string(&mut edit, &mut reply).expect("reads");
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    let second = BoardApi::new(&settings).expect("builds");
    let (_, v2, detail_bytes) = call(&rt, &second, "/api/detail", link);
    assert_ne!(v2.as_deref(), Some(v1.as_str()), "edited");
    let changes_query = format!("{link}&since={v1}");
    let (status, _, changes_bytes) = call(&rt, &second, "/api/changes", &changes_query);
    assert_eq!(status, 200);
    println!(
        "cached answers: /api/detail {detail_bytes} bytes, /api/changes {changes_bytes} bytes"
    );
    let mut group = c.benchmark_group("changes/cached-s-big");
    group.bench_function("detail", |b| {
        b.iter(|| call(&rt, &second, "/api/detail", link))
    });
    group.bench_function("changes", |b| {
        b.iter(|| call(&rt, &second, "/api/changes", &changes_query))
    });
    group.finish();
    drop(conn);
    for side in ["", "-wal", "-shm"] {
        let mut name = db.as_os_str().to_owned();
        name.push(side);
        let _ = std::fs::remove_file(std::path::PathBuf::from(name));
    }
}

criterion_group!(benches, bench, cached);
criterion_main!(benches);

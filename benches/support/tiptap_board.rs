//! The 7,000-card TipTap board that `benches/gen_board.py` writes, for the
//! benchmarks and examples that measure it: the raw `/api/boards` answer,
//! and the board loaded as the pipeline loads it.

#![allow(dead_code)]

use serde_json::Value;
use shared_board_api::internals::document::Coverage;
use shared_board_api::internals::pipeline::{load, LoadedBoard};
use shared_board_api::internals::provider::answer::Answer;
use shared_board_api::internals::provider::Fetched;

/// The raw answer and its root board's id; `None` when `python3` cannot
/// run the generator.
pub fn raw() -> Option<(Vec<u8>, String)> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/gen_board.py");
    let out = std::process::Command::new("python3")
        .arg(script)
        .output()
        .ok()?;
    let body: Value = serde_json::from_slice(&out.stdout).ok()?;
    let root = body.get("boardIds")?.get(0)?.as_str()?.to_owned();
    Some((out.stdout, root))
}

/// The board normalized, with every nested board loaded, and its id.
///
/// # Panics
/// When the generator cannot run or its board does not load: a benchmark
/// without its input measures nothing.
pub fn loaded() -> (LoadedBoard, String) {
    let (raw, root) = raw().expect("python3 runs benches/gen_board.py");
    let raw = bytes::Bytes::from(raw);
    let answer = Answer::parse_bytes(&raw).expect("the generator writes an answer");
    let mut fetched = Fetched::new(&root, 0);
    fetched.fetched_time_ms = answer.fields.get("fetchedTime").and_then(Value::as_i64);
    fetched.merge_answer(answer);
    fetched.loaded_boards.insert(root.clone());
    let board = load::build(fetched, &root, "milanote", Coverage::Full).expect("the board loads");
    (board, root)
}

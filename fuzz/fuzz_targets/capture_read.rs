//! Fuzzes the capture reader (`--demo DIR`): the input, split at NUL bytes,
//! becomes the files of a directory (the first part `index.json`; each
//! next part a file named by its first line when that is a plain file name,
//! else `NN.json`), which `Captured::load` reads as untrusted input. It
//! must never panic; and what the sample then serves for a batch of the
//! captured boards grows with the input, not with the number of boards an
//! answer asked for (orphans are joined once per batch).
//!
//! Run: `cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run capture_read -- -max_total_time=600`
//! (seed corpus/capture_read with `python3 seeds.py`).

#![no_main]

use libfuzzer_sys::fuzz_target;
use shared_board_api::demo::{sample_boards_body, Captured};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

/// Files written per input beyond the index: more reach nothing new.
const MAX_FILES: usize = 32;
/// Boards asked for in one batch, as the client's largest `batch_size`.
const BATCH: usize = 50;

/// One directory for the whole run, emptied before each input; in memory
/// (`/dev/shm`) when the machine has it.
static DIR: LazyLock<PathBuf> = LazyLock::new(|| {
    let shm = Path::new("/dev/shm");
    let base = if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    let dir = base.join(format!("sba-fuzz-capture-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("the fuzz directory");
    dir
});

/// A name the capture format writes, so nothing lands outside the directory.
fn plain_name(name: &[u8]) -> Option<&str> {
    let name = std::str::from_utf8(name).ok()?;
    let ok = (1..=64).contains(&name.len())
        && !name.starts_with('.')
        && name != "index.json"
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
    ok.then_some(name)
}

fuzz_target!(|data: &[u8]| {
    let dir = DIR.as_path();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let _ = std::fs::remove_file(entry.path());
    }
    let mut parts = data.split(|b| *b == 0);
    let index = parts.next().unwrap_or_default();
    std::fs::write(dir.join("index.json"), index).expect("write index.json");
    for (n, part) in parts.take(MAX_FILES).enumerate() {
        let split = part.iter().position(|b| *b == b'\n');
        let (name, body) = match split.and_then(|i| Some((plain_name(&part[..i])?, i))) {
            Some((name, i)) => (name.to_owned(), &part[i + 1..]),
            None => (format!("{:02}.json", n + 2), part),
        };
        std::fs::write(dir.join(name), body).expect("write an answer file");
    }
    let Ok(captured) = Captured::load(dir) else {
        return;
    };
    assert!(captured.root().is_some());
    let ids = captured.board_ids();
    for batch in ids.chunks(BATCH) {
        let body = sample_boards_body(batch, true, "http://127.0.0.1:1", &captured);
        // Every element served came from the input, at least `{}` and a
        // two-byte key's worth of it, whatever the batch.
        let served = body["elements"].as_object().map_or(0, |m| m.len());
        assert!(
            served <= data.len() / 4 + 1,
            "{served} elements from {} bytes",
            data.len()
        );
    }
});

//! The fleet tier's document check on the 7,000-card TipTap board
//! (`benches/gen_board.py`) alone, a fixed number of times: for instruction
//! counts under callgrind, which a noisy machine does not move
//! (`cargo bench --bench tier` has its time).
//!
//!   cargo build --release --example tier_check
//!   valgrind --tool=callgrind --toggle-collect='*check*document*' \
//!       target/release/examples/tier_check 5
//!
//! The argument is the number of checks (default 5); callgrind's
//! `Collected` divided by it is the instructions of one check. Prints the
//! document's size and the wall time of one check.

#[path = "../benches/support/tiptap_board.rs"]
mod tiptap_board;

use shared_board_api::internals::store::shared::check;
use std::hint::black_box;
use std::time::Instant;

fn main() {
    let runs: u32 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let (board, root) = tiptap_board::loaded();
    let json = board.document_json();
    let started = Instant::now();
    for _ in 0..runs {
        let checked = check::document(black_box(json), &root, 1_000_000);
        assert!(
            black_box(checked).is_ok(),
            "the service's own document checks out"
        );
    }
    let each = started.elapsed() / runs.max(1);
    println!("{} bytes checked {runs} times, {each:?} each", json.len());
}

//! The Markdown render of the 7,000-card TipTap board (`benches/gen_board.py`)
//! alone, a fixed number of times, with none of criterion's setup: for
//! instruction counts under callgrind, which a noisy machine does not move.
//!
//!   cargo build --profile bench --example markdown_render
//!   valgrind --tool=callgrind --toggle-collect='shared_board_api::pipeline::markdown::render' \
//!       target/release/examples/markdown_render full 3
//!
//! Arguments: the view (`full`, `standard`, `compact`; default `full`) and
//! the number of renders (default 3). Prints the Markdown's length.

#[path = "../benches/support/tiptap_board.rs"]
mod tiptap_board;

use shared_board_api::internals::pipeline::Representation;
use shared_board_api::internals::select::{Selection, View};
use std::hint::black_box;

fn main() {
    let mut args = std::env::args().skip(1);
    let view = match args.next().as_deref() {
        None | Some("full") => View::Full,
        Some("standard") => View::Standard,
        Some("compact") => View::Compact,
        Some(other) => {
            eprintln!("unknown view {other}: full, standard or compact");
            std::process::exit(2)
        }
    };
    let runs: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(3);
    let (board, _) = tiptap_board::loaded();
    let selection = Selection::view(view);
    let mut length = 0;
    for _ in 0..runs {
        let rendered = board.render_as(Representation::Markdown, "detail", black_box(&selection));
        length = rendered.map(|r| r.body.len()).unwrap_or_default();
    }
    println!("{length} bytes of Markdown, {runs} renders");
}

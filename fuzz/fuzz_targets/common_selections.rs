//! The selections every fuzz target of the fleet tier renders: each view,
//! an include and excludes that reach into bodies, leaves and the tree.

use shared_board_api::internals::select::{Selection, View};
use std::sync::LazyLock;

pub static SELECTIONS: LazyLock<Vec<Selection>> = LazyLock::new(|| {
    let lists = [
        "**",
        "board.**.id,board.**.title,board.children.richText,board.children.content",
        "board.children.table.rows.value,board.**.comments",
    ];
    let mut out: Vec<Selection> = [View::Full, View::Standard, View::Compact]
        .into_iter()
        .map(Selection::view)
        .collect();
    for list in lists {
        out.push(Selection::include(list).expect("valid"));
        out.push(Selection::exclude(View::Full, list).expect("valid"));
        out.push(Selection::exclude(View::Standard, list).expect("valid"));
    }
    out
});

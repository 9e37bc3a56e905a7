//! `s-big`: a synthetic board of about 6 MB (7,000 cards with TipTap text,
//! 1,000 on the root board and 1,000 in each of its six nested boards
//! `s-big-1` to `s-big-6`), in the web app's shape, for what only a board
//! that size shows: an agent's budget, paging, memory. Deterministic, and
//! built once per process.

use serde_json::{json, Map, Value};
use std::sync::OnceLock;

/// Nested boards of `s-big`.
pub const BIG_NESTED: usize = 6;
/// Cards on each board of the tree.
pub const BIG_CARDS: usize = 1_000;

const WORDS: &[&str] = &[
    "azulejo",
    "tram",
    "miradouro",
    "river",
    "bridge",
    "market",
    "tile",
    "harbour",
    "garden",
    "station",
    "museum",
    "cliff",
    "beach",
    "tower",
    "square",
    "bakery",
    "ferry",
    "castle",
    "chapel",
    "vineyard",
    "terrace",
    "lantern",
    "harvest",
    "compass",
];

/// The raw answer for `s-big` or `s-big-<k>`, or `None` for another id.
pub fn big_board(id: &str) -> Option<Map<String, Value>> {
    static BOARDS: OnceLock<Vec<Map<String, Value>>> = OnceLock::new();
    let index = match id {
        "s-big" => 0,
        _ => {
            let k: usize = id.strip_prefix("s-big-")?.parse().ok()?;
            if !(1..=BIG_NESTED).contains(&k) || id != format!("s-big-{k}") {
                return None;
            }
            k
        }
    };
    let boards = BOARDS.get_or_init(|| (0..=BIG_NESTED).map(build).collect());
    boards.get(index).cloned()
}

/// Board `k` of the tree (0 is the root).
fn build(k: usize) -> Map<String, Value> {
    let id = if k == 0 {
        "s-big".to_owned()
    } else {
        format!("s-big-{k}")
    };
    let mut elements = Map::new();
    let (parent, title) = if k == 0 {
        ("t-home".to_owned(), "A very large board".to_owned())
    } else {
        ("s-big".to_owned(), format!("Chapter {k}"))
    };
    elements.insert(
        id.clone(),
        json!({"_id": id, "elementType": "BOARD",
               "location": {"parentId": parent, "section": "CANVAS", "position": {"x": 40 * k, "y": 0, "score": 65536}},
               "content": {"title": title}}),
    );
    if k == 0 {
        for n in 1..=BIG_NESTED {
            let child = format!("s-big-{n}");
            elements.insert(
                child.clone(),
                json!({"_id": child, "elementType": "BOARD",
                       "location": {"parentId": id, "section": "CANVAS", "position": {"x": 40 * n, "y": 0, "score": 65536}},
                       "content": {"title": format!("Chapter {n}")}}),
            );
        }
    }
    for i in 0..BIG_CARDS {
        let card = format!("{id}-c{i}");
        elements.insert(
            card.clone(),
            json!({"_id": card, "elementType": "CARD",
                   "location": {"parentId": id, "section": "CANVAS",
                                "position": {"x": (i % 10) * 36, "y": 10 + (i / 10) * 20, "score": 65536}},
                   "content": {"textContent": text(k, i)}}),
        );
    }
    let mut board = Map::new();
    board.insert("elements".into(), Value::Object(elements));
    board.insert("fetchedTime".into(), json!(1_767_225_600_000_i64));
    board
}

/// A card's TipTap text: a heading, two paragraphs and, on every third
/// card, a list: about 800 bytes of JSON.
fn text(board: usize, card: usize) -> Value {
    let words = |seed: usize, n: usize| {
        (0..n)
            .map(|w| WORDS[(seed * 7 + w * 13 + board * 5) % WORDS.len()])
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut content = vec![
        json!({"type": "heading", "attrs": {"level": 2}, "content": [{"type": "text", "text": format!("Note {board}.{card}: {}", words(card, 3))}]}),
        json!({"type": "paragraph", "content": [
            {"type": "text", "text": format!("{}. ", words(card + 1, 14))},
            {"type": "text", "text": words(card + 2, 3), "marks": [{"type": "bold"}]},
            {"type": "text", "text": format!(" {}.", words(card + 3, 10))}]}),
        json!({"type": "paragraph", "content": [{"type": "text", "text": format!("{}.", words(card + 4, 18))}]}),
    ];
    if card.is_multiple_of(3) {
        content.push(json!({"type": "bulletList", "content": (0..3).map(|n| json!(
            {"type": "listItem", "content": [{"type": "paragraph", "content": [{"type": "text", "text": words(card + n, 4)}]}]}
        )).collect::<Vec<_>>()}));
    }
    json!({"type": "doc", "content": content})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tree_is_about_six_megabytes_and_only_its_ids_are_served() {
        let bytes: usize = std::iter::once("s-big".to_owned())
            .chain((1..=BIG_NESTED).map(|k| format!("s-big-{k}")))
            .map(|id| {
                serde_json::to_vec(&big_board(&id).expect("served"))
                    .expect("json")
                    .len()
            })
            .sum();
        assert!((5_000_000..8_000_000).contains(&bytes), "{bytes} bytes");
        for other in ["s-big-0", "s-big-7", "s-big-01", "s-bigger"] {
            assert!(big_board(other).is_none(), "{other}");
        }
    }
}

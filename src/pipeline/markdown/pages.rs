//! A board's Markdown in pages, for agents whose clients refuse long tool
//! results: the whole text once, with where its blocks and board sections
//! start, and pages cut from it on demand.
//!
//! A page ends only where a block of the document's own level starts (a
//! heading, a paragraph, a whole list, table, quote or code block), never
//! inside a line, a table, a list or a fence, so the pages of a text joined
//! in order are that text, byte for byte. A page holds as many whole blocks
//! as fit in its budget of characters, and at least one: a single block
//! longer than the budget is a page of its own, over the budget.
//!
//! [`Paged`] travels as bytes (the work pool makes it once per document
//! and selection; the process cache keeps it beside renders), laid out so
//! that cutting a page reads only the block table, never the text.

use super::out::Out;
use bytes::{Buf, BufMut, Bytes, BytesMut};

/// A board section as the writer met it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoardMark {
    /// Where its heading's block starts, in bytes.
    pub start: usize,
    /// Its id, when the selection kept ids.
    pub id: Option<String>,
    pub title: String,
    /// Its heading level: the root board is 1, a board in it 2, ...
    pub level: usize,
    /// Elements below it, nested boards' own included.
    pub elements: usize,
}

/// A nested board a page did not reach, with the titles that lead to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unread<'p> {
    pub mark: &'p BoardMark,
    /// Titles from the root board down to its parent.
    pub path: Vec<&'p str>,
}

/// One page of a [`Paged`] text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<'p> {
    /// The page's text: whole blocks.
    pub text: &'p str,
    /// Where the page starts and ends in the whole text, in bytes.
    pub start: usize,
    pub end: usize,
    /// Characters before the page, in it, and in the whole text.
    pub chars_before: usize,
    pub chars: usize,
    pub total_chars: usize,
}

/// The Markdown of a selection, with its block table and board sections.
#[derive(Debug, Clone)]
pub struct Paged {
    text: Bytes,
    /// Pairs of (byte offset, characters before it), one per block start,
    /// ascending, little-endian `u64`s.
    blocks: Bytes,
    boards: Vec<BoardMark>,
}

impl Paged {
    /// The text an [`Out`] wrote, with its layout.
    pub(super) fn from_out(out: Out) -> Paged {
        let (text, starts, boards) = out.finish_paged();
        let mut blocks = BytesMut::with_capacity(starts.len() * 16);
        let (mut at, mut chars) = (0, 0);
        for start in starts {
            if start <= at && start != 0 || start > text.len() {
                continue;
            }
            chars += char_count(&text.as_bytes()[at..start]);
            at = start;
            blocks.put_u64_le(start as u64);
            blocks.put_u64_le(chars as u64);
        }
        Paged {
            text: Bytes::from(text),
            blocks: blocks.freeze(),
            boards,
        }
    }

    /// The whole text.
    pub fn text(&self) -> &str {
        // Written from a `String` and never changed, or checked by `decode`.
        std::str::from_utf8(&self.text).unwrap_or_default()
    }

    /// The title of the board the text is of.
    pub fn title(&self) -> Option<&str> {
        self.boards.first().map(|b| b.title.as_str())
    }

    /// Characters in the whole text.
    pub fn total_chars(&self) -> usize {
        let (at, before) = self.block(self.block_count().saturating_sub(1));
        before + char_count(self.text.get(at..).unwrap_or_default())
    }

    fn block_count(&self) -> usize {
        self.blocks.len() / 16
    }

    /// The byte offset and characters before block `i`.
    fn block(&self, i: usize) -> (usize, usize) {
        let mut b = self.blocks.get(i * 16..i * 16 + 16).unwrap_or(&[0; 16]);
        (b.get_u64_le() as usize, b.get_u64_le() as usize)
    }

    /// The index of the block that starts at byte `at`, if one does.
    fn block_at(&self, at: usize) -> Option<usize> {
        let (mut lo, mut hi) = (0, self.block_count());
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.block(mid).0.cmp(&at) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }

    /// Whether a page may start at byte `at`: the start of the text or of
    /// one of its blocks. A cursor naming another place is refused.
    pub fn starts_block(&self, at: usize) -> bool {
        at == 0 || self.block_at(at).is_some()
    }

    /// The page that starts at byte `start` (a block start) and holds the
    /// most whole blocks within `budget` characters, at least one; `None`
    /// when `start` starts no block (or is the end of the text).
    pub fn page(&self, start: usize, budget: usize) -> Option<Page<'_>> {
        if start >= self.text.len() {
            return None;
        }
        let first = if start == 0 { 0 } else { self.block_at(start)? };
        let chars_before = if start == 0 { 0 } else { self.block(first).1 };
        let limit = chars_before + budget;
        // The last block start at or under the limit, past `start`.
        let (mut lo, mut hi) = (first + 1, self.block_count());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.block(mid).1 <= limit {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let total = self.total_chars();
        let (end, chars_end) = if lo == self.block_count() && total <= limit {
            (self.text.len(), total)
        } else if lo > first + 1 {
            self.block(lo - 1)
        } else if first + 1 < self.block_count() {
            // One block over the budget: a page of its own.
            self.block(first + 1)
        } else {
            (self.text.len(), total)
        };
        let text = std::str::from_utf8(self.text.get(start..end)?).ok()?;
        Some(Page {
            text,
            start,
            end,
            chars_before,
            chars: chars_end - chars_before,
            total_chars: total,
        })
    }

    /// The nested boards whose sections start at or after byte `from`, in
    /// reading order, each with the titles that lead to it.
    pub fn unread_boards(&self, from: usize) -> Vec<Unread<'_>> {
        let mut path: Vec<&BoardMark> = Vec::new();
        let mut out = Vec::new();
        for mark in &self.boards {
            while path.last().is_some_and(|p| p.level >= mark.level) {
                path.pop();
            }
            if mark.start >= from && mark.level > 1 {
                out.push(Unread {
                    mark,
                    path: path.iter().map(|p| p.title.as_str()).collect(),
                });
            }
            path.push(mark);
        }
        out
    }

    /// The bytes this travels as in a cache: the text's length, the block
    /// table's, the text, the table, then each board mark.
    pub fn encode(&self) -> Bytes {
        let mut out = BytesMut::with_capacity(self.text.len() + self.blocks.len() + 64);
        out.put_u64_le(self.text.len() as u64);
        out.put_u64_le(self.blocks.len() as u64);
        out.put_slice(&self.text);
        out.put_slice(&self.blocks);
        for mark in &self.boards {
            out.put_u64_le(mark.start as u64);
            out.put_u64_le(mark.level as u64);
            out.put_u64_le(mark.elements as u64);
            put_text(&mut out, mark.id.as_deref().unwrap_or(""));
            put_text(&mut out, &mark.title);
        }
        out.freeze()
    }

    /// What [`Paged::encode`] made, read back without copying the text;
    /// `None` for anything else.
    pub fn decode(bytes: &Bytes) -> Option<Paged> {
        let mut b = bytes.clone();
        let text_len = usize::try_from(take_u64(&mut b)?).ok()?;
        let blocks_len = usize::try_from(take_u64(&mut b)?).ok()?;
        if b.len() < text_len.checked_add(blocks_len)? || blocks_len % 16 != 0 {
            return None;
        }
        let text = b.split_to(text_len);
        std::str::from_utf8(&text).ok()?;
        let blocks = b.split_to(blocks_len);
        let mut boards = Vec::new();
        while !b.is_empty() {
            let start = usize::try_from(take_u64(&mut b)?).ok()?;
            let level = usize::try_from(take_u64(&mut b)?).ok()?;
            let elements = usize::try_from(take_u64(&mut b)?).ok()?;
            let id = take_text(&mut b)?;
            let title = take_text(&mut b)?;
            boards.push(BoardMark {
                start,
                id: (!id.is_empty()).then_some(id),
                title,
                level,
                elements,
            });
        }
        Some(Paged {
            text,
            blocks,
            boards,
        })
    }
}

/// Characters (Unicode scalar values) in UTF-8 `bytes`: every byte but the
/// continuation bytes starts one.
fn char_count(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| (b as i8) >= -0x40).count()
}

fn put_text(out: &mut BytesMut, text: &str) {
    out.put_u64_le(text.len() as u64);
    out.put_slice(text.as_bytes());
}

fn take_u64(b: &mut Bytes) -> Option<u64> {
    (b.len() >= 8).then(|| b.get_u64_le())
}

fn take_text(b: &mut Bytes) -> Option<String> {
    let len = usize::try_from(take_u64(b)?).ok()?;
    if b.len() < len {
        return None;
    }
    String::from_utf8(b.split_to(len).to_vec()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::select::Selection;
    use proptest::prelude::*;
    use serde_json::json;

    /// A board of `cards` cards (each `words` words long) in `boards`
    /// nested boards, plus a table and a task list at the top.
    fn board(cards: usize, words: usize, boards: usize) -> Vec<u8> {
        let card = |i: usize| {
            json!({"id": format!("c{i}"), "type": "CARD", "title": format!("Card {i}"),
                   "plainText": "word ".repeat(words + i % 3)})
        };
        let nested: Vec<_> = (0..boards)
            .map(|b| {
                json!({"id": format!("b{b}"), "type": "BOARD", "title": format!("Board {b}"),
                       "childrenLoaded": true,
                       "children": (0..cards).map(|i| card(b * 1000 + i)).collect::<Vec<_>>()})
            })
            .collect();
        let mut children = vec![
            json!({"id": "t", "type": "TASK_LIST", "title": "Tasks", "children": [
                {"id": "k1", "type": "TASK", "title": "one", "isComplete": true},
                {"id": "k2", "type": "TASK", "title": "two", "isComplete": false}]}),
        ];
        children.extend((0..cards).map(card));
        children.extend(nested);
        serde_json::to_vec(
            &json!({"version": 1, "board": {"id": "root", "type": "BOARD",
            "title": "Root", "children": children}}),
        )
        .expect("serializes")
    }

    fn paged(doc: &[u8]) -> Paged {
        super::super::render_paged(&Selection::view(crate::select::View::Full), doc)
            .expect("renders")
    }

    /// Every page from the start, following each page's end.
    fn pages(p: &Paged, budget: usize) -> Vec<String> {
        let mut out = Vec::new();
        let mut at = 0;
        while let Some(page) = p.page(at, budget) {
            assert!(page.end > at, "progress");
            out.push(page.text.to_owned());
            at = page.end;
        }
        out
    }

    #[test]
    fn pages_join_to_the_whole_text_and_end_where_blocks_start() {
        let doc = board(40, 12, 3);
        let p = paged(&doc);
        let whole = super::super::render(&Selection::view(crate::select::View::Full), &doc)
            .expect("renders");
        assert_eq!(p.text(), whole);
        for budget in [1, 80, 500, 2_000, 1_000_000] {
            let pages = pages(&p, budget);
            assert_eq!(pages.concat(), whole, "budget {budget}");
            for page in &pages {
                let over = page.chars().count() > budget;
                // Over the budget only as one block of its own.
                assert!(
                    !over || page.trim_end().split("\n\n").count() == 1,
                    "{page:?}"
                );
            }
        }
        assert_eq!(p.total_chars(), whole.chars().count());
    }

    #[test]
    fn unread_boards_have_their_path_and_size() {
        let p = paged(&board(3, 2, 2));
        let all = p.unread_boards(0);
        let names: Vec<_> = all.iter().map(|u| u.mark.title.as_str()).collect();
        assert_eq!(names, ["Board 0", "Board 1"]);
        assert_eq!(all[0].path, ["Root"]);
        assert_eq!(all[0].mark.id.as_deref(), Some("b0"));
        assert_eq!(all[0].mark.elements, 3);
        let past_first = all[1].mark.start;
        assert_eq!(p.unread_boards(past_first).len(), 1);
    }

    #[test]
    fn a_paged_text_travels_as_bytes() {
        let p = paged(&board(5, 3, 2));
        let back = Paged::decode(&p.encode()).expect("decodes");
        assert_eq!(back.text(), p.text());
        assert_eq!(back.blocks, p.blocks);
        assert_eq!(back.boards, p.boards);
        for bad in [&b""[..], b"\x01\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0"] {
            assert!(Paged::decode(&Bytes::copy_from_slice(bad)).is_none());
        }
        assert!(!p.starts_block(1) && p.starts_block(0));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn for_any_board_and_budget_the_pages_are_the_whole_render(
            cards in 0usize..30, words in 0usize..40, boards in 0usize..4, budget in 1usize..3_000,
        ) {
            let doc = board(cards, words, boards);
            let p = paged(&doc);
            let pages = pages(&p, budget);
            prop_assert_eq!(pages.concat(), p.text());
            for page in &pages {
                // No page ends inside a line, or a fence.
                prop_assert!(page.ends_with('\n'));
                prop_assert_eq!(page.matches("```").count() % 2, 0);
            }
        }
    }
}

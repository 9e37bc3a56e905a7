//! `read_board` within a budget: a page of the board's Markdown (whole
//! blocks, see [`crate::pipeline::markdown::pages`]), what is left after
//! it, and a cursor to go on.
//!
//! A cursor is opaque to the agent and untrusted here. It names the
//! renderer that cut it (this build's version: another build may lay the
//! Markdown out otherwise, so its byte offsets mean nothing here), the board,
//! the board version it was cut from, a digest of the arguments that chose
//! the text (selection, nested board, format) and the byte where the next
//! page starts, which must be the start of a block. A cursor of another
//! version is refused with the current version named: the agent reads from
//! the start again rather than mixing two versions of a board. It holds no
//! permission id (the share link is passed again with every call).

use crate::api::error::ApiError;
use crate::pipeline::markdown::pages::{Page, Paged};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde_json::json;
use std::fmt::Write as _;

/// The form of this server's cursors.
const CURSOR_FORM: &str = "2";
/// The renderer a cursor's offset is a byte of: this build's version.
pub(super) const RENDERER: &str = env!("CARGO_PKG_VERSION");

/// A place to go on from, as a cursor names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Cursor {
    /// [`RENDERER`] of the build that made it.
    pub renderer: String,
    pub board_id: String,
    pub version: String,
    pub bound: String,
    pub offset: usize,
}

impl Cursor {
    pub fn encode(&self) -> String {
        let text = format!(
            "{CURSOR_FORM}|{}|{}|{}|{}|{}",
            self.renderer, self.board_id, self.version, self.bound, self.offset
        );
        URL_SAFE_NO_PAD.encode(text)
    }

    /// A cursor this server made; `None` for anything else.
    pub fn decode(text: &str) -> Option<Cursor> {
        if text.len() > 512 {
            return None;
        }
        let bytes = URL_SAFE_NO_PAD.decode(text).ok()?;
        let text = String::from_utf8(bytes).ok()?;
        let mut parts = text.split('|');
        let (form, renderer, board_id, version, bound, offset) = (
            parts.next()?,
            parts.next()?,
            parts.next()?,
            parts.next()?,
            parts.next()?,
            parts.next()?,
        );
        if form != CURSOR_FORM || parts.next().is_some() || board_id.is_empty() {
            return None;
        }
        Some(Cursor {
            renderer: renderer.to_owned(),
            board_id: board_id.to_owned(),
            version: version.to_owned(),
            bound: bound.to_owned(),
            offset: offset.parse().ok()?,
        })
    }
}

/// The digest of what chose the text: the canonical selection, the nested
/// board read and the format.
pub(super) fn binding(selection: &str, board: Option<&str>, json: bool) -> String {
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    hasher.update(selection.as_bytes());
    hasher.update(b"\0");
    hasher.update(board.unwrap_or("").as_bytes());
    hasher.update(if json { b"\0json" } else { b"\0md" });
    format!("{:016x}", hasher.digest())
}

/// Where the page a `cursor` asks for starts, once it is checked against
/// the board, its current `version` and the call's `bound` arguments.
///
/// # Errors
/// `INVALID_REQUEST` (`field: cursor`) for a cursor this server did not
/// make, one another build made (another renderer), one of another board
/// or other arguments, or one of another version (naming the current one).
pub(super) fn resume(
    cursor: &str,
    board_id: &str,
    version: &str,
    bound: &str,
) -> Result<usize, ApiError> {
    let bad = |message: String| ApiError::invalid_request("cursor", message);
    let c = Cursor::decode(cursor)
        .ok_or_else(|| bad("cursor is not a nextCursor of this server".into()))?;
    if c.renderer != RENDERER {
        return Err(bad(
            "cursor was made by another version of this server: read the board again from the start (without cursor)".into(),
        ));
    }
    if c.board_id != board_id {
        return Err(bad("cursor was made for another board".into()));
    }
    if c.bound != bound {
        return Err(bad(
            "cursor was made for other arguments: pass the view, include, exclude, board and format of the call that returned it".into(),
        ));
    }
    if c.version != version {
        return Err(bad(format!(
            "the board changed since this cursor was made: it is now at version {version}; read it again from the start (without cursor)"
        )));
    }
    Ok(c.offset)
}

/// What one answer shows: the page, and how the agent goes on.
pub(super) struct Shown<'p> {
    pub page: Option<Page<'p>>,
    pub next: Option<String>,
    pub trailer: String,
}

/// The page of `paged` from `start` within `max_chars` (a share of which
/// is kept for the note on what is left), and the note.
///
/// # Errors
/// `INVALID_REQUEST` (`field: cursor`) when `start` is not where a page
/// can start.
pub(super) fn show<'p>(
    paged: &'p Paged,
    start: usize,
    max_chars: usize,
    next_cursor: impl Fn(usize) -> String,
) -> Result<Shown<'p>, ApiError> {
    if start != 0 && !paged.starts_block(start) {
        return Err(ApiError::invalid_request(
            "cursor",
            "cursor is not a nextCursor of this server",
        ));
    }
    let reserve = (max_chars / 8).clamp(300, 4_000);
    let Some(page) = paged.page(start, max_chars.saturating_sub(reserve).max(1)) else {
        return Ok(Shown {
            page: None,
            next: None,
            trailer: String::new(),
        });
    };
    if page.end >= paged.text().len() {
        return Ok(Shown {
            page: Some(page),
            next: None,
            trailer: String::new(),
        });
    }
    let next = next_cursor(page.end);
    let mut trailer = format!(
        "[Characters {}–{} of {} shown. More follows: call read_board again with the same arguments and \"cursor\": \"{next}\".]",
        page.chars_before + 1,
        page.chars_before + page.chars,
        page.total_chars
    );
    let unread = paged.unread_boards(page.end);
    if !unread.is_empty() {
        let _ = write!(trailer, "\nNested boards not shown yet ({}):", unread.len());
        let mut listed = 0;
        for board in &unread {
            let mut line = format!("\n- {}", board.mark.title);
            if let Some(id) = &board.mark.id {
                let _ = write!(line, " (board \"{id}\"");
            } else {
                line.push_str(" (");
            }
            let _ = write!(
                line,
                "{}in {}; {} elements)",
                if board.mark.id.is_some() { "; " } else { "" },
                board.path.join(" › "),
                board.mark.elements
            );
            if trailer.chars().count() + line.chars().count() + 40 > reserve {
                break;
            }
            trailer.push_str(&line);
            listed += 1;
        }
        if listed < unread.len() {
            let _ = write!(trailer, "\n… and {} more.", unread.len() - listed);
        }
    }
    Ok(Shown {
        page: Some(page),
        next: Some(next),
        trailer,
    })
}

/// A read's core: the page as the first text, the note (when more
/// follows) as a second, and `structuredContent` with the version, whether
/// the text was cut and the cursor to go on.
pub(super) fn core(shown: &Shown<'_>, version: &str, title: Option<&str>) -> String {
    let mut content =
        vec![json!({"type": "text", "text": shown.page.as_ref().map_or("", |p| p.text)})];
    if !shown.trailer.is_empty() {
        content.push(json!({"type": "text", "text": shown.trailer}));
    }
    let (from, to, total) = shown.page.as_ref().map_or((0, 0, 0), |p| {
        (p.chars_before, p.chars_before + p.chars, p.total_chars)
    });
    let mut structured = json!({
        "version": version,
        "truncated": shown.next.is_some(),
        "chars": {"from": from, "to": to, "total": total},
    });
    if let Some(next) = &shown.next {
        structured["nextCursor"] = next.as_str().into();
    }
    if let Some(title) = title {
        structured["title"] = title.into();
    }
    format!(
        "\"content\":{},\"structuredContent\":{},\"isError\":false",
        serde_json::Value::Array(content),
        structured
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_round_trips_and_anything_else_is_refused() {
        let c = Cursor {
            renderer: RENDERER.into(),
            board_id: "1W3ZZU1Qvua02H".into(),
            version: "ab".repeat(16),
            bound: binding("view:full", None, false),
            offset: 4096,
        };
        let text = c.encode();
        assert_eq!(Cursor::decode(&text), Some(c.clone()));
        assert_eq!(resume(&text, &c.board_id, &c.version, &c.bound), Ok(4096));
        let other_version =
            resume(&text, &c.board_id, &"cd".repeat(16), &c.bound).expect_err("another version");
        assert!(other_version.message().contains(&"cd".repeat(16)));
        assert_eq!(other_version.field(), Some("cursor"));
        assert!(resume(&text, "other", &c.version, &c.bound).is_err());
        let other_build = Cursor {
            renderer: "0.0.0-other".into(),
            ..c.clone()
        }
        .encode();
        let e = resume(&other_build, &c.board_id, &c.version, &c.bound).expect_err("a build");
        assert!(
            e.message().contains("another version of this server"),
            "{e:?}"
        );
        assert!(resume(
            &text,
            &c.board_id,
            &c.version,
            &binding("view:full", Some("b"), false)
        )
        .is_err());
        for bad in [
            "",
            "x",
            "!!!!",
            &"A".repeat(600),
            &URL_SAFE_NO_PAD.encode("2|b|v|x|1"),
            // The form before the renderer was bound.
            &URL_SAFE_NO_PAD.encode(format!("1|{}|{}|{}|1", c.board_id, c.version, c.bound)),
            &URL_SAFE_NO_PAD.encode(format!(
                "2|{RENDERER}|{}|{}|{}|-1",
                c.board_id, c.version, c.bound
            )),
        ] {
            assert!(
                resume(bad, &c.board_id, &c.version, &c.bound).is_err(),
                "{bad}"
            );
        }
        assert_ne!(binding("a", None, false), binding("a", None, true));
    }
}

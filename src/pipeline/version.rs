//! The board version: one token for one board content, whatever view was
//! asked for and whichever node made it. It is the first 128 bits of a
//! SHA-256 over the sanitized full document without its `fetchedAt` (the
//! one member that changes when nothing on the board did), as 32 lowercase
//! hex digits. Made when a full document is built or read back, on the
//! work pool with the rest of that work; an outline has none of its own.

use ring::digest;

/// Hex digits in a version token.
pub const VERSION_CHARS: usize = 32;

/// The version of the compact JSON of a sanitized full document.
pub fn version_of(document: &[u8]) -> Box<str> {
    let mut ctx = digest::Context::new(&digest::SHA256);
    match fetched_at_span(document) {
        Some((start, end)) => {
            ctx.update(&document[..start]);
            ctx.update(&document[end..]);
        }
        None => ctx.update(document),
    }
    let digest = ctx.finish();
    crate::random::hex(&digest.as_ref()[..VERSION_CHARS / 2]).into_boxed_str()
}

/// Whether `text` is a token [`version_of`] could have made.
pub fn is_version(text: &str) -> bool {
    text.len() == VERSION_CHARS && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The bytes of the top-level `,"fetchedAt":"..."` entry, comma included:
/// the document writes it after `version` and `source` (which hold no
/// such key), so it is the first occurrence, within the first bytes.
fn fetched_at_span(doc: &[u8]) -> Option<(usize, usize)> {
    const KEY: &[u8] = b",\"fetchedAt\":\"";
    let head = &doc[..doc.len().min(1024)];
    let start = head.windows(KEY.len()).position(|w| w == KEY)?;
    let value = start + KEY.len();
    // An RFC 3339 time: no quote or backslash inside.
    let len = doc[value..].iter().position(|&b| b == b'"')?;
    Some((start, value + len + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = r#"{"version":1,"source":{"provider":"milanote","boardId":"b"},"fetchedAt":"2026-11-28T04:00:00.000Z","board":{"id":"b","title":"T"}}"#;

    #[test]
    fn the_same_content_fetched_again_is_the_same_version() {
        let again = DOC.replace("04:00:00", "05:30:12");
        assert_eq!(version_of(DOC.as_bytes()), version_of(again.as_bytes()));
        let changed = DOC.replace("\"T\"", "\"U\"");
        assert_ne!(version_of(DOC.as_bytes()), version_of(changed.as_bytes()));
        let v = version_of(DOC.as_bytes());
        assert!(is_version(&v), "{v}");
    }

    #[test]
    fn only_tokens_of_this_shape_are_versions() {
        for bad in ["", "abc", &"g".repeat(32), &"A".repeat(32), &"a".repeat(33)] {
            assert!(!is_version(bad), "{bad}");
        }
        assert!(is_version(&"0a".repeat(16)));
    }
}

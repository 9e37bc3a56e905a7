//! Which keys can name a sensitive field, decided from a key's bytes as
//! the check reads them: a table of shapes that passes nearly every key
//! without reading it, and the full comparison for the few that remain.

use crate::document::sanitize::{is_sensitive, SENSITIVE_KEYS};

/// The longest key, in bytes, that can name a sensitive field (see
/// [`SENSITIVE_SHAPES`]).
const LONGEST_SENSITIVE: usize = 15;

/// The shapes of every key that can name a sensitive field: by length in
/// bytes and the class of its first byte ([`CLASS`]), a bit for the class
/// of each last byte such a key can have. [`is_sensitive`] reads a name in
/// any ASCII case, and with any of its `k`s written `K` (KELVIN SIGN, 3
/// bytes) and any of its `s`s written `ſ` (LONG S, 2 bytes): of the
/// characters other than ASCII, only those two fold to ASCII letters (a
/// test checks every character). So every spelling of every name is
/// entered here, and a key whose shape is not entered is not sensitive,
/// without reading it: nearly every key of a document.
const SENSITIVE_SHAPES: [[u32; 32]; LONGEST_SENSITIVE + 1] = {
    let mut table = [[0u32; 32]; LONGEST_SENSITIVE + 1];
    let mut i = 0;
    while i < SENSITIVE_KEYS.len() {
        let name = SENSITIVE_KEYS[i].as_bytes();
        // Every subset of the name's foldable letters, as a bit mask over
        // its `k`s and `s`s in order.
        let mut foldable = 0;
        let mut j = 0;
        while j < name.len() {
            if name[j] == b'k' || name[j] == b's' {
                foldable += 1;
            }
            j += 1;
        }
        let mut subset = 0u32;
        while subset < 1 << foldable {
            let (mut len, mut first, mut last, mut seen) = (0, 0u8, 0u8, 0);
            let mut j = 0;
            while j < name.len() {
                let c = name[j];
                // This letter's bytes when written folded, or as ASCII.
                let (bytes, lead, tail) = if (c == b'k' || c == b's') && subset & (1 << seen) != 0 {
                    if c == b'k' {
                        (3, 0xE2, 0xAA)
                    } else {
                        (2, 0xC5, 0xBF)
                    }
                } else {
                    (1, c, c)
                };
                if c == b'k' || c == b's' {
                    seen += 1;
                }
                if j == 0 {
                    first = CLASS[lead as usize];
                }
                if j == name.len() - 1 {
                    last = CLASS[tail as usize];
                }
                len += bytes;
                j += 1;
            }
            table[len][first as usize] |= 1 << last;
            subset += 1;
        }
        i += 1;
    }
    table
};

/// The class of a byte in [`SENSITIVE_SHAPES`]: one per ASCII letter (case
/// ignored), one each for the first and last bytes of `K` and `ſ`, and
/// [`UNENTERED`] for every other byte.
const CLASS: [u8; 256] = {
    let mut class = [UNENTERED; 256];
    let mut c = 0;
    while c < 26 {
        class[(b'a' + c) as usize] = c;
        class[(b'A' + c) as usize] = c;
        c += 1;
    }
    class[0xE2] = 26;
    class[0xC5] = 27;
    class[0xAA] = 28;
    class[0xBF] = 29;
    class
};

/// The class of the bytes no sensitive key begins or ends with.
const UNENTERED: u8 = 31;

/// Whether the key whose text (as written, without escapes) is `key`
/// names a sensitive field, as [`is_sensitive`] reads it.
#[inline(always)]
pub(super) fn sensitive_key(key: &[u8]) -> bool {
    let (Some(&first), Some(&last)) = (key.first(), key.last()) else {
        return false;
    };
    let Some(by_first) = SENSITIVE_SHAPES.get(key.len()) else {
        return false;
    };
    let lasts = by_first[usize::from(CLASS[usize::from(first)])];
    lasts & (1 << CLASS[usize::from(last)]) != 0 && sensitive_name(key)
}

/// Which of [`SENSITIVE_KEYS`] have each length, a bit per name.
const NAMES_BY_LENGTH: [u32; LONGEST_SENSITIVE + 1] = {
    let mut table = [0u32; LONGEST_SENSITIVE + 1];
    let mut i = 0;
    while i < SENSITIVE_KEYS.len() {
        table[SENSITIVE_KEYS[i].len()] |= 1 << i;
        i += 1;
    }
    table
};

/// The full comparison, for the few keys of a sensitive shape (such as
/// `parentId`, of the shape of `password`: one per card).
#[inline(never)]
fn sensitive_name(key: &[u8]) -> bool {
    if key.is_ascii() {
        // Only the names of the key's length.
        let mut names = NAMES_BY_LENGTH.get(key.len()).copied().unwrap_or(0);
        while names != 0 {
            let name = SENSITIVE_KEYS[names.trailing_zeros() as usize];
            if name.as_bytes().eq_ignore_ascii_case(key) {
                return true;
            }
            names &= names - 1;
        }
        false
    } else {
        // Other characters may fold to ASCII letters.
        std::str::from_utf8(key).map_or(true, is_sensitive)
    }
}

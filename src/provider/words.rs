//! Eight bytes of JSON text tested at a time, for the scans that look for
//! the end of a string's plain run (`answer::scan`, `rich_text::cursor`)
//! and the writer that escapes a string (`rich_text::write_str`).
//!
//! `x - 0x01..01 & !x` sets the high bit of each zero byte of `x`, exact
//! for the lowest such byte (a borrow may mark bytes above it as well,
//! which does not matter to a scan that stops at the first).

const ONES: u64 = u64::MAX / 255;
const HIGH: u64 = ONES << 7;

/// The eight bytes at `at`, as one word (the first byte lowest).
pub fn word_at(bytes: &[u8], at: usize) -> Option<u64> {
    let chunk = bytes.get(at..at.checked_add(8)?)?;
    let mut word = [0; 8];
    word.copy_from_slice(chunk);
    Some(u64::from_le_bytes(word))
}

/// High bits set where a byte of `word` is `byte`.
#[inline(always)]
pub fn bytes_equal(word: u64, byte: u8) -> u64 {
    let x = word ^ (ONES * u64::from(byte));
    x.wrapping_sub(ONES) & !x & HIGH
}

/// High bits set where a byte of `word` is below `bound` (at most 0x80).
#[inline(always)]
pub fn bytes_below(word: u64, bound: u8) -> u64 {
    word.wrapping_sub(ONES * u64::from(bound)) & !word & HIGH
}

/// The index, within `word`, of the byte a mask's lowest high bit marks.
pub fn first_marked(mask: u64) -> usize {
    mask.trailing_zeros() as usize / 8
}

/// Where the run of string bytes that starts at `from` ends: at the first
/// quote, backslash or control character (or the end of `bytes`), eight
/// bytes at a time.
pub fn plain_run_end(bytes: &[u8], from: usize) -> usize {
    let mut i = from;
    while let Some(word) = word_at(bytes, i) {
        let found = bytes_equal(word, b'"') | bytes_equal(word, b'\\') | bytes_below(word, 0x20);
        if found != 0 {
            return i + first_marked(found);
        }
        i += 8;
    }
    while let Some(&b) = bytes.get(i) {
        if b == b'"' || b == b'\\' || b < 0x20 {
            return i;
        }
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_run_ends_at_the_first_quote_backslash_or_control() {
        let special = [b'"', b'\\', 0x00, 0x01, 0x1f];
        let other = [
            b'a', b' ', b'~', 0x20, 0x7f, 0x80, 0xc3, 0xff, b'!', b'#', b'[', b']',
        ];
        for len in 0..20 {
            for at in 0..=len {
                for &stop in &special {
                    for &fill in &other {
                        let mut bytes = vec![fill; len];
                        if at < len {
                            bytes[at] = stop;
                            // Something special after the first never moves it.
                            if at + 1 < len {
                                bytes[len - 1] = b'"';
                            }
                        }
                        let expected = bytes
                            .iter()
                            .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
                            .unwrap_or(len);
                        assert_eq!(plain_run_end(&bytes, 0), expected, "{bytes:?}");
                    }
                }
            }
        }
        assert_eq!(plain_run_end(b"abc", 5), 5);
    }
}

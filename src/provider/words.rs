//! Eight bytes of JSON text tested at a time, for the scans that look for
//! the end of a string's plain run (`answer::check`, `rich_text::cursor`).
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

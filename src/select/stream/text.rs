//! Finding the end of a run of plain string text in compact JSON, eight
//! bytes at a time: shared by the selection walks (here) and the fleet
//! tier's document check, which both spend most of their time in strings.

/// The index of the first byte at or after `i` that ends a run of plain
/// string text: a quote or a backslash, and with `controls` a control
/// character too; `b.len()` when there is none. Eight bytes at a time (most
/// of a document is string text), then byte by byte to find the one.
pub(crate) fn text_run(b: &[u8], mut i: usize, controls: bool) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // The high bit of each byte below `n` (n <= 0x80) is set; a borrow may
    // also set bits above such a byte, never without one.
    let below = |x: u64, n: u64| x.wrapping_sub(ONES * n) & !x & HIGH;
    let control = if controls { 0x20 } else { 0 };
    while let Some(chunk) = b.get(i..i + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let x = u64::from_le_bytes(word);
        let stops = below(x ^ (ONES * u64::from(b'"')), 1)
            | below(x ^ (ONES * u64::from(b'\\')), 1)
            | below(x, control);
        if stops != 0 {
            break;
        }
        i += 8;
    }
    while let Some(&c) = b.get(i) {
        if c == b'"' || c == b'\\' || (controls && c < 0x20) {
            return i;
        }
        i += 1;
    }
    i
}

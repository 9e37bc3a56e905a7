//! Finding the end of a run of plain string text in compact JSON, eight
//! bytes at a time: shared by the selection walks (here) and the fleet
//! tier's document check, which both spend most of their time in strings.

/// The index of the first byte at or after `i` that ends a run of plain
/// string text, a quote or a backslash; `b.len()` when there is none. Eight
/// bytes at a time (most of a document is string text), the last few byte
/// by byte. Control characters are not stops: the walks read documents
/// serde_json wrote (which escapes them) or the tier's check passed, and
/// the check refuses them for the whole document in one pass first.
pub(crate) fn text_run(b: &[u8], mut i: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // The high bit of each byte below `n` (n <= 0x80) is set; a borrow may
    // also set bits above such a byte, never without one.
    let below = |x: u64, n: u64| x.wrapping_sub(ONES * n) & !x & HIGH;
    while let Some(chunk) = b.get(i..i + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let x = u64::from_le_bytes(word);
        let stops =
            below(x ^ (ONES * u64::from(b'"')), 1) | below(x ^ (ONES * u64::from(b'\\')), 1);
        if stops != 0 {
            // The lowest flagged byte is always a real stop (a borrow only
            // flags bytes above one).
            return i + (stops.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while let Some(&c) = b.get(i) {
        if c == b'"' || c == b'\\' {
            return i;
        }
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::text_run;

    fn naive(b: &[u8], i: usize) -> usize {
        (i..b.len())
            .find(|&j| b[j] == b'"' || b[j] == b'\\')
            .unwrap_or(b.len())
    }

    /// Every stop byte (and its neighbours, which must not stop) at every
    /// place of a 20-byte run, after fillers that make borrows likely.
    #[test]
    fn finds_the_first_stop_as_a_byte_loop_would() {
        let probes = [
            0x00, 0x01, 0x1f, 0x20, 0x21, b'"', b'#', b'[', b'\\', b']', 0x7f, 0x80, 0xc3, 0xff,
        ];
        for filler in [b'a', 0x00, 0x21, 0x23, 0x5d, 0x80, 0xff] {
            for at in 0..20 {
                for probe in probes {
                    for second in [None, Some(b'"'), Some(0x01)] {
                        let mut b = vec![filler; 20];
                        b[at] = probe;
                        if let Some(s) = second {
                            b[(at + 3) % 20] = s;
                        }
                        for start in [0, 1, 5] {
                            assert_eq!(text_run(&b, start), naive(&b, start), "{b:?} from {start}");
                        }
                    }
                }
            }
        }
    }
}

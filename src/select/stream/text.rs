//! Finding the end of a run of plain string text in compact JSON, sixteen
//! or eight bytes at a time: shared by the selection walks (here), the
//! fleet tier's document check, the Markdown reader, and on the cold path
//! the provider answer's scan, the rich-text cursor and the string writer
//! of the normalizer, which all spend most of their time in strings.

/// The index of the first byte at or after `i` that ends a run of plain
/// string text, a quote or a backslash; `b.len()` when there is none.
/// Sixteen bytes at a time with SSE2 on x86_64 (part of its baseline, so
/// no detection is needed), eight at a time in a `u64` elsewhere and for
/// the last bytes. Control characters are not stops: the walks read
/// documents serde_json wrote (which escapes them) or the tier's check
/// passed, and the check refuses them for the whole document in one pass
/// first.
#[inline]
pub(crate) fn text_run(b: &[u8], i: usize) -> usize {
    run::<false>(b, i)
}

/// [`text_run`] that also stops at a control character (below 0x20),
/// which JSON does not allow unescaped: for a reader that refuses what
/// serde_json would refuse.
#[inline(always)]
pub(crate) fn json_text_run(b: &[u8], i: usize) -> usize {
    run::<true>(b, i)
}

#[inline(always)]
fn run<const CONTROLS: bool>(b: &[u8], i: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    let i = match sse2::run::<CONTROLS>(b, i) {
        Ok(stop) => return stop,
        Err(rest) => rest,
    };
    run_words::<CONTROLS>(b, i)
}

/// [`run`] eight bytes at a time, then byte by byte.
#[inline]
fn run_words<const CONTROLS: bool>(b: &[u8], mut i: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // The high bit of each byte below `n` (n <= 0x80) is set; a borrow may
    // also set bits above such a byte, never without one.
    let below = |x: u64, n: u64| x.wrapping_sub(ONES * n) & !x & HIGH;
    while let Some(chunk) = b.get(i..i + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let x = u64::from_le_bytes(word);
        let mut stops =
            below(x ^ (ONES * u64::from(b'"')), 1) | below(x ^ (ONES * u64::from(b'\\')), 1);
        if CONTROLS {
            stops |= below(x, 0x20);
        }
        if stops != 0 {
            // The lowest flagged byte is always a real stop (a borrow only
            // flags bytes above one).
            return i + (stops.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while let Some(&c) = b.get(i) {
        if c == b'"' || c == b'\\' || (CONTROLS && c < 0x20) {
            return i;
        }
        i += 1;
    }
    i
}

#[cfg(target_arch = "x86_64")]
mod sse2 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };

    /// The first stop at or after `i` among the whole sixteen-byte blocks
    /// from `i`, or (as the error) where those blocks end, fewer than
    /// sixteen bytes before the end, when none of them holds one.
    #[inline(always)]
    pub(super) fn run<const CONTROLS: bool>(b: &[u8], mut i: usize) -> Result<usize, usize> {
        while let Some(block) = b.get(i..i + 16) {
            // SAFETY: SSE2 is enabled on every x86_64 target, and the load
            // reads exactly the sixteen bytes of `block` (unaligned loads
            // are allowed).
            let stops = unsafe {
                let v = _mm_loadu_si128(block.as_ptr().cast::<__m128i>());
                let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
                let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
                let mut stops = _mm_or_si128(quote, backslash);
                if CONTROLS {
                    // v <= 0x1f exactly when max(v, 0x1f) == 0x1f (unsigned).
                    let low = _mm_set1_epi8(0x1f);
                    stops = _mm_or_si128(stops, _mm_cmpeq_epi8(_mm_max_epu8(v, low), low));
                }
                _mm_movemask_epi8(stops)
            };
            if stops != 0 {
                return Ok(i + stops.trailing_zeros() as usize);
            }
            i += 16;
        }
        Err(i)
    }
}

#[cfg(test)]
mod tests {
    use super::{json_text_run, run_words, text_run};

    fn naive(b: &[u8], i: usize, controls: bool) -> usize {
        (i..b.len())
            .find(|&j| b[j] == b'"' || b[j] == b'\\' || (controls && b[j] < 0x20))
            .unwrap_or(b.len())
    }

    /// Every stop byte (and its neighbours, which must not stop) at every
    /// place of a 40-byte run (two sixteen-byte blocks, a word and a tail),
    /// from starts in and across blocks, after fillers that make borrows
    /// likely.
    #[test]
    fn finds_the_first_stop_as_a_byte_loop_would() {
        const LEN: usize = 40;
        let probes = [
            0x00, 0x01, 0x1f, 0x20, 0x21, b'"', b'#', b'[', b'\\', b']', 0x7f, 0x80, 0xc3, 0xff,
        ];
        for filler in [b'a', 0x00, 0x21, 0x23, 0x5d, 0x80, 0xff] {
            for at in 0..LEN {
                for probe in probes {
                    for second in [None, Some(b'"'), Some(0x01)] {
                        let mut b = vec![filler; LEN];
                        b[at] = probe;
                        if let Some(s) = second {
                            b[(at + 3) % LEN] = s;
                        }
                        for start in [0, 1, 5, 15, 16, 17, 30] {
                            let want = naive(&b, start, false);
                            assert_eq!(text_run(&b, start), want, "{b:?} from {start}");
                            // The portable scan alone, as on other targets.
                            assert_eq!(run_words::<false>(&b, start), want, "{b:?} from {start}");
                            let want = naive(&b, start, true);
                            assert_eq!(json_text_run(&b, start), want, "{b:?} from {start}");
                            assert_eq!(run_words::<true>(&b, start), want, "{b:?} from {start}");
                        }
                    }
                }
            }
        }
    }
}

//! Skipping a whole array or object: where the compact JSON container that
//! opens at a byte ends, without reading its members one by one.
//!
//! The compact view and the Markdown reader skip most of a full document
//! (every card's blocks, its plain text, its location): thousands of short
//! strings and brackets, which a walk member by member paid a branch and a
//! bounds check for each. Here the bytes go sixty-four at a time as bit
//! masks (one bit per byte: quotes, backslashes, opening and closing
//! brackets). The quotes' running XOR marks every byte inside a string, so
//! the brackets outside strings are the masks with those bits cleared, and
//! the depth moves by their counts: the block's brackets are visited one by
//! one only in the block where the container may close.
//!
//! A block with a backslash in it, or after one that ended inside an escape,
//! goes byte by byte through the same state machine, as does the tail
//! shorter than a block and every block on targets without SSE2: what a
//! backslash escapes is only known in order. Both paths give what skipping
//! string by string gives (the tests hold both to that walk).

/// The state between blocks: how many containers are open, and whether the
/// next byte is inside a string or escaped there.
#[derive(Clone, Copy, Default)]
struct State {
    depth: usize,
    in_string: bool,
    escaped: bool,
}

/// Bytes per block of masks.
const BLOCK: usize = 64;

/// The index just past the array or object that opens at `b[at]` (`{` or
/// `[`): where its brackets, outside strings, balance. `None` when they do
/// not balance before the end. Inside strings a backslash escapes the byte
/// after it and a quote ends the string; nothing else is checked (the
/// input is compact JSON this service wrote or checked).
#[inline]
pub(crate) fn container_end(b: &[u8], at: usize) -> Option<usize> {
    // From an opening bracket the depth is one before any closing one is
    // met, so it never goes below zero.
    if !matches!(b.get(at), Some(b'{' | b'[')) {
        return None;
    }
    let mut state = State::default();
    let mut i = at;
    while let Some(block) = b.get(i..i + BLOCK) {
        match masked_block(block, &mut state) {
            Block::Closed(offset) => return Some(i + offset),
            Block::Open => {}
            Block::Escapes => {
                if let Some(end) = bytewise(b, i, i + BLOCK, &mut state) {
                    return Some(end);
                }
            }
        }
        i += BLOCK;
    }
    bytewise(b, i, b.len(), &mut state)
}

/// What one block of masks found.
enum Block {
    /// The container closed at this offset past the block's start (just
    /// past its closing bracket).
    Closed(usize),
    /// The container is still open after the block; the state moved on.
    Open,
    /// The block holds a backslash, or follows one that escapes its first
    /// byte: it is read byte by byte, the state untouched.
    Escapes,
}

/// One block through its masks (x86_64, SSE2, which every x86_64 target has).
#[cfg(target_arch = "x86_64")]
#[inline]
fn masked_block(block: &[u8], state: &mut State) -> Block {
    let Masks {
        quote,
        backslash,
        open,
        close,
    } = masks(block);
    if backslash != 0 || state.escaped {
        return Block::Escapes;
    }
    // Bit k of `inside` is set when byte k is an opening quote or inside a
    // string, clear on a closing quote: no bracket there counts.
    let carry = if state.in_string { !0 } else { 0 };
    let inside = prefix_xor(quote) ^ carry;
    let opens = open & !inside;
    let closes = close & !inside;
    state.in_string = inside >> 63 == 1;
    let closed = closes.count_ones() as usize;
    if closed < state.depth || closes == 0 {
        // Every close leaves a container open: the depth only moves.
        state.depth = state.depth + opens.count_ones() as usize - closed;
        return Block::Open;
    }
    let mut brackets = opens | closes;
    while brackets != 0 {
        let bit = brackets.trailing_zeros();
        brackets &= brackets - 1;
        if opens >> bit & 1 == 1 {
            state.depth += 1;
        } else {
            state.depth -= 1;
            if state.depth == 0 {
                return Block::Closed(bit as usize + 1);
            }
        }
    }
    Block::Open
}

/// Without SSE2 every block is read byte by byte.
#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn masked_block(_: &[u8], _: &mut State) -> Block {
    Block::Escapes
}

/// One bit per byte of a block: quotes, backslashes, `{` or `[`, `}` or `]`.
#[cfg(target_arch = "x86_64")]
struct Masks {
    quote: u64,
    backslash: u64,
    open: u64,
    close: u64,
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn masks(block: &[u8]) -> Masks {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    let mut m = Masks {
        quote: 0,
        backslash: 0,
        open: 0,
        close: 0,
    };
    for (n, chunk) in block.chunks_exact(16).enumerate() {
        let shift = 16 * n as u32;
        // SAFETY: SSE2 is enabled on every x86_64 target, and the load reads
        // exactly the sixteen bytes of `chunk` (unaligned loads are allowed).
        unsafe {
            let v = _mm_loadu_si128(chunk.as_ptr().cast::<__m128i>());
            let bits = |x| u64::from(_mm_movemask_epi8(x) as u16) << shift;
            // `{` (0x7b) and `[` (0x5b) differ in bit 0x20 alone, as do `}`
            // (0x7d) and `]` (0x5d): no other byte sets to those with it.
            let folded = _mm_or_si128(v, _mm_set1_epi8(0x20));
            m.quote |= bits(_mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8)));
            m.backslash |= bits(_mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8)));
            m.open |= bits(_mm_cmpeq_epi8(folded, _mm_set1_epi8(b'{' as i8)));
            m.close |= bits(_mm_cmpeq_epi8(folded, _mm_set1_epi8(b'}' as i8)));
        }
    }
    m
}

/// Bit k of the result is the XOR of bits 0 to k of `x`.
#[cfg(target_arch = "x86_64")]
#[inline]
fn prefix_xor(mut x: u64) -> u64 {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    x
}

/// `b[from..to]` one byte at a time from `state`: just past the closing
/// bracket when the container closes there.
#[inline]
fn bytewise(b: &[u8], from: usize, to: usize, state: &mut State) -> Option<usize> {
    for (i, &c) in b.iter().enumerate().take(to).skip(from) {
        if state.in_string {
            if state.escaped {
                state.escaped = false;
            } else if c == b'\\' {
                state.escaped = true;
            } else if c == b'"' {
                state.in_string = false;
            }
            continue;
        }
        match c {
            b'"' => state.in_string = true,
            b'{' | b'[' => state.depth += 1,
            b'}' | b']' => {
                state.depth = state.depth.checked_sub(1)?;
                if state.depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// [`container_end`] with every byte through the state machine.
    fn container_end_bytewise(b: &[u8], at: usize) -> Option<usize> {
        bytewise(b, at, b.len(), &mut State::default())
    }

    /// The walk string by string that this replaced, kept as a second
    /// oracle: brackets counted outside strings, a string run from its
    /// quote to the next unescaped one.
    fn by_strings(b: &[u8], at: usize) -> Option<usize> {
        let mut i = at;
        let mut depth = 0usize;
        loop {
            match *b.get(i)? {
                b'"' => {
                    i += 1;
                    loop {
                        match *b.get(i)? {
                            b'"' => break,
                            b'\\' => i += 2,
                            _ => i += 1,
                        }
                    }
                }
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(i + 1);
                    }
                }
                _ => {}
            }
            i += 1;
        }
    }

    fn agree(b: &[u8]) {
        for at in 0..b.len() {
            if matches!(b[at], b'{' | b'[') {
                let want = by_strings(b, at);
                assert_eq!(container_end_bytewise(b, at), want, "{:?} at {at}", b);
                assert_eq!(container_end(b, at), want, "{:?} at {at}", b);
            }
        }
    }

    #[test]
    fn documents_end_where_their_closing_bracket_is() {
        let doc = serde_json::json!({
            "a": [1, {"b": "}]\"{[", "c": ["\\", "\\\"", "x\\\\"]}],
            "long": "y".repeat(200),
            "nest": [[[[{"d": "é ] \n \u{1}"}]]]],
            "tail": {}
        });
        let text = serde_json::to_vec(&doc).expect("serializes");
        for pad in 0..70 {
            let mut b = vec![b' '; pad];
            b.extend_from_slice(&text);
            b.extend_from_slice(b",[]");
            assert_eq!(container_end(&b, pad), Some(pad + text.len()));
            agree(&b);
        }
    }

    #[test]
    fn an_unclosed_container_has_no_end() {
        for text in [&b"{"[..], b"[[]", b"{\"a\":\"}", b"[\"\\\"]", b"[\"\\"] {
            for pad in [0, 63, 64, 65] {
                let mut b = vec![b' '; pad];
                b.extend_from_slice(text);
                assert_eq!(container_end(&b, pad), None, "{text:?}");
                agree(&b);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Bytes dense in what the skip reads (quotes, backslashes,
        /// brackets) across several blocks, from every opening bracket.
        #[test]
        fn masks_and_bytes_agree_on_any_bytes(
            bytes in proptest::collection::vec(
                prop_oneof![
                    Just(b'"'), Just(b'\\'), Just(b'{'), Just(b'}'), Just(b'['), Just(b']'),
                    Just(b'a'), Just(b','), Just(b':'), Just(b'|'), Just(0xc3)
                ],
                0..300,
            )
        ) {
            agree(&bytes);
        }

        /// The same with backslashes rare or absent, so that most blocks
        /// go through the masks rather than byte by byte.
        #[test]
        fn masks_and_bytes_agree_where_escapes_are_rare(
            bytes in proptest::collection::vec(
                prop_oneof![
                    8 => Just(b'"'), 4 => Just(b'{'), 4 => Just(b'}'), 4 => Just(b'['),
                    4 => Just(b']'), 24 => Just(b'a'), 4 => Just(b','), 1 => Just(b'\\'),
                ],
                0..400,
            ),
            escapes in any::<bool>(),
        ) {
            let bytes: Vec<u8> = if escapes {
                bytes
            } else {
                bytes.into_iter().filter(|&c| c != b'\\').collect()
            };
            agree(&bytes);
        }
    }
}

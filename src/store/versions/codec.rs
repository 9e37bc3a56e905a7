//! How a kept version is written and read back: the sanitized full
//! document, zstd-compressed behind a 4-byte mark. What a store hands back
//! is untrusted (a file edited by hand, a row of another program, a value
//! written to Redis by anyone): [`open`] inflates at most the store's
//! document bound, and a version is only what [`open`] returns when the
//! document hashes to the very token it is kept under, so a truncated,
//! altered or foreign value is never compared. The board the document is
//! of is checked by the caller (the comparison reads it anyway).

use crate::pipeline::version::version_of;
use std::io::Read as _;

/// The first bytes of every value: the format, so that a later format is
/// told apart instead of misread.
const MARK: &[u8; 4] = b"SBV1";

/// The zstd level of kept versions. Level 1, not zstd's default 3: on the
/// 5.7 MB document of the 7,000-card bench board it seals in 8.9 ms
/// against 14.9 ms (`benches/changes.rs`, `seal` beside `seal/level-3`)
/// for a value 0.9 % larger (814,785 bytes against 807,939), and the seal
/// is CPU every new version of a board costs, on the work pool after the
/// answer. Any level reads back the same way, so values written at
/// another level stay readable.
pub const LEVEL: i32 = 1;

/// The stored value of `document` (compact JSON).
///
/// One call compresses the whole document into a buffer that has room
/// for zstd's bound on it, which is what makes zstd compress it in one
/// pass straight from `document` (its single-pass shortcut). A streaming
/// encoder fed the same bytes copies them into its own window and, once
/// that window wraps, matches through its slower external-dictionary
/// path: 104 M instructions for the 5.7 MB bench document against 82 M
/// here, for a frame of the same size to a few bytes (this one's header
/// also holds the content size). The buffer's untouched room is address
/// space until it is handed back, which the result does before it is kept.
///
/// # Errors
/// The compressor's error text (it does not fail on memory input).
pub fn seal(document: &[u8]) -> Result<Vec<u8>, String> {
    use zstd::zstd_safe::{zstd_sys::ZSTD_EndDirective, CCtx, CParameter, InBuffer, OutBuffer};
    let error = |code| zstd::zstd_safe::get_error_name(code).to_owned();
    let room = MARK.len() + zstd::zstd_safe::compress_bound(document.len());
    let mut out = Vec::with_capacity(room);
    out.extend_from_slice(MARK);
    let mut cctx = CCtx::try_create().ok_or("zstd: no compression context")?;
    cctx.set_parameter(CParameter::CompressionLevel(LEVEL))
        .map_err(error)?;
    let mut output = OutBuffer::around_pos(&mut out, MARK.len());
    let mut input = InBuffer::around(document);
    let left = cctx
        .compress_stream2(&mut output, &mut input, ZSTD_EndDirective::ZSTD_e_end)
        .map_err(error)?;
    // With the bound's room the frame is always finished in this call;
    // anything else is refused rather than kept half-written.
    if left != 0 || input.pos() != document.len() {
        return Err("zstd: the frame did not end within its bound".to_owned());
    }
    out.shrink_to_fit();
    Ok(out)
}

/// Why a stored value is not a version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejected {
    /// Not this format (another program's value, another version's).
    Format,
    /// Does not inflate, or inflates past the bound.
    Inflate,
    /// Inflates to a document of another version.
    Version,
}

impl std::fmt::Display for Rejected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Rejected::Format => "not a kept version",
            Rejected::Inflate => "does not inflate within the bound",
            Rejected::Version => "not the version it is kept under",
        })
    }
}

/// The document in `value`, when it is the version `version`: inflated to
/// at most `max_bytes`. CPU work: callers run it on the work pool.
///
/// # Errors
/// [`Rejected`], for any value that is not what [`seal`] wrote for it.
pub fn open(value: &[u8], version: &str, max_bytes: usize) -> Result<Vec<u8>, Rejected> {
    let body = value
        .strip_prefix(MARK.as_slice())
        .ok_or(Rejected::Format)?;
    let decoder = zstd::stream::read::Decoder::new(body).map_err(|_| Rejected::Inflate)?;
    let mut document = Vec::new();
    decoder
        .take(max_bytes as u64 + 1)
        .read_to_end(&mut document)
        .map_err(|_| Rejected::Inflate)?;
    if document.len() > max_bytes {
        return Err(Rejected::Inflate);
    }
    if *version_of(&document) != *version {
        return Err(Rejected::Version);
    }
    Ok(document)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &[u8] = br#"{"version":1,"source":{"provider":"m","boardId":"b"},"fetchedAt":"t","board":{"id":"b","type":"BOARD","children":[]}}"#;

    #[test]
    fn a_sealed_version_opens_and_nothing_else_does() {
        let version = version_of(DOC);
        let value = seal(DOC).expect("seals");
        assert_eq!(open(&value, &version, 1 << 20).as_deref(), Ok(DOC));
        assert_eq!(
            open(&value, &"0".repeat(32), 1 << 20),
            Err(Rejected::Version)
        );
        assert_eq!(open(&value, &version, 10), Err(Rejected::Inflate));
        assert_eq!(
            open(&value[..value.len() - 3], &version, 1 << 20),
            Err(Rejected::Inflate)
        );
        assert_eq!(open(b"", &version, 1 << 20), Err(Rejected::Format));
        assert_eq!(open(&value[4..], &version, 1 << 20), Err(Rejected::Format));
        let mut flipped = value.clone();
        let last = flipped.len() - 8;
        flipped[last] ^= 0xff;
        assert!(open(&flipped, &version, 1 << 20).is_err());
        // A zstd bomb: a small value inflating far past the bound.
        let bomb = seal(&vec![b' '; 8 << 20]).expect("seals");
        assert!(bomb.len() < 4096);
        assert_eq!(open(&bomb, &version, 1 << 20), Err(Rejected::Inflate));
        // The room zstd's bound asked for is handed back: 8 MiB of room
        // for a value under 4 KiB is not what a store keeps.
        assert!(bomb.capacity() < 2 * bomb.len() + 64, "{}", bomb.capacity());
    }

    #[test]
    fn a_value_kept_by_the_streaming_encoder_still_opens() {
        // What builds before the single-pass seal kept: the same mark and a
        // zstd frame without the content size in its header.
        let mut encoder =
            zstd::stream::write::Encoder::new(MARK.to_vec(), LEVEL).expect("an encoder");
        std::io::Write::write_all(&mut encoder, DOC).expect("writes");
        let value = encoder.finish().expect("ends");
        assert_ne!(value, seal(DOC).expect("seals"));
        assert_eq!(open(&value, &version_of(DOC), 1 << 20).as_deref(), Ok(DOC));
    }

    #[test]
    fn text_that_does_not_compress_seals_within_the_bound() {
        // 1 MiB of xorshift bytes, escaped into a JSON string: zstd stores
        // most of it raw, the case that needs the bound's room.
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let noise: String = (0..1 << 20)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                char::from(b'!' + (state % 90) as u8)
            })
            .filter(|c| !matches!(c, '"' | '\\'))
            .collect();
        let document = format!(r#"{{"board":{{"id":"b","title":"{noise}"}}}}"#);
        let value = seal(document.as_bytes()).expect("seals");
        assert!(
            value.len() > document.len() / 2,
            "noise compressed too well"
        );
        let version = version_of(document.as_bytes());
        assert_eq!(
            open(&value, &version, 2 << 20).as_deref(),
            Ok(document.as_bytes())
        );
    }
}

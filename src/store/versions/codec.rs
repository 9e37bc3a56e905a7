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
/// # Errors
/// The compressor's error text (it does not fail on memory input).
pub fn seal(document: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(document.len() / 4 + 16);
    out.extend_from_slice(MARK);
    let mut encoder = zstd::stream::write::Encoder::new(out, LEVEL).map_err(|e| e.to_string())?;
    std::io::Write::write_all(&mut encoder, document).map_err(|e| e.to_string())?;
    encoder.finish().map_err(|e| e.to_string())
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
    }
}

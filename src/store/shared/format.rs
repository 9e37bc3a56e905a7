//! How a document is stored in the fleet tier: a small fixed header, then
//! the document's compact JSON compressed with zstd.
//!
//! ```text
//! magic "SBAD" | version u8 | coverage u8 | transient u8 | reserved u8
//! unloaded u32 | expires_at_ms i64 | checksum u64 | json_len u32
//! fetched_at_len u8 | fetched_at bytes | zstd(json)
//! ```
//!
//! Integers are little-endian. `checksum` is xxh3-64 of the uncompressed
//! JSON; `fetched_at` repeats the document's own `fetchedAt`, so a value
//! whose parts do not belong together is caught too. Anything that does not
//! check out (another magic or version, a length past the limit, a body
//! that does not inflate to exactly `json_len` bytes, a checksum or
//! `fetchedAt` that differs) is [`Invalid`]: the caller deletes the value
//! and treats it as a miss, never serves it.

use crate::document::Coverage;
use std::fmt;

const MAGIC: &[u8; 4] = b"SBAD";
/// Bumped whenever the layout or the document's meaning changes: nodes of
/// different versions then ignore each other's values.
pub const VERSION: u8 = 1;
const FIXED: usize = 4 + 4 + 4 + 8 + 8 + 4 + 1;
/// zstd level 1: a 5 MB document compresses in a few milliseconds to a
/// fraction of its size, and the tier's memory is the operator's.
const LEVEL: i32 = 1;

/// What the header says of a stored document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub coverage: Coverage,
    /// Nested boards not loaded, and whether any of them may load on a
    /// retry (such a document is kept briefly).
    pub unloaded: u32,
    pub transient: bool,
    /// When the entry stops being served, in epoch milliseconds; the same
    /// expiry for every node that reads it.
    pub expires_at_ms: i64,
}

/// A value that must not be served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid(pub &'static str);

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "stored document rejected: {}", self.0)
    }
}

/// The stored value of `json`, a document's compact JSON.
///
/// # Errors
/// The compressor failed (it does not on in-memory input), or `json` is
/// over 4 GiB.
pub fn encode(header: &Header, json: &[u8]) -> Result<Vec<u8>, Invalid> {
    let fetched_at = fetched_at(json).unwrap_or_default();
    let fetched_len = u8::try_from(fetched_at.len()).map_err(|_| Invalid("fetchedAt too long"))?;
    let json_len = u32::try_from(json.len()).map_err(|_| Invalid("document too large"))?;
    let compressed = zstd::bulk::compress(json, LEVEL).map_err(|_| Invalid("compression"))?;
    let mut out = Vec::with_capacity(FIXED + fetched_at.len() + compressed.len());
    out.extend_from_slice(MAGIC);
    out.push(VERSION);
    out.push(match header.coverage {
        Coverage::Full => 0,
        Coverage::Outline => 1,
    });
    out.push(u8::from(header.transient));
    out.push(0);
    out.extend_from_slice(&header.unloaded.to_le_bytes());
    out.extend_from_slice(&header.expires_at_ms.to_le_bytes());
    out.extend_from_slice(&checksum(json).to_le_bytes());
    out.extend_from_slice(&json_len.to_le_bytes());
    out.push(fetched_len);
    out.extend_from_slice(fetched_at);
    out.extend_from_slice(&compressed);
    Ok(out)
}

/// The header of a stored value, read without inflating the body, and
/// where the rest starts. Cheap: callers check expiry and coverage first.
///
/// # Errors
/// [`Invalid`] for a value that is not ours or not of this version.
pub fn header(value: &[u8]) -> Result<Header, Invalid> {
    let fixed = value.get(..FIXED).ok_or(Invalid("shorter than a header"))?;
    if &fixed[..4] != MAGIC {
        return Err(Invalid("not a stored document"));
    }
    if fixed[4] != VERSION {
        return Err(Invalid("another format version"));
    }
    let coverage = match fixed[5] {
        0 => Coverage::Full,
        1 => Coverage::Outline,
        _ => return Err(Invalid("unknown coverage")),
    };
    let transient = match fixed[6] {
        0 => false,
        1 => true,
        _ => return Err(Invalid("bad flags")),
    };
    Ok(Header {
        coverage,
        unloaded: u32::from_le_bytes(array(&fixed[8..12])),
        transient,
        expires_at_ms: i64::from_le_bytes(array(&fixed[12..20])),
    })
}

/// The document's compact JSON out of a stored value, checked against its
/// header: at most `max_len` bytes, exactly the announced length, the
/// checksum and `fetchedAt` equal. CPU work for a large value: callers run
/// it on the work pool.
///
/// # Errors
/// [`Invalid`] for anything that does not check out.
pub fn decode(value: &[u8], max_len: usize) -> Result<(Header, Vec<u8>), Invalid> {
    let header = header(value)?;
    let sum = u64::from_le_bytes(array(&value[20..28]));
    let json_len = u32::from_le_bytes(array(&value[28..32])) as usize;
    let fetched_len = value[32] as usize;
    let fetched = value
        .get(FIXED..FIXED + fetched_len)
        .ok_or(Invalid("truncated header"))?;
    if json_len > max_len {
        return Err(Invalid("document over the size limit"));
    }
    let body = &value[FIXED + fetched_len..];
    let json =
        zstd::bulk::decompress(body, json_len).map_err(|_| Invalid("body does not inflate"))?;
    if json.len() != json_len {
        return Err(Invalid("length differs"));
    }
    if checksum(&json) != sum {
        return Err(Invalid("checksum differs"));
    }
    if fetched_at(&json).unwrap_or_default() != fetched {
        return Err(Invalid("fetchedAt differs"));
    }
    Ok((header, json))
}

fn checksum(json: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(json)
}

fn array<const N: usize>(bytes: &[u8]) -> [u8; N] {
    let mut out = [0; N];
    out.copy_from_slice(bytes);
    out
}

/// The `fetchedAt` string of a document's compact JSON: a top-level member
/// written before `board`, so it sits in the first bytes.
fn fetched_at(json: &[u8]) -> Option<&[u8]> {
    const KEY: &[u8] = b"\"fetchedAt\":\"";
    let head = &json[..json.len().min(1024)];
    let start = head.windows(KEY.len()).position(|w| w == KEY)? + KEY.len();
    let len = head[start..].iter().position(|&b| b == b'"')?;
    Some(&head[start..start + len])
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &[u8] = br#"{"version":1,"source":{"provider":"milanote","boardId":"b"},"fetchedAt":"2026-11-25T05:00:00.000Z","board":{"id":"b","type":"BOARD","title":"T","children":[]}}"#;

    fn header_of(coverage: Coverage) -> Header {
        Header {
            coverage,
            unloaded: 2,
            transient: true,
            expires_at_ms: 1_790_000_000_000,
        }
    }

    #[test]
    fn round_trip() {
        for coverage in [Coverage::Full, Coverage::Outline] {
            let stored = encode(&header_of(coverage), DOC).expect("encodes");
            assert_eq!(header(&stored), Ok(header_of(coverage)));
            let (h, json) = decode(&stored, DOC.len()).expect("decodes");
            assert_eq!((h, json.as_slice()), (header_of(coverage), DOC));
        }
    }

    #[test]
    fn anything_that_does_not_check_out_is_refused() {
        let good = encode(&header_of(Coverage::Full), DOC).expect("encodes");
        let refused = |value: &[u8], max: usize| decode(value, max).err();
        assert_eq!(
            refused(b"", 1 << 20),
            Some(Invalid("shorter than a header"))
        );
        assert_eq!(
            refused(&[b'x'; 64], 1 << 20),
            Some(Invalid("not a stored document"))
        );
        let mut v = good.clone();
        v[4] = VERSION + 1;
        assert_eq!(
            refused(&v, 1 << 20),
            Some(Invalid("another format version"))
        );
        assert_eq!(
            refused(&good, DOC.len() - 1),
            Some(Invalid("document over the size limit"))
        );
        // A flipped byte in the compressed body, a truncated body.
        let mut v = good.clone();
        let last = v.len() - 3;
        v[last] ^= 0x55;
        assert!(refused(&v, 1 << 20).is_some());
        assert!(refused(&good[..good.len() - 4], 1 << 20).is_some());
        // A body that is sound but not the one the header names.
        let other = String::from_utf8_lossy(DOC).replace("\"T\"", "\"U\"");
        let mut v = good[..FIXED + 24].to_vec();
        v.extend(zstd::bulk::compress(other.as_bytes(), 1).expect("compresses"));
        assert_eq!(refused(&v, 1 << 20), Some(Invalid("checksum differs")));
        // The same checksum cannot hide another fetchedAt: the header's
        // copy is compared too.
        let mut v = good.clone();
        v[FIXED + 3] = b'7';
        assert_eq!(refused(&v, 1 << 20), Some(Invalid("fetchedAt differs")));
    }

    #[test]
    fn compressed_is_smaller() {
        let big: Vec<u8> = DOC.iter().copied().cycle().take(200_000).collect();
        let stored = encode(&header_of(Coverage::Full), &big).expect("encodes");
        assert!(stored.len() < big.len() / 10, "{}", stored.len());
    }
}

//! How a document is stored in the fleet tier: a small fixed header, the
//! document's compact JSON compressed with zstd, and a MAC.
//!
//! ```text
//! magic "SBAD" | version u8 | coverage u8 | transient u8 | reserved u8
//! unloaded u32 | expires_at_ms i64 | json_len u32
//! fetched_at_len u8 | fetched_at bytes | zstd(json) | tag [32]
//! ```
//!
//! Integers are little-endian. `tag` is the HMAC-SHA256 of every byte
//! before it under a key derived from the fleet key and the Redis key name
//! ([`Seal`]): only a node with the fleet key writes a value that opens, and
//! only under the key it was written for. `fetched_at` repeats the
//! document's own `fetchedAt`. Anything that does not check out (a tag that
//! does not verify, another magic or version, a length past the limit, a
//! body that does not inflate to exactly `json_len` bytes, a `fetchedAt`
//! that differs) is [`Invalid`]: the caller deletes the value and treats it
//! as a miss, never serves it. The tag is checked before anything is
//! inflated. What a verified document may hold is checked after
//! ([`super::check`]).
//!
//! A shared failure is sealed the same way: `"SBAF" | version u8 | status
//! u16 | expires_at_ms i64 | tag [32]` ([`failure`], [`read_failure`]).

use super::seal::{Seal, TAG_BYTES};
use crate::document::Coverage;
use std::fmt;

const MAGIC: &[u8; 4] = b"SBAD";
const FAILURE_MAGIC: &[u8; 4] = b"SBAF";
/// Bumped whenever the layout or the document's meaning changes: nodes of
/// different versions then ignore each other's values.
pub const VERSION: u8 = 2;
const FIXED: usize = 4 + 4 + 4 + 8 + 4 + 1;
const FAILURE_BYTES: usize = 4 + 1 + 2 + 8 + TAG_BYTES;
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
    /// expiry for every node that reads it (a node also keeps it no longer
    /// than its own TTL, nor past the Redis key's own expiry).
    pub expires_at_ms: i64,
}

/// A value that must not be served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid(pub &'static str);

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "stored value rejected: {}", self.0)
    }
}

/// The stored value of `json`, a document's compact JSON, sealed for the
/// Redis key `name`.
///
/// # Errors
/// The compressor failed (it does not on in-memory input), or `json` is
/// over 4 GiB.
pub fn encode(header: &Header, json: &[u8], seal: &Seal, name: &str) -> Result<Vec<u8>, Invalid> {
    let fetched_at = fetched_at(json).unwrap_or_default();
    // Never refused: `fetched_at` is at most 255 bytes.
    let fetched_len = u8::try_from(fetched_at.len()).map_err(|_| Invalid("fetchedAt too long"))?;
    let json_len = u32::try_from(json.len()).map_err(|_| Invalid("document too large"))?;
    let compressed = zstd::bulk::compress(json, LEVEL).map_err(|_| Invalid("compression"))?;
    let mut out = Vec::with_capacity(FIXED + fetched_at.len() + compressed.len() + TAG_BYTES);
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
    out.extend_from_slice(&json_len.to_le_bytes());
    out.push(fetched_len);
    out.extend_from_slice(fetched_at);
    out.extend_from_slice(&compressed);
    Ok(seal.seal(name, out))
}

/// The header of a stored value, read without checking its tag or
/// inflating the body: callers look at expiry and coverage first, and
/// [`decode`] checks everything before the document is used.
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

/// The document's compact JSON out of a value stored under `name`: its tag
/// verified first, then at most `max_len` bytes, exactly the announced
/// length, and `fetchedAt` equal to the header's. CPU work for a large
/// value: callers run it on the work pool.
///
/// # Errors
/// [`Invalid`] for anything that does not check out.
#[cfg(any(test, feature = "internals"))]
pub fn decode(
    value: &[u8],
    max_len: usize,
    seal: &Seal,
    name: &str,
) -> Result<(Header, Vec<u8>), Invalid> {
    decode_framed(value, max_len, seal, name, &[], &[])
}

/// [`decode`], the document inflated straight between `front` and `back`
/// in one buffer, `buffer[front.len()..buffer.len() - back.len()]`: a
/// caller that keeps the document inside an envelope gets it without
/// copying megabytes.
///
/// # Errors
/// As [`decode`].
pub fn decode_framed(
    value: &[u8],
    max_len: usize,
    seal: &Seal,
    name: &str,
    front: &[u8],
    back: &[u8],
) -> Result<(Header, Vec<u8>), Invalid> {
    let value = seal
        .open(name, value)
        .ok_or(Invalid("tag does not verify"))?;
    let header = header(value)?;
    let json_len = u32::from_le_bytes(array(&value[20..24])) as usize;
    let fetched_len = value[24] as usize;
    let fetched = value
        .get(FIXED..FIXED + fetched_len)
        .ok_or(Invalid("truncated header"))?;
    if json_len > max_len {
        return Err(Invalid("document over the size limit"));
    }
    let body = &value[FIXED + fetched_len..];
    let end = front.len() + json_len;
    // Inflated into the buffer's spare room, which is never zeroed first
    // (a memset of megabytes otherwise); room for `json_len` and `back`,
    // so a body that inflates to more than `json_len` is caught below or
    // refused by the decompressor.
    let mut buffer = Vec::with_capacity(end + back.len());
    buffer.extend_from_slice(front);
    let mut cursor = std::io::Cursor::new(buffer);
    cursor.set_position(front.len() as u64);
    let inflated = zstd::bulk::Decompressor::new()
        .and_then(|mut d| d.decompress_to_buffer(body, &mut cursor))
        .map_err(|_| Invalid("body does not inflate"))?;
    let mut buffer = cursor.into_inner();
    if inflated != json_len || buffer.len() != end {
        return Err(Invalid("length differs"));
    }
    buffer.extend_from_slice(back);
    if fetched_at(&buffer[front.len()..end]).unwrap_or_default() != fetched {
        return Err(Invalid("fetchedAt differs"));
    }
    Ok((header, buffer))
}

/// The provider's refusal of a link (`403` or `404`), shared until
/// `expires_at_ms`, sealed for the Redis key `name`.
pub fn failure(status: u16, expires_at_ms: i64, seal: &Seal, name: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(FAILURE_BYTES);
    out.extend_from_slice(FAILURE_MAGIC);
    out.push(VERSION);
    out.extend_from_slice(&status.to_le_bytes());
    out.extend_from_slice(&expires_at_ms.to_le_bytes());
    seal.seal(name, out)
}

/// The status and expiry of a shared failure stored under `name`: only a
/// sealed `403` or `404` of this version.
///
/// # Errors
/// [`Invalid`] for anything else.
pub fn read_failure(value: &[u8], seal: &Seal, name: &str) -> Result<(u16, i64), Invalid> {
    if value.len() != FAILURE_BYTES || &value[..4] != FAILURE_MAGIC || value[4] != VERSION {
        return Err(Invalid("not a shared failure"));
    }
    let data = seal
        .open(name, value)
        .ok_or(Invalid("tag does not verify"))?;
    let status = u16::from_le_bytes(array(&data[5..7]));
    if status != 403 && status != 404 {
        return Err(Invalid("not a shared status"));
    }
    Ok((status, i64::from_le_bytes(array(&data[7..15]))))
}

fn array<const N: usize>(bytes: &[u8]) -> [u8; N] {
    let mut out = [0; N];
    out.copy_from_slice(bytes);
    out
}

/// The `fetchedAt` string of a document's compact JSON: a top-level member
/// written before `board`, so it sits in the first bytes. `None` (nothing
/// repeated in the header, on write and on read alike) when it is not
/// there or longer than the header's one-byte length: this service writes
/// an RFC 3339 time, and a document sealed with the fleet key is stored
/// whatever it holds, its content judged on the way back ([`super::check`]).
fn fetched_at(json: &[u8]) -> Option<&[u8]> {
    const KEY: &[u8] = b"\"fetchedAt\":\"";
    let head = &json[..json.len().min(1024)];
    let start = head.windows(KEY.len()).position(|w| w == KEY)? + KEY.len();
    let len = head[start..].iter().position(|&b| b == b'"')?;
    (len <= usize::from(u8::MAX)).then(|| &head[start..start + len])
}

#[cfg(test)]
mod tests {
    use super::super::seal::Secret;
    use super::*;

    const DOC: &[u8] = br#"{"version":1,"source":{"provider":"milanote","boardId":"b"},"fetchedAt":"2026-11-25T05:00:00.000Z","board":{"id":"b","type":"BOARD","title":"T","children":[]}}"#;
    const NAME: &str = "sbapi:{0123}:doc:full";

    fn seal() -> Seal {
        Seal::new(&Secret::new(vec![9; 32]).expect("key"), None)
    }

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
            let stored = encode(&header_of(coverage), DOC, &seal(), NAME).expect("encodes");
            assert_eq!(header(&stored), Ok(header_of(coverage)));
            let (h, json) = decode(&stored, DOC.len(), &seal(), NAME).expect("decodes");
            assert_eq!((h, json.as_slice()), (header_of(coverage), DOC));
            let (h, framed) =
                decode_framed(&stored, DOC.len(), &seal(), NAME, b"<<", b">").expect("decodes");
            assert_eq!(h, header_of(coverage));
            assert_eq!(framed, [b"<<".as_slice(), DOC, b">"].concat());
        }
    }

    #[test]
    fn anything_that_does_not_check_out_is_refused() {
        let good = encode(&header_of(Coverage::Full), DOC, &seal(), NAME).expect("encodes");
        let refused = |value: &[u8], max: usize| decode(value, max, &seal(), NAME).err();
        let unsealed = Some(Invalid("tag does not verify"));
        assert_eq!(refused(b"", 1 << 20), unsealed);
        assert_eq!(refused(&[b'x'; 64], 1 << 20), unsealed);
        // Another key name: a value copied from another board.
        assert_eq!(
            decode(&good, 1 << 20, &seal(), "sbapi:{4567}:doc:full").err(),
            unsealed
        );
        // Any byte changed, the body truncated.
        for at in [4, 9, 14, good.len() - 40, good.len() - 1] {
            let mut v = good.clone();
            v[at] ^= 0x55;
            assert_eq!(refused(&v, 1 << 20), unsealed, "byte {at}");
        }
        assert_eq!(refused(&good[..good.len() - 4], 1 << 20), unsealed);
        assert_eq!(
            refused(&good, DOC.len() - 1),
            Some(Invalid("document over the size limit"))
        );
        // Sealed by a node of the fleet, but not what the header says: the
        // checks after the tag still hold.
        let resealed = |edit: &dyn Fn(&mut Vec<u8>)| {
            let mut v = good[..good.len() - TAG_BYTES].to_vec();
            edit(&mut v);
            seal().seal(NAME, v)
        };
        let v = resealed(&|v| v[4] = VERSION + 1);
        assert_eq!(
            refused(&v, 1 << 20),
            Some(Invalid("another format version"))
        );
        let v = resealed(&|v| v[20..24].copy_from_slice(&7u32.to_le_bytes()));
        assert!(refused(&v, 1 << 20).is_some());
        let v = resealed(&|v| v[FIXED + 3] = b'7');
        assert_eq!(refused(&v, 1 << 20), Some(Invalid("fetchedAt differs")));
        let v = resealed(&|v| v.truncate(10));
        assert_eq!(refused(&v, 1 << 20), Some(Invalid("shorter than a header")));
    }

    #[test]
    fn failures_are_sealed_too() {
        let name = "sbapi:{0123}:fail";
        let v = failure(403, 1_790_000_000_000, &seal(), name);
        assert_eq!(
            read_failure(&v, &seal(), name),
            Ok((403, 1_790_000_000_000))
        );
        assert!(read_failure(&v, &seal(), "sbapi:{4567}:fail").is_err());
        assert!(read_failure(b"403", &seal(), name).is_err());
        let teapot = failure(418, 1, &seal(), name);
        assert_eq!(
            read_failure(&teapot, &seal(), name),
            Err(Invalid("not a shared status"))
        );
    }

    /// Found by the `tier_value` fuzz target: a document whose `fetchedAt`
    /// was over 255 bytes could not be encoded at all (`encode` refused it
    /// with an error its docs do not name). Such a value is stored and read
    /// back like any other, with no `fetchedAt` repeated in its header.
    #[test]
    fn a_fetched_at_longer_than_the_header_holds_round_trips() {
        for len in [255, 256, 900] {
            let doc = format!(
                r#"{{"version":1,"source":{{"provider":"milanote","boardId":"b"}},"fetchedAt":"{}","board":{{"id":"b","type":"BOARD","title":"T","children":[]}}}}"#,
                "7".repeat(len)
            );
            let header = header_of(Coverage::Full);
            let stored = encode(&header, doc.as_bytes(), &seal(), NAME).expect("encodes");
            let fetched_len = usize::from(stored[FIXED - 1]);
            assert_eq!(fetched_len, if len == 255 { 255 } else { 0 }, "{len}");
            let (h, json) = decode(&stored, 1 << 20, &seal(), NAME).expect("decodes");
            assert_eq!((h, json.as_slice()), (header, doc.as_bytes()), "{len}");
        }
    }

    #[test]
    fn compressed_is_smaller() {
        let big: Vec<u8> = DOC.iter().copied().cycle().take(200_000).collect();
        let stored = encode(&header_of(Coverage::Full), &big, &seal(), NAME).expect("encodes");
        assert!(stored.len() < big.len() / 10, "{}", stored.len());
    }
}

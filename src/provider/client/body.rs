//! Response bodies: `Content-Encoding` handling, with gzip inflated under the
//! same size limit as the raw body (a small gzip body can inflate a thousandfold).

use crate::provider::error::FetchError;
use bytes::Bytes;
use std::io::Read as _;

/// The body as sent when `encoding` is absent or `identity`, inflated when
/// `gzip`/`x-gzip` (at most `max` bytes).
///
/// # Errors
///
/// `Upstream` for another encoding, a corrupt gzip stream, or an inflated
/// body over `max` bytes.
pub fn decode_body(encoding: Option<&str>, body: Vec<u8>, max: usize) -> Result<Bytes, FetchError> {
    match encoding {
        None | Some("") | Some("identity") => Ok(Bytes::from(body)),
        Some("gzip") | Some("x-gzip") => gunzip_bounded(&body, max).map(Bytes::from),
        // Named in the log only when it looks like a coding token, never
        // arbitrary provider text.
        Some(other)
            if other.len() <= 32
                && other
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-') =>
        {
            Err(FetchError::upstream(format!(
                "unsupported Content-Encoding {other}"
            )))
        }
        Some(_) => Err(FetchError::upstream("unsupported Content-Encoding")),
    }
}

/// Inflate a gzip body, refusing to produce more than `max` bytes.
pub fn gunzip_bounded(data: &[u8], max: usize) -> Result<Vec<u8>, FetchError> {
    let mut out = Vec::with_capacity(data.len().saturating_mul(4).min(max));
    let decoder = flate2::read::MultiGzDecoder::new(data);
    decoder
        .take(max as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| FetchError::upstream(format!("bad gzip body: {e}")))?;
    if out.len() > max {
        return Err(FetchError::upstream(format!(
            "gzip body inflates past the {max}-byte limit"
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(data).unwrap();
        enc.finish().unwrap()
    }

    #[test]
    fn gunzip_round_trips_and_bounds_the_inflated_size() {
        let data = vec![b'a'; 10_000];
        assert_eq!(gunzip_bounded(&gzip(&data), 10_000).unwrap(), data);
        assert!(matches!(
            gunzip_bounded(&gzip(&data), 9_999),
            Err(FetchError::Upstream(_))
        ));
        assert!(matches!(
            gunzip_bounded(b"not gzip", 100),
            Err(FetchError::Upstream(_))
        ));
    }

    #[test]
    fn encodings_table() {
        let data = b"{}".to_vec();
        assert_eq!(decode_body(None, data.clone(), 10).unwrap(), &b"{}"[..]);
        assert_eq!(
            decode_body(Some("identity"), data.clone(), 10).unwrap(),
            &b"{}"[..]
        );
        assert_eq!(
            decode_body(Some("x-gzip"), gzip(&data), 10).unwrap(),
            &b"{}"[..]
        );
        assert!(matches!(
            decode_body(Some("br"), data, 10),
            Err(FetchError::Upstream(_))
        ));
    }
}

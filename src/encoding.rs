//! Content codings of cached renders: which one a client gets
//! (`Accept-Encoding` with q-values, RFC 9110 section 12.5.3) and the
//! one-time compression of a rendered body with the gzip, brotli and zstd
//! crates Pingora's response-compression module links. Compressed variants are cached beside the identity body,
//! so a popular board is compressed once per coding, not once per response.

use bytes::Bytes;
use std::io::Write as _;

/// A content coding we produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    Identity,
    Gzip,
    Brotli,
    Zstd,
}

/// Levels for the one-time compression of a cached body: the usual
/// defaults, a good ratio for a moderate cost (paid once per render).
const GZIP_LEVEL: u32 = 6;
const BROTLI_LEVEL: u32 = 5;
const ZSTD_LEVEL: u32 = 3;

/// Bodies smaller than this are sent as they are: the codings' framing
/// would eat most of the gain.
pub const MIN_COMPRESS_BYTES: usize = 256;

impl Encoding {
    /// The `Content-Encoding` token; `None` for identity.
    pub fn token(self) -> Option<&'static str> {
        match self {
            Encoding::Identity => None,
            Encoding::Gzip => Some("gzip"),
            Encoding::Brotli => Some("br"),
            Encoding::Zstd => Some("zstd"),
        }
    }

    /// The label used in cache keys and logs.
    pub fn name(self) -> &'static str {
        self.token().unwrap_or("identity")
    }
}

/// The coding to answer with: the highest q-value among those we produce;
/// on a tie br, then zstd, then gzip. `*` stands for codings not named.
/// Identity when the header is absent, unreadable or accepts none of ours.
pub fn negotiate(accept_encoding: Option<&[u8]>) -> Encoding {
    let Some(raw) = accept_encoding.and_then(|v| std::str::from_utf8(v).ok()) else {
        return Encoding::Identity;
    };
    // q in thousandths; None = not named.
    let mut q = [None::<u16>; 3]; // br, zstd, gzip
    let mut star = None::<u16>;
    for item in raw.split(',') {
        let mut parts = item.split(';');
        let coding = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        let mut weight = 1000u16;
        for param in parts {
            let (name, value) = param.split_once('=').unwrap_or((param, ""));
            if name.trim().eq_ignore_ascii_case("q") {
                weight = parse_q(value.trim()).unwrap_or(0);
            }
        }
        let slot = match coding.as_str() {
            "br" => &mut q[0],
            "zstd" => &mut q[1],
            "gzip" | "x-gzip" => &mut q[2],
            "*" => &mut star,
            _ => continue,
        };
        *slot = Some(slot.map_or(weight, |w| w.max(weight)));
    }
    let order = [Encoding::Brotli, Encoding::Zstd, Encoding::Gzip];
    let mut best = (0u16, Encoding::Identity);
    for (encoding, named) in order.into_iter().zip(q) {
        let weight = named.or(star).unwrap_or(0);
        if weight > best.0 {
            best = (weight, encoding);
        }
    }
    best.1
}

/// `0`, `1`, `0.x` to `0.xxx`, `1.0..`; thousandths.
fn parse_q(value: &str) -> Option<u16> {
    let (int, frac) = value.split_once('.').unwrap_or((value, ""));
    if frac.len() > 3 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut thousandths: u16 = 0;
    for (i, b) in frac.bytes().enumerate() {
        thousandths += u16::from(b - b'0') * [100, 10, 1][i];
    }
    match int {
        "0" => Some(thousandths),
        "1" if thousandths == 0 => Some(1000),
        _ => None,
    }
}

/// `body` in `encoding`, a complete stream. CPU-heavy for large bodies:
/// run it on the work pool.
///
/// # Errors
/// The encoder failed (a bug); the message is for the log.
pub fn compress(encoding: Encoding, body: &[u8]) -> Result<Bytes, String> {
    let fail = |e: std::io::Error| format!("{} encoding failed: {e}", encoding.name());
    let out = Vec::with_capacity(body.len() / 4 + 64);
    let out = match encoding {
        Encoding::Identity => return Ok(Bytes::copy_from_slice(body)),
        Encoding::Gzip => {
            let mut enc = flate2::write::GzEncoder::new(out, flate2::Compression::new(GZIP_LEVEL));
            enc.write_all(body).map_err(fail)?;
            enc.finish().map_err(fail)?
        }
        Encoding::Brotli => {
            // 4 MiB window (lgwin 22): large bodies repeat keys far apart.
            let mut enc = brotli::CompressorWriter::new(out, 64 * 1024, BROTLI_LEVEL, 22);
            enc.write_all(body).map_err(fail)?;
            enc.flush().map_err(fail)?;
            enc.into_inner()
        }
        Encoding::Zstd => zstd::stream::encode_all(body, ZSTD_LEVEL as i32).map_err(fail)?,
    };
    Ok(crate::pipeline::render::exact(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read as _;

    #[test]
    fn negotiation_follows_q_values_then_our_preference() {
        use Encoding::*;
        let cases: &[(Option<&str>, Encoding)] = &[
            (None, Identity),
            (Some(""), Identity),
            (Some("identity"), Identity),
            (Some("gzip"), Gzip),
            (Some("x-gzip"), Gzip),
            (Some("gzip, deflate, br"), Brotli),
            (Some("gzip, deflate, br, zstd"), Brotli),
            (Some("zstd, gzip"), Zstd),
            (Some("br;q=0.5, gzip;q=0.8"), Gzip),
            (Some("br;q=0, gzip"), Gzip),
            (Some("br;q=0, gzip;q=0, zstd;q=0"), Identity),
            (Some("*"), Brotli),
            (Some("*;q=0.1, br;q=0"), Zstd),
            (Some("GZIP;Q=1.0"), Gzip),
            (Some("gzip;q=2"), Identity),
            (Some("gzip;q=0.0001"), Identity),
            (Some("deflate"), Identity),
            (Some(" br ; q=0.9 , gzip ; q=0.91"), Gzip),
        ];
        for (header, want) in cases {
            assert_eq!(negotiate(header.map(str::as_bytes)), *want, "{header:?}");
        }
        assert_eq!(negotiate(Some(b"\xff\xfe")), Identity);
    }

    #[test]
    fn each_coding_round_trips() {
        let body =
            br#"{"ok":true,"data":{"board":{"title":"hello hello hello hello"}}}"#.repeat(50);
        let gz = compress(Encoding::Gzip, &body).expect("gzip");
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&gz[..])
            .read_to_end(&mut out)
            .expect("gunzip");
        assert_eq!(out, body);
        let br = compress(Encoding::Brotli, &body).expect("br");
        let mut out = Vec::new();
        brotli::Decompressor::new(&br[..], 4096)
            .read_to_end(&mut out)
            .expect("unbrotli");
        assert_eq!(out, body);
        let zs = compress(Encoding::Zstd, &body).expect("zstd");
        assert_eq!(zstd::decode_all(&zs[..]).expect("unzstd"), body);
        assert!(gz.len() < body.len() && br.len() < body.len() && zs.len() < body.len());
    }
}

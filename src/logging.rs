//! Log redaction: a `log::Log` wrapper that scrubs share-link material from
//! every record before it reaches the real logger. Our own log lines never
//! carry the permission id, token or link; this also covers dependencies that
//! log request URIs (Pingora does at TRACE level), so an operator who turns
//! logging up cannot leak them either. The binary installs it around
//! `env_logger`; an embedding gateway can wrap its own logger the same way.

use log::{Log, Metadata, Record};

/// Query parameters and path prefixes whose values are replaced by
/// `[redacted]`, as they appear raw or percent-encoded in a logged URI.
const MARKERS: &[&str] = &[
    "url=", "p=", "p%3D", "p%3d", "tokens=", "token=", "token/", "token%2F", "token%2f",
];

/// Where a redacted value ends; a path segment also ends at `/`.
fn is_delimiter(b: u8, path_segment: bool) -> bool {
    const ENDS: &[u8] = b"&? \"',})]>;\n\r\t";
    ENDS.contains(&b) || (path_segment && b == b'/')
}

/// Replaces the value after each marker with `[redacted]`.
pub fn scrub(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        let marker = MARKERS.iter().find(|m| {
            bytes[i..].starts_with(m.as_bytes())
                // `p=` only as a whole parameter name, not the tail of `top=`;
                // in an encoded link it follows `%3F` (`?`) or `%26` (`&`).
                && (!m.starts_with('p')
                    || i == 0
                    || !bytes[i - 1].is_ascii_alphanumeric()
                    || (i >= 3 && matches!(&bytes[i - 3..i], b"%3F" | b"%3f" | b"%26")))
        });
        match marker {
            Some(m) => {
                let start = i + m.len();
                let path_segment = !m.ends_with('=') && !m.ends_with("3D") && !m.ends_with("3d");
                let mut end = start;
                while end < bytes.len() && !is_delimiter(bytes[end], path_segment) {
                    end += 1;
                }
                if end > start {
                    out.push_str(&text[copied..start]);
                    out.push_str("[redacted]");
                    copied = end;
                }
                i = end.max(i + 1);
            }
            None => i += 1,
        }
    }
    out.push_str(&text[copied..]);
    out
}

/// Wraps a logger so that every message is [`scrub`]bed first.
pub struct Redacting<L> {
    inner: L,
}

impl<L: Log> Redacting<L> {
    pub fn new(inner: L) -> Self {
        Redacting { inner }
    }
}

impl<L: Log> Log for Redacting<L> {
    fn enabled(&self, metadata: &Metadata) -> bool {
        self.inner.enabled(metadata)
    }

    fn log(&self, record: &Record) {
        if !self.inner.enabled(record.metadata()) {
            return;
        }
        let message = record.args().to_string();
        let clean = scrub(&message);
        self.inner.log(
            &Record::builder()
                .args(format_args!("{clean}"))
                .metadata(record.metadata().clone())
                .module_path(record.module_path())
                .file(record.file())
                .line(record.line())
                .build(),
        );
    }

    fn flush(&self) {
        self.inner.flush()
    }
}

#[cfg(feature = "demo")]
/// Installs `env_logger` (default level `info`, `RUST_LOG` to change it)
/// behind [`Redacting`] as the process logger.
///
/// # Errors
/// A logger was already installed.
pub fn init() -> Result<(), log::SetLoggerError> {
    let logger =
        env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).build();
    let level = logger.filter();
    log::set_boxed_logger(Box::new(Redacting::new(logger)))?;
    log::set_max_level(level);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrubs_share_link_material() {
        let cases = [
            (
                "uri: /api/search?url=https%3A%2F%2Fapp.milanote.com%2Fb%3Fp%3DSECRET&view=full, version",
                "uri: /api/search?url=[redacted]&view=full, version",
            ),
            ("GET /api/permissions/token/SECRET?elementId=b", "GET /api/permissions/token/[redacted]?elementId=b"),
            ("/api/boards?ids=a,b&tokens=tok.SECRET&x=1", "/api/boards?ids=a,b&tokens=[redacted]&x=1"),
            ("link https://app.milanote.com/b?p=SECRET done", "link https://app.milanote.com/b?p=[redacted] done"),
            ("p%3DSECRET", "p%3D[redacted]"),
            (
                "/api/search?%75rl=https%3A%2F%2Fapp.milanote.com%2Fb%3Fp%3DSECRET2",
                "/api/search?%75rl=https%3A%2F%2Fapp.milanote.com%2Fb%3Fp%3D[redacted]",
            ),
            ("x%26p%3dSECRET&y", "x%26p%3d[redacted]&y"),
            ("stop=1 top=2", "stop=1 top=2"),
            ("nothing here", "nothing here"),
            ("url=", "url="),
            ("ünïcode url=ßecret&x", "ünïcode url=[redacted]&x"),
        ];
        for (input, want) in cases {
            assert_eq!(scrub(input), want, "{input}");
            assert!(!scrub(input).contains("SECRET"));
        }
    }
}

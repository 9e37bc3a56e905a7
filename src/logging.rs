//! Log scrubbing: a [`log::Log`] wrapper, [`Redacting`], that removes
//! share-link material from every record before the real logger sees it.
//!
//! Our own log lines never carry the permission id, the provider token or the
//! share link. Dependencies may: Pingora logs request targets and headers at
//! debug and trace level, and malformed requests at warn. The permission id
//! travels in the query (`url=...%3Fp%3D<id>`), and a query can spell its
//! parameter names and values in any encoding (`%70=`, `%75rl=`, `%2570`,
//! `;` separators), so looking for known names cannot be made complete.
//! [`scrub`] therefore redacts **every query string in every record**, without
//! trying to prove any of them safe, plus the token and permission markers
//! that can appear outside a query (in a path, or percent-encoded inside one).
//!
//!
//! Secrets of the configuration (a Redis password, the fleet key) are
//! removed by their value: whoever parses one calls [`redact_everywhere`]
//! with it, and every record is cleaned of every spelling a log line can
//! carry it in (as written in a URL, percent-decoded, escaped by YAML or by
//! `Debug`). A pattern that looks for `user:password@` cannot be made
//! complete: a password may hold any character, and a list of URLs may be
//! written in any shape; the pattern stays as a second net.
//!
//! Install it around whatever logger the process uses:
//!
//! ```
//! use shared_board_api::logging::Redacting;
//!
//! struct Stderr;
//! impl log::Log for Stderr {
//!     fn enabled(&self, _: &log::Metadata) -> bool { true }
//!     fn log(&self, r: &log::Record) { eprintln!("{} {}", r.level(), r.args()) }
//!     fn flush(&self) {}
//! }
//!
//! Redacting::new(Stderr).install(log::LevelFilter::Info).expect("first logger");
//! log::info!("GET /boards/search?url=https%3A%2F%2Fapp.milanote.com%2Fb%3Fp%3DSECRET");
//! // stderr: INFO GET /boards/search?[redacted]
//! ```

use log::{Level, LevelFilter, Log, Metadata, Record, SetLoggerError};

mod throttle;

/// What every redacted span is replaced with.
const REDACTED: &str = "[redacted]";

/// Where a query starts: a raw `?`, or a `?` percent-encoded once or twice
/// (an encoded link inside a path or a parameter value).
const QUERY_STARTS: &[&str] = &["?", "%3F", "%3f", "%253F", "%253f"];

/// Markers whose value is redacted outside a query too: parameter names as
/// they appear raw or percent-encoded, and the provider's token path segment.
const MARKERS: &[&str] = &[
    "url=", "p=", "p%3D", "p%3d", "tokens=", "token=", "token/", "token%2F", "token%2f",
];

/// Where a redacted value ends; a path segment also ends at `/`.
fn is_delimiter(b: u8, path_segment: bool) -> bool {
    const ENDS: &[u8] = b"&? \"',})]>;\n\r\t";
    ENDS.contains(&b) || (path_segment && b == b'/')
}

/// Returns `text` with every query string and every marker value replaced by
/// `[redacted]`.
///
/// A query is whatever follows a `?` (raw, or percent-encoded as `%3F` or
/// `%253F`) up to the next whitespace or the end of the text: quotes,
/// brackets and commas do not end it, since a request target may contain
/// them raw and a `Debug` rendering escapes rather than removes them; a
/// record may lose a closing quote to the redaction, never a secret to it.
/// Outside queries, the values after the markers `url=`, `p=` (also
/// encoded), `token=`, `tokens=` and the `token/` path segment are replaced
/// up to the next delimiter.
/// The password of every `scheme://user:password@` URL is replaced too.
///
/// ```
/// use shared_board_api::logging::scrub;
///
/// let line = "GET /boards/detail?url=x&%70=SECRET HTTP/1.1";
/// assert_eq!(scrub(line), "GET /boards/detail?[redacted] HTTP/1.1");
/// assert_eq!(scrub("GET /api/permissions/token/SECRET"), "GET /api/permissions/token/[redacted]");
/// assert_eq!(scrub("url: redis://app:hunter2@10.0.0.1:6379/0"), "url: redis://app:[redacted]@10.0.0.1:6379/0");
/// ```
pub fn scrub(text: &str) -> String {
    scrub_secrets(scrub_passwords(scrub_markers(&scrub_queries(text))))
}

/// The secrets [`redact_everywhere`] was given, in every spelling; a
/// bounded list (a process parses its configuration a few times at most).
static SECRETS: std::sync::RwLock<Vec<Box<str>>> = std::sync::RwLock::new(Vec::new());

/// At most this many spellings are kept (a host that reloads its
/// configuration with new secrets without end stops adding them; the
/// pattern for URL passwords still applies).
const MAX_SECRETS: usize = 256;

/// Removes `secret` from every record that [`Redacting`] (and [`scrub`])
/// handles from now on: as given, percent-decoded, and as YAML's quoted
/// forms and Rust's `Debug` would escape it. Call it with a value as soon
/// as it is parsed, before anything can log it; the configuration does so
/// for every password of a Redis URL, `password_env`'s value and the fleet
/// keys. Empty strings are ignored.
pub fn redact_everywhere(secret: &str) {
    if secret.is_empty() {
        return;
    }
    let mut forms = Vec::new();
    for base in std::iter::once(secret.to_owned()).chain(percent_decoded(secret)) {
        forms.push(base.replace('\'', "''"));
        forms.push(base.replace('\\', "\\\\").replace('"', "\\\""));
        forms.push(base);
    }
    let mut secrets = SECRETS.write().unwrap_or_else(|e| e.into_inner());
    for form in forms {
        if secrets.len() < MAX_SECRETS && !secrets.iter().any(|s| **s == *form) {
            secrets.push(form.into_boxed_str());
        }
    }
    // Longest first, so a spelling that holds another is replaced whole.
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
}

/// `text` with its `%XX` escapes decoded, when it has any and decodes to
/// UTF-8 (a password as the URL's user info writes it).
fn percent_decoded(text: &str) -> Option<String> {
    let b = text.as_bytes();
    if !b.contains(&b'%') {
        return None;
    }
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (
            b[i],
            b.get(i + 1).copied().and_then(hex),
            b.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(hi), Some(lo)) => {
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out)
        .ok()
        .filter(|d| !d.is_empty() && d != text)
}

/// Replaces every registered secret in `text`.
fn scrub_secrets(text: String) -> String {
    let secrets = SECRETS.read().unwrap_or_else(|e| e.into_inner());
    if secrets.is_empty() {
        return text;
    }
    let mut text = text;
    for secret in secrets.iter() {
        if text.contains(&**secret) {
            text = text.replace(&**secret, REDACTED);
        }
    }
    text
}

/// Replaces the password of every `scheme://user:password@host` in `text`
/// (a Redis URL in a configuration file Pingora prints at `trace`), up to
/// the `@` that ends the URL's authority.
fn scrub_passwords(text: String) -> String {
    if !text.contains("://") {
        return text;
    }
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let (mut copied, mut from) = (0, 0);
    while let Some(n) = text[from..].find("://") {
        let start = from + n + 3;
        let end = bytes[start..]
            .iter()
            .position(|&c| {
                matches!(c, b'/' | b'?' | b'#' | b'"' | b'\'' | b'\\') || c.is_ascii_whitespace()
            })
            .map_or(bytes.len(), |p| start + p);
        let authority = &bytes[start..end];
        if let Some(at) = authority.iter().rposition(|&c| c == b'@') {
            if let Some(colon) = authority[..at].iter().position(|&c| c == b':') {
                // `:` and `@` are ASCII: both are character boundaries.
                out.push_str(&text[copied..start + colon + 1]);
                out.push_str(REDACTED);
                copied = start + at;
            }
        }
        from = end;
    }
    out.push_str(&text[copied..]);
    out
}

/// Replaces everything after each query start, up to whitespace, a control
/// character or the end, with `[redacted]`.
fn scrub_queries(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        // Every query start begins with `?` or `%`: skip to the next one.
        match bytes[i..].iter().position(|&b| b == b'?' || b == b'%') {
            Some(n) => i += n,
            None => break,
        }
        let Some(start) = QUERY_STARTS
            .iter()
            .find(|m| bytes[i..].starts_with(m.as_bytes()))
            .map(|m| i + m.len())
        else {
            i += 1;
            continue;
        };
        let end = bytes[start..]
            .iter()
            .position(|b| b.is_ascii_whitespace() || b.is_ascii_control())
            .map_or(bytes.len(), |n| start + n);
        if end > start {
            // `start` follows an ASCII marker and `end` is at an ASCII byte or
            // the end: both are character boundaries.
            out.push_str(&text[copied..start]);
            out.push_str(REDACTED);
            copied = end;
        }
        i = end.max(i + 1);
    }
    out.push_str(&text[copied..]);
    out
}

/// Replaces the value after each marker with `[redacted]`.
fn scrub_markers(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        // Every marker begins with `u`, `p` or `t`: skip to the next one.
        match bytes[i..]
            .iter()
            .position(|&b| matches!(b, b'u' | b'p' | b't'))
        {
            Some(n) => i += n,
            None => break,
        }
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

/// A [`log::Log`] that passes every record's message through [`scrub`]
/// before handing it to the logger it wraps. Level filtering, target, module
/// path, file and line are the inner logger's and the record's, unchanged,
/// with one exception (`lowered`: Pingora records that are no error of ours,
/// passed on at `DEBUG` or `INFO`).
///
/// Wrap the process logger with it (env_logger, a tracing bridge, a file
/// logger: any `log::Log`) so that no record, ours or a dependency's, carries
/// a share link's secrets, whatever level an operator turns logging up to.
pub struct Redacting<L> {
    inner: L,
}

impl<L: Log> Redacting<L> {
    /// Wraps `inner`; nothing is installed until [`Redacting::install`] or
    /// `log::set_boxed_logger`.
    pub fn new(inner: L) -> Self {
        Redacting { inner }
    }

    /// Installs this logger as the process logger and sets the maximum level
    /// (records above `level` are discarded before formatting).
    ///
    /// # Errors
    /// A logger was already installed in this process.
    pub fn install(self, level: LevelFilter) -> Result<(), SetLoggerError>
    where
        L: Send + Sync + 'static,
    {
        log::set_boxed_logger(Box::new(self))?;
        log::set_max_level(level);
        Ok(())
    }
}

impl<L: Log> Log for Redacting<L> {
    fn enabled(&self, metadata: &Metadata) -> bool {
        self.inner.enabled(metadata)
    }

    fn log(&self, record: &Record) {
        let mut metadata = record.metadata().clone();
        if let Some(level) = lowered(record) {
            metadata = Metadata::builder()
                .level(level)
                .target(record.target())
                .build();
        }
        if !self.inner.enabled(&metadata) {
            return;
        }
        let message = record.args().to_string();
        let clean = match throttle::verdict(record, &message) {
            throttle::Verdict::Write => scrub(&message),
            throttle::Verdict::Hold => return,
            throttle::Verdict::WriteCounting(0) => format!(
                "{} (lines like this are written at most once a minute; \
                 board_api_client_log_lines_total counts them)",
                scrub(&message)
            ),
            throttle::Verdict::WriteCounting(held) => format!(
                "{} ({held} more like this since the last one were not written; \
                 board_api_client_log_lines_total counts them)",
                scrub(&message)
            ),
        };
        self.inner.log(
            &Record::builder()
                .args(format_args!("{clean}"))
                .metadata(metadata)
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

/// Pingora 0.9's upstream connection pool logs `ERROR failed to acquire
/// reusable stream` when it hands out an idle connection whose watcher task
/// has released the lock but not yet its reference (a race between two
/// threads). Nothing failed: Pingora drops that connection and dials a new
/// one, and the request goes on. Our provider client reuses connections
/// back to back, so the line would show up in an operator's error logs
/// under ordinary load; it is passed on at `DEBUG`, as a missed keepalive
/// reuse is elsewhere (nginx logs it at debug level).
///
/// Its listeners log `ERROR Downstream handshake error from <peer>: ...`
/// (and `... timeout`) when a client's TLS handshake fails: plain HTTP sent
/// to a TLS port, a scanner, a client that gives up. The client caused it
/// and nothing of ours failed, so it goes to `DEBUG` with what other
/// clients' mistakes log (a bad certificate of ours is refused at start-up).
fn demoted(record: &Record) -> bool {
    if record.level() != Level::Error {
        return false;
    }
    let text = record.args().to_string();
    match record.target() {
        "pingora_core::connectors" => text == "failed to acquire reusable stream",
        "pingora_core::services::listening" => text.starts_with("Downstream handshake "),
        _ => false,
    }
}

/// The level a Pingora record that is no error of ours is passed on at:
/// `DEBUG` for [`demoted`] ones; `INFO` for the new process's wait in a
/// zero-downtime upgrade. Pingora 0.9's `-u` logs `ERROR No incoming socket
/// transfer, sleep 1s and try again` each second it waits on `upgrade_sock`
/// for the old process's sockets, which every upgrade does (the old process
/// gets `SIGQUIT` after the new one starts, or waits for it to listen:
/// `host::upgrade`). Giving up (`Giving up reading socket from: ...`) stays
/// an `ERROR`.
fn lowered(record: &Record) -> Option<Level> {
    if demoted(record) {
        return Some(Level::Debug);
    }
    let upgrade_wait = record.level() == Level::Error
        && record.target() == "pingora_core::server::transfer_fd"
        && record
            .args()
            .to_string()
            .starts_with("No incoming socket transfer, ");
    upgrade_wait.then_some(Level::Info)
}

/// Installs `env_logger` (default level `info`, `RUST_LOG` to change it)
/// behind [`Redacting`] as the process logger; what the binary does. The
/// binary's access log does not pass through it: its lines are bare JSON
/// written by `host::access_log` to a destination of their own.
///
/// # Errors
/// A logger was already installed in this process.
#[cfg(feature = "demo")]
pub fn init() -> Result<(), SetLoggerError> {
    let logger =
        env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).build();
    let level = logger.filter();
    Redacting::new(logger).install(level)
}

#[cfg(test)]
mod tests;

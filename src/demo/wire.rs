//! The sample upstream's HTTP/1.1 wire format: read one request head (size
//! limited), write one response (`Content-Length` or chunked framing).

use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Largest request head accepted (request line plus headers).
pub const MAX_HEAD_BYTES: usize = 16 * 1024;
/// Largest request body read and discarded (GET requests carry none).
const MAX_DISCARDED_BODY: usize = 64 * 1024;
/// A keep-alive connection idle this long is closed.
const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// One parsed request head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHead {
    pub method: String,
    pub target: String,
    pub version: String,
    /// Header names lower-cased, values as sent, in order.
    pub headers: Vec<(String, String)>,
}

impl RequestHead {
    /// The first value of header `name` (lower-case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether the connection stays open after the response.
    pub fn keep_alive(&self) -> bool {
        let connection = self.header("connection").map(str::to_ascii_lowercase);
        match self.version.as_str() {
            "HTTP/1.1" => connection.as_deref() != Some("close"),
            _ => connection.as_deref() == Some("keep-alive"),
        }
    }
}

/// Why no request head could be read.
#[derive(Debug, PartialEq, Eq)]
pub enum HeadError {
    /// The peer closed or went idle between requests: close quietly.
    Closed,
    /// The head is malformed or too large: answer with this status, then close.
    Bad(u16),
}

/// Read the next request head from `stream`. `buf` carries bytes already read
/// past the previous request (pipelining) and keeps the bytes past this one.
pub async fn read_head(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
) -> Result<RequestHead, HeadError> {
    loop {
        // Not HTTP at all (e.g. a TLS ClientHello): refuse at once instead of
        // waiting for a blank line that never comes.
        if buf.first().is_some_and(|b| !b.is_ascii_uppercase()) {
            return Err(HeadError::Bad(400));
        }
        if let Some(end) = find_head_end(buf) {
            let head: Vec<u8> = buf.drain(..end + 4).collect();
            let parsed = parse_head(&head[..end])?;
            discard_body(stream, buf, &parsed).await?;
            return Ok(parsed);
        }
        if buf.len() > MAX_HEAD_BYTES {
            return Err(HeadError::Bad(431));
        }
        let mut chunk = [0u8; 4096];
        let n = match tokio::time::timeout(IDLE_TIMEOUT, stream.read(&mut chunk)).await {
            Ok(Ok(0)) | Ok(Err(_)) | Err(_) => return Err(HeadError::Closed),
            Ok(Ok(n)) => n,
        };
        buf.extend_from_slice(&chunk[..n]);
    }
}

fn find_head_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n")
}

/// Parse a request head (without the final blank line).
pub fn parse_head(raw: &[u8]) -> Result<RequestHead, HeadError> {
    let text = std::str::from_utf8(raw).map_err(|_| HeadError::Bad(400))?;
    let mut lines = text.split("\r\n");
    let request_line = lines.next().ok_or(HeadError::Bad(400))?;
    let mut parts = request_line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(HeadError::Bad(400));
    };
    if method.is_empty() || !target.starts_with('/') {
        return Err(HeadError::Bad(400));
    }
    if version != "HTTP/1.1" && version != "HTTP/1.0" {
        return Err(HeadError::Bad(505));
    }
    let mut headers = Vec::new();
    for line in lines {
        let (name, value) = line.split_once(':').ok_or(HeadError::Bad(400))?;
        if name.is_empty() || name.contains(char::is_whitespace) {
            return Err(HeadError::Bad(400));
        }
        headers.push((name.to_ascii_lowercase(), value.trim().to_owned()));
    }
    Ok(RequestHead {
        method: method.to_owned(),
        target: target.to_owned(),
        version: version.to_owned(),
        headers,
    })
}

/// Read and drop a request body framed by `Content-Length`; refuse chunked ones.
async fn discard_body(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    head: &RequestHead,
) -> Result<(), HeadError> {
    if head.header("transfer-encoding").is_some() {
        return Err(HeadError::Bad(501));
    }
    let len = match head.header("content-length") {
        None => 0,
        Some(v) => v.parse::<usize>().map_err(|_| HeadError::Bad(400))?,
    };
    if len > MAX_DISCARDED_BODY {
        return Err(HeadError::Bad(413));
    }
    while buf.len() < len {
        let mut chunk = [0u8; 4096];
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return Err(HeadError::Closed),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    buf.drain(..len);
    Ok(())
}

/// The reason phrase for the statuses the sample uses.
pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        202 => "Accepted",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        413 => "Content Too Large",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        505 => "HTTP Version Not Supported",
        _ => "Unknown",
    }
}

/// Render a response head. `length` is `Some(n)` for `Content-Length: n`,
/// `None` for chunked framing.
pub fn render_head(
    status: u16,
    headers: &[(&str, String)],
    length: Option<usize>,
    keep_alive: bool,
) -> Vec<u8> {
    let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    match length {
        Some(n) => head.push_str(&format!("Content-Length: {n}\r\n")),
        None => head.push_str("Transfer-Encoding: chunked\r\n"),
    }
    if !keep_alive {
        head.push_str("Connection: close\r\n");
    }
    head.push_str("\r\n");
    head.into_bytes()
}

/// Write a whole response with `Content-Length` framing.
pub async fn write_full(
    stream: &mut TcpStream,
    status: u16,
    headers: &[(&str, String)],
    body: &[u8],
    send_body: bool,
    keep_alive: bool,
) -> std::io::Result<()> {
    let mut out = render_head(status, headers, Some(body.len()), keep_alive);
    if send_body {
        out.extend_from_slice(body);
    }
    stream.write_all(&out).await?;
    stream.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_request_head() {
        let head =
            parse_head(b"GET /api/boards?ids=a HTTP/1.1\r\nHost: x\r\nAccept: application/json")
                .unwrap();
        assert_eq!(head.method, "GET");
        assert_eq!(head.target, "/api/boards?ids=a");
        assert_eq!(head.header("host"), Some("x"));
        assert!(head.keep_alive());
    }

    #[test]
    fn rejects_malformed_heads() {
        let cases: &[(&[u8], u16)] = &[
            (b"GET /a", 400),
            (b"GET a HTTP/1.1", 400),
            (b"GET /a HTTP/2", 505),
            (b"GET /a HTTP/1.1\r\nno-colon", 400),
            (b"GET /a HTTP/1.1\r\nbad name: v", 400),
            (b"GET  /a HTTP/1.1", 400),
            (b"\xff /a HTTP/1.1", 400),
        ];
        for (raw, status) in cases {
            assert_eq!(parse_head(raw), Err(HeadError::Bad(*status)), "{raw:?}");
        }
    }

    #[test]
    fn keep_alive_follows_version_and_connection() {
        let h = |raw: &[u8]| parse_head(raw).unwrap().keep_alive();
        assert!(h(b"GET / HTTP/1.1"));
        assert!(!h(b"GET / HTTP/1.1\r\nConnection: close"));
        assert!(!h(b"GET / HTTP/1.0"));
        assert!(h(b"GET / HTTP/1.0\r\nConnection: keep-alive"));
    }

    #[test]
    fn renders_heads_with_framing() {
        let head = render_head(200, &[("Content-Type", "a/b".into())], Some(3), true);
        assert_eq!(
            String::from_utf8(head).unwrap(),
            "HTTP/1.1 200 OK\r\nContent-Type: a/b\r\nContent-Length: 3\r\n\r\n"
        );
        let head = String::from_utf8(render_head(500, &[], None, false)).unwrap();
        assert!(head.contains("Transfer-Encoding: chunked\r\n"));
        assert!(head.contains("Connection: close\r\n"));
    }
}

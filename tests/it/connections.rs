//! End-to-end: connections that hold the listener without asking anything
//! are closed on time: idle after an answer (`keepalive_idle_seconds`), and
//! a request head sent slowly or never (`head_timeout_seconds`).

use crate::common::*;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Short limits, so that the tests wait seconds: 2 s idle, 3 s per head.
const LIMITS: &str = "    keepalive_idle_seconds: 2\n    head_timeout_seconds: 3\n";

/// Waits (at most `limit`) for the server to close `stream`, answering or
/// not; returns when it did, or `None` when it was still open at `limit`.
fn closed_within(stream: &mut TcpStream, limit: Duration) -> Option<Instant> {
    let deadline = Instant::now() + limit;
    let mut buf = [0u8; 4096];
    loop {
        let left = deadline.checked_duration_since(Instant::now())?;
        stream
            .set_read_timeout(Some(left.max(Duration::from_millis(10))))
            .expect("timeout");
        match stream.read(&mut buf) {
            Ok(0) => return Some(Instant::now()),
            Ok(_) => continue,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                if Instant::now() >= deadline {
                    return None;
                }
            }
            Err(_) => return Some(Instant::now()),
        }
    }
}

/// Sends one kept-alive request and reads its whole answer (a
/// `Content-Length` body).
fn one_request(stream: &mut TcpStream) -> u16 {
    let req = "GET /api/nope HTTP/1.1\r\nHost: localhost\r\n\r\n";
    stream.write_all(req.as_bytes()).expect("send");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = stream.read(&mut buf).expect("read the answer");
        assert!(n > 0, "closed before answering");
        raw.extend_from_slice(&buf[..n]);
        let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .map_or(0, |v| v.trim().parse().expect("a length"));
        if raw.len() >= end + 4 + length {
            return head[9..12].parse().expect("a status");
        }
    }
}

#[test]
fn idle_connections_close_after_the_idle_time() {
    let gw = start_gateway_with("", "", LIMITS);
    // Many connections, each idle after one answer: none is held.
    let mut conns: Vec<TcpStream> = (0..20)
        .map(|_| TcpStream::connect(gw.addr).expect("connect"))
        .collect();
    for c in &mut conns {
        assert_eq!(one_request(c), 404);
    }
    let answered = Instant::now();
    // A kept-alive connection serves a second request within the idle time.
    assert_eq!(one_request(&mut conns[0]), 404);
    for c in &mut conns {
        let closed = closed_within(c, Duration::from_secs(15)).expect("closed when idle");
        let after = closed - answered;
        assert!(after >= Duration::from_millis(1500), "{after:?}");
        assert!(after < Duration::from_secs(8), "{after:?}");
    }
}

#[test]
fn a_dripping_head_is_cut_at_the_head_deadline() {
    let gw = start_gateway_with("", "", LIMITS);
    let mut c = TcpStream::connect(gw.addr).expect("connect");
    let started = Instant::now();
    c.write_all(b"GET /api/nope HTTP/1.1\r\nHost: localhost\r\n")
        .expect("send");
    // One header line every 2 s: each read is quick, the head never ends.
    let mut closed = None;
    for i in 0..10 {
        if let Some(at) = closed_within(&mut c, Duration::from_secs(2)) {
            closed = Some(at);
            break;
        }
        if c.write_all(format!("X-Drip-{i}: 1\r\n").as_bytes())
            .is_err()
        {
            closed = Some(Instant::now());
            break;
        }
    }
    let after = closed.expect("the dripping connection was closed") - started;
    assert!(after >= Duration::from_millis(2500), "{after:?}");
    assert!(after < Duration::from_secs(7), "{after:?}");
}

#[test]
fn a_head_on_a_kept_alive_connection_is_timed_from_its_first_byte() {
    let gw = start_gateway_with("", "", LIMITS);
    let mut c = TcpStream::connect(gw.addr).expect("connect");
    assert_eq!(one_request(&mut c), 404);
    // The next head starts within the idle time, then drips.
    std::thread::sleep(Duration::from_millis(1500));
    let started = Instant::now();
    c.write_all(b"GET /api/nope HTTP/1.1\r\n").expect("send");
    let mut closed = None;
    for i in 0..10 {
        if let Some(at) = closed_within(&mut c, Duration::from_secs(1)) {
            closed = Some(at);
            break;
        }
        if c.write_all(format!("X-Drip-{i}: 1\r\n").as_bytes())
            .is_err()
        {
            closed = Some(Instant::now());
            break;
        }
    }
    let after = closed.expect("the dripping head was cut") - started;
    assert!(after >= Duration::from_millis(2500), "{after:?}");
    assert!(after < Duration::from_secs(6), "{after:?}");
}

#[test]
fn a_silent_connection_is_closed_at_the_head_deadline() {
    let gw = start_gateway_with("", "", LIMITS);
    let mut c = TcpStream::connect(gw.addr).expect("connect");
    let started = Instant::now();
    let closed = closed_within(&mut c, Duration::from_secs(15)).expect("closed");
    let after = closed - started;
    assert!(after >= Duration::from_millis(2500), "{after:?}");
    assert!(after < Duration::from_secs(7), "{after:?}");
}

#[test]
fn a_slow_head_within_the_deadline_is_answered() {
    let gw = start_gateway_with("", "", LIMITS);
    let mut c = TcpStream::connect(gw.addr).expect("connect");
    c.write_all(b"GET /api/nope HTTP/1.1\r\n").expect("send");
    std::thread::sleep(Duration::from_millis(700));
    c.write_all(b"Host: localhost\r\n").expect("send");
    std::thread::sleep(Duration::from_millis(700));
    c.write_all(b"Connection: close\r\n\r\n").expect("send");
    let mut raw = Vec::new();
    c.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    c.read_to_end(&mut raw).expect("the answer");
    assert!(
        raw.starts_with(b"HTTP/1.1 404"),
        "{:?}",
        String::from_utf8_lossy(&raw)
    );
}

/// HTTP/2 (h2c here, the same server code as over TLS): a connection whose
/// streams are all done closes after the idle time, with a `GOAWAY`; one
/// that sends the preface and then nothing is closed too.
#[test]
fn idle_http2_connections_close_after_the_idle_time() {
    let gw = start_gateway_with("", "", &format!("{LIMITS}    h2c: true\n"));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(async {
        let tcp = tokio::net::TcpStream::connect(gw.addr)
            .await
            .expect("connect");
        let (send, connection) = h2::client::handshake(tcp).await.expect("h2 handshake");
        let connection = tokio::spawn(connection);
        let mut send = send.ready().await.expect("ready for a stream");
        let req = http::Request::get("http://localhost/api/nope")
            .body(())
            .expect("request");
        let (answer, _) = send.send_request(req, true).expect("send");
        let answer = answer.await.expect("an answer");
        assert_eq!(answer.status(), 404);
        let mut body = answer.into_body();
        while let Some(chunk) = body.data().await {
            chunk.expect("body data");
        }
        let answered = Instant::now();
        let ended = tokio::time::timeout(Duration::from_secs(15), connection).await;
        assert!(
            ended.is_ok(),
            "an idle HTTP/2 connection still open after 15 s"
        );
        let after = answered.elapsed();
        assert!(after >= Duration::from_millis(1500), "{after:?}");
        assert!(after < Duration::from_secs(8), "{after:?}");
        // The preface alone, then silence: closed too.
        let mut silent = TcpStream::connect(gw.addr).expect("connect");
        silent
            .write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0")
            .expect("preface and settings");
        let start = Instant::now();
        let closed = closed_within(&mut silent, Duration::from_secs(15)).expect("closed");
        assert!(
            closed - start < Duration::from_secs(8),
            "{:?}",
            closed - start
        );
    });
}

//! A test OTLP collector on 127.0.0.1 (port 0, bound here and read back):
//! it reads `POST /v1/traces` requests over HTTP/1.1 (kept-alive
//! connections included), answers `200`, and keeps each request's headers
//! and body for the test to decode.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// One export request as received.
#[derive(Debug, Clone)]
pub struct Export {
    pub target: String,
    pub headers: HashMap<String, String>,
    pub body: Vec<u8>,
}

#[derive(Default)]
struct Seen {
    exports: Mutex<Vec<Export>>,
    arrived: Condvar,
}

pub struct Collector {
    pub addr: SocketAddr,
    seen: Arc<Seen>,
}

impl Collector {
    pub fn start() -> Collector {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("address");
        let seen = Arc::new(Seen::default());
        let s = Arc::clone(&seen);
        std::thread::spawn(move || {
            for conn in listener.incoming().map_while(Result::ok) {
                let s = Arc::clone(&s);
                std::thread::spawn(move || serve(conn, &s));
            }
        });
        Collector { addr, seen }
    }

    pub fn exports(&self) -> Vec<Export> {
        self.seen.exports.lock().unwrap().clone()
    }

    /// Waits (on each arrival, up to `within`) until `done` holds for
    /// what has arrived.
    pub fn wait_until(&self, within: Duration, mut done: impl FnMut(&[Export]) -> bool) -> bool {
        let deadline = Instant::now() + within;
        let mut exports = self.seen.exports.lock().unwrap();
        loop {
            if done(&exports) {
                return true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            exports = self.seen.arrived.wait_timeout(exports, left).unwrap().0;
        }
    }
}

fn serve(conn: TcpStream, seen: &Seen) {
    let mut reader = BufReader::new(conn.try_clone().expect("clone"));
    let mut writer = conn;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let target = line.split(' ').nth(1).unwrap_or_default().to_owned();
        let mut headers = HashMap::new();
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
            }
        }
        let len: usize = headers
            .get("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; len];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        if writer
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n")
            .is_err()
        {
            return;
        }
        seen.exports.lock().unwrap().push(Export {
            target,
            headers,
            body,
        });
        seen.arrived.notify_all();
    }
}

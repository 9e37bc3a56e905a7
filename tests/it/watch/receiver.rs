//! The webhook receiver of tests/watch.rs, and an HMAC-SHA256 of its own
//! to check signatures with (no code shared with the service).

use super::HOOK_TOKEN;
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How the receiver answers one request.
#[derive(Debug, Clone, Copy)]
pub enum Reply {
    Status(u16),
    /// `429` with `Retry-After: n`.
    TooMany(u64),
    /// Reads the request and never answers (until the test ends).
    Hang,
    /// `n` interim heads (`100 Continue` and `103 Early Hints` in turn),
    /// then `200` when `then_answer`, or nothing more (the connection held).
    Interim {
        n: usize,
        then_answer: bool,
    },
}

/// One request the receiver read.
#[derive(Debug, Clone)]
pub struct Received {
    pub headers: HashMap<String, String>,
    pub body: Vec<u8>,
    pub at: Instant,
}

impl Received {
    pub fn header(&self, name: &str) -> &str {
        self.headers.get(name).map_or("", String::as_str)
    }
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }
}

/// A webhook receiver on 127.0.0.1, port 0, on a runtime of its own:
/// answers each request with the next planned reply (then `200`).
pub struct Receiver {
    pub addr: SocketAddr,
    seen: Arc<Mutex<Vec<Received>>>,
    _runtime: tokio::runtime::Runtime,
}

impl Receiver {
    pub fn start(plan: &[Reply]) -> Receiver {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("non-blocking");
        let addr = listener.local_addr().expect("address");
        let plan = Arc::new(Mutex::new(plan.iter().copied().collect::<VecDeque<_>>()));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (p, s) = (Arc::clone(&plan), Arc::clone(&seen));
        runtime.spawn(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            while let Ok((conn, _)) = listener.accept().await {
                let (p, s) = (Arc::clone(&p), Arc::clone(&s));
                tokio::spawn(async move { serve(conn, p, s).await });
            }
        });
        Receiver {
            addr,
            seen,
            _runtime: runtime,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}/hooks/in?token={HOOK_TOKEN}", self.addr)
    }

    pub fn seen(&self) -> Vec<Received> {
        self.seen.lock().unwrap().clone()
    }

    pub fn count(&self) -> usize {
        self.seen.lock().unwrap().len()
    }
}

/// Reads from `conn` into `buf` until a request head is whole (at most
/// 64 KiB); where the head ends, or `None` when the peer closed first.
pub(crate) async fn read_head(
    conn: &mut tokio::net::TcpStream,
    buf: &mut Vec<u8>,
) -> Option<usize> {
    use tokio::io::AsyncReadExt;
    let mut chunk = [0u8; 8192];
    loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            return Some(at + 4);
        }
        match conn.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
        if buf.len() > 64 * 1024 {
            return None;
        }
    }
}

async fn serve(
    mut conn: tokio::net::TcpStream,
    plan: Arc<Mutex<VecDeque<Reply>>>,
    seen: Arc<Mutex<Vec<Received>>>,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buf = Vec::new();
    let Some(head_end) = read_head(&mut conn, &mut buf).await else {
        return;
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut headers = HashMap::new();
    for line in head.lines().skip(1) {
        if let Some((k, v)) = line.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
        }
    }
    let length: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut chunk = [0u8; 4096];
    while buf.len() < head_end + length {
        match conn.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    headers.insert(
        "(request line)".into(),
        head.lines().next().unwrap_or("").into(),
    );
    let reply = plan
        .lock()
        .unwrap()
        .pop_front()
        .unwrap_or(Reply::Status(200));
    seen.lock().unwrap().push(Received {
        headers,
        body: buf[head_end..head_end + length].to_vec(),
        at: Instant::now(),
    });
    let (status, extra) = match reply {
        Reply::Status(s) => (s, String::new()),
        Reply::TooMany(after) => (429, format!("Retry-After: {after}\r\n")),
        Reply::Hang => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            return;
        }
        Reply::Interim { n, then_answer } => {
            let mut interim = String::new();
            for i in 0..n {
                interim.push_str(if i % 2 == 0 {
                    "HTTP/1.1 100 Continue\r\n\r\n"
                } else {
                    "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n"
                });
            }
            let _ = conn.write_all(interim.as_bytes()).await;
            if !then_answer {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                return;
            }
            (200, String::new())
        }
    };
    let answer =
        format!("HTTP/1.1 {status} X\r\nContent-Length: 2\r\nConnection: close\r\n{extra}\r\nok");
    let _ = conn.write_all(answer.as_bytes()).await;
    let _ = conn.shutdown().await;
}

/// SHA-256 (FIPS 180-4), written here so the check does not share code
/// with the service.
pub fn sha256(data: &[u8]) -> [u8; 32] {
    const K: [u32; 64] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2,
    ];
    let mut h: [u32; 8] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
        0x5be0cd19,
    ];
    let mut msg = data.to_vec();
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&((data.len() as u64) * 8).to_be_bytes());
    for block in msg.chunks(64) {
        let mut w = [0u32; 64];
        for i in 0..16 {
            w[i] = u32::from_be_bytes(block[i * 4..i * 4 + 4].try_into().unwrap());
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16]
                .wrapping_add(s0)
                .wrapping_add(w[i - 7])
                .wrapping_add(s1);
        }
        let mut v = h;
        for i in 0..64 {
            let s1 = v[4].rotate_right(6) ^ v[4].rotate_right(11) ^ v[4].rotate_right(25);
            let ch = (v[4] & v[5]) ^ (!v[4] & v[6]);
            let t1 = v[7]
                .wrapping_add(s1)
                .wrapping_add(ch)
                .wrapping_add(K[i])
                .wrapping_add(w[i]);
            let s0 = v[0].rotate_right(2) ^ v[0].rotate_right(13) ^ v[0].rotate_right(22);
            let maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
            let t2 = s0.wrapping_add(maj);
            v = [
                t1.wrapping_add(t2),
                v[0],
                v[1],
                v[2],
                v[3].wrapping_add(t1),
                v[4],
                v[5],
                v[6],
            ];
        }
        for (a, b) in h.iter_mut().zip(v) {
            *a = a.wrapping_add(b);
        }
    }
    let mut out = [0u8; 32];
    for (i, word) in h.iter().enumerate() {
        out[i * 4..i * 4 + 4].copy_from_slice(&word.to_be_bytes());
    }
    out
}

/// HMAC (RFC 2104) over [`sha256`].
pub fn hmac_sha256(key: &[u8], data: &[u8]) -> [u8; 32] {
    let mut block = [0u8; 64];
    if key.len() > 64 {
        block[..32].copy_from_slice(&sha256(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let pad = |byte: u8| block.iter().map(|b| b ^ byte).collect::<Vec<u8>>();
    let mut inner = pad(0x36);
    inner.extend_from_slice(data);
    let mut outer = pad(0x5c);
    outer.extend_from_slice(&sha256(&inner));
    sha256(&outer)
}

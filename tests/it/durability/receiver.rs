//! The webhook receiver: 127.0.0.1, port 0, a runtime of its own. It checks
//! every request's Standard Webhooks signature (an HMAC-SHA256 of the
//! test's own, not the service's) and records its `webhook-id`, the
//! body's job, `from` and `to`, which node sent it (each node's URL names
//! it) and what it answered. It answers `200`, or `503` while told to
//! fail, or nothing at all for the next request when told to hang (a node
//! killed during its attempt).

use crate::watch::receiver::hmac_sha256;
use base64::Engine as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The signing key (32 bytes); [`secret`] encodes it.
pub const KEY: &[u8] = b"faults-45-signing-key-0123456789";

pub fn secret() -> String {
    format!(
        "whsec_{}",
        base64::engine::general_purpose::STANDARD.encode(KEY)
    )
}

/// One request the receiver read.
#[derive(Debug, Clone)]
pub struct Got {
    pub id: String,
    pub job: String,
    pub from: String,
    pub to: String,
    /// The node whose URL it came to.
    pub node: String,
    pub verified: bool,
    /// What it answered: 200, 503, or 0 (hung up without an answer).
    pub status: u16,
}

#[derive(Default)]
struct State {
    got: Mutex<Vec<Got>>,
    fail_until: Mutex<Option<Instant>>,
    hang_next: AtomicBool,
    /// The node of the request hung up on last.
    hung: Mutex<Option<String>>,
}

pub struct Receiver {
    pub addr: SocketAddr,
    state: Arc<State>,
    _runtime: tokio::runtime::Runtime,
}

impl Receiver {
    pub fn start() -> Receiver {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("non-blocking");
        let addr = listener.local_addr().expect("address");
        let state = Arc::new(State::default());
        let s = Arc::clone(&state);
        runtime.spawn(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            while let Ok((conn, _)) = listener.accept().await {
                let s = Arc::clone(&s);
                tokio::spawn(async move { serve(conn, s).await });
            }
        });
        Receiver {
            addr,
            state,
            _runtime: runtime,
        }
    }

    /// The URL node `node` posts to.
    pub fn url(&self, node: &str) -> String {
        format!("http://{}/hooks/in?node={node}", self.addr)
    }

    pub fn got(&self) -> Vec<Got> {
        self.state.got.lock().unwrap().clone()
    }

    /// Answers `503` for `d` from now (zero: from now on `200`).
    pub fn fail_for(&self, d: Duration) {
        *self.state.fail_until.lock().unwrap() = Some(Instant::now() + d);
    }

    /// Hangs up on the next request without answering; `take_hung` names
    /// its node.
    pub fn hang_next(&self, on: bool) {
        *self.state.hung.lock().unwrap() = None;
        self.state.hang_next.store(on, Ordering::SeqCst);
    }

    pub fn take_hung(&self) -> Option<String> {
        self.state.hung.lock().unwrap().take()
    }
}

async fn serve(mut conn: tokio::net::TcpStream, state: Arc<State>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buf = Vec::new();
    let Some(head_end) = crate::watch::receiver::read_head(&mut conn, &mut buf).await else {
        return;
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let header = |name: &str| {
        head.lines()
            .skip(1)
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.trim().eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim().to_owned())
            .unwrap_or_default()
    };
    let length: usize = header("content-length").parse().unwrap_or(0);
    let mut chunk = [0u8; 8192];
    while buf.len() < head_end + length {
        match conn.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let body = &buf[head_end..head_end + length];
    let (id, ts, sig) = (
        header("webhook-id"),
        header("webhook-timestamp"),
        header("webhook-signature"),
    );
    let mut signed = format!("{id}.{ts}.").into_bytes();
    signed.extend_from_slice(body);
    let want = format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(hmac_sha256(KEY, &signed))
    );
    let verified = sig.split(' ').any(|s| s == want);
    let event: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let field = |k: &str| event["data"][k].as_str().unwrap_or_default().to_owned();
    let request_line = head.lines().next().unwrap_or_default();
    let node = request_line
        .split("node=")
        .nth(1)
        .and_then(|rest| rest.split([' ', '&']).next())
        .unwrap_or_default()
        .to_owned();
    let failing = state
        .fail_until
        .lock()
        .unwrap()
        .is_some_and(|t| Instant::now() < t);
    let hang = state.hang_next.swap(false, Ordering::SeqCst);
    let status = match (hang, failing || !verified) {
        (true, _) => 0,
        (false, true) => 503,
        (false, false) => 200,
    };
    state.got.lock().unwrap().push(Got {
        id,
        job: field("job"),
        from: field("from"),
        to: field("to"),
        node: node.clone(),
        verified,
        status,
    });
    if hang {
        *state.hung.lock().unwrap() = Some(node);
        // Until the node is killed (and well past its attempt's deadline).
        tokio::time::sleep(Duration::from_secs(30)).await;
        return;
    }
    let answer = format!("HTTP/1.1 {status} X\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
    let _ = conn.write_all(answer.as_bytes()).await;
    let _ = conn.shutdown().await;
}

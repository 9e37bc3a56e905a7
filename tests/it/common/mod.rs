//! Test harness: the bundled sample upstream and the real gateway service on
//! ephemeral loopback ports, and a minimal HTTP/1.1 client over `TcpStream`
//! (tests speak raw HTTP so that status, headers and body are seen exactly).

#![allow(dead_code)]

pub mod mcp;
pub mod redis;

use pingora_core::server::configuration::{Opt, ServerConf};
use pingora_core::server::{Fds, RunArgs, Server, ShutdownSignal, ShutdownSignalWatch};
use shared_board_api::config::Settings;
use shared_board_api::demo::SampleUpstream;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The permission id the sample upstream grants ordinary access with.
pub const PERMISSION: &str = "demo";
/// The main fixture board.
pub const BOARD: &str = "1W3ZZU1Qvua02H";

/// A share link for `board` with permission `p`, percent-encoded as a query value.
pub fn link(board: &str, p: &str) -> String {
    encode(&format!("https://app.milanote.com/{board}/slug?p={p}"))
}

pub fn encode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// The sample upstream, started once per test binary on its own thread.
pub fn sample() -> &'static SampleUpstream {
    static SAMPLE: OnceLock<SampleUpstream> = OnceLock::new();
    SAMPLE.get_or_init(|| {
        SampleUpstream::start_in_thread(([127, 0, 0, 1], 0).into()).expect("sample upstream starts")
    })
}

pub fn upstream_origin() -> String {
    sample().origin()
}

struct StopSignal(tokio::sync::Mutex<tokio::sync::oneshot::Receiver<()>>);

#[async_trait::async_trait]
impl ShutdownSignalWatch for StopSignal {
    async fn recv(&self) -> ShutdownSignal {
        let _ = (&mut *self.0.lock().await).await;
        ShutdownSignal::FastShutdown
    }
}

/// A running gateway; dropping it shuts the server down.
pub struct Gateway {
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Gateway {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Config text for a gateway on `port` in front of the sample upstream.
/// `provider_extra` is appended under `board_api.provider`, `api_extra`
/// under `board_api` (keys at column 2), `server_extra` under
/// `board_api.server` (keys at column 4).
pub fn config_with(port: u16, provider_extra: &str, api_extra: &str, server_extra: &str) -> String {
    config_at(
        &upstream_origin(),
        port,
        provider_extra,
        api_extra,
        server_extra,
    )
}

/// [`config_with`] in front of the provider at `origin`.
pub fn config_at(
    origin: &str,
    port: u16,
    provider_extra: &str,
    api_extra: &str,
    server_extra: &str,
) -> String {
    format!(
        "version: 1\nthreads: 2\nboard_api:\n  server:\n    listen: [\"127.0.0.1:{port}\"]\n{server_extra}  provider:\n    name: milanote\n    share_host: app.milanote.com\n    origin: {origin}\n{provider_extra}{api_extra}"
    )
}

/// [`config_with`] without server keys.
pub fn config(port: u16, provider_extra: &str, api_extra: &str) -> String {
    config_with(port, provider_extra, api_extra, "")
}

/// Starts the real service (the binary's `host::service`) in this process.
pub fn start_gateway(provider_extra: &str, api_extra: &str) -> Gateway {
    start_gateway_with(provider_extra, api_extra, "")
}

/// [`start_gateway`] in front of the provider at `origin`: tests that count
/// what the provider was asked give their gateways a sample of their own,
/// which no other test of the binary talks to.
pub fn start_gateway_at(origin: &str, provider_extra: &str, api_extra: &str) -> Gateway {
    let origin = origin.to_owned();
    start_server(1, move |server, addrs| {
        let text = config_at(&origin, addrs[0].port(), provider_extra, api_extra, "");
        let settings = Settings::from_yaml(&text).expect("test config is valid");
        shared_board_api::host::service::add_services(server, &settings).expect("services build");
    })
    .0
}

/// [`start_gateway`] with `board_api.server` keys too.
pub fn start_gateway_with(provider_extra: &str, api_extra: &str, server_extra: &str) -> Gateway {
    start_server(1, |server, addrs| {
        let text = config_with(addrs[0].port(), provider_extra, api_extra, server_extra);
        let settings = Settings::from_yaml(&text).expect("test config is valid");
        shared_board_api::host::service::add_services(server, &settings).expect("services build");
    })
    .0
}

/// [`start_gateway`] with the Prometheus exporter on a second listener;
/// returns the gateway and the exporter's address.
pub fn start_gateway_with_metrics(provider_extra: &str, api_extra: &str) -> (Gateway, SocketAddr) {
    let (gw, addrs) = start_server(2, |server, addrs| {
        let metrics = format!("    metrics:\n      listen: \"{}\"\n", addrs[1]);
        let text = config_with(addrs[0].port(), provider_extra, api_extra, &metrics);
        let settings = Settings::from_yaml(&text).expect("test config is valid");
        shared_board_api::host::service::add_services(server, &settings).expect("services build");
    });
    (gw, addrs[1])
}

/// Runs a Pingora server on `n` loopback listeners bound to port 0 before it
/// starts, until the returned [`Gateway`] (on the first) is dropped. `add`
/// installs the services and must listen on exactly those addresses (as
/// `add_tcp(&addr.to_string())`).
///
/// The sockets are never released between binding and serving: they are
/// handed to Pingora through its own listener handover (the one `-u` uses),
/// the only way its 0.9 API takes a pre-bound socket: the fd table its
/// listeners consult is filled only from `upgrade_sock` during `bootstrap()`.
pub fn start_server(
    n: usize,
    add: impl FnOnce(&mut Server, &[SocketAddr]),
) -> (Gateway, Vec<SocketAddr>) {
    static SOCKS: AtomicUsize = AtomicUsize::new(0);
    let listeners: Vec<TcpListener> = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("bind a loopback port"))
        .collect();
    let addrs: Vec<SocketAddr> = listeners
        .iter()
        .map(|l| l.local_addr().expect("bound address"))
        .collect();
    let sock = std::env::temp_dir().join(format!(
        "sba-test-{}-{}.sock",
        std::process::id(),
        SOCKS.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_file(&sock);
    let sock_path = sock.to_string_lossy().into_owned();

    let mut conf = ServerConf::new().expect("default server conf");
    conf.threads = 2;
    conf.grace_period_seconds = Some(0);
    conf.graceful_shutdown_timeout_seconds = Some(1);
    conf.upgrade_sock = sock_path.clone();
    let opt = Opt {
        upgrade: true,
        ..Opt::default()
    };
    let mut server = Server::new_with_opt_and_conf(opt, conf);
    std::thread::scope(|scope| {
        let sender = scope.spawn(|| {
            // `bootstrap` creates the socket file, then accepts one sender.
            let deadline = Instant::now() + Duration::from_secs(20);
            while !sock.exists() {
                assert!(
                    Instant::now() < deadline,
                    "Pingora never opened {sock_path}"
                );
                std::thread::sleep(Duration::from_millis(5));
            }
            // The file appears at bind(); listen() follows at once. A sender
            // that comes too early is retried by Pingora after a second.
            std::thread::sleep(Duration::from_millis(20));
            let mut fds = Fds::new();
            for (listener, addr) in listeners.iter().zip(&addrs) {
                // Pingora's listeners are non-blocking; the flag travels with the socket.
                listener.set_nonblocking(true).expect("non-blocking");
                fds.add(addr.to_string(), listener.as_raw_fd());
            }
            fds.send_to_sock(sock_path.as_str())
                .expect("hand the listeners to Pingora");
        });
        server.bootstrap();
        sender.join().expect("listener handover");
    });
    // Pingora holds its own descriptors now.
    drop(listeners);
    let _ = std::fs::remove_file(&sock);
    add(&mut server, &addrs);
    let (tx, rx) = tokio::sync::oneshot::channel();
    let thread = std::thread::spawn(move || {
        server.run(RunArgs {
            shutdown_signal: Box::new(StopSignal(tokio::sync::Mutex::new(rx))),
        })
    });
    let gw = Gateway {
        addr: addrs[0],
        stop: Some(tx),
        thread: Some(thread),
    };
    (gw, addrs)
}

/// The default gateway, shared by the tests of one binary.
pub fn gateway() -> SocketAddr {
    static GATEWAY: OnceLock<SocketAddr> = OnceLock::new();
    *GATEWAY.get_or_init(|| {
        let gw = start_gateway("", "");
        let addr = gw.addr;
        // Lives as long as the test process.
        std::mem::forget(gw);
        addr
    })
}

#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "body is not JSON ({e}): {}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// Asserts the error envelope and the headers every error carries.
    pub fn assert_error(&self, status: u16, code: &str, field: Option<&str>) {
        assert_eq!(
            self.status,
            status,
            "{}",
            String::from_utf8_lossy(&self.body)
        );
        let body = self.json();
        assert_eq!(body["ok"], false);
        assert_eq!(body["error"]["code"], code, "{body}");
        assert!(body["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()));
        assert_eq!(
            body["error"].get("field").and_then(|f| f.as_str()),
            field,
            "{body}"
        );
        assert_eq!(
            body["error"]["requestId"].as_str(),
            self.header("x-request-id"),
            "{body}"
        );
        assert_eq!(self.header("cache-control"), Some("no-store"));
        assert_eq!(self.header("etag"), None);
        assert_eq!(
            self.header("content-type"),
            Some("application/json; charset=utf-8")
        );
        self.assert_cors();
    }

    /// The headers every response of the two endpoints carries: CORS and
    /// `X-Content-Type-Options: nosniff`.
    pub fn assert_cors(&self) {
        assert_eq!(self.header("access-control-allow-origin"), Some("*"));
        assert_eq!(
            self.header("access-control-expose-headers"),
            Some("ETag, Server-Timing, Board-Completeness, Board-Version, X-Request-Id, Content-Disposition")
        );
        let id = self.header("x-request-id").unwrap_or_default();
        assert!(
            (1..=128).contains(&id.len())
                && id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b".:_-".contains(&b)),
            "X-Request-Id {id:?}"
        );
        assert_eq!(self.header("x-content-type-options"), Some("nosniff"));
    }
}

/// One request on a fresh connection (`Connection: close`).
pub fn request(addr: SocketAddr, method: &str, target: &str, headers: &[(&str, &str)]) -> Response {
    let mut stream = TcpStream::connect(addr).expect("connect to gateway");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let mut req = format!("{method} {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    stream.write_all(req.as_bytes()).expect("send request");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read response");
    parse_response(&raw, method == "HEAD")
}

/// One request with a body (`Content-Length` set) on a fresh connection.
pub fn request_with_body(
    addr: SocketAddr,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Response {
    let mut stream = TcpStream::connect(addr).expect("connect to gateway");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let mut req = format!(
        "{method} {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    let mut raw = req.into_bytes();
    raw.extend_from_slice(body);
    stream.write_all(&raw).expect("send request");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).expect("read response");
    parse_response(&answer, method == "HEAD")
}

/// `POST {target}` with a JSON body (`Content-Type: application/json`).
pub fn post_json(addr: SocketAddr, target: &str, body: &str, headers: &[(&str, &str)]) -> Response {
    let mut all = vec![("Content-Type", "application/json")];
    all.extend_from_slice(headers);
    request_with_body(addr, "POST", target, &all, body.as_bytes())
}

pub fn get(target: &str) -> Response {
    request(gateway(), "GET", target, &[])
}

/// Parses a raw HTTP/1.1 answer (`head`: the request was `HEAD`).
pub fn parse_response(raw: &[u8], head: bool) -> Response {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no header end in {:?}", String::from_utf8_lossy(raw)));
    let head_text = String::from_utf8_lossy(&raw[..split]);
    let mut lines = head_text.split("\r\n");
    let status_line = lines.next().expect("status line");
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status code");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let rest = &raw[split + 4..];
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    let body = if head {
        assert!(rest.is_empty(), "HEAD response carried a body");
        Vec::new()
    } else if chunked {
        dechunk(rest)
    } else {
        rest.to_vec()
    };
    Response {
        status,
        headers,
        body,
    }
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(line_end) = data.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size_text = String::from_utf8_lossy(&data[..line_end]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
            .unwrap_or(0);
        data = &data[line_end + 2..];
        if size == 0 || data.len() < size {
            return out;
        }
        out.extend_from_slice(&data[..size]);
        data = &data[(size + 2).min(data.len())..];
    }
}

/// The lines of the file at `path` once it holds at least `count` (the
/// access log's writer thread writes them a few milliseconds after the
/// answers); panics after 30 s with what it holds.
#[allow(dead_code)]
pub fn wait_for_lines(path: &std::path::Path, count: usize) -> Vec<String> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let lines: Vec<String> = text.lines().map(str::to_string).collect();
        if lines.len() >= count {
            return lines;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{} of {count} lines in {}:\n{text}",
            lines.len(),
            path.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Runs one test alone in a child process of this test binary, for a test
/// that needs the process to itself: it installs the process's one logger
/// and reads every line it gets. `module` is the test's `module_path!()`,
/// `name` its function's name. In the child (the variable below names the
/// test) it returns true: run the test's body. In the parent it runs the
/// child, asserts that exactly that test passed there, and returns false.
pub fn in_own_process(module: &str, name: &str) -> bool {
    const VAR: &str = "SBAPI_TEST_OWN_PROCESS";
    let module = module.split_once("::").map_or("", |(_, rest)| rest);
    let test = format!("{module}::{name}");
    if std::env::var(VAR).as_deref() == Ok(test.as_str()) {
        return true;
    }
    let exe = std::env::current_exe().expect("the test binary");
    let out = std::process::Command::new(exe)
        .args([test.as_str(), "--exact", "--test-threads=1", "--nocapture"])
        .env(VAR, &test)
        .output()
        .expect("the test binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("test result: ok. 1 passed"),
        "{test} in its own process:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    false
}

/// Waits (polling every 10 ms, never a fixed sleep) until `check` holds;
/// false after 20 s.
pub fn wait_for(check: impl FnMut() -> bool) -> bool {
    wait_for_within(check, std::time::Duration::from_secs(20))
}

/// [`wait_for`] with a bound of its own, polling a little less often for a
/// long one (checks that scrape a server are not free).
pub fn wait_for_within(mut check: impl FnMut() -> bool, within: std::time::Duration) -> bool {
    use std::time::{Duration, Instant};
    let every = (within / 2000).clamp(Duration::from_millis(10), Duration::from_millis(100));
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if check() {
            return true;
        }
        std::thread::sleep(every);
    }
    false
}

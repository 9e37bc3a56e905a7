//! The operator listener of the real binary: `/healthz` and `/readyz` answer
//! `200` while it runs, `/metrics` is Pingora's exporter as before, any other
//! path is `404`; through a `-u` hand-over (`SIGQUIT`) the old process stays
//! ready (both serve the same sockets), and once a shutdown has begun
//! (`SIGTERM`, or the old process's after the hand-over) `/readyz` is `503`
//! while the listener still answers.
//!
//! The moment is found by an event: Pingora's own log line that follows the
//! phase change (the grace period starting, the listeners sent to the new
//! process), read from the child's stderr. The probe then goes over a
//! connection kept alive from before, as a balancer's would be: Pingora
//! stops accepting new connections as soon as `SIGTERM` arrives.
//!
//! The listeners are bound to port 0 by the test and handed to the binary
//! through Pingora's upgrade socket, so no port is probed and released.
//!
//! The same real binary also writes its access log here, bare JSON lines on
//! stderr, batched (held until the log's thread has drained its queue):
//! every line arrives, in order, without a flush from outside.

use crate::common::*;
use pingora_core::server::Fds;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

/// A child binary, killed by its own pid when the test ends, and its
/// stderr lines as they come.
struct Binary {
    child: Child,
    lines: Receiver<String>,
    seen: Vec<String>,
}

impl Drop for Binary {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Binary {
    fn start(conf: &Path) -> Binary {
        let mut child = Command::new(env!("CARGO_BIN_EXE_shared-board-api"))
            .args(["-u", "--demo", "-c"])
            .arg(conf)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the binary");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Binary {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Waits until `count` stderr lines seen so far contain `needle`; those
    /// lines.
    fn wait_for_count(&mut self, needle: &str, count: usize) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut found = self.seen.iter().filter(|l| l.contains(needle)).count();
        while found < count {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    found += usize::from(line.contains(needle));
                    self.seen.push(line);
                }
                Err(_) => panic!(
                    "{found} of {count} lines with {needle:?} in:\n{}",
                    self.seen.join("\n")
                ),
            }
        }
        self.seen
            .iter()
            .filter(|l| l.contains(needle))
            .cloned()
            .collect()
    }

    /// Every stderr line left, once the process has exited.
    fn rest(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while let Ok(line) = self
            .lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            self.seen.push(line);
        }
    }

    /// Waits for a stderr line containing `needle`.
    fn wait_for(&mut self, needle: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let found = line.contains(needle);
                    self.seen.push(line);
                    if found {
                        return;
                    }
                }
                Err(_) => panic!("no line with {needle:?} in:\n{}", self.seen.join("\n")),
            }
        }
    }

    fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args([name, &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill {name} failed");
    }

    fn wait_exit(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.child.try_wait().expect("wait").is_none() {
            assert!(Instant::now() < deadline, "the process did not exit");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Hands `listeners` to the process waiting on `sock`, as an old Pingora
/// process would.
fn hand_over(listeners: &[TcpListener], sock: &Path) {
    wait_for_file(sock);
    // The file appears at bind(), listen() follows at once; Pingora retries
    // a sender that came too early.
    std::thread::sleep(Duration::from_millis(20));
    let mut fds = Fds::new();
    for listener in listeners {
        listener.set_nonblocking(true).expect("non-blocking");
        let addr = listener.local_addr().expect("address");
        fds.add(addr.to_string(), listener.as_raw_fd());
    }
    fds.send_to_sock(sock.to_string_lossy().as_ref())
        .expect("hand the listeners over");
}

fn wait_for_file(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A kept-alive HTTP/1.1 connection.
struct Conn(BufReader<TcpStream>);

impl Conn {
    fn open(addr: SocketAddr) -> Conn {
        let s = TcpStream::connect(addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        Conn(BufReader::new(s))
    }

    /// `GET path`: the status and the body.
    fn get(&mut self, path: &str) -> (u16, String) {
        let req = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n");
        self.0.get_mut().write_all(req.as_bytes()).expect("send");
        let mut status_line = String::new();
        self.0.read_line(&mut status_line).expect("status line");
        let status = status_line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("status line {status_line:?}"));
        let mut length = 0;
        loop {
            let mut line = String::new();
            self.0.read_line(&mut line).expect("header");
            let line = line.trim_end().to_ascii_lowercase();
            if line.is_empty() {
                break;
            }
            if let Some(v) = line.strip_prefix("content-length:") {
                length = v.trim().parse().expect("Content-Length");
            }
        }
        let mut body = vec![0; length];
        self.0.read_exact(&mut body).expect("body");
        (status, String::from_utf8_lossy(&body).into_owned())
    }
}

/// Probes until `/readyz` says ready, on new connections, as an
/// orchestrator does.
fn wait_ready(metrics: SocketAddr) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if TcpStream::connect(metrics).is_ok() && Conn::open(metrics).get("/readyz").0 == 200 {
            return;
        }
        assert!(Instant::now() < deadline, "never ready");
        std::thread::sleep(Duration::from_millis(50));
    }
}

struct Setup {
    dir: PathBuf,
    conf: PathBuf,
    sock: PathBuf,
    listeners: Vec<TcpListener>,
    main: SocketAddr,
    metrics: SocketAddr,
}

fn setup(name: &str, grace_seconds: u32) -> Setup {
    setup_with(name, grace_seconds, "")
}

/// [`setup`] with `server_extra` added to `board_api.server`.
fn setup_with(name: &str, grace_seconds: u32, server_extra: &str) -> Setup {
    let dir = std::env::temp_dir().join(format!("sba-probes-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let sock = dir.join("upgrade.sock");
    let _ = std::fs::remove_file(&sock);
    let listeners: Vec<TcpListener> = (0..2)
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("bind"))
        .collect();
    let main = listeners[0].local_addr().expect("address");
    let metrics = listeners[1].local_addr().expect("address");
    let conf = dir.join("gateway.yaml");
    std::fs::write(
        &conf,
        format!(
            "version: 1\nthreads: 2\npid_file: {}\nupgrade_sock: {}\n\
             grace_period_seconds: {grace_seconds}\ngraceful_shutdown_timeout_seconds: 1\n\
             board_api:\n  server:\n    listen: [\"{main}\"]\n{server_extra}    metrics:\n      listen: \"{metrics}\"\n\
             \x20 provider:\n    name: milanote\n    share_host: app.milanote.com\n\
             \x20   origin: https://app.milanote.com\n",
            dir.join("pid").display(),
            sock.display()
        ),
    )
    .expect("write config");
    Setup {
        dir,
        conf,
        sock,
        listeners,
        main,
        metrics,
    }
}

#[test]
fn probes_answer_and_readiness_fails_once_a_shutdown_begins() {
    // A grace period long enough that the listener still answers after the
    // event; the test kills the process once it has seen what it needs.
    let s = setup("term", 30);
    let mut old = Binary::start(&s.conf);
    hand_over(&s.listeners, &s.sock);
    wait_ready(s.metrics);

    let (status, body) = Conn::open(s.metrics).get("/healthz");
    assert_eq!((status, body.as_str()), (200, "ok\n"));
    assert_eq!(Conn::open(s.metrics).get("/anything").0, 404);
    assert_eq!(Conn::open(s.metrics).get("/").0, 404);
    // /metrics: Pingora's exporter, as before, with the API's counters.
    let search = request(
        s.main,
        "GET",
        &format!("/api/search?url={}", link(BOARD, PERMISSION)),
        &[],
    );
    assert_eq!(search.status, 200);
    let metrics = request(s.metrics, "GET", "/metrics", &[]);
    assert_eq!(metrics.status, 200);
    assert_eq!(
        metrics.header("content-type"),
        Some("text/plain; version=0.0.4")
    );
    let text = String::from_utf8_lossy(&metrics.body);
    assert!(
        text.contains(r#"board_api_requests_total{api="/api",endpoint="search",status="200"} 1"#),
        "{text}"
    );
    let gzip = request(s.metrics, "GET", "/metrics", &[("Accept-Encoding", "gzip")]);
    assert_eq!(gzip.header("content-encoding"), Some("gzip"));
    // The API is not on this listener, nor the probes on the API's.
    let api = request(s.main, "GET", "/readyz", &[]);
    api.assert_error(404, "NOT_FOUND", None);

    let mut readyz = Conn::open(s.metrics);
    let mut healthz = Conn::open(s.metrics);
    assert_eq!(readyz.get("/readyz"), (200, "ready\n".to_string()));
    assert_eq!(healthz.get("/healthz").0, 200);

    old.signal("-TERM");
    // Pingora logs this after the GracefulTerminate phase, as the grace
    // period starts.
    old.wait_for("grace period");
    assert_eq!(readyz.get("/readyz"), (503, "not ready\n".to_string()));
    assert_eq!(healthz.get("/healthz"), (200, "ok\n".to_string()));
    drop(old);
    let _ = std::fs::remove_dir_all(&s.dir);
}

#[test]
fn readiness_holds_through_an_upgrades_hand_over_then_fails_on_the_old_process() {
    let s = setup("upgrade", 1);
    let mut old = Binary::start(&s.conf);
    hand_over(&s.listeners, &s.sock);
    wait_ready(s.metrics);
    let mut readyz = Conn::open(s.metrics);
    assert_eq!(readyz.get("/readyz").0, 200);
    // The old process has its listeners; the new one waits on the socket.
    let _ = std::fs::remove_file(&s.sock);
    let mut new = Binary::start(&s.conf);
    // The old process retries sending until the new one listens.
    wait_for_file(&s.sock);
    old.signal("-QUIT");
    // Logged after the upgrade phase began and the listeners went to the
    // new process; the old one keeps accepting for a few seconds more, on
    // the same sockets as the new one: the address is still ready.
    old.wait_for("listener sockets sent");
    assert_eq!(readyz.get("/readyz"), (200, "ready\n".to_string()));
    // Its shutdown has begun (logged as the grace period starts): not ready.
    old.wait_for("grace period");
    assert_eq!(readyz.get("/readyz"), (503, "not ready\n".to_string()));
    old.wait_exit();
    // Only the new process answers now, and it is ready.
    wait_ready(s.metrics);
    assert_eq!(Conn::open(s.metrics).get("/healthz").0, 200);
    let r = request(
        s.main,
        "GET",
        &format!("/api/search?url={}", link(BOARD, PERMISSION)),
        &[],
    );
    assert_eq!(r.status, 200);
    new.signal("-TERM");
    new.wait_exit();
    let _ = std::fs::remove_dir_all(&s.dir);
}

/// How every access line starts (`access_log: true` writes them to stderr).
const ACCESS_LINE: &str = "{\"method\":";

#[test]
fn the_binary_writes_one_access_line_per_request_in_order() {
    let s = setup_with("access", 1, "    access_log: true\n");
    let mut gw = Binary::start(&s.conf);
    hand_over(&s.listeners, &s.sock);
    wait_ready(s.metrics);
    let search = format!("/api/search?url={}", link(BOARD, PERMISSION));
    // The demo's permission id is the word `demo`, which other lines hold:
    // the bad link carries one that nothing else says.
    let bad = format!("/api/detail?url={}", link("bad id!", "Secr3tP3rm"));
    // A repeating pattern of outcomes, so the order of the lines shows.
    let sent: Vec<(&str, u16)> = (0..40)
        .map(|i| match i % 4 {
            0 | 1 => (search.as_str(), 200),
            2 => (bad.as_str(), 400),
            _ => ("/api/elsewhere", 404),
        })
        .collect();
    for (path, status) in &sent {
        assert_eq!(request(s.main, "GET", path, &[]).status, *status, "{path}");
    }
    // Nothing but the queue running dry flushes these lines: a writer that
    // held them would leave this waiting.
    let lines = gw.wait_for_count(ACCESS_LINE, sent.len());
    for (line, (_, status)) in lines.iter().zip(&sent) {
        // Bare JSON, without a logger's prefix.
        let json: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        assert_eq!(json["status"], *status, "{line}");
        let path = json["path"].as_str().expect("path");
        assert!(path.starts_with("/api/") && !path.contains('?'), "{line}");
    }
    gw.signal("-TERM");
    gw.wait_exit();
    // Exactly one line per request: none doubled, none late.
    gw.rest();
    let all = gw
        .seen
        .iter()
        .filter(|l| l.starts_with(ACCESS_LINE))
        .count();
    assert_eq!(all, sent.len(), "{:#?}", gw.seen);
    assert!(
        gw.seen
            .iter()
            .all(|l| !l.contains("Secr3tP3rm") && !l.contains("p%3Ddemo") && !l.contains("p=demo")),
        "{:#?}",
        gw.seen
    );
    let _ = std::fs::remove_dir_all(&s.dir);
}

#[test]
fn the_operator_listener_answers_its_own_hosts_and_refuses_cross_site_posts() {
    let (_gw, ops) = start_gateway_with_metrics("", "");
    let own = ops.to_string();
    // DNS rebinding: a page on another name, resolved to this address.
    for host in [
        "rebound.example",
        "rebound.example:80",
        &format!("evil.example:{}", ops.port()),
    ] {
        let r = request_as(ops, "GET", "/healthz", host, &[]);
        assert_eq!(r.status, 421, "{host}");
    }
    for host in [
        own.as_str(),
        "localhost",
        &format!("localhost:{}", ops.port()),
    ] {
        assert_eq!(
            request_as(ops, "GET", "/healthz", host, &[]).status,
            200,
            "{host}"
        );
    }
    // A form or fetch from another site: no custom header, a foreign Origin.
    let cross = [
        vec![
            ("Content-Type", "text/plain"),
            ("Origin", "https://evil.example"),
        ],
        vec![("Content-Type", "text/plain")],
        vec![("X-Requested-By", "x"), ("Origin", "https://evil.example")],
    ];
    for headers in cross {
        let r = request_as(ops, "POST", "/watch/trip/run", &own, &headers);
        assert_eq!(r.status, 403, "{headers:?}");
    }
    // With the header and no foreign origin, the route answers (no jobs here).
    let r = request_as(
        ops,
        "POST",
        "/watch/trip/run",
        &own,
        &[("X-Requested-By", "ops")],
    );
    assert_eq!(r.status, 404);
}

/// One request with `Host: host` on a fresh connection.
fn request_as(
    addr: SocketAddr,
    method: &str,
    target: &str,
    host: &str,
    headers: &[(&str, &str)],
) -> Response {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let mut req = format!(
        "{method} {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Length: 0\r\n"
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    stream.write_all(req.as_bytes()).expect("send");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read");
    parse_response(&raw, false)
}

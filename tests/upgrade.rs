//! Zero-downtime upgrade of the binary (Pingora's `-u`): while clients keep
//! sending requests, on kept-alive and on new connections, a second process
//! takes over the listening socket from the first, which gets `SIGQUIT` and
//! exits gracefully. No request may fail. A kept-alive connection is
//! replaced after an answer that said `Connection: close`; the one case sent
//! again is HTTP/1.1's idle-close race (RFC 9112, 9.3.1): the old process,
//! as it stops, closes kept-alive connections that wait for their next
//! request, and a request crossing that close gets no byte of an answer.
//! Those are counted apart, at most one per kept-alive client, and what was
//! sent again must succeed; every other error is a failure.
//!
//! The first process also starts in upgrade mode and receives its listener,
//! bound to port 0 by this test, the same way the second receives it from
//! the first (so no port is probed and released).

mod common;

use common::*;
use pingora_core::server::Fds;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Children this test started; killed (by their own pid) if it fails early.
struct Processes(Vec<Child>);

impl Drop for Processes {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn start(bin: &str, conf: &Path, log: &Path) -> Child {
    let stderr = std::fs::File::create(log).expect("log file");
    Command::new(bin)
        .args(["-u", "--demo", "-c"])
        .arg(conf)
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .expect("start the binary")
}

fn signal(child: &Child, name: &str) {
    let status = Command::new("kill")
        .args([name, &child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill {name} failed");
}

/// Waits for `child` to exit; its exit status.
fn wait_exit(child: &mut Child, within: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "process {} did not exit",
            child.id()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Sends the listener to the process that waits on `sock`, as an old
/// Pingora process would.
fn hand_over(listener: &TcpListener, addr: SocketAddr, sock: &Path) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !sock.exists() {
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            sock.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(20));
    listener.set_nonblocking(true).expect("non-blocking");
    let mut fds = Fds::new();
    fds.add(addr.to_string(), listener.as_raw_fd());
    fds.send_to_sock(sock.to_string_lossy().as_ref())
        .expect("hand the listener over");
}

/// What a client saw.
#[derive(Default)]
struct Outcome {
    answered: usize,
    /// Reused connections closed before any byte of an answer.
    idle_closes: Vec<String>,
    failures: Vec<String>,
}

/// One client: requests in a loop until `stop`, on one kept-alive connection
/// (replaced after `Connection: close`), or a new connection per request.
fn client(addr: SocketAddr, keep_alive: bool, stop: Arc<AtomicBool>) -> Outcome {
    let target = format!("/api/search?url={}", link(BOARD, PERMISSION));
    let mut conn: Option<BufReader<TcpStream>> = None;
    // Answers on the current connection.
    let mut reused = 0;
    let mut out = Outcome::default();
    while !stop.load(Ordering::SeqCst) {
        let mut nothing_read = false;
        let result = (|| -> Result<bool, String> {
            let reader = match conn.as_mut() {
                Some(c) => c,
                None => {
                    let s = TcpStream::connect(addr).map_err(|e| format!("connect: {e}"))?;
                    s.set_read_timeout(Some(Duration::from_secs(20)))
                        .map_err(|e| e.to_string())?;
                    conn.insert(BufReader::new(s))
                }
            };
            let close = if keep_alive {
                ""
            } else {
                "Connection: close\r\n"
            };
            let req = format!("GET {target} HTTP/1.1\r\nHost: gw\r\n{close}\r\n");
            reader
                .get_mut()
                .write_all(req.as_bytes())
                .map_err(|e| format!("send: {e}"))?;
            let mut status_line = String::new();
            let read = reader.read_line(&mut status_line);
            nothing_read = status_line.is_empty();
            read.map_err(|e| format!("status line: {e}"))?;
            if !status_line.starts_with("HTTP/1.1 200 ") {
                return Err(format!("status line {status_line:?}"));
            }
            let (mut length, mut server_closes) = (None, false);
            loop {
                let mut line = String::new();
                reader
                    .read_line(&mut line)
                    .map_err(|e| format!("header: {e}"))?;
                let line = line.trim_end().to_ascii_lowercase();
                if line.is_empty() {
                    break;
                }
                if let Some(v) = line.strip_prefix("content-length:") {
                    length = v.trim().parse::<usize>().ok();
                }
                server_closes |= line == "connection: close";
            }
            let length = length.ok_or("no Content-Length")?;
            let mut body = vec![0; length];
            reader
                .read_exact(&mut body)
                .map_err(|e| format!("body: {e}"))?;
            if !String::from_utf8_lossy(&body).contains(BOARD) {
                return Err("body without the board".into());
            }
            Ok(server_closes || !keep_alive)
        })();
        match result {
            Ok(reconnect) => {
                out.answered += 1;
                reused += 1;
                if reconnect {
                    conn = None;
                    reused = 0;
                }
            }
            Err(e) => {
                let what = format!(
                    "after {} answers (keep-alive {keep_alive}): {e}",
                    out.answered
                );
                if keep_alive && reused > 0 && nothing_read {
                    out.idle_closes.push(what);
                } else {
                    out.failures.push(what);
                }
                conn = None;
                reused = 0;
            }
        }
    }
    out
}

#[test]
fn upgrade_hands_over_the_listener_without_failing_a_request() {
    let bin = env!("CARGO_BIN_EXE_shared-board-api");
    let dir: PathBuf = std::env::temp_dir().join(format!("sba-upgrade-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let sock = dir.join("upgrade.sock");
    let _ = std::fs::remove_file(&sock);
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("address");
    let conf = dir.join("gateway.yaml");
    std::fs::write(
        &conf,
        format!(
            "version: 1\nthreads: 2\npid_file: {}\nupgrade_sock: {}\n\
             grace_period_seconds: 1\ngraceful_shutdown_timeout_seconds: 5\n\
             board_api:\n  server:\n    listen: [\"{addr}\"]\n  provider:\n    name: milanote\n\
             \x20   share_host: app.milanote.com\n    origin: https://app.milanote.com\n",
            dir.join("pid").display(),
            sock.display()
        ),
    )
    .expect("write config");

    let mut procs = Processes(Vec::new());
    procs.0.push(start(bin, &conf, &dir.join("old.log")));
    hand_over(&listener, addr, &sock);
    drop(listener);

    // The old process answers.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let ok = TcpStream::connect(addr).is_ok_and(|mut s| {
            let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
            let req = format!(
                "GET /api/search?url={} HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n\r\n",
                link(BOARD, PERMISSION)
            );
            let mut answer = String::new();
            s.write_all(req.as_bytes()).is_ok()
                && s.read_to_string(&mut answer).is_ok()
                && answer.starts_with("HTTP/1.1 200 ")
        });
        if ok {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the first process never answered"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = [true, true, false, false]
        .into_iter()
        .map(|keep_alive| {
            let stop = stop.clone();
            std::thread::spawn(move || client(addr, keep_alive, stop))
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));

    // The steps of docs/operations.md, "Zero-downtime upgrade".
    // 1. The new configuration checked with the flags of step 2.
    let check = Command::new(bin)
        .args(["-t", "-u", "-c"])
        .arg(&conf)
        .output()
        .expect("run -t -u");
    assert!(
        check.status.success(),
        "-t -u refused the configuration: {}",
        String::from_utf8_lossy(&check.stderr)
    );
    // 2. The new process waits on upgrade_sock for the listener.
    procs.0.push(start(bin, &conf, &dir.join("new.log")));
    std::thread::sleep(Duration::from_secs(1));
    // 3. SIGQUIT to the old process (in the foreground, as here, by its
    // pid; a daemon started with -d is found by its pid_file).
    signal(&procs.0[0], "-QUIT");
    let old_exit = wait_exit(&mut procs.0[0], Duration::from_secs(60));
    // Only the new process can answer now.
    let r = request(
        addr,
        "GET",
        &format!("/api/search?url={}", link(BOARD, PERMISSION)),
        &[],
    );
    assert_eq!(r.status, 200, "the new process answers");
    std::thread::sleep(Duration::from_secs(1));
    stop.store(true, Ordering::SeqCst);
    let outcomes: Vec<Outcome> = clients
        .into_iter()
        .map(|c| c.join().expect("client thread"))
        .collect();

    signal(&procs.0[1], "-TERM");
    let new_exit = wait_exit(&mut procs.0[1], Duration::from_secs(60));
    let failures: Vec<&String> = outcomes.iter().flat_map(|o| &o.failures).collect();
    let answered: Vec<usize> = outcomes.iter().map(|o| o.answered).collect();
    let logs = || {
        let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap_or_default();
        format!("old:\n{}\nnew:\n{}", read("old.log"), read("new.log"))
    };
    assert!(failures.is_empty(), "{failures:#?}\n{}", logs());
    for o in &outcomes {
        assert!(o.idle_closes.len() <= 1, "{:?}", o.idle_closes);
        if !o.idle_closes.is_empty() {
            eprintln!("idle-close race, sent again: {:?}", o.idle_closes);
        }
    }
    assert!(
        answered.iter().all(|&n| n > 10),
        "each client kept being answered: {answered:?}\n{}",
        logs()
    );
    assert!(old_exit.success(), "old process: {old_exit}\n{}", logs());
    assert!(new_exit.success(), "new process: {new_exit}\n{}", logs());
    let _ = std::fs::remove_dir_all(&dir);
}

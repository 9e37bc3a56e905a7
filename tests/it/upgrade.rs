//! Zero-downtime upgrade of the binary (Pingora's `-u`), run with exactly
//! the commands of docs/operations.md, "Zero-downtime upgrade", typed one
//! after another, while clients keep sending requests on kept-alive and on
//! new connections: a daemon (`-d`), then `-t -u`, `kill -QUIT $(cat
//! pid_file)`, `-u -d`. No request may be refused or fail. A kept-alive
//! connection is replaced after an answer that said `Connection: close`; the
//! one case sent again is HTTP/1.1's idle-close race (RFC 9112, 9.3.1): the
//! old process, as it stops, closes connections that wait for a request
//! (kept alive, or accepted an instant before and not yet read), and a
//! request crossing that close gets no byte of an answer. Those are counted
//! apart, at most two per client per upgrade, and what was sent again must
//! succeed; a refused connection and every other error is a failure. Then the same with the two steps the other way round, and the
//! unit's own reload.

use crate::common::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a client saw.
#[derive(Default)]
struct Outcome {
    answered: usize,
    /// Connections closed before any byte of an answer, with the request
    /// sent (never a refused connection).
    idle_closes: Vec<String>,
    failures: Vec<String>,
}

/// One client: requests in a loop until `stop`, on one kept-alive connection
/// (replaced after `Connection: close`), or a new connection per request.
fn client(addr: SocketAddr, keep_alive: bool, stop: Arc<AtomicBool>) -> Outcome {
    let target = format!("/api/search?url={}", link(BOARD, PERMISSION));
    let mut conn: Option<BufReader<TcpStream>> = None;
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
                if reconnect {
                    conn = None;
                }
            }
            Err(e) => {
                let what = format!(
                    "after {} answers (keep-alive {keep_alive}): {e}",
                    out.answered
                );
                if nothing_read {
                    out.idle_closes.push(what);
                } else {
                    out.failures.push(what);
                }
                conn = None;
            }
        }
    }
    out
}

/// The TCP addresses `pid` listens on (sorted), read back from the kernel: the inodes of
/// its socket descriptors matched with `/proc/net/tcp`'s listening sockets.
pub(crate) fn listening_addrs(pid: u32) -> Vec<SocketAddr> {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    let inodes: Vec<String> = fds
        .filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .filter_map(|target| {
            let t = target.to_string_lossy();
            Some(t.strip_prefix("socket:[")?.strip_suffix(']')?.to_owned())
        })
        .collect();
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    let mut ports: Vec<SocketAddr> = table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            // local address (hex, the IPv4 address in host order), state
            // (0A: LISTEN), ..., inode.
            let (local, state, inode) = (f.get(1)?, f.get(3)?, f.get(9)?);
            if *state != "0A" || !inodes.iter().any(|i| i == inode) {
                return None;
            }
            let (ip, port) = local.split_once(':')?;
            let ip = u32::from_str_radix(ip, 16).ok()?.swap_bytes();
            let port = u16::from_str_radix(port, 16).ok()?;
            Some(SocketAddr::from((std::net::Ipv4Addr::from(ip), port)))
        })
        .collect();
    ports.sort_unstable();
    ports
}

/// The pid a daemon wrote to `pid_file` once it differs from `old`.
pub(crate) fn daemon_pid(pid_file: &Path, old: Option<u32>) -> u32 {
    let found = wait_until(Duration::from_secs(30), || {
        let pid: u32 = std::fs::read_to_string(pid_file)
            .ok()?
            .trim()
            .parse()
            .ok()?;
        (Some(pid) != old && Path::new(&format!("/proc/{pid}")).exists()).then_some(pid)
    });
    found.unwrap_or_else(|| panic!("no new pid in {}", pid_file.display()))
}

/// Polls `probe` every 20 ms until it gives a value or `within` passes.
pub(crate) fn wait_until<T>(within: Duration, mut probe: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + within;
    loop {
        if let Some(v) = probe() {
            return Some(v);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Stops the daemons this test started (by the pid in their file) if it
/// fails before it stops them itself.
pub(crate) struct Daemon(pub(crate) PathBuf);

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Ok(pid) = std::fs::read_to_string(&self.0) {
            let _ = Command::new("kill").args(["-KILL", pid.trim()]).status();
        }
    }
}

/// A run of the binary that must succeed, within a minute (a daemon's
/// parent exits 0 once the daemon is ready for its sockets).
pub(crate) fn run_ok(bin: &str, args: &[&str], conf: &Path) {
    let mut child = Command::new(bin)
        .args(args)
        .arg(conf)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the binary");
    let exited = wait_until(Duration::from_secs(60), || child.try_wait().ok().flatten());
    if exited.is_none() {
        let _ = child.kill();
    }
    let out = child.wait_with_output().expect("its output");
    assert!(
        exited.is_some(),
        "{args:?} still runs after a minute: it waits in the foreground"
    );
    assert!(
        out.status.success(),
        "{args:?}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A cold board, the same board cached, and an MCP call: each `200`.
fn serves_after_the_fork(api: SocketAddr, permission: &str) {
    let target = format!("/api/search?url={}", link(BOARD, permission));
    let cold = request(api, "GET", &target, &[]);
    assert_eq!(cold.status, 200, "{}", String::from_utf8_lossy(&cold.body));
    let timing = cold.header("server-timing").unwrap_or_default();
    assert!(timing.contains("miss"), "a cold load: {timing}");
    let cached = request(api, "GET", &target, &[]);
    assert_eq!(cached.status, 200);
    let timing = cached.header("server-timing").unwrap_or_default();
    assert!(timing.contains("hit"), "a cached answer: {timing}");
    let share = format!("https://app.milanote.com/{BOARD}/slug?p={permission}-mcp");
    let r = crate::common::mcp::call(api, "read_board", serde_json::json!({"url": share}));
    let result = crate::common::mcp::result(&r);
    assert_eq!(result["isError"], false, "{result}");
}

/// A fresh directory for a daemon named `tag`, and its configuration there:
/// the pid file, upgrade socket and error log in the directory, a 1 s grace
/// period, the sample upstream as provider, and the API on `127.0.0.1:0`,
/// followed by what `server_extra` gives for the directory (more
/// `board_api.server` lines).
fn daemon_dir(tag: &str, server_extra: impl FnOnce(&Path) -> String) -> (PathBuf, PathBuf) {
    let dir: PathBuf = std::env::temp_dir().join(format!("sba-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let conf = dir.join("gateway.yaml");
    let server_extra = server_extra(&dir);
    std::fs::write(
        &conf,
        format!(
            "version: 1\nthreads: 2\npid_file: {}\nupgrade_sock: {}\nerror_log: {}\n\
             grace_period_seconds: 1\ngraceful_shutdown_timeout_seconds: 1\n\
             board_api:\n  provider:\n    origin: {}\n  server:\n    listen: [\"127.0.0.1:0\"]\n{server_extra}",
            dir.join("pid").display(),
            dir.join("upgrade.sock").display(),
            dir.join("error.log").display(),
            sample().origin(),
        ),
    )
    .expect("write config");
    (dir, conf)
}

/// The binary as `deploy/shared-board-api.service` runs it: `-t -d`, then
/// `-d` (the parent exits once the daemon has forked), then the unit's
/// reload (`-t -u`, `SIGQUIT` to the old daemon, `-u -d`), then `SIGTERM`.
/// After each fork a cold board, a cached one and an MCP call answer `200`,
/// and the access log and the operator listener work.
#[test]
fn the_binary_serves_as_the_systemd_unit_runs_it() {
    let bin = env!("CARGO_BIN_EXE_shared-board-api");
    let (dir, conf) = daemon_dir("daemon", |dir| {
        format!(
            "    access_log: {}\n    metrics:\n      listen: \"127.0.0.2:0\"\n",
            dir.join("access.log").display()
        )
    });
    let access = dir.join("access.log");
    let pid_file = dir.join("pid");
    let _stop = Daemon(pid_file.clone());
    let log = || std::fs::read_to_string(dir.join("error.log")).unwrap_or_default();

    // ExecStartPre, then ExecStart.
    run_ok(bin, &["-t", "-d", "-c"], &conf);
    run_ok(bin, &["-d", "-c"], &conf);
    let first = daemon_pid(&pid_file, None);
    let ports = wait_until(Duration::from_secs(30), || {
        let p = listening_addrs(first);
        (p.len() == 2).then_some(p)
    })
    .unwrap_or_else(|| panic!("the daemon never listened on two ports\n{}", log()));
    // Pingora keeps one socket per address text, so the operator listener
    // is on another loopback address than the API's `127.0.0.1:0`.
    let (api, operator) = (ports[0], ports[1]);
    serves_after_the_fork(api, "daemon-first");
    let metrics = request(operator, "GET", "/metrics", &[]);
    let text = String::from_utf8_lossy(&metrics.body);
    assert!(
        text.contains("board_api_requests_total"),
        "metrics after the fork:\n{text}"
    );
    let logged = wait_until(Duration::from_secs(10), || {
        let lines = std::fs::read_to_string(&access).ok()?;
        lines.contains("/api/search").then_some(())
    });
    assert!(logged.is_some(), "the access log is written after the fork");

    // ExecReload, in the unit's order.
    run_ok(bin, &["-t", "-u", "-c"], &conf);
    let status = Command::new("kill")
        .args(["-QUIT", &first.to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    run_ok(bin, &["-u", "-d", "-c"], &conf);
    let second = daemon_pid(&pid_file, Some(first));
    serves_after_the_fork(api, "daemon-second");
    assert_eq!(request(operator, "GET", "/healthz", &[]).status, 200);

    // ExecStop.
    let status = Command::new("kill")
        .args(["-TERM", &second.to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let gone = wait_until(Duration::from_secs(30), || {
        (!Path::new(&format!("/proc/{second}")).exists()).then_some(())
    });
    assert!(gone.is_some(), "the daemon exits on SIGTERM\n{}", log());
    assert!(
        !log().contains("panicked"),
        "no panic in the daemon's log:\n{}",
        log()
    );
    let errors: Vec<String> = log()
        .lines()
        .filter(|l| l.contains(" ERROR "))
        .map(str::to_owned)
        .collect();
    assert!(errors.is_empty(), "ERROR lines: {errors:#?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two upgrades and a stop logged no `ERROR` (docs/operations.md: `ERROR`
/// is for our bugs), Pingora's wait for the sockets included.
fn no_error_line(log: &str) {
    let errors: Vec<&str> = log.lines().filter(|l| l.contains(" ERROR ")).collect();
    assert!(errors.is_empty(), "ERROR lines: {errors:#?}\n{log}");
    assert!(
        log.contains("No incoming socket transfer"),
        "the new process waited for the sockets (logged at INFO)\n{log}"
    );
}

/// A shell line as the operator types it, which must succeed.
fn sh_ok(line: &str) {
    let out = Command::new("sh")
        .args(["-c", line])
        .output()
        .expect("run sh");
    assert!(
        out.status.success(),
        "{line}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Whether process `pid` is gone (or a zombie nobody reaped).
pub(crate) fn gone(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map_or(true, |stat| stat.split_whitespace().nth(2) == Some("Z"))
}

/// Clients on kept-alive and on new connections, until `stop`.
fn load(addr: SocketAddr, stop: &Arc<AtomicBool>) -> Vec<std::thread::JoinHandle<Outcome>> {
    [true, true, false, false]
        .into_iter()
        .map(|keep_alive| {
            let stop = stop.clone();
            std::thread::spawn(move || client(addr, keep_alive, stop))
        })
        .collect()
}

#[test]
fn the_upgrade_typed_as_documented_refuses_no_request() {
    let bin = env!("CARGO_BIN_EXE_shared-board-api");
    let (dir, conf) = daemon_dir("upgrade", |_| String::new());
    let pid_file = dir.join("pid");
    let error_log = dir.join("error.log");
    let _stop = Daemon(pid_file.clone());
    let log = || std::fs::read_to_string(&error_log).unwrap_or_default();
    let c = conf.display();
    let p = pid_file.display();

    // The running process (docs/operations.md, "The process").
    run_ok(bin, &["-d", "-c"], &conf);
    let first = daemon_pid(&pid_file, None);
    let addr = wait_until(Duration::from_secs(30), || {
        listening_addrs(first).first().copied()
    })
    .unwrap_or_else(|| panic!("the daemon never listened\n{}", log()));
    serves_after_the_fork(addr, "documented-first");

    let stop = Arc::new(AtomicBool::new(false));
    let clients = load(addr, &stop);

    // 1-3 as documented, one line after another.
    sh_ok(&format!("{bin} -t -u -c {c}"));
    sh_ok(&format!("kill -QUIT $(cat {p})"));
    // The old process waits for a new one, serving: the operator may take
    // their time over the next line.
    let waiting = wait_until(Duration::from_secs(30), || {
        log().contains("SIGQUIT: waiting").then_some(())
    });
    assert!(
        waiting.is_some(),
        "the old process says it waits\n{}",
        log()
    );
    assert_eq!(
        request(addr, "GET", "/nothing", &[]).status,
        404,
        "still served"
    );
    sh_ok(&format!("{bin} -u -d -c {c}"));
    let second = daemon_pid(&pid_file, Some(first));
    let old_gone = wait_until(Duration::from_secs(30), || gone(first).then_some(()));
    assert!(old_gone.is_some(), "the old process exits\n{}", log());
    serves_after_the_fork(addr, "documented-second");

    // The other way round: -u -d first, then SIGQUIT to the old process
    // (its pid moved to pid_file.old) within Pingora's wait of ~5 s.
    sh_ok(&format!("{bin} -u -d -c {c}"));
    let third = daemon_pid(&pid_file, Some(second));
    sh_ok(&format!("kill -QUIT $(cat {p}.old)"));
    let old_gone = wait_until(Duration::from_secs(30), || gone(second).then_some(()));
    assert!(old_gone.is_some(), "the second process exits\n{}", log());
    serves_after_the_fork(addr, "documented-third");

    stop.store(true, Ordering::SeqCst);
    let outcomes: Vec<Outcome> = clients
        .into_iter()
        .map(|c| c.join().expect("client thread"))
        .collect();
    sh_ok(&format!("kill -TERM {third}"));
    let failures: Vec<&String> = outcomes.iter().flat_map(|o| &o.failures).collect();
    let answered: usize = outcomes.iter().map(|o| o.answered).sum();
    eprintln!(
        "two upgrades under load: {answered} answered, {} refused or failed, closed \
         before an answer and sent again (per client): {:?}",
        failures.len(),
        outcomes
            .iter()
            .map(|o| o.idle_closes.len())
            .collect::<Vec<_>>()
    );
    assert!(failures.is_empty(), "{failures:#?}\n{}", log());
    for o in &outcomes {
        assert!(o.idle_closes.len() <= 4, "{:?}", o.idle_closes);
        assert!(o.answered > 10, "each client kept being answered");
    }
    let stopped = wait_until(Duration::from_secs(30), || gone(third).then_some(()));
    assert!(stopped.is_some(), "the daemon exits on SIGTERM\n{}", log());
    assert!(!log().contains("panicked"), "{}", log());
    no_error_line(&log());
    assert!(
        !pid_file.exists(),
        "a clean stop removes the pid file it wrote\n{}",
        log()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

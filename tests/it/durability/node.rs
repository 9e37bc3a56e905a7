//! One node: the real binary run as docs/operations.md runs it, a daemon
//! (`-d`) with its own pid file, upgrade socket and error log in a folder
//! of its own, listening on `127.0.0.1:0` (the API) and `127.0.0.2:0` (the
//! operator listener), the ports read back from the kernel. Killed with
//! SIGKILL, upgraded with `-t -u`, `SIGQUIT`, `-u -d`. Every process it
//! started is killed on drop (the pids read from its pid file).

use crate::upgrade::{gone, listening_addrs, wait_until};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_shared-board-api");

/// The job every scenario counts.
pub const JOB: &str = "trip";

/// The variables a node reads its jobs' secrets from.
pub const LINK_VAR: &str = "SBAPI_FAULT_LINK";
pub const URL_VAR: &str = "SBAPI_FAULT_URL";
pub const SECRET_VAR: &str = "SBAPI_FAULT_SECRET";

/// A node's jobs: `trip` (what is counted; every 10 s), and in the
/// rolling deploys `other` (every hour: it runs at start only), which
/// keeps the watch service of a node without `trip` running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Jobs {
    Trip,
    Other,
    OtherAndTrip,
}

impl Jobs {
    pub fn has_trip(self) -> bool {
        self != Jobs::Other
    }

    fn yaml(self) -> String {
        let job = |id: &str, every: &str| {
            format!(
                "      - id: {id}\n        url_env: {LINK_VAR}\n        every: {every}\n        max_attempts: 50\n        webhook:\n          url_env: {URL_VAR}\n          secret_env: {SECRET_VAR}\n"
            )
        };
        match self {
            Jobs::Trip => job(JOB, "10s"),
            Jobs::Other => job("other", "1h"),
            Jobs::OtherAndTrip => job("other", "1h") + &job(JOB, "10s"),
        }
    }
}

pub struct Node {
    pub name: String,
    dir: PathBuf,
    origin: String,
    /// `board_api` lines: the cache and the store.
    store: String,
    env: Vec<(String, String)>,
    pub jobs: Jobs,
    pub pid: Option<u32>,
    pub operator: Option<SocketAddr>,
    started: Vec<u32>,
}

impl Node {
    pub fn new(
        name: &str,
        dir: &Path,
        origin: &str,
        store: &str,
        env: Vec<(String, String)>,
        jobs: Jobs,
    ) -> Node {
        let dir = dir.join(format!("node-{name}"));
        std::fs::create_dir_all(&dir).expect("a node's folder");
        Node {
            name: name.to_owned(),
            dir,
            origin: origin.to_owned(),
            store: store.to_owned(),
            env,
            jobs,
            pid: None,
            operator: None,
            started: Vec::new(),
        }
    }

    fn conf(&self) -> PathBuf {
        self.dir.join("gateway.yaml")
    }

    fn pid_file(&self) -> PathBuf {
        self.dir.join("pid")
    }

    pub fn error_log(&self) -> String {
        std::fs::read_to_string(self.dir.join("error.log")).unwrap_or_default()
    }

    fn write_conf(&self) {
        let d = self.dir.display();
        let text = format!(
            "version: 1\nthreads: 2\npid_file: {d}/pid\nupgrade_sock: {d}/upgrade.sock\n\
             error_log: {d}/error.log\ngrace_period_seconds: 1\ngraceful_shutdown_timeout_seconds: 1\n\
             board_api:\n  provider:\n    origin: {}\n{}  watch:\n    jobs:\n{}  server:\n\
             \x20   listen: [\"127.0.0.1:0\"]\n    metrics:\n      listen: \"127.0.0.2:0\"\n",
            self.origin,
            self.store,
            self.jobs.yaml()
        );
        std::fs::write(self.conf(), text).expect("write the configuration");
    }

    fn read_pid(&self) -> Option<u32> {
        std::fs::read_to_string(self.pid_file())
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// One command of the binary that must exit 0 within a minute (a
    /// daemon's parent exits once the daemon runs).
    fn run_bin(&self, args: &[&str]) -> Result<(), String> {
        let out_path = self.dir.join("command.log");
        let out = std::fs::File::create(&out_path).map_err(|e| e.to_string())?;
        let mut child = Command::new(BIN)
            .args(args)
            .arg(self.conf())
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(out)
            .spawn()
            .map_err(|e| format!("{BIN}: {e}"))?;
        let exited = wait_until(Duration::from_secs(60), || child.try_wait().ok().flatten());
        let said = || std::fs::read_to_string(&out_path).unwrap_or_default();
        match exited {
            Some(status) if status.success() => Ok(()),
            Some(status) => Err(format!("node {} {args:?}: {status}: {}", self.name, said())),
            None => {
                let _ = child.kill();
                let _ = child.wait();
                Err(format!(
                    "node {} {args:?}: still running after 60 s",
                    self.name
                ))
            }
        }
    }

    /// Waits for the daemon that replaces `old` in the pid file, its
    /// operator listener and `/readyz`.
    fn adopt(&mut self, old: Option<u32>) -> Result<(), String> {
        let pid = wait_until(Duration::from_secs(30), || {
            self.read_pid()
                .filter(|p| Some(*p) != old && Path::new(&format!("/proc/{p}")).exists())
        })
        .ok_or_else(|| format!("node {}: no new pid\n{}", self.name, self.error_log()))?;
        self.started.push(pid);
        self.pid = Some(pid);
        let operator_ip = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
        let operator = wait_until(Duration::from_secs(30), || {
            listening_addrs(pid)
                .into_iter()
                .find(|a| a.ip() == operator_ip)
        })
        .ok_or_else(|| format!("node {}: never listened\n{}", self.name, self.error_log()))?;
        self.operator = Some(operator);
        wait_until(Duration::from_secs(30), || {
            (call(operator, "GET", "/readyz").map(|r| r.0) == Some(200)).then_some(())
        })
        .ok_or_else(|| format!("node {}: never ready", self.name))
    }

    /// `-d`: starts the daemon (the configuration written afresh).
    pub fn start(&mut self) -> Result<(), String> {
        self.write_conf();
        let old = self.read_pid();
        self.run_bin(&["-d", "-c"])?;
        self.adopt(old)
    }

    pub fn is_up(&self) -> bool {
        self.pid.is_some_and(|p| !gone(p))
    }

    /// SIGKILL, and waits until the process is gone.
    pub fn kill(&mut self) {
        self.operator = None;
        if let Some(pid) = self.pid.take() {
            signal(pid, libc::SIGKILL);
            let _ = wait_until(Duration::from_secs(20), || gone(pid).then_some(()));
        }
    }

    /// The documented upgrade, with the configuration written afresh (a
    /// rolling deploy changes it): `-t -u`, `SIGQUIT` to the running
    /// process, `-u -d`; returns once the old process is gone.
    pub fn upgrade(&mut self) -> Result<(), String> {
        let old = self
            .pid
            .ok_or_else(|| format!("node {} is down", self.name))?;
        self.write_conf();
        self.run_bin(&["-t", "-u", "-c"])?;
        let logged = self.error_log().len();
        signal(old, libc::SIGQUIT);
        wait_until(Duration::from_secs(30), || {
            let log = self.error_log();
            log.get(logged..)
                .is_some_and(|l| l.contains("SIGQUIT: waiting"))
                .then_some(())
        })
        .ok_or_else(|| {
            format!(
                "node {}: SIGQUIT not taken\n{}",
                self.name,
                self.error_log()
            )
        })?;
        self.run_bin(&["-u", "-d", "-c"])?;
        self.adopt(Some(old))?;
        wait_until(Duration::from_secs(30), || gone(old).then_some(()))
            .ok_or_else(|| format!("node {}: the old process never exited", self.name))
    }

    /// The job's entry of `GET /watch`, when the node answers and has it.
    pub fn job(&self) -> Option<Value> {
        let (status, body) = call(self.operator?, "GET", "/watch")?;
        if status != 200 {
            return None;
        }
        let v: Value = serde_json::from_slice(&body).ok()?;
        v["jobs"]
            .as_array()?
            .iter()
            .find(|j| j["id"] == JOB)
            .cloned()
    }

    /// `POST /watch/trip/run`, when the node has the job (best effort).
    pub fn run_now(&self) {
        if let (Some(op), true) = (self.operator, self.jobs.has_trip()) {
            let _ = call(op, "POST", &format!("/watch/{JOB}/run"));
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        if let Some(pid) = self.read_pid() {
            self.started.push(pid);
        }
        for &pid in &self.started {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            if !gone(pid) && String::from_utf8_lossy(&cmdline).contains("shared-board-api") {
                signal(pid, libc::SIGKILL);
            }
        }
    }
}

fn signal(pid: u32, sig: i32) {
    if let Ok(pid) = i32::try_from(pid) {
        // SAFETY: a signal to a process this test started, by its id.
        unsafe { libc::kill(pid, sig) };
    }
}

/// One request on a fresh connection, bounded (2 s to connect, 5 s to
/// answer); `None` when the node does not answer (it may be down).
pub fn call(addr: SocketAddr, method: &str, target: &str) -> Option<(u16, Vec<u8>)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    s.set_write_timeout(Some(Duration::from_secs(5))).ok()?;
    let req = format!(
        "{method} {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: 0\r\nX-Requested-By: durability\r\n\r\n"
    );
    s.write_all(req.as_bytes()).ok()?;
    let mut raw = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut buf = [0u8; 8192];
    while Instant::now() < deadline {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
            Err(_) => break,
        }
    }
    if !raw.windows(4).any(|w| w == b"\r\n\r\n") {
        return None;
    }
    let r = crate::common::parse_response(&raw, false);
    Some((r.status, r.body))
}

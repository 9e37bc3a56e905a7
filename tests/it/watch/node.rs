//! One node of tests/watch.rs: the real binary as a child process, its
//! listeners bound to port 0 here and handed over through Pingora's upgrade
//! socket, its stderr kept.

use super::receiver::Receiver;
use super::{secret, share_link, wait_until, HOOK_TOKEN, PERMISSION};
use crate::common::request;
use pingora_core::server::Fds;
use serde_json::Value;
use shared_board_api::demo::SampleUpstream;
use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

static DIRS: AtomicU64 = AtomicU64::new(0);

pub fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "sba-watch-{}-{tag}-{}",
        std::process::id(),
        DIRS.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    dir
}

/// The real binary as one node: its API and operator listeners bound here
/// and handed over; its stderr kept.
pub struct Node {
    pub child: Child,
    /// The API's listener.
    pub api: SocketAddr,
    pub metrics: SocketAddr,
    log: Arc<Mutex<Vec<String>>>,
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Node {
    /// Starts a node in `dir` with `store` lines under `board_api` (the
    /// kept versions' store and anything beside it).
    pub fn start(
        dir: &Path,
        upstream: &SampleUpstream,
        receiver: &Receiver,
        api: &str,
        max_attempts: u32,
    ) -> Node {
        Node::start_jobs(
            dir,
            upstream,
            api,
            "10s",
            &[("trip", receiver, max_attempts)],
        )
    }

    /// Starts a node with `jobs` (id, receiver, `max_attempts`), each
    /// watching the test board `every` (`10s`, `1h`).
    pub fn start_jobs(
        dir: &Path,
        upstream: &SampleUpstream,
        api: &str,
        every: &str,
        jobs: &[(&str, &Receiver, u32)],
    ) -> Node {
        Node::start_with(dir, upstream, api, every, jobs, "", &[])
    }

    /// [`Node::start_jobs`] with `server` lines under `board_api.server`
    /// (keys at column 4) and `env` set for the binary.
    pub fn start_with(
        dir: &Path,
        upstream: &SampleUpstream,
        api: &str,
        every: &str,
        jobs: &[(&str, &Receiver, u32)],
        server: &str,
        env: &[(&str, &str)],
    ) -> Node {
        let listeners: Vec<TcpListener> = (0..2)
            .map(|_| TcpListener::bind("127.0.0.1:0").expect("bind"))
            .collect();
        let (main, metrics) = (
            listeners[0].local_addr().unwrap(),
            listeners[1].local_addr().unwrap(),
        );
        let sock = dir.join(format!("upgrade-{}.sock", main.port()));
        let conf = dir.join(format!("node-{}.yaml", main.port()));
        let text = format!(
            "version: 1\nthreads: 2\npid_file: {dir}/pid\nupgrade_sock: {sock}\n\
             grace_period_seconds: 0\ngraceful_shutdown_timeout_seconds: 10\n\
             board_api:\n  provider:\n    origin: {origin}\n{api}\
             \n  watch:\n    jobs:\n{jobs}\
             \x20 server:\n    listen: [\"{main}\"]\n    metrics:\n      listen: \"{metrics}\"\n{server}",
            dir = dir.display(),
            sock = sock.display(),
            origin = upstream.origin(),
            jobs = jobs
                .iter()
                .enumerate()
                .map(|(at, (id, _, max_attempts))| format!(
                    "      - id: {id}\n        url_env: SBAPI_TEST_WATCH_LINK\n\
                     \x20       every: {every}\n        max_attempts: {max_attempts}\n        webhook:\n\
                     \x20         url_env: SBAPI_TEST_WATCH_URL_{at}\n          secret_env: SBAPI_TEST_WATCH_SECRET\n"
                ))
                .collect::<String>(),
        );
        std::fs::write(&conf, text).expect("write the configuration");
        let mut child = Command::new(env!("CARGO_BIN_EXE_shared-board-api"))
            .arg("-u")
            .arg("-c")
            .arg(&conf)
            .env("RUST_LOG", "info")
            .env("SBAPI_TEST_WATCH_LINK", share_link())
            .envs(jobs.iter().enumerate().map(|(at, (_, receiver, _))| {
                (format!("SBAPI_TEST_WATCH_URL_{at}"), receiver.url())
            }))
            .env("SBAPI_TEST_WATCH_SECRET", secret())
            .env("SBAPI_TEST_FLEET_KEY", "test-fleet-key-0123456789abcdef!")
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the binary");
        let log = Arc::new(Mutex::new(Vec::new()));
        let stderr = child.stderr.take().expect("stderr");
        let lines = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                lines.lock().unwrap().push(line);
            }
        });
        let deadline = Instant::now() + Duration::from_secs(60);
        while !sock.exists() {
            assert!(
                Instant::now() < deadline,
                "no upgrade socket: {:?}",
                log.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(20));
        let mut fds = Fds::new();
        for l in &listeners {
            l.set_nonblocking(true).expect("non-blocking");
            fds.add(l.local_addr().unwrap().to_string(), l.as_raw_fd());
        }
        fds.send_to_sock(sock.to_string_lossy().as_ref())
            .expect("hand the listeners over");
        let node = Node {
            child,
            api: main,
            metrics,
            log,
        };
        wait_until("the operator listener answers /readyz", || {
            std::net::TcpStream::connect(metrics).is_ok()
                && request(metrics, "GET", "/readyz", &[]).status == 200
        });
        node
    }

    /// The job's entry of `GET /watch`.
    pub fn job(&self) -> Value {
        self.watch()["jobs"][0].clone()
    }

    /// `GET /watch`.
    pub fn watch(&self) -> Value {
        let r = request(self.metrics, "GET", "/watch", &[]);
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        r.json()
    }

    /// Job `id`'s entry of `GET /watch`.
    pub fn job_named(&self, id: &str) -> Value {
        let all = self.watch()["jobs"].as_array().cloned().unwrap_or_default();
        all.into_iter()
            .find(|j| j["id"] == id)
            .unwrap_or(Value::Null)
    }

    pub fn run_now(&self) {
        self.run_job("trip");
    }

    /// `POST /watch/<id>/run`, with the header the operator listener asks
    /// of a `POST`.
    pub fn run_job(&self, id: &str) {
        let r = request(
            self.metrics,
            "POST",
            &format!("/watch/{id}/run"),
            &[("X-Requested-By", "test")],
        );
        assert_eq!(r.status, 202, "{}", String::from_utf8_lossy(&r.body));
    }

    /// Whether a line the node logged contains `text`.
    pub fn logged(&self, text: &str) -> bool {
        self.log.lock().unwrap().iter().any(|l| l.contains(text))
    }

    pub fn metric(&self, line_start: &str) -> f64 {
        let r = request(
            self.metrics,
            "GET",
            "/metrics",
            &[("Accept-Encoding", "identity")],
        );
        String::from_utf8_lossy(&r.body)
            .lines()
            .find(|l| l.starts_with(line_start))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0)
    }

    /// Sends SIGTERM and waits (bounded) for a clean exit that stopped the
    /// watch jobs.
    pub fn stop(mut self) {
        let pid = i32::try_from(self.child.id()).expect("a pid");
        // SAFETY: a signal to our own child, by its id.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
        let deadline = Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                break status;
            }
            assert!(Instant::now() < deadline, "no exit after SIGTERM");
            std::thread::sleep(Duration::from_millis(50));
        };
        assert!(status.success(), "{status:?}");
        wait_until("the log says the watch jobs stopped", || {
            self.log
                .lock()
                .unwrap()
                .iter()
                .any(|l| l.contains("watch: stopped"))
        });
    }

    /// No secret of the job in anything the node logged.
    pub fn assert_log_is_clean(&self) {
        let log = self.log.lock().unwrap();
        for line in log.iter() {
            for secret in [PERMISSION, HOOK_TOKEN, "/hooks/in", "whsec_"] {
                assert!(!line.contains(secret), "{secret} logged: {line}");
            }
        }
    }
}

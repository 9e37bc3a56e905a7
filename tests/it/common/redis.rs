//! Real Redis servers for the fleet tier's tests, started and stopped by
//! the tests themselves (Debian's `redis-server`; `./run test` installs it).
//!
//! A single server listens only on a unix socket in a temporary folder
//! (`--port 0`: no TCP at all), and the gateways reach it through
//! [`Proxy`], a loopback TCP proxy of ours bound to port 0, so no port is
//! ever guessed. The proxy also plays the slow network (a delay on every
//! reply) and outlives a killed and restarted server.
//!
//! Redis Cluster cannot work that way: its nodes announce TCP ports to
//! clients and talk to each other on port + 10000. [`Cluster`] lets each
//! node bind a random high port itself and starts it again on another one
//! when the bind fails (nothing is probed and released).
//!
//! A test that cannot start its server fails with a message that says why;
//! it never passes quietly.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const SERVER: &str = "redis-server";

fn temp_dir(tag: &str) -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "sba-redis-{}-{tag}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::create_dir_all(&dir).expect("a temporary folder for redis");
    dir
}

/// Starts `redis-server` with `args` and waits for its "ready to accept
/// connections" line (an event, not a sleep). `Err` with its output when
/// it exits first.
fn spawn_ready(args: &[String]) -> Result<Child, String> {
    let mut child = Command::new(SERVER)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| {
            format!("cannot start {SERVER} ({e}): install it (apt-get install redis-server; ./run test does)")
        })?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut seen = String::new();
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            seen.push_str(&line);
            seen.push('\n');
            if line
                .to_ascii_lowercase()
                .contains("ready to accept connections")
            {
                let _ = tx.send(Ok(()));
                // Keep draining so the server never blocks on its stdout.
                continue;
            }
        }
        let _ = tx.send(Err(seen));
    });
    match rx.recv_timeout(Duration::from_secs(20)) {
        Ok(Ok(())) => Ok(child),
        Ok(Err(output)) => {
            let _ = child.wait();
            Err(format!("{SERVER} exited: {output}"))
        }
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            Err(format!("{SERVER} not ready within 20 s"))
        }
    }
}

/// The fleet key of every test node: 32 bytes, set in this process's
/// environment once (before the first gateway reads it).
pub const FLEET_KEY: &[u8] = b"test-fleet-key-0123456789abcdef!";

/// The name of the environment variable holding [`FLEET_KEY`], set on
/// first use; for `secret_env`.
pub fn fleet_key_var() -> &'static str {
    const VAR: &str = "SBAPI_TEST_FLEET_KEY";
    static SET: std::sync::Once = std::sync::Once::new();
    SET.call_once(|| std::env::set_var(VAR, std::str::from_utf8(FLEET_KEY).expect("ASCII")));
    VAR
}

/// The level that answered (`Server-Timing: cache;desc=<level>`).
pub fn cache_level(r: &super::Response) -> String {
    let timing = r.header("server-timing").unwrap_or_default();
    timing
        .strip_prefix("cache;desc=")
        .and_then(|rest| rest.split(',').next())
        .unwrap_or_default()
        .to_owned()
}

pub use super::wait_for;

/// One Redis server on a unix socket.
pub struct Redis {
    dir: PathBuf,
    child: Option<Child>,
    /// More `redis-server` arguments, given on every (re)start.
    extra: Vec<String>,
}

impl Redis {
    /// Creates the ACL user of docs/fleet.md's `ACL SETUSER` line, as an
    /// operator pastes it, with `password`; the password.
    pub fn documented_acl_user<'a>(&self, password: &'a str) -> &'a str {
        let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/fleet.md"))
            .expect("docs/fleet.md");
        let rules = docs
            .lines()
            .find_map(|l| l.trim().strip_prefix("`ACL SETUSER "))
            .and_then(|l| l.strip_suffix('`'))
            .expect("docs/fleet.md has an ACL SETUSER line");
        let secret = format!(">{password}");
        let mut args = vec!["acl", "setuser"];
        args.extend(rules.split_whitespace().map(|r| {
            if r == ">PASSWORD" {
                secret.as_str()
            } else {
                r
            }
        }));
        assert_eq!(self.cli(&args), "OK");
        password
    }

    pub fn start() -> Redis {
        Redis::start_with(&[])
    }

    /// [`Redis::start`] with more `redis-server` arguments (e.g.
    /// `--enable-debug-command local`, which `DEBUG SLEEP` needs).
    pub fn start_with(extra: &[&str]) -> Redis {
        let mut redis = Redis {
            dir: temp_dir("single"),
            child: None,
            extra: extra.iter().map(|s| s.to_string()).collect(),
        };
        redis.restart();
        redis
    }

    pub fn socket(&self) -> PathBuf {
        self.dir.join("redis.sock")
    }

    /// Starts it again (after [`Redis::kill`]) on the same socket.
    pub fn restart(&mut self) {
        let mut args: Vec<String> = [
            "--port",
            "0",
            "--unixsocket",
            &self.socket().to_string_lossy(),
            "--unixsocketperm",
            "700",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            &self.dir.to_string_lossy(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.extend(self.extra.iter().cloned());
        self.child = Some(spawn_ready(&args).unwrap_or_else(|e| panic!("{e}")));
    }

    /// SIGKILL, as a crash or an OOM kill would end it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_file(self.socket());
    }

    /// `redis-cli` on the socket; its output, trimmed.
    pub fn cli(&self, args: &[&str]) -> String {
        cli(&["-s", &self.socket().to_string_lossy()], args)
    }

    /// `SET key value` with any bytes (`redis-cli -x` reads the value from
    /// stdin); then `PEXPIRE` when `px` is given.
    pub fn set_bytes(&self, key: &str, value: &[u8], px: Option<u64>) {
        use std::io::Write;
        let mut child = Command::new("redis-cli")
            .args(["-s", &self.socket().to_string_lossy(), "-x", "set", key])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run redis-cli ({e}): install redis-tools"));
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(value)
            .expect("value written");
        let out = child.wait_with_output().expect("redis-cli ends");
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "OK");
        if let Some(ms) = px {
            assert_eq!(self.cli(&["pexpire", key, &ms.to_string()]), "1");
        }
    }

    /// Every key, by `SCAN`.
    pub fn keys(&self) -> Vec<String> {
        let out = cli(
            &["-s", &self.socket().to_string_lossy(), "--scan"],
            &["--pattern", "*"],
        );
        out.lines()
            .map(str::to_owned)
            .filter(|k| !k.is_empty())
            .collect()
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn cli(target: &[&str], args: &[&str]) -> String {
    let out = Command::new("redis-cli")
        .args(target)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run redis-cli ({e}): install redis-tools"));
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A loopback TCP proxy in front of a unix socket, on its own thread and
/// runtime; replies from the server are held back by the current delay.
pub struct Proxy {
    pub addr: std::net::SocketAddr,
    delay_ms: Arc<AtomicU64>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Proxy {
    pub fn start(socket: &Path) -> Proxy {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        listener.set_nonblocking(true).expect("non-blocking");
        let addr = listener.local_addr().expect("bound address");
        let delay_ms = Arc::new(AtomicU64::new(0));
        let (tx, mut rx) = tokio::sync::oneshot::channel();
        let socket = socket.to_path_buf();
        let delay = Arc::clone(&delay_ms);
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .expect("proxy runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                loop {
                    tokio::select! {
                        _ = &mut rx => return,
                        accepted = listener.accept() => {
                            let Ok((client, _)) = accepted else { continue };
                            let socket = socket.clone();
                            let delay = Arc::clone(&delay);
                            tokio::spawn(async move { relay(client, &socket, delay).await });
                        }
                    }
                }
            });
        });
        Proxy {
            addr,
            delay_ms,
            stop: Some(tx),
            thread: Some(thread),
        }
    }

    /// `redis://` URL of the proxy.
    pub fn url(&self) -> String {
        format!("redis://{}", self.addr)
    }

    /// Holds every reply back by `delay` from now on.
    pub fn set_delay(&self, delay: Duration) {
        self.delay_ms
            .store(delay.as_millis() as u64, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn relay(client: tokio::net::TcpStream, socket: &Path, delay: Arc<AtomicU64>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(server) = tokio::net::UnixStream::connect(socket).await else {
        return; // the server is down: the client sees a closed connection
    };
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let up = async {
        let _ = tokio::io::copy(&mut client_read, &mut server_write).await;
        let _ = server_write.shutdown().await;
    };
    let down = async {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match server_read.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let ms = delay.load(Ordering::SeqCst);
            if ms > 0 {
                tokio::time::sleep(Duration::from_millis(ms)).await;
            }
            if client_write.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
        let _ = client_write.shutdown().await;
    };
    tokio::join!(up, down);
}

/// A Redis Cluster of three masters on 127.0.0.1.
pub struct Cluster {
    dir: PathBuf,
    nodes: Vec<Child>,
    pub ports: Vec<u16>,
}

impl Cluster {
    pub fn start() -> Cluster {
        let dir = temp_dir("cluster");
        let mut nodes = Vec::new();
        let mut ports = Vec::new();
        let seed = std::process::id() as u64
            ^ std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos() as u64);
        let mut attempt = 0u64;
        while nodes.len() < 3 {
            attempt += 1;
            assert!(
                attempt < 60,
                "could not start 3 cluster nodes on free ports"
            );
            // 20000..=44999, so the bus port (+10000) stays below 55000.
            let port = 20_000
                + ((seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(attempt * 7919))
                    % 25_000) as u16;
            let node_dir = dir.join(port.to_string());
            std::fs::create_dir_all(&node_dir).expect("node folder");
            let args: Vec<String> = [
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                &node_dir.join("nodes.conf").to_string_lossy(),
                "--cluster-node-timeout",
                "5000",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                &node_dir.to_string_lossy(),
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            // A port (or its bus port) in use makes the node exit: try another.
            if let Ok(child) = spawn_ready(&args) {
                nodes.push(child);
                ports.push(port);
            }
        }
        let addrs: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
        let mut create = vec!["--cluster", "create"];
        create.extend(addrs.iter().map(String::as_str));
        create.push("--cluster-yes");
        let out = cli(&[], &create);
        let cluster = Cluster { dir, nodes, ports };
        // Wait (bounded) until every node reports the cluster up.
        let deadline = Instant::now() + Duration::from_secs(30);
        for port in &cluster.ports {
            loop {
                let info = cluster.cli(*port, &["cluster", "info"]);
                if info.contains("cluster_state:ok") {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "cluster never came up: {out}\n{info}"
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        cluster
    }

    pub fn cli(&self, port: u16, args: &[&str]) -> String {
        cli(&["-h", "127.0.0.1", "-p", &port.to_string()], args)
    }

    /// Keys held by the node on `port`.
    pub fn keys_on(&self, port: u16) -> Vec<String> {
        let out = cli(
            &["-h", "127.0.0.1", "-p", &port.to_string(), "--scan"],
            &["--pattern", "*"],
        );
        out.lines()
            .map(str::to_owned)
            .filter(|k| !k.is_empty())
            .collect()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for child in &mut self.nodes {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

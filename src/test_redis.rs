//! A real `redis-server` for the library's tests: started on a unix socket
//! in a temporary folder (no TCP port of its own) and reached through a
//! loopback proxy bound to port 0 that can hold replies back or cut them,
//! which is what a slow or paused server does to a node's calls.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub(crate) struct Server {
    dir: PathBuf,
    child: Child,
}

impl Server {
    pub(crate) fn start(extra: &[&str]) -> Server {
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "sba-outbox-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir_all(&dir).expect("a folder");
        let sock = dir.join("redis.sock");
        let mut args: Vec<String> = [
            "--port",
            "0",
            "--unixsocket",
            &sock.to_string_lossy(),
            "--unixsocketperm",
            "700",
            "--dir",
            &dir.to_string_lossy(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.extend(extra.iter().map(|s| s.to_string()));
        let mut child = Command::new("redis-server")
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server (apt-get install redis-server)");
        let out = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if line
                    .to_ascii_lowercase()
                    .contains("ready to accept connections")
                {
                    let _ = tx.send(());
                }
            }
        });
        rx.recv_timeout(Duration::from_secs(20))
            .expect("redis-server ready within 20 s");
        Server { dir, child }
    }

    pub(crate) fn socket(&self) -> PathBuf {
        self.dir.join("redis.sock")
    }

    pub(crate) fn cli(&self, args: &[&str]) -> String {
        let out = Command::new("redis-cli")
            .arg("-s")
            .arg(self.socket())
            .args(args)
            .output()
            .expect("redis-cli");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A loopback proxy (port 0) to the server's socket; replies wait `delay`,
/// and with `cut` set a connection is closed instead of answering (the
/// command reaches the server, its reply never the client).
pub(crate) struct Proxy {
    pub(crate) url: String,
    pub(crate) delay: Arc<AtomicU64>,
    pub(crate) cut: Arc<std::sync::atomic::AtomicBool>,
}

pub(crate) async fn proxy(socket: PathBuf) -> Proxy {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("redis://{}", listener.local_addr().expect("addr"));
    let delay = Arc::new(AtomicU64::new(0));
    let cut = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (d, c) = (Arc::clone(&delay), Arc::clone(&cut));
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let Ok(server) = tokio::net::UnixStream::connect(&socket).await else {
                continue;
            };
            let (d, c) = (Arc::clone(&d), Arc::clone(&c));
            tokio::spawn(async move {
                let (mut cr, mut cw) = client.into_split();
                let (mut sr, mut sw) = server.into_split();
                let up = async {
                    let _ = tokio::io::copy(&mut cr, &mut sw).await;
                };
                let down = async {
                    let mut buf = vec![0u8; 64 * 1024];
                    while let Ok(n) = sr.read(&mut buf).await {
                        if n == 0 {
                            break;
                        }
                        let ms = d.load(Ordering::SeqCst);
                        if ms > 0 {
                            tokio::time::sleep(Duration::from_millis(ms)).await;
                        }
                        if c.load(Ordering::SeqCst) {
                            break;
                        }
                        if cw.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                    let _ = cw.shutdown().await;
                };
                tokio::join!(up, down);
            });
        }
    });
    Proxy { url, delay, cut }
}

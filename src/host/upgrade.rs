//! The standalone binary's signal handling, so that both halves of a
//! zero-downtime upgrade are safe whatever the other does: `SIGQUIT` hands
//! the listening sockets over only once a new process (`-u`) waits for them
//! on `upgrade_sock`, and keeps serving when none comes. `main.rs` passes
//! [`HandOver`] to Pingora's `Server::run`.
//!
//! Pingora 0.9 alone, on `SIGQUIT`, tries to connect to `upgrade_sock` five
//! times a second apart and then stops serving whether or not anyone took
//! the sockets: a `SIGQUIT` sent before the new process is started, or with
//! none started at all, is an outage. Here the old process waits (serving)
//! until a process listens on the socket, and only then lets Pingora send.

use async_trait::async_trait;
use pingora_core::server::{ShutdownSignal, ShutdownSignalWatch, UnixShutdownSignalWatch};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio::signal::unix::{signal, Signal, SignalKind};

/// How long the old process waits, after `SIGQUIT`, for a new one on
/// `upgrade_sock` before it gives up the upgrade and goes on serving.
pub const HAND_OVER_WINDOW: Duration = Duration::from_secs(60);

/// How often the wait looks for a listener on `upgrade_sock`.
const POLL: Duration = Duration::from_millis(50);

/// Pingora's shutdown signals (`SIGTERM` graceful, `SIGINT` fast), with a
/// `SIGQUIT` that waits for a receiver before the hand-over begins.
#[derive(Debug, Clone)]
pub struct HandOver {
    upgrade_sock: PathBuf,
    window: Duration,
}

impl HandOver {
    /// Hands over to the process that listens on `upgrade_sock` (Pingora's
    /// key of the same name), waiting for one up to [`HAND_OVER_WINDOW`].
    pub fn new(upgrade_sock: impl Into<PathBuf>) -> Self {
        HandOver {
            upgrade_sock: upgrade_sock.into(),
            window: HAND_OVER_WINDOW,
        }
    }

    /// Waits up to `window` instead of [`HAND_OVER_WINDOW`].
    pub fn window(mut self, window: Duration) -> Self {
        self.window = window;
        self
    }
}

/// The three signals, registered together.
struct Signals {
    quit: Signal,
    term: Signal,
    int: Signal,
}

impl Signals {
    fn register() -> std::io::Result<Self> {
        Ok(Signals {
            quit: signal(SignalKind::quit())?,
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
        })
    }
}

#[async_trait]
impl ShutdownSignalWatch for HandOver {
    async fn recv(&self) -> ShutdownSignal {
        let mut signals = match Signals::register() {
            Ok(s) => s,
            Err(e) => {
                // Without our handlers, Pingora's own: the upgrade then
                // behaves as Pingora 0.9 alone does.
                log::error!("cannot register signal handlers ({e}); using Pingora's");
                return UnixShutdownSignalWatch.recv().await;
            }
        };
        loop {
            tokio::select! {
                _ = signals.quit.recv() => {}
                _ = signals.term.recv() => return ShutdownSignal::GracefulTerminate,
                _ = signals.int.recv() => return ShutdownSignal::FastShutdown,
            }
            let sock = self.upgrade_sock.display();
            if !receiver_waits(&self.upgrade_sock) {
                log::info!(
                    "SIGQUIT: waiting up to {} s for a new process (-u) on {sock}; \
                     serving meanwhile",
                    self.window.as_secs()
                );
            }
            let deadline = Instant::now() + self.window;
            loop {
                if receiver_waits(&self.upgrade_sock) {
                    log::info!("SIGQUIT: a new process waits on {sock}; handing over");
                    return ShutdownSignal::GracefulUpgrade;
                }
                if Instant::now() >= deadline {
                    log::warn!(
                        "SIGQUIT: no new process came to {sock} within {} s; still serving \
                         (start one with -u, then send SIGQUIT again)",
                        self.window.as_secs()
                    );
                    break;
                }
                tokio::select! {
                    _ = tokio::time::sleep(POLL) => {}
                    _ = signals.term.recv() => return ShutdownSignal::GracefulTerminate,
                    _ = signals.int.recv() => return ShutdownSignal::FastShutdown,
                }
            }
        }
    }
}

/// Whether a process listens on the Unix socket `path`: a listening socket
/// bound to that path in `/proc/net/unix` (flag `__SO_ACCEPTCON`, 0x10000).
/// Looking never connects: a connection would be taken by the receiver as
/// the hand-over itself. Where `/proc` cannot be read, a socket file at
/// `path` stands for a listener (Pingora removes it when it gives up).
pub(crate) fn receiver_waits(path: &Path) -> bool {
    match std::fs::read_to_string("/proc/net/unix") {
        Ok(table) => listening_in(&table, path),
        Err(_) => {
            use std::os::unix::fs::FileTypeExt;
            std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket())
        }
    }
}

/// `/proc/net/unix` lines: `Num RefCount Protocol Flags Type St Inode Path`.
fn listening_in(table: &str, path: &Path) -> bool {
    const ACCEPTCON: u32 = 0x10000;
    let Some(path) = path.to_str() else {
        return false;
    };
    table.lines().skip(1).any(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (Some(flags), Some(bound)) = (fields.get(3), fields.get(7)) else {
            return false;
        };
        let listening = u32::from_str_radix(flags, 16).is_ok_and(|f| f & ACCEPTCON != 0);
        listening && *bound == path
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixListener;

    const TABLE: &str = "Num       RefCount Protocol Flags    Type St Inode Path\n\
        0000000000000000: 00000002 00000000 00010000 0001 01 41 /run/sba/upgrade.sock\n\
        0000000000000000: 00000002 00000000 00000000 0001 03 42 /run/sba/other.sock\n\
        0000000000000000: 00000002 00000000 00010000 0001 01 43\n";

    #[test]
    fn a_listener_is_found_by_its_path_and_flag() {
        assert!(listening_in(TABLE, Path::new("/run/sba/upgrade.sock")));
        assert!(
            !listening_in(TABLE, Path::new("/run/sba/other.sock")),
            "connected, not listening"
        );
        assert!(!listening_in(TABLE, Path::new("/run/sba/none.sock")));
        assert!(!listening_in("", Path::new("/run/sba/upgrade.sock")));
    }

    #[test]
    fn a_real_listener_is_seen_and_a_closed_one_is_not() {
        let dir = std::env::temp_dir().join(format!("sba-handover-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("upgrade.sock");
        let _ = std::fs::remove_file(&path);
        assert!(!receiver_waits(&path));
        let listener = UnixListener::bind(&path).expect("bind");
        assert!(receiver_waits(&path));
        drop(listener);
        // The file stays behind a closed listener; nobody waits on it.
        assert!(path.exists());
        assert!(!receiver_waits(&path));
        let _ = std::fs::remove_dir_all(&dir);
    }
}

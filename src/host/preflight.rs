//! What the standalone binary checks before Pingora starts: everything a
//! start-up would refuse, but the network when `-t` runs. The files and
//! names of the process (pid file, upgrade socket, error log, user, group)
//! as the daemon and an upgrade will use them, the service built as
//! start-up builds it (provider client, TLS listeners), and, for a real
//! start, that every listening address can be bound: Pingora 0.9 retries a
//! port in use for 30 seconds and then panics in the service's thread,
//! leaving a process that runs but never listens.

use super::service;
use crate::config::{ConfigError, Settings};
use pingora_core::server::configuration::ServerConf;
use std::ffi::CString;
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::sync::Arc;

/// How the process is about to run: [`Mode::default`] is a plain start,
/// and Pingora's `-t` and `-u` flags are set with [`Mode::checking`] and
/// [`Mode::upgrading`] (the mode will grow with Pingora's flags).
#[derive(Debug, Clone, Copy, Default)]
#[non_exhaustive]
pub struct Mode {
    /// `-t`: check and exit; no address is bound.
    pub test: bool,
    /// `-u`: the listening sockets come from the running process.
    pub upgrade: bool,
}

impl Mode {
    /// `-t`: check and exit.
    pub fn checking(mut self, test: bool) -> Self {
        self.test = test;
        self
    }

    /// `-u`: take the listening sockets over from the running process.
    pub fn upgrading(mut self, upgrade: bool) -> Self {
        self.upgrade = upgrade;
        self
    }
}

/// Checks `settings` and Pingora's `conf` as the start-up will use them,
/// but the network ([`listeners_free`] checks that).
///
/// # Errors
/// A [`ConfigError`] naming the key at fault: `pid_file`, `upgrade_sock`,
/// `error_log`, `user` or `group` when the daemon or an upgrade could not use
/// them; or what building the service refuses (`board_api.provider`,
/// `board_api.server.tls`).
pub fn check(conf: &Arc<ServerConf>, settings: &Settings, mode: Mode) -> Result<(), ConfigError> {
    if conf.daemon {
        writable("pid_file", &conf.pid_file)?;
        if let Some(log) = &conf.error_log {
            writable("error_log", log)?;
        }
        if let Some(user) = &conf.user {
            known("user", user, |c| unsafe {
                !libc::getpwnam(c.as_ptr()).is_null()
            })?;
        }
        if let Some(group) = &conf.group {
            known("group", group, |c| unsafe {
                !libc::getgrnam(c.as_ptr()).is_null()
            })?;
        }
    }
    if conf.daemon || mode.upgrade {
        writable("upgrade_sock", &conf.upgrade_sock)?;
    }
    if mode.test {
        // Built and dropped: what start-up builds, without listening.
        drop(service::service(conf, settings)?);
    }
    Ok(())
}

/// For a start that binds its own listeners (neither `-t` nor `-u`, which
/// takes them from the running process): every listening address can be
/// bound now. Not a configuration error when it fails: the file may be
/// right and the port held by another process.
///
/// # Errors
/// A [`ConfigError`] for `board_api.server.listen` or
/// `board_api.server.metrics.listen` naming the address and why: in use by
/// another process, or not this user's to bind.
pub fn listeners_free(settings: &Settings, mode: Mode) -> Result<(), ConfigError> {
    if mode.test || mode.upgrade {
        return Ok(());
    }
    bindable("board_api.server.listen", settings.listen())?;
    if let Some(addr) = settings.metrics_listen() {
        bindable("board_api.server.metrics.listen", &[addr])?;
    }
    Ok(())
}

fn writable(key: &str, path: &str) -> Result<(), ConfigError> {
    crate::config::writable_file(key, Path::new(path))
}

/// `name` is a user or group this machine knows (`getpwnam`, `getgrnam`).
fn known(key: &str, name: &str, exists: impl Fn(&CString) -> bool) -> Result<(), ConfigError> {
    let c = CString::new(name).map_err(|_| ConfigError::new(key, "holds a NUL byte"))?;
    if exists(&c) {
        Ok(())
    } else {
        Err(ConfigError::new(
            key,
            format!("{name:?} does not exist on this machine"),
        ))
    }
}

/// Binds each address once and lets it go, so a port in use or one this
/// user may not bind is a clear error before Pingora starts. Pingora binds
/// with `SO_REUSEADDR`, as `std` does here, so both agree on what is free.
fn bindable(key: &str, addrs: &[SocketAddr]) -> Result<(), ConfigError> {
    for addr in addrs {
        TcpListener::bind(addr).map_err(|e| {
            let why = match e.kind() {
                std::io::ErrorKind::AddrInUse => {
                    "the address is in use (another process listens there)".to_string()
                }
                std::io::ErrorKind::PermissionDenied => {
                    "this user may not bind it (a port below 1024 needs privileges)".to_string()
                }
                _ => e.to_string(),
            };
            ConfigError::new(key, format!("cannot listen on {addr}: {why}"))
        })?;
    }
    Ok(())
}

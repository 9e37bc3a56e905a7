//! Files and directories the configuration names, checked at start-up and by
//! `-t` as the code that uses them will read or write them: TLS certificate
//! and key (loaded and paired as the listener does), writable paths for logs,
//! pid files and sockets. Nothing here touches the network.

use super::ConfigError;
use pingora_core::tls::{load_certs_and_key_files, version, ServerConfig};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// The certificate chain and private key of a TLS listener: both PEM files
/// read, at least one certificate and one key found, and the key matching the
/// certificate, as Pingora's rustls listener builds its acceptor (which
/// panics on any of these when the listener starts).
pub(crate) fn tls_pair(cert: &Path, key: &Path) -> Result<(), ConfigError> {
    const KEY: &str = "board_api.server.tls";
    let (Some(cert_s), Some(key_s)) = (cert.to_str(), key.to_str()) else {
        return Err(ConfigError::new(KEY, "the paths must be UTF-8"));
    };
    for (k, path) in [(format!("{KEY}.cert"), cert), (format!("{KEY}.key"), key)] {
        if !path.is_file() {
            return Err(ConfigError::new(
                k,
                format!("{} is not a readable file", path.display()),
            ));
        }
    }
    let loaded = load_certs_and_key_files(cert_s, key_s)
        .map_err(|e| ConfigError::new(KEY, format!("cannot read {cert_s} or {key_s}: {e}")))?;
    let Some((certs, private_key)) = loaded else {
        return Err(ConfigError::new(
            KEY,
            format!("no PEM certificate in {cert_s}, or no PEM private key (PKCS#1, PKCS#8 or SEC1) in {key_s}"),
        ));
    };
    pingora_core::tls::install_default_crypto_provider();
    ServerConfig::builder_with_protocol_versions(&[&version::TLS12, &version::TLS13])
        .with_no_client_auth()
        .with_single_cert(certs, private_key)
        .map_err(|e| ConfigError::new(KEY, format!("{key_s} does not go with {cert_s}: {e}")))?;
    Ok(())
}

/// A file the process will create or append to: an existing file it may
/// write, or a writable directory to create it in. Never creates it.
pub(crate) fn writable_file(key: &str, path: &Path) -> Result<(), ConfigError> {
    if path.as_os_str().is_empty() {
        return Err(ConfigError::new(key, "must not be empty"));
    }
    if path.is_dir() {
        return Err(ConfigError::new(
            key,
            format!("{} is a directory", path.display()),
        ));
    }
    if path.exists() {
        return may(key, path, libc::W_OK, "is not writable");
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(ConfigError::new(
            key,
            format!(
                "{}: the directory {} does not exist",
                path.display(),
                dir.display()
            ),
        ));
    }
    may(
        key,
        dir,
        libc::W_OK | libc::X_OK,
        "is a directory this process cannot create files in",
    )
}

/// A state file's path (`board_api.changes.path`): as [`writable_file`],
/// but its directory may be missing when its parent exists and is
/// writable: the service makes it (`0700`) when it first opens the file.
/// Nothing is created here (`-t` writes nothing).
pub(crate) fn state_file(key: &str, path: &Path) -> Result<(), ConfigError> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if dir.exists() || path.exists() {
        return writable_file(key, path);
    }
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        return Err(ConfigError::new(
            key,
            format!(
                "{}: neither the directory {} nor its parent exists",
                path.display(),
                dir.display()
            ),
        ));
    }
    may(
        key,
        parent,
        libc::W_OK | libc::X_OK,
        "is a directory this process cannot make the state directory in",
    )
}

/// `access(2)` for `mode`, as the process's real user.
fn may(key: &str, path: &Path, mode: libc::c_int, what: &str) -> Result<(), ConfigError> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| ConfigError::new(key, "the path holds a NUL byte"))?;
    // SAFETY: `c` is a valid NUL-terminated string that outlives the call.
    if unsafe { libc::access(c.as_ptr(), mode) } == 0 {
        Ok(())
    } else {
        Err(ConfigError::new(key, format!("{} {what}", path.display())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writable_paths() {
        let dir = std::env::temp_dir().join(format!("sba-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let file = dir.join("x.log");
        assert!(
            writable_file("k", &file).is_ok(),
            "a new file in a writable dir"
        );
        std::fs::write(&file, b"").expect("write");
        assert!(writable_file("k", &file).is_ok(), "an existing file");
        assert!(writable_file("k", &dir).is_err(), "a directory");
        let e = writable_file("k", &dir.join("missing/x.log")).unwrap_err();
        assert!(e.message.contains("does not exist"), "{e}");
        assert!(writable_file("k", Path::new("")).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}

//! The state file (`board_api.changes.store: sqlite`) as operators run the
//! binary: a daemon (`-d`), a `-t` beside it (the unit's first reload
//! line), `kill -9` and a restart. SQLite forbids carrying a connection
//! across `fork`: a daemon that opened the file before its fork holds none
//! of SQLite's locks, so the `-t` beside it checkpoints and deletes the
//! `-wal` and `-shm` it still writes to, and what it keeps after that is
//! lost at the next restart. Here the daemon opens the file after its
//! fork: nothing it holds is deleted, and every version kept before the
//! kill is still read back after it.

use crate::common::*;
use crate::upgrade::{daemon_pid, listening_addrs, run_ok, wait_until, Daemon};
use shared_board_api::demo::SampleUpstream;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The daemon's open files that were deleted under it.
fn deleted_files(pid: u32) -> Vec<String> {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    fds.filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .map(|t| t.to_string_lossy().into_owned())
        .filter(|t| t.ends_with(" (deleted)"))
        .collect()
}

/// The daemon's configuration in `dir`: its files there, the state file in
/// `dir/state/`, the process cache off (each request loads, so an edit
/// shows at once), `origin` as the provider.
fn config(dir: &Path, origin: &str) -> PathBuf {
    let conf = dir.join("gateway.yaml");
    std::fs::write(
        &conf,
        format!(
            "version: 1\nthreads: 2\ndaemon: false\npid_file: {d}/pid\nupgrade_sock: {d}/upgrade.sock\n\
             error_log: {d}/error.log\ngrace_period_seconds: 1\ngraceful_shutdown_timeout_seconds: 1\n\
             board_api:\n  provider:\n    origin: {origin}\n  cache:\n    enabled: false\n\
             \x20 changes:\n    store: sqlite\n    path: {d}/state/state.sqlite\n\
             \x20 server:\n    listen: [\"127.0.0.1:0\"]\n",
            d = dir.display()
        ),
    )
    .expect("write config");
    conf
}

fn api_addr(pid: u32, log: impl Fn() -> String) -> SocketAddr {
    wait_until(Duration::from_secs(30), || {
        listening_addrs(pid).first().copied()
    })
    .unwrap_or_else(|| panic!("the daemon never listened\n{}", log()))
}

fn version(addr: SocketAddr, link: &str) -> String {
    let r = request(addr, "GET", &format!("/api/detail?url={link}"), &[]);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    r.header("board-version").expect("a version").to_owned()
}

/// `/api/changes?since=` until it answers `200` (the version is written
/// by a task of its own, just after the answer that carried it).
fn kept(addr: SocketAddr, link: &str, since: &str) -> bool {
    wait_until(Duration::from_secs(20), || {
        let r = request(
            addr,
            "GET",
            &format!("/api/changes?url={link}&since={since}"),
            &[],
        );
        (r.status == 200).then_some(())
    })
    .is_some()
}

#[test]
fn a_check_beside_a_daemon_and_a_kill_lose_no_kept_version() {
    let bin = env!("CARGO_BIN_EXE_shared-board-api");
    let upstream = SampleUpstream::start_in_thread(([127, 0, 0, 1], 0).into()).expect("starts");
    let dir = std::env::temp_dir().join(format!("sba-state-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let conf = config(&dir, &upstream.origin());
    let pid_file = dir.join("pid");
    let _stop = Daemon(pid_file.clone());
    let log = || std::fs::read_to_string(dir.join("error.log")).unwrap_or_default();
    let board = "3Hq7ZsWd2KpL8c";
    let link = link(board, PERMISSION);
    let edit = || {
        let r = request(upstream.addr(), "POST", &format!("/demo/edit/{board}"), &[]);
        assert_eq!(r.status, 200);
    };

    // `-t` opens nothing: the state directory does not exist after it.
    run_ok(bin, &["-t", "-d", "-c"], &conf);
    assert!(!dir.join("state").exists(), "-t made the state directory");
    run_ok(bin, &["-d", "-c"], &conf);
    let first = daemon_pid(&pid_file, None);
    let api = api_addr(first, log);
    let v1 = version(api, &link);
    edit();
    let v2 = version(api, &link);
    assert!(kept(api, &link, &v1), "v1 kept\n{}", log());

    // The unit's reload starts with `-t -u -c`; an operator runs `-t -c`.
    run_ok(bin, &["-t", "-c"], &conf);
    run_ok(bin, &["-t", "-u", "-c"], &conf);
    assert_eq!(
        deleted_files(first),
        Vec::<String>::new(),
        "files deleted under the daemon"
    );
    edit();
    let v3 = version(api, &link);
    assert!(kept(api, &link, &v2), "v2 kept\n{}", log());

    // A crash, then a start as the unit makes it.
    let status = Command::new("kill")
        .args(["-KILL", &first.to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    assert!(wait_until(Duration::from_secs(30), || {
        (!Path::new(&format!("/proc/{first}")).exists()).then_some(())
    })
    .is_some());
    run_ok(bin, &["-d", "-c"], &conf);
    let second = daemon_pid(&pid_file, Some(first));
    let api = api_addr(second, log);
    for since in [&v1, &v2] {
        let r = request(
            api,
            "GET",
            &format!("/api/changes?url={link}&since={since}"),
            &[],
        );
        assert_eq!(
            r.status,
            200,
            "{since} after the restart: {}",
            String::from_utf8_lossy(&r.body)
        );
        assert_eq!(r.json()["data"]["to"], v3.as_str());
    }
    let integrity: String = rusqlite::Connection::open_with_flags(
        dir.join("state/state.sqlite"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .expect("opens")
    .query_row("PRAGMA integrity_check", [], |r| r.get(0))
    .expect("checks");
    assert_eq!(integrity, "ok");
    let mode = |p: &Path| {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::metadata(p).expect("exists").permissions().mode() & 0o777
    };
    assert_eq!(mode(&dir.join("state")), 0o700);
    assert_eq!(mode(&dir.join("state/state.sqlite")), 0o600);
    let status = Command::new("kill")
        .args(["-TERM", &second.to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    assert!(wait_until(Duration::from_secs(30), || {
        (!Path::new(&format!("/proc/{second}")).exists()).then_some(())
    })
    .is_some());
    assert!(!log().contains("panicked"), "{}", log());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_state_file_that_cannot_be_opened_stops_the_start_with_its_reason() {
    let bin = env!("CARGO_BIN_EXE_shared-board-api");
    let dir = std::env::temp_dir().join(format!("sba-state-bad-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("state")).expect("temp dir");
    let conf = config(&dir, &sample().origin());
    // A file SQLite cannot open as a database nor we move: a directory
    // where the file should be is refused by -t already; a file whose
    // directory loses its permissions after -t is what start-up meets.
    std::fs::write(dir.join("state/state.sqlite"), b"").expect("an empty file");
    let holder = rusqlite::Connection::open(dir.join("state/state.sqlite")).expect("opens");
    holder
        .execute_batch("PRAGMA locking_mode = EXCLUSIVE; CREATE TABLE t (x); BEGIN EXCLUSIVE;")
        .expect("locks");
    let mut child = Command::new(bin)
        .args(["-c"])
        .arg(&conf)
        .env("RUST_LOG", "info")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("runs");
    let exited = wait_until(Duration::from_secs(60), || child.try_wait().ok().flatten());
    if exited.is_none() {
        let _ = child.kill();
    }
    let out = child.wait_with_output().expect("its output");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("board_api.changes.path"), "{err}");
    assert!(err.contains("locked"), "{err}");
    drop(holder);
    let aside = std::fs::read_dir(dir.join("state"))
        .expect("reads")
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().contains("unreadable"))
        })
        .count();
    assert_eq!(aside, 0, "a locked file is not moved aside");
    let _ = std::fs::remove_dir_all(&dir);
}

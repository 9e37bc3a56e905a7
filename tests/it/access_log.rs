//! The access log never holds a request up: with its destination stuck (a
//! pipe nobody reads, as a blocked log shipper or a full disk would be),
//! requests are answered all the same, the lines beyond the buffer are
//! dropped and counted in `board_api_access_log_dropped_total`, and the
//! buffered ones are written, as bare JSON lines, once the pipe drains.
//! Every line carries the answer's `X-Request-Id`, and a request whose
//! client left before its answer is logged as 499.

use crate::common::*;
use std::ffi::CString;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::os::fd::FromRawFd;
use std::os::unix::ffi::OsStrExt;
use std::sync::mpsc::channel;
use std::time::Duration;

const BUFFER: usize = 4;

fn dropped() -> u64 {
    prometheus::gather()
        .iter()
        .find(|f| f.name() == "board_api_access_log_dropped_total")
        .and_then(|f| {
            f.get_metric()
                .first()
                .map(|m| m.get_counter().value() as u64)
        })
        .unwrap_or(0)
}

#[test]
fn a_stuck_destination_drops_and_counts_lines_and_never_holds_a_request() {
    // It reads an exact change of a process-wide counter: alone in a child
    // process, so no other test's instance moves it.
    if !in_own_process(
        module_path!(),
        "a_stuck_destination_drops_and_counts_lines_and_never_holds_a_request",
    ) {
        return;
    }
    let dir = std::env::temp_dir().join(format!("sba-access-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let fifo = dir.join("access.pipe");
    let path = CString::new(fifo.as_os_str().as_bytes()).expect("path");
    // SAFETY: a valid C string; the calls below use the descriptor they return.
    let (reader, filler_lines) = unsafe {
        assert_eq!(libc::mkfifo(path.as_ptr(), 0o600), 0, "mkfifo");
        // Opened first, without blocking, so the gateway's open for writing
        // finds a reader; the smallest pipe the kernel allows.
        let fd = libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_NONBLOCK);
        assert!(fd >= 0, "open the pipe");
        assert!(
            libc::fcntl(fd, libc::F_SETPIPE_SZ, 4096) >= 4096,
            "pipe size"
        );
        // Filled to the last byte before the gateway writes a line, so its
        // writer blocks in write(2) on its first line and stays blocked:
        // stuck from the start, whatever the machine's load.
        let writer = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_NONBLOCK);
        assert!(writer >= 0, "open the pipe for writing");
        let mut filler_lines = 0;
        while libc::write(writer, b"x\n".as_ptr().cast(), 2) == 2 {
            filler_lines += 1;
        }
        libc::close(writer);
        (fd, filler_lines)
    };
    let gw = start_gateway_with(
        "",
        "",
        &format!(
            "    access_log: {}\n    access_log_buffer: {BUFFER}\n",
            fifo.display()
        ),
    );
    let search = format!("/api/search?url={}", link(BOARD, PERMISSION));
    let before = dropped();

    // Nobody reads the pipe, which is full: the writer blocks in write(2)
    // with its first line, the buffer fills, and every line after that is
    // dropped. Every request is answered meanwhile (one that waited for
    // room in the buffer never would be).
    let mut sent = 0;
    let mut in_a_row = 0;
    while in_a_row < 10 {
        let was = dropped();
        assert_eq!(request(gw.addr, "GET", &search, &[]).status, 200);
        sent += 1;
        in_a_row = if dropped() > was { in_a_row + 1 } else { 0 };
        assert!(sent < 2000, "the pipe never filled");
    }
    let stuck = dropped();
    let more = 20;
    for _ in 0..more {
        assert_eq!(request(gw.addr, "GET", &search, &[]).status, 200);
    }
    sent += more;
    assert_eq!(
        dropped() - stuck,
        more as u64,
        "every line dropped while stuck"
    );
    let lost = dropped() - before;

    // Read, the pipe drains: every line not dropped arrives, whole.
    // SAFETY: `reader` is an open descriptor this test owns from here on.
    unsafe {
        let flags = libc::fcntl(reader, libc::F_GETFL);
        libc::fcntl(reader, libc::F_SETFL, flags & !libc::O_NONBLOCK);
    }
    let file = unsafe { File::from_raw_fd(reader) };
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(file).lines() {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    for n in 0..filler_lines {
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("{n} of {filler_lines} filler lines arrived"))
            .expect("a line");
        assert_eq!(line, "x");
    }
    let expected = sent - lost as usize;
    for n in 0..expected {
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("{n} of {expected} lines arrived"))
            .expect("a line");
        let v: serde_json::Value = serde_json::from_str(&line).expect("a bare JSON line");
        assert_eq!(v["path"], "/api/search", "{line}");
        assert_eq!(v["status"], 200, "{line}");
    }
    drop(gw);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn each_line_names_the_request_id_the_client_was_given() {
    let dir = std::env::temp_dir().join(format!("sba-access-id-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("access.log");
    let gw = start_gateway_with(
        "    read_timeout_ms: 120000\n    fetch_deadline_ms: 120000\n",
        "",
        &format!("    access_log: {}\n", path.display()),
    );
    let search = format!("/api/search?url={}", link(BOARD, PERMISSION));
    let echoed = request(gw.addr, "GET", &search, &[("X-Request-Id", "log-1")]);
    assert_eq!(echoed.header("x-request-id"), Some("log-1"));
    let minted = request(
        gw.addr,
        "GET",
        "/api/detail?view=huge",
        &[("X-Request-Id", "no way")],
    );
    let minted_id = minted.header("x-request-id").expect("minted").to_string();
    assert_eq!(minted.json()["error"]["requestId"], minted_id.as_str());
    // A client that leaves while its board loads: logged, nothing sent.
    let board = "LogGoneBoard1";
    let mut client = std::net::TcpStream::connect(gw.addr).expect("connect");
    let target = format!("/api/detail?url={}", link(board, "fault-slow"));
    let head = format!("GET {target} HTTP/1.1\r\nHost: x\r\nX-Request-Id: gone-1\r\n\r\n");
    std::io::Write::write_all(&mut client, head.as_bytes()).expect("send");
    let asked = || {
        sample()
            .requests()
            .iter()
            .any(|t| t.contains(&format!("elementId={board}")))
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !asked() {
        assert!(std::time::Instant::now() < deadline, "the load never asked");
        std::thread::sleep(Duration::from_millis(10));
    }
    drop(client);
    let lines = wait_for_lines(&path, 3);
    let parsed: Vec<serde_json::Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let by_id = |id: &str| {
        parsed
            .iter()
            .find(|v| v["requestId"] == id)
            .unwrap_or_else(|| panic!("no line for {id}: {lines:#?}"))
    };
    assert_eq!(by_id("log-1")["status"], 200);
    assert_eq!(by_id(&minted_id)["status"], 400);
    let gone = by_id("gone-1");
    assert_eq!((&gone["status"], &gone["bytes"]), (&499.into(), &0.into()));
    assert_eq!(gone["path"], "/api/detail");
    assert!(!lines.iter().any(|l| l.contains("no way")));
    drop(gw);
    let _ = std::fs::remove_dir_all(&dir);
}

//! The API inside a real pingap, over sockets: `scripts/pingap-host.sh`
//! runs the pingap binary it built with the plugin linked in, on the same
//! YAML as the standalone service beside it, both in front of the sample
//! upstream. Every kind of answer must match the standalone one (status,
//! body, ETag, the headers of the API's contract), and pingap's whole output
//! at `info`, access log included, must hold no share link or permission id.
//!
//! [`trace`]: one trace through pingap's span export and the plugin's.
//!
//! Ignored by a plain `cargo test` (the pingap build takes minutes); `.ci/run`
//! runs them: `scripts/pingap-host.sh --build`, then `cargo test --test
//! pingap -- --ignored`.

mod trace;

use crate::common::*;
use std::collections::HashSet;
use std::io::Read;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A permission id the sample upstream refuses (its token endpoint answers
/// `403` for it, `src/demo/scenarios.rs`): it must appear nowhere in
/// pingap's output even though a request carried it.
const REFUSED: &str = "fault-403";
/// The permission id of a share link on the wrong host.
const FOREIGN: &str = "ForeignPermNeverLogged9";

/// The `Vary` line Pingora's compression module adds to an answer it may
/// compress and that names no `Vary` of its own (an error): the host's
/// compression, not the API's contract. The standalone binary compresses
/// at level 6 and adds it; the pingap of the test compresses nothing and
/// does not. The API's own `Vary` lines (`Accept, Accept-Encoding` on
/// every `200` and `304`, its cached compressed bodies) are compared.
const HOST_COMPRESSION_VARY: &str = "accept-encoding";

/// The headers of the API's contract that both hosts must send alike (Date,
/// Server and the timings of Server-Timing differ by nature).
const CONTRACT: &[&str] = &[
    "content-type",
    "content-length",
    "content-encoding",
    "cache-control",
    "etag",
    "vary",
    "access-control-allow-origin",
    "access-control-expose-headers",
    "access-control-allow-methods",
    "access-control-allow-headers",
    "access-control-max-age",
    "allow",
    "retry-after",
    "board-completeness",
    "x-content-type-options",
];

/// `scripts/pingap-host.sh` with the environment of the shell that ran
/// `cargo test`, less what cargo set for this test: build scripts in
/// pingap's tree (ring's) rerun when `CARGO_PKG_NAME` and its kin change,
/// and with them most of the build.
fn host_script() -> Command {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut command = Command::new("sh");
    command.arg(root.join("scripts/pingap-host.sh"));
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy().into_owned();
        if (name.starts_with("CARGO") && name != "CARGO_HOME") || name == "OUT_DIR" {
            command.env_remove(name);
        }
    }
    command
}

/// pingap as `scripts/pingap-host.sh` runs it; killed (SIGINT, then
/// SIGKILL) when dropped.
struct Pingap {
    child: Child,
    addr: SocketAddr,
    out: PathBuf,
}

impl Pingap {
    fn start(yaml: &Path, dir: &Path) -> Pingap {
        Pingap::start_with(yaml, dir, &[])
    }

    /// [`Pingap::start`] with more of the script's environment
    /// (`PINGAP_OTLP`).
    fn start_with(yaml: &Path, dir: &Path, env: &[(&str, &str)]) -> Pingap {
        // The build first, once for both tests and without a deadline (from
        // scratch it takes minutes); the script's own build below is then a
        // no-op and the deadline is pingap's start alone.
        pingap_binary();
        let out = dir.join("pingap.out");
        let log = std::fs::File::create(&out).expect("output file");
        let child = host_script()
            .arg(yaml)
            .arg("127.0.0.1:0")
            .env("PINGAP_HOST_CONF", dir)
            .env("RUST_LOG", "info")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("dup"))
            .stderr(log)
            .spawn()
            .expect("run scripts/pingap-host.sh");
        let mut pingap = Pingap {
            child,
            addr: ([127, 0, 0, 1], 0).into(),
            out,
        };
        // The script builds (a no-op now), then execs pingap in its own
        // process: the port pingap bound is read back from it.
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            if let Some(status) = pingap.child.try_wait().expect("wait") {
                panic!("pingap exited ({status}):\n{}", pingap.output());
            }
            if let Some(port) = listening_port(pingap.child.id()) {
                pingap.addr.set_port(port);
                return pingap;
            }
            assert!(
                Instant::now() < deadline,
                "pingap never listened:\n{}",
                pingap.output()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn output(&self) -> String {
        std::fs::read_to_string(&self.out).unwrap_or_default()
    }

    /// Waits until pingap's output holds `text`: its access log lines are
    /// written by a task after the answers, and a stop may come before.
    fn wait_for_output(&self, text: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !self.output().contains(text) {
            assert!(
                Instant::now() < deadline,
                "pingap's output never held {text:?}:\n{}",
                self.output()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Stops pingap and returns everything it wrote.
    fn stop(mut self) -> String {
        self.signal_and_wait();
        self.output()
    }

    fn signal_and_wait(&mut self) {
        // SIGINT: Pingora's fast shutdown.
        // SAFETY: a signal to our own child process.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGINT);
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.child.try_wait().ok().flatten().is_none() {
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Pingap {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            self.signal_and_wait();
        }
    }
}

/// The TCP port `pid` listens on, from its socket descriptors and the
/// kernel's socket table (the socket was bound to port 0 by pingap).
fn listening_port(pid: u32) -> Option<u16> {
    let inodes: HashSet<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .ok()?
        .filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .filter_map(|target| {
            let target = target.to_string_lossy().into_owned();
            Some(
                target
                    .strip_prefix("socket:[")?
                    .strip_suffix(']')?
                    .to_string(),
            )
        })
        .collect();
    let mut table = String::new();
    std::fs::File::open(format!("/proc/{pid}/net/tcp"))
        .ok()?
        .read_to_string(&mut table)
        .ok()?;
    table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (local, state, inode) = (fields.get(1)?, fields.get(3)?, fields.get(9)?);
        if *state != "0A" || !inodes.contains(*inode) {
            return None;
        }
        u16::from_str_radix(local.rsplit_once(':')?.1, 16).ok()
    })
}

/// The contract's headers of a response, by lower-case name, in order.
fn contract_headers(r: &Response) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = r
        .headers
        .iter()
        .map(|(k, v)| (k.to_ascii_lowercase(), v.clone()))
        .filter(|(k, _)| CONTRACT.contains(&k.as_str()))
        .filter(|(k, v)| !(k == "vary" && v == HOST_COMPRESSION_VARY))
        .collect();
    out.sort();
    out
}

/// The body with the one value that differs between two processes by
/// nature, the time each fetched the board, blanked.
fn comparable_body(r: &Response) -> String {
    let text = String::from_utf8_lossy(&r.body).into_owned();
    let Ok(mut json) = serde_json::from_str::<serde_json::Value>(&text) else {
        return text;
    };
    if let Some(at) = json.pointer_mut("/data/fetchedAt") {
        *at = serde_json::Value::Null;
    }
    json.to_string()
}

/// The same request through both hosts; the answers must match.
fn same(
    standalone: SocketAddr,
    pingap: SocketAddr,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
) -> Response {
    // One request id and one trace for both, so that the ids each host
    // would mint (a request id with a prefix of its own process, a random
    // trace, whose id error bodies carry) do not tell the answers apart.
    let mut headers = headers.to_vec();
    for (name, value) in [
        ("X-Request-Id", "pingap-compare"),
        (
            "traceparent",
            "00-7d0c6bd2a5c1e8f3b4a29e6d1c0f5a37-5f1e2d3c4b5a6978-01",
        ),
    ] {
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(name)) {
            headers.push((name, value));
        }
    }
    let headers = headers.as_slice();
    let ours = request(standalone, method, target, headers);
    let theirs = request(pingap, method, target, headers);
    assert_eq!(
        theirs.header("x-request-id"),
        ours.header("x-request-id"),
        "{method} {target}: the request id echoed"
    );
    let what = format!("{method} {target} {headers:?}");
    assert_eq!(theirs.status, ours.status, "{what}: status");
    assert_eq!(
        contract_headers(&theirs),
        contract_headers(&ours),
        "{what}: headers"
    );
    assert_eq!(
        comparable_body(&theirs),
        comparable_body(&ours),
        "{what}: body"
    );
    theirs
}

/// A `POST` with a JSON body on a fresh connection.
fn post(addr: SocketAddr, target: &str, body: &str) -> Response {
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let req = format!(
        "POST {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    std::io::Write::write_all(&mut stream, req.as_bytes()).expect("send");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read");
    parse_response(&raw, false)
}

#[test]
#[ignore = "needs a pingap build: scripts/pingap-host.sh --build, then --ignored"]
fn pingap_answers_as_the_standalone_service_and_logs_no_secret() {
    let dir = std::env::temp_dir().join(format!("sba-pingap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    // One file for both hosts: pingap's plugin reads its board_api section
    // (the server section is the standalone service's).
    let yaml = dir.join("board_api.yaml");
    std::fs::write(&yaml, config(0, "", "")).expect("write config");
    let standalone = start_gateway("", "");
    let pingap = Pingap::start(&yaml, &dir);
    let (s, p) = (standalone.addr, pingap.addr);

    let detail = format!("/api/detail?url={}", link(BOARD, PERMISSION));
    let search = format!("/api/search?url={}", link(BOARD, PERMISSION));
    // Both caches are cold for the first, warm for the rest.
    let first = same(s, p, "GET", &detail, &[]);
    assert_eq!(
        first.status,
        200,
        "{}",
        String::from_utf8_lossy(&first.body)
    );
    assert_eq!(first.json()["ok"], true);
    let etag = first.header("etag").expect("an ETag").to_string();
    same(s, p, "GET", &search, &[]);
    same(s, p, "GET", &format!("{search}&q=welcome"), &[]);
    // 304 for the ETag, HEAD with the GET's length and no body.
    let not_modified = same(s, p, "GET", &detail, &[("If-None-Match", &etag)]);
    assert_eq!(not_modified.status, 304);
    let head = same(s, p, "HEAD", &detail, &[]);
    assert_eq!(head.status, 200);
    assert!(head.header("content-length").is_some());
    // A preflight.
    let preflight = same(
        s,
        p,
        "OPTIONS",
        &search,
        &[
            ("Origin", "https://example.org"),
            ("Access-Control-Request-Method", "GET"),
            ("Access-Control-Request-Headers", "if-none-match"),
        ],
    );
    assert_eq!(preflight.status, 204);
    // Markdown by Accept, and compressed when asked.
    let markdown = same(s, p, "GET", &detail, &[("Accept", "text/markdown")]);
    assert!(markdown
        .header("content-type")
        .is_some_and(|t| t.starts_with("text/markdown")));
    same(s, p, "GET", &detail, &[("Accept-Encoding", "gzip")]);
    // Errors: a selector, a share link on another host, a refused board,
    // a missing parameter, a method, an unknown path under the prefix.
    same(s, p, "GET", &format!("{detail}&include=nosuchfield"), &[]).assert_error(
        400,
        "INVALID_FIELD_SELECTOR",
        Some("include"),
    );
    let foreign = encode(&format!("https://example.com/{BOARD}/slug?p={FOREIGN}"));
    same(s, p, "GET", &format!("/api/detail?url={foreign}"), &[]).assert_error(
        400,
        "INVALID_SHARE_URL",
        Some("url"),
    );
    let refused = same(
        s,
        p,
        "GET",
        &format!("/api/detail?url={}", link(BOARD, REFUSED)),
        &[],
    );
    assert!(refused.status >= 400, "a refused permission was served");
    same(s, p, "GET", "/api/search", &[]).assert_error(400, "INVALID_REQUEST", Some("url"));
    same(s, p, "DELETE", &detail, &[]).assert_error(405, "METHOD_NOT_ALLOWED", None);
    same(s, p, "GET", "/api/nothing-here", &[]).assert_error(404, "NOT_FOUND", None);
    // MCP: the plugin reads the POST body. The handshake answers alike; a
    // tool call with the share link in its body is answered by both.
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}"#;
    let (ours, theirs) = (post(s, "/api/mcp", init), post(p, "/api/mcp", init));
    assert_eq!(
        (theirs.status, comparable_body(&theirs)),
        (ours.status, comparable_body(&ours))
    );
    assert_eq!(
        theirs.status,
        200,
        "{}",
        String::from_utf8_lossy(&theirs.body)
    );
    let call = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"search_board","arguments":{{"url":"https://app.milanote.com/{BOARD}/slug?p={PERMISSION}","query":"welcome"}}}}}}"#
    );
    let (ours, theirs) = (post(s, "/api/mcp", &call), post(p, "/api/mcp", &call));
    assert_eq!(theirs.status, ours.status);
    assert_eq!(contract_headers(&theirs), contract_headers(&ours));
    assert!(
        theirs.json().get("result").is_some(),
        "{}",
        String::from_utf8_lossy(&theirs.body)
    );
    // A path outside the prefix is not the plugin's: pingap's own answer.
    let outside = request(p, "GET", "/elsewhere", &[]);
    assert!(
        outside.header("x-content-type-options").is_none(),
        "the plugin answered a path outside its prefix: {outside:?}"
    );

    // The last request's access log line, then the output is complete.
    pingap.wait_for_output("\"GET /elsewhere HTTP/1.1\"");
    drop(standalone);
    let out = pingap.stop();
    let _ = std::fs::remove_dir_all(&dir);
    // The access log is pingap's, in the documented format (no query).
    assert!(
        out.contains("\"GET /api/detail HTTP/1.1\" 200"),
        "no access log line in the documented format:\n{out}"
    );
    for secret in [
        PERMISSION,
        REFUSED,
        FOREIGN,
        "app.milanote.com",
        "url=",
        "p%3D",
    ] {
        let hit = out.lines().find(|l| l.contains(secret));
        assert!(hit.is_none(), "pingap's output holds {secret:?}: {hit:?}");
    }
}

/// The pingap binary `scripts/pingap-host.sh --build` made (a no-op build
/// when cached).
fn pingap_binary() -> PathBuf {
    static BINARY: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BINARY.get_or_init(build_pingap).clone()
}

fn build_pingap() -> PathBuf {
    let out = host_script()
        .arg("--build")
        .stderr(Stdio::inherit())
        .output()
        .expect("run scripts/pingap-host.sh --build");
    assert!(out.status.success(), "the pingap build failed");
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

#[test]
#[ignore = "needs a pingap build: scripts/pingap-host.sh --build, then --ignored"]
fn pingap_t_refuses_a_board_api_file_the_binary_refuses() {
    let pingap = pingap_binary();
    let dir = std::env::temp_dir().join(format!("sba-pingap-t-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let good = config(0, "", "");
    let bad = [
        good.replace("share_host: app.milanote.com", "share_host: ''"),
        format!("{good}  cache:\n    budget_bytes: 5\n"),
        format!("{good}  no_such_key: 1\n"),
    ];
    let check = |yaml: &str| {
        let file = dir.join("board_api.yaml");
        std::fs::write(&file, yaml).expect("write");
        let toml = dir.join("pingap.toml");
        std::fs::write(
            &toml,
            format!(
                "[locations.boards]\npath = \"/api\"\nplugins = [\"boards\"]\n\n\
                 [servers.gateway]\naddr = \"127.0.0.1:1\"\nlocations = [\"boards\"]\n\n\
                 [plugins.boards]\ncategory = \"shared_board_api\"\nconfig = \"{}\"\n",
                file.display()
            ),
        )
        .expect("write");
        let out = Command::new(&pingap)
            .arg("-t")
            .arg("-c")
            .arg(&toml)
            .output()
            .expect("run pingap -t");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    };
    let (ok, text) = check(&good);
    assert!(ok, "pingap -t refused the file the binary takes:\n{text}");
    for yaml in &bad {
        let expected = shared_board_api::config::Settings::from_yaml(yaml)
            .expect_err("the library refuses it");
        let (ok, text) = check(yaml);
        assert!(
            !ok,
            "pingap -t passed a file the binary refuses ({expected}):\n{text}"
        );
        assert!(
            text.contains(&expected.to_string()),
            "pingap -t did not say {expected:?}:\n{text}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

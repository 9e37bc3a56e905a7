//! The binary's command line: `-t` checks a file and exits, errors name the key.

use std::process::Command;

fn run(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_shared-board-api"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("RUST_LOG", "error")
        // conf/fleet.yaml seals the tier's values with the key it names.
        .env(
            "SBAPI_FLEET_KEY",
            "a fleet key for the tests, 32 bytes or more",
        )
        // conf/watch.yaml reads its job's link, receiver and secret so.
        .env(
            "SBAPI_WATCH_LINK",
            "https://app.milanote.com/1W3ZZU1Qvua02H/demo?p=demo",
        )
        .env("SBAPI_WATCH_URL", "https://hooks.example.com/milanote")
        .env(
            "SBAPI_WATCH_SECRET",
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        )
        .output()
        .expect("binary runs");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn dash_t_accepts_every_shipped_config() {
    for conf in [
        "conf/gateway.yaml",
        "conf/demo.yaml",
        "conf/fleet.yaml",
        "conf/watch.yaml",
        "deploy/container.yaml",
    ] {
        let (code, text) = run(&["-t", "-c", conf]);
        assert_eq!(code, 0, "{conf}: {text}");
        assert!(text.contains("configuration is valid"), "{text}");
    }
}

#[test]
fn dash_t_rejects_a_bad_key_by_name() {
    let dir = std::env::temp_dir().join(format!("sba-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let bad = dir.join("bad.yaml");
    let cases = [
        ("version: 1\nboard_api:\n  server:\n    listen: [\"127.0.0.1:1\"]\n  provider:\n    name: m\n    share_host: app.milanote.com\n    origin: https://app.milanote.com\n    batch_size: 500\n", "board_api.provider.batch_size"),
        ("version: 1\nboard_api:\n  server:\n    listen: [\"127.0.0.1:1\"]\n  bogus_key: 1\n  provider:\n    name: m\n    share_host: app.milanote.com\n    origin: https://app.milanote.com\n", "bogus_key"),
        ("version: 1\nboard_api:\n  server:\n    listen: [\"127.0.0.1:1\"]\n    compression_level: 10\n  provider:\n    name: m\n    share_host: app.milanote.com\n    origin: https://app.milanote.com\n", "board_api.server.compression_level"),
        ("version: 1\nboard_api:\n  provider:\n    name: m\n    share_host: app.milanote.com\n    origin: https://app.milanote.com\n", "board_api.server"),
        ("version: 1\n", "board_api"),
    ];
    // Governance values that would fail or panic later are refused up front.
    let base = "version: 1\nboard_api:\n  server:\n    listen: [\"127.0.0.1:1\"]\n  provider:\n    name: m\n    share_host: app.milanote.com\n    origin: https://app.milanote.com\n";
    let governance = [
        (
            "  limits:\n    work_threads: 0\n",
            "board_api.limits.work_threads",
        ),
        (
            "  limits:\n    work_threads: 100000\n",
            "board_api.limits.work_threads",
        ),
        (
            "  limits:\n    max_cold_loads: 0\n",
            "board_api.limits.max_cold_loads",
        ),
        (
            "  limits:\n    cold_queue: 99999999999\n",
            "board_api.limits.cold_queue",
        ),
        (
            "  limits:\n    max_upstream_requests: 0\n",
            "board_api.limits.max_upstream_requests",
        ),
        (
            "  cache:\n    budget_bytes: 10\n",
            "board_api.cache.budget_bytes",
        ),
        (
            "  cache:\n    budget_bytes: 1048576\n    max_document_bytes: 2097152\n",
            "board_api.cache.max_document_bytes",
        ),
        (
            "  cache:\n    max_error_entries: 0\n",
            "board_api.cache.max_error_entries",
        ),
    ];
    let governance: Vec<(String, &str)> = governance
        .iter()
        .map(|(extra, key)| (format!("{base}{extra}"), *key))
        .collect();
    let cases = cases
        .iter()
        .map(|(yaml, key)| (yaml.to_string(), *key))
        .chain(governance);
    for (yaml, key) in cases {
        std::fs::write(&bad, &yaml).expect("write config");
        let (code, text) = run(&["-t", "-c", bad.to_str().expect("utf-8 path")]);
        assert_eq!(code, 2, "{text}");
        assert!(text.contains(key), "{key} not named in: {text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_a_config_or_demo_it_explains_itself() {
    let (code, text) = run(&[]);
    assert_eq!(code, 2);
    assert!(text.contains("--demo") && text.contains("-c"), "{text}");
}

/// A directory of its own for one test's files.
fn scratch(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("sba-cli-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// A file: Pingora's `top` keys, then `board_api` with `api` lines and a
/// server section with `server` lines.
fn file(dir: &std::path::Path, top: &str, api: &str, server: &str) -> String {
    let path = dir.join("conf.yaml");
    let text = format!(
        "version: 1\n{top}board_api:\n{api}  server:\n    listen: [\"127.0.0.1:0\"]\n{server}"
    );
    std::fs::write(&path, text).expect("write config");
    path.to_str().expect("utf-8 path").to_string()
}

/// `-t` refuses the file naming `key`, and so does a real start with the
/// same flags: exit 2 before anything listens.
fn both_refuse(conf: &str, flags: &[&str], key: &str) {
    let mut args = vec!["-t"];
    args.extend_from_slice(flags);
    args.extend(["-c", conf]);
    let (code, text) = run(&args);
    assert_eq!(code, 2, "-t {flags:?}: {text}");
    assert!(text.contains(key), "-t does not name {key}: {text}");
    assert!(!text.contains("is valid"), "{text}");
    let mut args: Vec<&str> = flags.to_vec();
    args.extend(["-c", conf]);
    let (code, text) = run(&args);
    assert_eq!(code, 2, "start {flags:?}: {text}");
    assert!(text.contains(key), "start-up does not name {key}: {text}");
}

#[test]
fn dash_t_refuses_bad_tls_files_as_start_up_does() {
    let dir = scratch("tls");
    let made = |name: &str| {
        let c = rcgen::generate_simple_self_signed(vec!["localhost".into()]).expect("certificate");
        std::fs::write(dir.join(format!("{name}.pem")), c.cert.pem()).expect("cert");
        std::fs::write(dir.join(format!("{name}.key")), c.key_pair.serialize_pem()).expect("key");
    };
    made("a");
    made("b");
    std::fs::write(dir.join("garbage.pem"), "not a certificate\n").expect("garbage");
    let tls = |cert: &str, key: &str| {
        format!(
            "    tls:\n      cert: {}\n      key: {}\n",
            dir.join(cert).display(),
            dir.join(key).display()
        )
    };
    let good = file(&dir, "", "", &tls("a.pem", "a.key"));
    let (code, text) = run(&["-t", "-c", &good]);
    assert_eq!(code, 0, "a matching pair: {text}");
    for (cert, key) in [
        ("garbage.pem", "a.key"), // no certificate
        ("a.pem", "garbage.pem"), // no key
        ("a.pem", "a.pem"),       // a certificate where the key goes
        ("a.pem", "b.key"),       // a key that does not go with the certificate
        ("missing.pem", "a.key"), // no such file
    ] {
        let conf = file(&dir, "", "", &tls(cert, key));
        both_refuse(&conf, &[], "board_api.server.tls");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn dash_t_refuses_a_bad_ca_file_and_an_unset_password_variable() {
    let dir = scratch("ca");
    std::fs::write(
        dir.join("ca.pem"),
        "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n",
    )
    .expect("ca");
    std::fs::write(dir.join("empty.pem"), "").expect("empty");
    for ca in ["ca.pem", "empty.pem", "missing.pem"] {
        let api = format!("  provider:\n    ca_file: {}\n", dir.join(ca).display());
        both_refuse(&file(&dir, "", &api, ""), &[], "board_api.provider.ca_file");
    }
    let api = "  cache:\n    shared:\n      url: redis://127.0.0.1:6379/0\n      password_env: SBAPI_TEST_UNSET_VARIABLE\n";
    both_refuse(
        &file(&dir, "", api, ""),
        &[],
        "board_api.cache.shared.password_env",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn dash_t_refuses_paths_the_daemon_and_an_upgrade_cannot_use() {
    let dir = scratch("paths");
    let missing = dir.join("missing");
    let ok = |name: &str| dir.join(name).display().to_string();
    let bad = |name: &str| missing.join(name).display().to_string();
    let top = |pid: &str, sock: &str, extra: &str| {
        format!("pid_file: {pid}\nupgrade_sock: {sock}\n{extra}")
    };
    // Where they can be written, -t -d and -t -u pass.
    let conf = file(&dir, &top(&ok("pid"), &ok("sock"), ""), "", "");
    for flags in [&["-d"][..], &["-u"]] {
        let mut args = vec!["-t"];
        args.extend_from_slice(flags);
        args.extend(["-c", &conf]);
        let (code, text) = run(&args);
        assert_eq!(code, 0, "{flags:?}: {text}");
    }
    // The daemon writes the pid file (and the error log, as the user).
    let conf = file(&dir, &top(&bad("pid"), &ok("sock"), ""), "", "");
    both_refuse(&conf, &["-d"], "pid_file");
    let conf = file(
        &dir,
        &top(
            &ok("pid"),
            &ok("sock"),
            &format!("error_log: {}\n", bad("err.log")),
        ),
        "",
        "",
    );
    both_refuse(&conf, &["-d"], "error_log");
    let conf = file(
        &dir,
        &top(&ok("pid"), &ok("sock"), "user: no-such-user-sba\n"),
        "",
        "",
    );
    both_refuse(&conf, &["-d"], "user");
    // An upgrade receives the sockets on upgrade_sock.
    let conf = file(&dir, &top(&ok("pid"), &bad("sock"), ""), "", "");
    both_refuse(&conf, &["-u"], "upgrade_sock");
    // In the foreground without -u neither is used, and -t says so.
    let (code, text) = run(&["-t", "-c", &conf]);
    assert_eq!(code, 0, "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_port_in_use_fails_start_up_at_once_naming_it() {
    let dir = scratch("port");
    // Held by this test for the whole check.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = taken.local_addr().expect("addr");
    let path = dir.join("conf.yaml");
    std::fs::write(
        &path,
        format!("version: 1\nboard_api:\n  server:\n    listen: [\"{addr}\"]\n"),
    )
    .expect("write");
    let conf = path.to_str().expect("utf-8");
    // -t checks everything but the network.
    let (code, text) = run(&["-t", "-c", conf]);
    assert_eq!(code, 0, "{text}");
    let started = std::time::Instant::now();
    let (code, text) = run(&["-c", conf]);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("board_api.server.listen") && text.contains(&addr.to_string()),
        "{text}"
    );
    // Not the file's fault: said as what it is.
    assert!(
        text.contains("cannot start:") && text.contains("in use (another process listens there)"),
        "{text}"
    );
    assert!(!text.contains("invalid configuration"), "{text}");
    // Pingora alone would retry for 30 s and then keep running without it.
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    drop(taken);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn help_describes_pingoras_flags_for_this_binary() {
    let (code, text) = run(&["--help"]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("JSON and Markdown"), "{text}");
    assert!(text.contains("MCP"), "{text}");
    let line = |flag: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(flag))
            .unwrap_or_else(|| panic!("{flag} in {text}"))
            .to_owned()
    };
    assert!(line("-u,").contains("SIGQUIT"), "{text}");
    assert!(line("-t,").contains("exit"), "{text}");
    assert!(line("--listen").contains("--demo"), "{text}");
    // Pingora's doc of its Opt struct, not of the flag.
    assert!(
        !text.contains("base set of command line arguments"),
        "{text}"
    );
}

#[test]
fn a_bad_key_is_named_once() {
    let dir = scratch("key-once");
    let path = dir.join("conf.yaml");
    std::fs::write(&path, "version: 1\nboard_api:\n  cache:\n    nope: 1\n").expect("write");
    let (code, text) = run(&["-t", "-c", path.to_str().expect("utf-8")]);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("invalid configuration: board_api.cache: unknown field `nope`"),
        "{text}"
    );
    assert_eq!(text.matches("board_api").count(), 1, "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn version_names_the_binary_and_its_version() {
    let (code, text) = run(&["--version"]);
    assert_eq!(code, 0);
    assert_eq!(
        text.trim(),
        format!("shared-board-api {}", env!("CARGO_PKG_VERSION"))
    );
}

/// Pingora prints the whole configuration file at `trace`. No password of
/// the tier reaches that line (nor any other), whatever characters it holds
/// and however a cluster list is written, and neither does the fleet key or
/// `password_env`'s value.
#[test]
fn no_password_reaches_the_trace_log() {
    let dir = scratch("trace-passwords");
    let conf = dir.join("pw.yaml");
    let secrets = ["pa'ss%40w0rd", "pa'ss@w0rd", "Sec'ond2", "Thi\"rd;3"];
    for (i, cluster) in [
        // No space after the comma, a `'` and an escaped `@` in one.
        "[redis://app:pa'ss%40w0rd@127.0.0.1:7000,redis://app:Sec'ond2@127.0.0.1:7001]",
        "\n        - 'redis://app:pa''ss%40w0rd@127.0.0.1:7000'\n        - \"redis://app:Sec'ond2@127.0.0.1:7001\"",
    ]
    .iter()
    .enumerate()
    {
        std::fs::write(
            &conf,
            format!(
                "version: 1\nboard_api:\n  server:\n    listen: [\"127.0.0.1:0\"]\n  cache:\n    shared:\n      cluster: {cluster}\n      password_env: SBAPI_TEST_TRACE_PASSWORD\n      secret_env: SBAPI_TEST_TRACE_KEY\n"
            ),
        )
        .expect("write");
        let out = Command::new(env!("CARGO_BIN_EXE_shared-board-api"))
            .args(["-t", "-c"])
            .arg(&conf)
            .env("RUST_LOG", "trace")
            .env("SBAPI_TEST_TRACE_PASSWORD", "Thi\"rd;3")
            .env("SBAPI_TEST_TRACE_KEY", "fleet-key-that-must-not-be-logged-0123")
            .output()
            .expect("binary runs");
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "case {i}: {text}");
        assert!(
            text.contains("127.0.0.1:7001"),
            "case {i}: the file is traced: {text}"
        );
        for secret in secrets.iter().chain(&["fleet-key-that-must-not-be-logged", "pa''ss"]) {
            assert!(!text.contains(secret), "case {i}: {secret} in:\n{text}");
        }
    }
}

//! The binary's command line: `-t` checks a file and exits, errors name the key.

use std::process::Command;

fn run(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_shared-board-api"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("RUST_LOG", "error")
        .output()
        .expect("binary runs");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn dash_t_accepts_every_shipped_config() {
    for conf in ["conf/gateway.yaml", "conf/demo.yaml"] {
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

//! The `board_api` section end to end: defaults, key paths in errors, the
//! shipped files.

use super::*;

const BASE: &str = "version: 1\nthreads: 2\nboard_api:\n  provider:\n    name: milanote\n    share_host: app.milanote.com\n    origin: https://app.milanote.com\n";

fn with(extra: &str) -> Result<ApiSettings, ConfigError> {
    ApiSettings::from_yaml(&format!("{BASE}{extra}"))
}

/// The binary's view: `extra` lines go under `board_api.server`.
fn server(extra: &str) -> Result<Settings, ConfigError> {
    Settings::from_yaml(&format!(
        "{BASE}  server:\n    listen: [\"127.0.0.1:8080\"]\n{extra}"
    ))
}

#[test]
fn minimal_file_gets_defaults() {
    let s = with("").expect("valid without server");
    assert_eq!((s.prefix.as_str(), s.claim_prefix), ("/api", false));
    assert_eq!(s.provider_name, "milanote");
    assert_eq!(s.share_host, "app.milanote.com");
    assert_eq!(s.provider.fetch_deadline, Duration::from_millis(15_000));
    assert_eq!(s.provider.max_response_bytes, 33_554_432);
    assert_eq!(s.provider.max_boards, 100);
    assert_eq!(s.provider.batch_size, 50);
    assert_eq!(s.provider.concurrency, 4);
    assert_eq!(s.cache, Some(CacheSettings::default()));
    assert_eq!(s.rate_limit, None);
    let s = server("").expect("valid").server;
    assert_eq!(
        s.listen,
        vec!["127.0.0.1:8080".parse::<SocketAddr>().expect("addr")]
    );
    assert_eq!((s.compression_level, s.playground), (6, false));
}

#[test]
fn the_provider_may_be_left_out_and_is_milanote() {
    for text in [
        "version: 1\nboard_api:\n  rate_limit:\n    requests_per_second: 5\n",
        "version: 1\nboard_api:\n  provider:\n    fetch_deadline_ms: 5000\n",
    ] {
        let s = ApiSettings::from_yaml(text).expect(text);
        assert_eq!(s.provider_name, "milanote");
        assert_eq!(s.share_host, "app.milanote.com");
        assert_eq!(s.provider_origin(), "https://app.milanote.com/");
    }
    let e = ApiSettings::from_yaml("board_api:\n  provider:\n    origin: nope\n").unwrap_err();
    assert_eq!(e.key, "board_api.provider.origin");
}

#[test]
fn the_binary_needs_a_server_section_and_a_host_does_not() {
    assert!(with("").is_ok());
    let err = Settings::from_yaml(BASE).expect_err("no server");
    assert_eq!(err.key, "board_api.server");
    // Of the binary's section a host reads trusted_proxies alone; any other
    // key would be ignored on a host's path, so it is refused by name.
    let api = with("  server:\n    trusted_proxies: [\"10.0.0.0/8\"]\n").expect("valid");
    let balancer = "10.1.2.3".parse().expect("ip");
    let mut headers = http::HeaderMap::new();
    headers.insert("x-forwarded-for", "203.0.113.9".parse().expect("value"));
    assert_eq!(
        api.trusted_proxies().client(balancer, &headers),
        "203.0.113.9".parse::<std::net::IpAddr>().expect("ip")
    );
    for (server, key) in [
        ("    listen: [\"127.0.0.1:1\"]\n", "board_api.server.listen"),
        ("    playground: true\n", "board_api.server.playground"),
        (
            "    metrics:\n      listen: 127.0.0.1:9\n",
            "board_api.server.metrics",
        ),
        (
            "    trusted_proxies: [\"10.0.0.0/8\"]\n    access_log: true\n",
            "board_api.server.access_log",
        ),
        (
            "    trusted_proxies: [\"nope\"]\n",
            "board_api.server.trusted_proxies",
        ),
    ] {
        let err = with(&format!("  server:\n{server}")).expect_err(server);
        assert_eq!(err.key, key, "{server}: {err}");
    }
    // The binary reads the whole section, and hands the proxies to the API.
    let both = server("    trusted_proxies: [\"10.0.0.0/8\"]\n").expect("valid");
    assert_eq!(
        both.api().trusted_proxies().client(balancer, &headers),
        "203.0.113.9".parse::<std::net::IpAddr>().expect("ip")
    );
    // The builder takes the same key, and refuses the others alike.
    let built = ApiSettings::builder()
        .set("server.trusted_proxies", vec!["10.0.0.0/8"])
        .build()
        .expect("valid");
    assert_eq!(
        built.trusted_proxies().client(balancer, &headers),
        "203.0.113.9".parse::<std::net::IpAddr>().expect("ip")
    );
    let err = ApiSettings::builder()
        .set("server.listen", vec!["127.0.0.1:1"])
        .build()
        .expect_err("a listener on a host's path");
    assert_eq!(err.key, "board_api.server.listen");
}

#[test]
fn prefixes() {
    let ok = [
        ("/api", "/api"),
        ("/api/", "/api"),
        ("/boards/v1", "/boards/v1"),
        ("/a-b_c.d~e", "/a-b_c.d~e"),
    ];
    for (given, want) in ok {
        let s = with(&format!("  prefix: \"{given}\"\n")).expect(given);
        assert_eq!(s.prefix, want, "{given}");
    }
    for bad in ["", "/", "api", "/api//x", "/a b", "/api?x", "/%41"] {
        let err = with(&format!("  prefix: \"{bad}\"\n")).expect_err(bad);
        assert_eq!(err.key, "board_api.prefix", "{bad}");
    }
    assert!(with("  claim_prefix: true\n").expect("valid").claim_prefix);
}

#[test]
fn errors_name_the_key() {
    let cases = [
        ("    bogus: 1\n", "board_api.provider"),
        ("  bogus: 1\n", "board_api"),
        (
            "    fetch_deadline_ms: 0\n",
            "board_api.provider.fetch_deadline_ms",
        ),
        ("    batch_size: 51\n", "board_api.provider.batch_size"),
        ("    max_boards: 0\n", "board_api.provider.max_boards"),
        ("    concurrency: 0\n", "board_api.provider.concurrency"),
        (
            "    max_response_bytes: 10\n",
            "board_api.provider.max_response_bytes",
        ),
        (
            "    ca_file: /nonexistent/ca.pem\n",
            "board_api.provider.ca_file",
        ),
        (
            "  cache:\n    ttl_seconds: 86401\n",
            "board_api.cache.ttl_seconds",
        ),
        (
            "  rate_limit:\n    requests_per_second: 0\n",
            "board_api.rate_limit.requests_per_second",
        ),
    ];
    for (extra, key) in cases {
        let err = with(extra).expect_err(extra);
        assert_eq!(err.key, key, "{extra}: {err}");
    }
    // serde's message names the unknown key and its line; its path is the
    // error's key, said once.
    let err = with("    bogus: 1\n").expect_err("unknown key");
    assert!(err.message.contains("bogus"), "{err}");
    assert_eq!(err.key, "board_api.provider", "{err}");
    assert!(!err.message.contains("board_api"), "{err}");
    assert!(err.message.contains("line 8"), "{err}");
    let server_cases = [
        (
            "    compression_level: 10\n",
            "board_api.server.compression_level",
        ),
        (
            "    metrics:\n      listen: nowhere\n",
            "board_api.server.metrics.listen",
        ),
        (
            "    metrics:\n      listen: \"127.0.0.1:8080\"\n",
            "board_api.server.metrics.listen",
        ),
        (
            "    tls:\n      cert: /nonexistent.pem\n      key: /nonexistent.key\n",
            "board_api.server.tls.cert",
        ),
        ("    h2c: true\n    http2: false\n", "board_api.server.h2c"),
        (
            "    h2c: true\n    tls:\n      cert: Cargo.toml\n      key: Cargo.toml\n",
            "board_api.server.h2c",
        ),
        ("    http2: maybe\n", "board_api.server.http2"),
        (
            "    access_log_buffer: 0\n",
            "board_api.server.access_log_buffer",
        ),
    ];
    for (extra, key) in server_cases {
        let err = server(extra).expect_err(extra);
        assert_eq!(err.key, key, "{extra}: {err}");
    }
    let defaults = server("").expect("defaults");
    assert!(defaults.server.http2 && !defaults.server.h2c);
    assert_eq!(defaults.server.access_log, None);
    let on = server("    h2c: true\n    access_log: true\n    access_log_buffer: 8\n")
        .expect("h2c and the access log");
    assert!(on.server.http2 && on.server.h2c);
    assert_eq!(
        on.server.access_log,
        Some(AccessLogSettings {
            target: AccessTarget::Stderr,
            buffer: 8
        })
    );
    for (value, target) in [
        ("stdout", Some(AccessTarget::Stdout)),
        ("stderr", Some(AccessTarget::Stderr)),
        ("\"false\"", None),
        ("false", None),
        (
            "./access.log",
            Some(AccessTarget::File("./access.log".into())),
        ),
    ] {
        let s = server(&format!("    access_log: {value}\n")).expect(value);
        assert_eq!(s.server.access_log.map(|a| a.target), target, "{value}");
    }
    for bad in ["\"\"", "/nonexistent-dir/access.log", "src"] {
        let e = server(&format!("    access_log: {bad}\n")).expect_err(bad);
        assert_eq!(e.key, "board_api.server.access_log", "{bad}: {e}");
    }
    for level in 0..=9 {
        let s = server(&format!("    compression_level: {level}\n")).expect("in range");
        assert_eq!(s.server.compression_level, level);
    }
}

#[test]
fn bad_values() {
    let bad = [
        ("origin: ftp://x", "board_api.provider.origin"),
        (
            "origin: https://app.milanote.com/path",
            "board_api.provider.origin",
        ),
        ("origin: nope", "board_api.provider.origin"),
        (
            "share_host: https://app.milanote.com",
            "board_api.provider.share_host",
        ),
        (
            "share_host: app.milanote.com:443",
            "board_api.provider.share_host",
        ),
        ("name: \"\"", "board_api.provider.name"),
    ];
    for (replace, key) in bad {
        let (k, _) = replace.split_once(": ").expect("k: v");
        let text: String = BASE
            .lines()
            .map(|l| {
                if l.trim_start().starts_with(&format!("{k}:")) {
                    format!("{}{replace}\n", &l[..l.len() - l.trim_start().len()])
                } else {
                    format!("{l}\n")
                }
            })
            .collect();
        let err = ApiSettings::from_yaml(&text).expect_err(replace);
        assert_eq!(err.key, key, "{replace}: {err}");
    }
    for listen in ["[]", "[\"localhost\"]"] {
        let text = format!("{BASE}  server:\n    listen: {listen}\n");
        let err = Settings::from_yaml(&text).expect_err(listen);
        assert_eq!(err.key, "board_api.server.listen", "{listen}");
    }
    assert_eq!(
        ApiSettings::from_yaml("version: 1\n")
            .expect_err("no section")
            .key,
        "board_api"
    );
}

#[test]
fn cache_can_be_turned_off() {
    for off in ["enabled: false", "ttl: 0", "ttl_seconds: 0"] {
        let settings = with(&format!("  cache:\n    {off}\n")).expect(off);
        assert_eq!(settings.cache, None, "{off}");
    }
}

#[test]
fn cache_accepts_design_names_ttl_and_size() {
    let c = with("  cache:\n    ttl: 30\n    size: 4194304\n").expect("valid");
    let c = c.cache.expect("on");
    assert_eq!(c.ttl, Duration::from_secs(30));
    assert_eq!((c.budget_bytes, c.max_entry_bytes), (4 << 20, 1 << 20));
    let c = with("  cache:\n    budget_bytes: 1073741824\n    max_document_bytes: 5000\n")
        .expect("valid");
    let c = c.cache.expect("on");
    assert_eq!((c.budget_bytes, c.max_entry_bytes), (1 << 30, 5000));
    let err = with("  cache:\n    size: 10\n").expect_err("tiny");
    assert_eq!(err.key, "board_api.cache.budget_bytes");
}

#[test]
fn limits_default_and_refuse_values_that_could_fail_later() {
    let s = with("").expect("valid");
    assert_eq!(s.limits, Limits::default());
    assert!(s.limits.work_threads >= 1);
    let s = with("  limits:\n    work_threads: 3\n    max_cold_loads: 1\n    cold_queue: 0\n    max_upstream_requests: 8\n")
        .expect("valid");
    assert_eq!(
        (
            s.limits.work_threads,
            s.limits.max_cold_loads,
            s.limits.cold_queue
        ),
        (3, 1, 0)
    );
    assert_eq!(s.limits.max_upstream_requests, 8);
    let s = with("  limits:\n    work_threads: 3\n").expect("valid");
    assert_eq!(s.limits.max_cold_loads, 3, "follows work_threads");
    let bad = [
        ("    work_threads: 0\n", "board_api.limits.work_threads"),
        (
            "    work_threads: 100000\n",
            "board_api.limits.work_threads",
        ),
        ("    work_queue: 0\n", "board_api.limits.work_queue"),
        ("    max_cold_loads: 0\n", "board_api.limits.max_cold_loads"),
        (
            "    cold_queue: 18446744073709551615\n",
            "board_api.limits.cold_queue",
        ),
        (
            "    max_upstream_requests: 0\n",
            "board_api.limits.max_upstream_requests",
        ),
        ("    bogus: 1\n", "board_api.limits"),
        ("    cold_queue: -1\n", "board_api.limits.cold_queue"),
    ];
    for (extra, key) in bad {
        let err = with(&format!("  limits:\n{extra}")).expect_err(extra);
        assert_eq!(err.key, key, "{extra}: {err}");
    }
    let cache_bad = [
        ("    budget_bytes: 1000\n", "board_api.cache.budget_bytes"),
        (
            "    budget_bytes: 2097152\n    max_document_bytes: 4194304\n",
            "board_api.cache.max_document_bytes",
        ),
        (
            "    max_error_entries: 0\n",
            "board_api.cache.max_error_entries",
        ),
        (
            "    error_ttl_seconds: 18446744073709551615\n",
            "board_api.cache.error_ttl_seconds",
        ),
        ("    max_entries: 5\n", "board_api.cache"),
    ];
    for (extra, key) in cache_bad {
        let err = with(&format!("  cache:\n{extra}")).expect_err(extra);
        assert_eq!(err.key, key, "{extra}: {err}");
    }
}

#[test]
fn shipped_configs_are_valid() {
    // conf/fleet.yaml reads its fleet key from the environment, as a node
    // does (CI exports one before `-t`).
    std::env::set_var("SBAPI_FLEET_KEY", "a-fleet-key-of-at-least-32-bytes");
    // conf/watch.yaml reads its job's link, receiver and secret so too.
    std::env::set_var(
        "SBAPI_WATCH_LINK",
        "https://app.milanote.com/1W3ZZU1Qvua02H/demo?p=demo",
    );
    std::env::set_var("SBAPI_WATCH_URL", "https://hooks.example.com/milanote");
    std::env::set_var(
        "SBAPI_WATCH_SECRET",
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    );
    let root = env!("CARGO_MANIFEST_DIR");
    let mut seen = 0;
    for entry in std::fs::read_dir(format!("{root}/conf")).expect("conf/ exists") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "yaml") {
            Settings::from_file(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            seen += 1;
        }
    }
    assert!(seen >= 2);
    let host = std::path::Path::new(root).join("examples/host_gateway.yaml");
    let api = ApiSettings::from_file(&host).expect("the host example's file is valid");
    assert_eq!(api.prefix, "/boards");
}

#[test]
fn the_mcp_section_by_its_file_names() {
    assert_eq!(with("").expect("valid").mcp, McpSettings::default());
    let s = with("  mcp:\n    enabled: false\n    allowed_origins: [\"https://agent.example\"]\n    max_body_bytes: 2048\n")
        .expect("valid");
    assert!(!s.mcp.enabled);
    assert!(s.mcp.allows_origin(b"https://agent.example"));
    assert_eq!(s.mcp.max_body_bytes, 2048);
    let e = with("  mcp:\n    origins: []\n").expect_err("unknown key");
    assert!(e.message.contains("origins"), "{e}");
    let e = with("  mcp:\n    allowed_origins: [\"agent.example\"]\n").expect_err("bad origin");
    assert_eq!(e.key, "board_api.mcp.allowed_origins");
}

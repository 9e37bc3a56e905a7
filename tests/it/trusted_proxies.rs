//! Behind a balancer: with `board_api.server.trusted_proxies` naming the
//! peer, the client is read from `Forwarded` or `X-Forwarded-For`, and the
//! rate limit and the access log see that client; from an untrusted peer
//! the headers are ignored and every request is the peer's. The test's
//! connections come from 127.0.0.1.

use crate::common::*;
use std::path::PathBuf;

/// A gateway limited to one request per second per client, logging to a
/// file, trusting `trusted`.
fn gateway(tag: &str, trusted: &str) -> (Gateway, PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("sba-proxies-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let log = dir.join("access.log");
    let gw = start_gateway_with(
        "",
        "  rate_limit:\n    requests_per_second: 1\n",
        &format!(
            "    trusted_proxies: [{trusted}]\n    access_log: {}\n",
            log.display()
        ),
    );
    (gw, log, dir)
}

fn search(gw: &Gateway, header: (&str, &str)) -> u16 {
    let target = format!("/api/search?url={}", link(BOARD, PERMISSION));
    request(gw.addr, "GET", &target, &[header]).status
}

/// Requests as one client until the limit answers 429 (a second's window
/// can fall between two requests, so not always on the second one).
fn until_limited(gw: &Gateway, header: (&str, &str)) -> usize {
    for n in 1..=5 {
        if search(gw, header) == 429 {
            return n;
        }
    }
    panic!("{header:?} was never limited");
}

fn clients(log: &std::path::Path, count: usize) -> Vec<String> {
    wait_for_lines(log, count)
        .iter()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
            v["client"].as_str().expect("client").to_string()
        })
        .collect()
}

#[test]
fn a_trusted_balancer_names_the_client() {
    let (gw, log, dir) = gateway("trusted", "\"127.0.0.1/32\"");
    let xff = |ip| ("X-Forwarded-For", ip);
    // Each client has its own budget: one limited does not limit another.
    let a = until_limited(&gw, xff("203.0.113.1"));
    assert_eq!(search(&gw, xff("203.0.113.2")), 200);
    // The right-most hop the balancer did not add, not a spoofed left one.
    assert_eq!(search(&gw, xff("203.0.113.1, 203.0.113.3")), 200);
    let f = until_limited(&gw, ("Forwarded", "for=\"[2001:db8::7]:4711\";proto=https"));
    let sent = a + 2 + f;
    let seen = clients(&log, sent);
    let mut expected = vec!["203.0.113.1"; a];
    expected.extend(["203.0.113.2", "203.0.113.3"]);
    expected.extend(vec!["2001:db8::7"; f]);
    assert_eq!(seen, expected);
    drop(gw);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_untrusted_peer_is_the_client_whatever_it_says() {
    let (gw, log, dir) = gateway("untrusted", "\"10.0.0.0/8\"");
    // A new address in every request: were the header believed, none
    // would be limited.
    let mut sent = 0;
    for (name, value) in [("X-Forwarded-For", ""), ("Forwarded", "for=")] {
        let limited = (1..=5).any(|n| {
            sent += 1;
            search(&gw, (name, &format!("{value}203.0.113.{n}"))) == 429
        });
        assert!(limited, "{name} was believed");
    }
    assert!(clients(&log, sent).iter().all(|c| c == "127.0.0.1"));
    drop(gw);
    let _ = std::fs::remove_dir_all(&dir);
}

//! What the operator's and the agent's first days need from the docs, each
//! checked against the file or the code it describes: the README's minimal
//! configuration bounds shutdown, the runtime directory is made before the
//! daemon, load tests know the sample rate limit, the playground's `tab=`
//! values are the page's own, and the demo's big board is named.

use super::{read, split_fences, ROOT};
use std::path::Path;

fn doc(name: &str) -> String {
    read(&Path::new(ROOT).join(name))
}

#[test]
fn the_readmes_minimal_configuration_bounds_shutdown_and_names_listen() {
    let readme = doc("README.md");
    let (prose, blocks) = split_fences(&readme);
    let minimal = blocks
        .iter()
        .find(|(info, body)| info == "yaml" && body.contains("pid_file"))
        .map(|(_, body)| body)
        .expect("the README's minimal configuration");
    let yaml: serde_yaml::Value = serde_yaml::from_str(minimal).expect("YAML");
    for key in ["grace_period_seconds", "graceful_shutdown_timeout_seconds"] {
        assert!(
            yaml[key].as_u64().is_some_and(|s| s <= 30),
            "{key} in:\n{minimal}"
        );
        assert!(
            prose.contains(&format!("`{key}`")),
            "the README says what {key} does"
        );
    }
    assert!(prose.contains("--listen"), "the README names --listen");
}

#[test]
fn the_runtime_directory_is_made_before_the_daemon_starts() {
    let ops = doc("docs/operations.md");
    let (_, blocks) = split_fences(&ops);
    let process = blocks
        .iter()
        .map(|(_, body)| body)
        .find(|body| body.contains("-d -c"))
        .expect("the commands of 'The process'");
    let made = process
        .find("install -d")
        .expect("install -d in the commands");
    let daemon = process.find(" -d -c").expect("the daemon's command");
    assert!(made < daemon, "{process}");
    assert!(process.contains("/run/shared-board-api"), "{process}");
    assert!(
        ops.contains("RuntimeDirectory="),
        "operations.md says the unit makes it"
    );
    let unit = doc("deploy/shared-board-api.service");
    assert!(unit.contains("RuntimeDirectory=shared-board-api"), "{unit}");
}

#[test]
fn load_tests_are_told_about_the_sample_rate_limit() {
    let sample = doc("conf/gateway.yaml");
    assert!(
        sample.contains("requests_per_second: 20"),
        "the sample's limit changed: update the docs"
    );
    for name in ["docs/operations.md", "benches/README.md"] {
        let text = doc(name);
        assert!(
            text.contains("requests_per_second")
                && text.contains("429")
                && text.contains("load test"),
            "{name} says how a load test meets the rate limit"
        );
    }
}

#[test]
fn idle_closes_are_counted_per_connection() {
    let ops = doc("docs/operations.md");
    assert!(
        !ops.contains("per client and upgrade"),
        "per connection, not per client"
    );
    assert!(ops.contains("per connection and upgrade"));
}

#[test]
fn the_playgrounds_tab_values_are_documented() {
    let page = doc("assets/playground.html");
    let line = page
        .lines()
        .find(|l| l.contains("pre.get(\"tab\")"))
        .expect("the page reads tab=");
    let list = &line[line.find('[').expect("a list") + 1..line.find(']').expect("a list")];
    let tabs: Vec<&str> = list
        .split(',')
        .map(|t| t.trim().trim_matches('"'))
        .collect();
    assert!(tabs.len() >= 5, "{tabs:?}");
    let api = doc("docs/api.md");
    for tab in tabs {
        assert!(
            api.contains(&format!("| `{tab}` |")),
            "tab={tab} in docs/api.md"
        );
    }
    assert!(
        !api.contains("a page cannot read"),
        "Content-Disposition is exposed"
    );
}

#[test]
fn the_mcp_page_names_the_big_board_and_the_max_chars_ceiling() {
    let mcp = doc("docs/mcp.md");
    assert!(mcp.contains("https://app.milanote.com/s-big/big?p=demo"));
    assert!(mcp.contains("400,000") && mcp.contains("100,000 tokens"));
    assert!(mcp.contains("watches-and-webhooks"));
}

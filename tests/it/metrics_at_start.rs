//! Every metric docs/operations.md lists is exported from the start, at 0,
//! before any request: a dashboard sees 0, not "no data", until the first
//! event.

use crate::common::*;

/// The metric names of the operations guide's table (`| `name{labels}`, ... |`).
fn documented() -> Vec<String> {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/operations.md"))
        .expect("docs/operations.md");
    let mut names = Vec::new();
    for line in doc.lines().filter(|l| l.starts_with("| `board_api_")) {
        let cell = line.split('|').nth(1).unwrap_or_default();
        for span in cell.split('`').skip(1).step_by(2) {
            let name = span.split('{').next().unwrap_or_default();
            names.push(name.to_string());
        }
    }
    names
}

#[test]
fn every_documented_metric_is_exported_at_zero_before_any_request() {
    // "Before any request" is of the process: it runs alone in a child.
    if !in_own_process(
        module_path!(),
        "every_documented_metric_is_exported_at_zero_before_any_request",
    ) {
        return;
    }
    let names = documented();
    assert!(names.len() >= 14, "the table lists {names:?}");
    let (_gw, metrics) = start_gateway_with_metrics("", "");
    let r = request(metrics, "GET", "/metrics", &[]);
    assert_eq!(r.status, 200);
    let text = String::from_utf8_lossy(&r.body).into_owned();
    for name in &names {
        // A histogram's samples are name_bucket, name_sum and name_count.
        let samples: Vec<&str> = text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter(|l| {
                l.strip_prefix(name.as_str())
                    .is_some_and(|rest| rest.starts_with([' ', '{', '_']))
            })
            .collect();
        assert!(!samples.is_empty(), "{name} is not exported:\n{text}");
        for sample in samples {
            let value = sample.rsplit(' ').next().unwrap_or_default();
            assert_eq!(value, "0", "{sample}");
        }
    }
}

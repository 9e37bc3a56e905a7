//! The documentation against the code: every configuration key the docs show
//! passes `-t` (and every YAML example that holds a `board_api` section does,
//! as written when it is a whole file, else laid over a minimal one), every relative link in the Markdown files
//! resolves, anchors included, and every JSON example parses, the answers
//! and request bodies among them validating against their schemas.

use serde_yaml::{Mapping, Value};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

mod operator;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The Markdown a reader is sent to: the front door, the contributor guide,
/// everything under `docs/`, and the benchmark figures.
fn markdown_files() -> Vec<PathBuf> {
    let root = Path::new(ROOT);
    let mut files = vec![
        root.join("README.md"),
        root.join("CONTRIBUTING.md"),
        root.join("benches/README.md"),
    ];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The text outside fenced code blocks, and the fenced blocks with their
/// info string.
fn split_fences(text: &str) -> (String, Vec<(String, String)>) {
    let mut prose = String::new();
    let mut blocks = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        match &mut open {
            None if trimmed.starts_with("```") => {
                open = Some((
                    trimmed.trim_start_matches('`').trim().to_string(),
                    String::new(),
                ));
            }
            None => {
                prose.push_str(line);
                prose.push('\n');
            }
            Some(_) if trimmed.starts_with("```") => blocks.extend(open.take()),
            Some((_, body)) => {
                body.push_str(line);
                body.push('\n');
            }
        }
    }
    (prose, blocks)
}

/// GitHub's anchor for a heading: lower case, spaces to `-`, punctuation
/// other than `-` and `_` dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn anchors(text: &str) -> BTreeSet<String> {
    let (prose, _) = split_fences(text);
    prose
        .lines()
        .filter(|l| l.starts_with('#'))
        .map(|l| slug(l.trim_start_matches('#')))
        .collect()
}

/// Every `[text](target)` of the prose, outside inline code.
fn links(prose: &str) -> Vec<String> {
    let text: String = prose.split('`').step_by(2).collect();
    let mut out = Vec::new();
    let mut rest = text.as_str();
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        if let Some(end) = rest.find(')') {
            out.push(rest[..end].to_string());
        }
    }
    out
}

#[test]
fn every_relative_link_resolves() {
    let mut broken = Vec::new();
    for file in markdown_files() {
        let text = read(&file);
        let (prose, _) = split_fences(&text);
        for link in links(&prose) {
            if link.contains("://") || link.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = match link.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (link.as_str(), None),
            };
            let target = if path.is_empty() {
                file.clone()
            } else {
                file.parent().expect("in a directory").join(path)
            };
            if !target.exists() {
                broken.push(format!("{}: {link} (no such file)", file.display()));
                continue;
            }
            if let Some(anchor) = anchor {
                if target.extension().is_some_and(|e| e == "md")
                    && !anchors(&read(&target)).contains(anchor)
                {
                    broken.push(format!("{}: {link} (no such heading)", file.display()));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn links_are_checked_for_real() {
    // The checker itself: a heading's anchor, and a link it must find.
    assert_eq!(slug(" Pingora's keys"), "pingoras-keys");
    assert_eq!(
        slug("`board_api.server`: the standalone binary"),
        "board_apiserver-the-standalone-binary"
    );
    assert_eq!(links("see [a](b.md#c) and [d](e)"), ["b.md#c", "e"]);
    assert!(links("code: `[title](url)`").is_empty());
}

/// A file every example is laid over: what `-t` needs besides the example.
const BASE: &str = "
version: 1
board_api:
  provider:
    name: milanote
    share_host: app.milanote.com
    origin: https://app.milanote.com
  server:
    listen: [\"127.0.0.1:8080\"]
";

/// Environment variables the docs' examples name (`password_env`).
const ENV: &[(&str, &str)] = &[
    ("SBAPI_REDIS_PASSWORD", "example"),
    (
        "SBAPI_FLEET_KEY",
        "an example fleet key of at least thirty-two bytes",
    ),
    (
        "SBAPI_FLEET_KEY_OLD",
        "the example fleet key before the rotation, 32+",
    ),
    // A watch job's link, receiver and signing secret (docs/changes.md).
    (
        "SBAPI_WATCH_LINK",
        "https://app.milanote.com/1W3ZZU1Qvua02H/demo?p=demo",
    ),
    ("SBAPI_WATCH_URL", "https://hooks.example.com/milanote"),
    // The span export's header, in docs/operations.md.
    ("SBAPI_OTLP_KEY", "otlp-key-for-the-docs"),
    (
        "SBAPI_WATCH_SECRET",
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    ),
];

/// Runs `-t` on `yaml`; its exit code and output.
fn dash_t(yaml: &str, name: &str) -> (i32, String) {
    let dir = std::env::temp_dir().join(format!("sba-docs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join(format!("{name}.yaml"));
    std::fs::write(&file, yaml).expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_shared-board-api"))
        .args(["-t", "-c"])
        .arg(&file)
        .current_dir(ROOT)
        .envs(ENV.iter().copied())
        .env("RUST_LOG", "error")
        .output()
        .expect("binary runs");
    let _ = std::fs::remove_file(&file);
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), text)
}

/// Lays `over` onto `base`, mapping by mapping.
fn merge(base: &mut Value, over: Value) {
    match (base, over) {
        (Value::Mapping(b), Value::Mapping(o)) => {
            for (k, v) in o {
                match b.get_mut(&k) {
                    Some(existing) => merge(existing, v),
                    None => {
                        b.insert(k, v);
                    }
                }
            }
        }
        (b, o) => *b = o,
    }
}

#[test]
fn every_yaml_example_with_a_board_api_section_passes_dash_t() {
    let mut checked = 0;
    for file in markdown_files() {
        let (_, blocks) = split_fences(&read(&file));
        for (n, (info, body)) in blocks.iter().enumerate() {
            if info != "yaml" || !body.contains("board_api:") {
                continue;
            }
            let example: Value = serde_yaml::from_str(body)
                .unwrap_or_else(|e| panic!("{} block {n}: {e}\n{body}", file.display()));
            // A whole file (it starts with `version:`) is checked as written.
            let yaml = if body.lines().any(|l| l.starts_with("version:")) {
                body.clone()
            } else {
                let mut whole: Value = serde_yaml::from_str(BASE).expect("base");
                merge(&mut whole, example);
                serde_yaml::to_string(&whole).expect("yaml")
            };
            let (code, text) = dash_t(&yaml, &format!("example-{n}"));
            assert_eq!(
                code,
                0,
                "{} block {n} fails -t:\n{body}\n{text}",
                file.display()
            );
            checked += 1;
        }
    }
    assert!(checked >= 2, "only {checked} examples found");
}

/// Every `board_api.…` key the docs name, with the literal default the
/// configuration reference gives it, when it gives one.
fn documented_keys() -> Vec<(String, Option<String>)> {
    let mut keys = Vec::new();
    for file in markdown_files() {
        let (prose, _) = split_fences(&read(&file));
        for line in prose.lines() {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            // A reference row: | `key`[, `key`] | default | ... |
            let default = (cells.len() > 3 && cells[1].starts_with("`board_api."))
                .then(|| literal(cells[2]))
                .flatten();
            for span in line.split('`').skip(1).step_by(2) {
                let is_key = span.starts_with("board_api.")
                    && span[10..].chars().all(|c| {
                        c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '.'
                    });
                if is_key {
                    let default = cells
                        .get(1)
                        .filter(|c| c.contains(span))
                        .and(default.clone());
                    keys.push((span.trim_end_matches('.').to_string(), default));
                }
            }
        }
    }
    keys.sort();
    keys.dedup();
    keys
}

/// A default cell's value when it is a literal: a number, `true`/`false`,
/// or a backquoted string.
fn literal(cell: &str) -> Option<String> {
    let cell = cell.trim();
    if cell.parse::<u64>().is_ok() || cell == "true" || cell == "false" {
        return Some(cell.to_string());
    }
    let inner = cell.strip_prefix('`')?.strip_suffix('`')?;
    // `fetch_deadline_ms`, `work_threads`: another key's value, not a literal.
    let names_a_key = inner.chars().all(|c| c.is_ascii_lowercase() || c == '_');
    (!names_a_key && !inner.contains('`') && !inner.contains('<')).then(|| format!("{inner:?}"))
}

/// `board_api.a.b` set to `value`, laid over [`BASE`].
fn with_key(key: &str, value: &str) -> String {
    let mut over = serde_yaml::from_str::<Value>(value).expect("value");
    for part in key.split('.').rev() {
        let mut map = Mapping::new();
        map.insert(Value::String(part.to_string()), over);
        over = Value::Mapping(map);
    }
    let mut whole: Value = serde_yaml::from_str(BASE).expect("base");
    // The fleet tier's keys need its required keys beside them.
    if key.starts_with("board_api.cache.shared.") {
        let key_env = "board_api: {cache: {shared: {secret_env: SBAPI_FLEET_KEY}}}";
        merge(
            &mut whole,
            serde_yaml::from_str(key_env).expect("secret_env"),
        );
        if !key.ends_with(".url") && !key.ends_with(".cluster") {
            let url = "board_api: {cache: {shared: {url: \"redis://127.0.0.1:6379/0\"}}}";
            merge(&mut whole, serde_yaml::from_str(url).expect("url"));
        }
    }
    // The span export's keys need its endpoint beside them.
    if key.starts_with("board_api.server.otlp.") && !key.ends_with(".endpoint") {
        let endpoint = "board_api: {server: {otlp: {endpoint: \"http://127.0.0.1:4318\"}}}";
        merge(
            &mut whole,
            serde_yaml::from_str(endpoint).expect("endpoint"),
        );
    }
    // A kept versions' bound alone would ask for the default store's file.
    if key.starts_with("board_api.changes.") && !key.ends_with(".store") && !key.ends_with(".path")
    {
        let memory = "board_api: {changes: {store: memory}}";
        merge(&mut whole, serde_yaml::from_str(memory).expect("store"));
    }
    merge(&mut whole, over);
    serde_yaml::to_string(&whole).expect("yaml")
}

#[test]
fn every_documented_key_is_known_and_its_default_passes_dash_t() {
    let keys = documented_keys();
    assert!(keys.len() > 40, "only {} keys found", keys.len());
    let mut wrong = Vec::new();
    for (n, (key, default)) in keys.iter().enumerate() {
        match default {
            Some(value) => {
                let (code, text) = dash_t(&with_key(key, value), &format!("key-{n}"));
                if code != 0 {
                    wrong.push(format!("{key}: {value} fails -t: {text}"));
                }
            }
            None => {
                // Known, whatever the value: a wrong type names the key, an
                // unknown key names the field.
                let (_, text) = dash_t(&with_key(key, "[[]]"), &format!("key-{n}"));
                if text.contains("unknown field") {
                    wrong.push(format!("{key}: unknown: {text}"));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn an_unknown_key_is_caught() {
    let (_, text) = dash_t(&with_key("board_api.server.no_such_key", "[[]]"), "unknown");
    assert!(text.contains("unknown field"), "{text}");
}

/// A validator for the schema at `pointer` in `openapi.yaml`, whose
/// `$ref`s to `schema/board-document.schema.json` resolve to the file; nothing
/// is fetched.
fn openapi_validator(pointer: &str) -> jsonschema::Validator {
    const BASE: &str = "https://shared-board-api.test/openapi.yaml";
    const BOARD: &str = "https://shared-board-api.test/schema/board-document.schema.json";
    let spec: Value = serde_yaml::from_str(&read(&Path::new(ROOT).join("openapi.yaml")))
        .expect("openapi.yaml is YAML");
    let spec = serde_json::to_value(spec).expect("openapi.yaml as JSON");
    let board: serde_json::Value = serde_json::from_str(&read(
        &Path::new(ROOT).join("schema/board-document.schema.json"),
    ))
    .expect("the BoardDocument schema is JSON");
    let registry = jsonschema::Registry::new()
        .add(BASE, spec)
        .and_then(|r| r.add(BOARD, board))
        .and_then(|r| r.prepare())
        .expect("registry");
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .with_registry(&registry)
        .build(&serde_json::json!({ "$ref": format!("{BASE}#{pointer}") }))
        .unwrap_or_else(|e| panic!("{pointer} does not compile: {e}"))
}

#[test]
fn every_json_example_parses_and_answers_match_their_schemas() {
    let success = openapi_validator("/components/schemas/Success");
    let changes = openapi_validator("/components/schemas/ChangesSuccess");
    let error = openapi_validator("/components/schemas/Error");
    let request = openapi_validator("/components/schemas/BoardRequest");
    let mut docs: Vec<PathBuf> = markdown_files()
        .into_iter()
        .filter(|p| p.ends_with("README.md") || p.parent().is_some_and(|d| d.ends_with("docs")))
        .filter(|p| !p.ends_with("benches/README.md"))
        .collect();
    docs.sort();
    let (mut parsed, mut validated) = (0, 0);
    for path in docs {
        let (_, blocks) = split_fences(&read(&path));
        for (info, body) in blocks.iter().filter(|(info, _)| info.starts_with("json")) {
            let values: Vec<serde_json::Value> = if info == "jsonl" {
                body.lines()
                    .filter(|l| !l.trim().is_empty())
                    .map(serde_json::from_str)
                    .collect::<Result<_, _>>()
            } else {
                serde_json::from_str(body).map(|v| vec![v])
            }
            .unwrap_or_else(|e| {
                panic!(
                    "{}: a {info} example does not parse ({e}):\n{body}",
                    path.display()
                )
            });
            parsed += 1;
            for value in values {
                // An answer of the API, or a POST /api/board body.
                let schema = match (value.get("ok"), value.get("url")) {
                    // What changed: `/api/changes`' own shape.
                    (Some(serde_json::Value::Bool(true)), _)
                        if value["data"].get("since").is_none()
                            && value["data"].get("from").is_some() =>
                    {
                        Some(("ChangesSuccess", &changes))
                    }
                    (Some(serde_json::Value::Bool(true)), _) => Some(("Success", &success)),
                    (Some(serde_json::Value::Bool(false)), _) => Some(("Error", &error)),
                    (None, Some(_)) if value.get("mcpServers").is_none() => {
                        Some(("BoardRequest", &request))
                    }
                    _ => None,
                };
                if let Some((name, v)) = schema {
                    let errors: Vec<String> =
                        v.iter_errors(&value).map(|e| e.to_string()).collect();
                    assert!(
                        errors.is_empty(),
                        "{}: an example is not a valid {name}: {errors:#?}\n{body}",
                        path.display()
                    );
                    validated += 1;
                }
            }
        }
    }
    // The README's and docs/api.md's examples at least: the check runs.
    assert!(
        parsed >= 5 && validated >= 4,
        "{parsed} parsed, {validated} validated"
    );
}

//! What the server says about itself: `server/discover` (2026-07-28),
//! `initialize` (the handshake revisions), `tools/list` and `ping`, each a
//! result object written once and reused.

use super::era::{Era, HANDSHAKE, SUPPORTED};
use super::tools;
use serde_json::{json, Value};
use std::sync::LazyLock;

/// How long a client may keep the discovery and tool list results
/// (`ttlMs`): the tools change only with a new release.
const LIST_TTL_MS: u64 = 3_600_000;

const INSTRUCTIONS: &str = "Reads public Milanote boards from their share links \
(https://app.milanote.com/<boardId>/<slug>?p=<permissionId>). read_board returns a board \
as Markdown in reading order (or its JSON document with format: json); search_board finds \
text in a board and the nested boards loaded with it. Both only read; a link that is \
revoked, password protected or private is refused.";

/// `serverInfo`: this crate, by name and version.
fn server_info() -> Value {
    json!({
        "name": "shared-board-api",
        "title": "Shared board API",
        "version": env!("CARGO_PKG_VERSION"),
    })
}

fn capabilities() -> Value {
    json!({"tools": {"listChanged": false}})
}

/// The `_meta` every 2026-07-28 result carries: who answered.
pub(super) static MODERN_META: LazyLock<String> =
    LazyLock::new(|| json!({"io.modelcontextprotocol/serverInfo": server_info()}).to_string());

/// A cacheable 2026-07-28 result: `fields` with `resultType`, the caching
/// hints and `serverInfo`.
fn cacheable(mut fields: Value) -> Vec<u8> {
    fields["resultType"] = "complete".into();
    fields["ttlMs"] = LIST_TTL_MS.into();
    fields["cacheScope"] = "public".into();
    fields["_meta"] = json!({"io.modelcontextprotocol/serverInfo": server_info()});
    fields.to_string().into_bytes()
}

static DISCOVER: LazyLock<Vec<u8>> = LazyLock::new(|| {
    cacheable(json!({
        "supportedVersions": SUPPORTED,
        "capabilities": capabilities(),
        "instructions": INSTRUCTIONS,
    }))
});

static TOOLS_MODERN: LazyLock<Vec<u8>> =
    LazyLock::new(|| cacheable(json!({"tools": tools::definitions()})));

static TOOLS_HANDSHAKE: LazyLock<Vec<u8>> = LazyLock::new(|| {
    json!({"tools": tools::definitions()})
        .to_string()
        .into_bytes()
});

/// The `server/discover` result.
pub fn discover() -> &'static [u8] {
    &DISCOVER
}

/// The `tools/list` result in `era`'s shape (2026-07-28 adds `resultType`,
/// the caching hints and `serverInfo`).
pub fn tools_list(era: Era) -> &'static [u8] {
    match era {
        Era::Modern => &TOOLS_MODERN,
        Era::Handshake => &TOOLS_HANDSHAKE,
    }
}

/// The `initialize` result for a client that asked for `requested`: that
/// version when it is served, else the newest handshake version (the client
/// then decides whether to go on).
pub fn initialize(requested: Option<&str>) -> Vec<u8> {
    let version = HANDSHAKE
        .iter()
        .find(|v| Some(**v) == requested)
        .unwrap_or(&HANDSHAKE[0]);
    json!({
        "protocolVersion": version,
        "capabilities": capabilities(),
        "serverInfo": server_info(),
        "instructions": INSTRUCTIONS,
    })
    .to_string()
    .into_bytes()
}

/// The empty result of `ping` (handshake revisions only).
pub fn empty() -> &'static [u8] {
    b"{}"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_are_objects_of_the_documented_shape() {
        let discover: Value = serde_json::from_slice(discover()).expect("JSON");
        assert_eq!(discover["resultType"], "complete");
        assert_eq!(discover["supportedVersions"][0], "2026-07-28");
        assert_eq!(discover["cacheScope"], "public");
        assert!(discover["_meta"]["io.modelcontextprotocol/serverInfo"]["version"].is_string());
        let modern: Value = serde_json::from_slice(tools_list(Era::Modern)).expect("JSON");
        let legacy: Value = serde_json::from_slice(tools_list(Era::Handshake)).expect("JSON");
        assert_eq!(modern["tools"], legacy["tools"]);
        assert!(legacy.get("resultType").is_none() && legacy.get("ttlMs").is_none());
        let init: Value = serde_json::from_slice(&initialize(Some("2025-06-18"))).expect("JSON");
        assert_eq!(init["protocolVersion"], "2025-06-18");
        let init: Value = serde_json::from_slice(&initialize(Some("2024-11-05"))).expect("JSON");
        assert_eq!(init["protocolVersion"], "2025-11-25");
        assert_eq!(
            init["capabilities"],
            json!({"tools": {"listChanged": false}})
        );
    }
}

//! Fuzzes the MCP endpoint's request reading: any bytes as a POST body are
//! either one JSON-RPC message or refused with a standard code, and a
//! message goes through the protocol-era checks with headers chosen by the
//! input. Nothing may panic; every answer body is one JSON object whose
//! `id` is the request's (or `null`), and a refused body's error carries a
//! JSON-RPC code from the documented set.
//!
//! Run: `cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run mcp_jsonrpc -- -max_total_time=600`

#![no_main]

use http::{HeaderMap, HeaderValue};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use shared_board_api::internals::api::mcp::era::{
    self, METHOD_HEADER, NAME_HEADER, PROTOCOL_VERSION_HEADER,
};
use shared_board_api::internals::api::mcp::jsonrpc;

const CODES: [i64; 7] = [-32700, -32600, -32601, -32602, -32603, -32020, -32022];
const VERSIONS: [&str; 5] = ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2031-01-01"];

fn object(bytes: &[u8]) -> serde_json::Map<String, Value> {
    match serde_json::from_slice(bytes) {
        Ok(Value::Object(map)) => map,
        other => panic!("an answer body is not a JSON object: {other:?}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let (choice, body) = data.split_first().map_or((0, data), |(c, b)| (*c, b));
    match jsonrpc::parse(body) {
        Err(e) => {
            assert!(CODES.contains(&e.code), "{}", e.code);
            let answer = object(&e.body());
            assert_eq!(answer["error"]["code"], e.code);
        }
        Ok(message) => {
            // Headers picked by the first byte: none, a version, the
            // method, the tool name, in every combination.
            let mut headers = HeaderMap::new();
            if choice & 1 != 0 {
                let v = VERSIONS[usize::from(choice >> 4) % VERSIONS.len()];
                headers.insert(PROTOCOL_VERSION_HEADER, HeaderValue::from_static(v));
            }
            if choice & 2 != 0 {
                if let Ok(v) = HeaderValue::from_str(&message.method) {
                    headers.insert(METHOD_HEADER, v);
                }
            }
            if choice & 4 != 0 {
                let name = message.name().unwrap_or("read_board");
                if let Ok(v) = HeaderValue::from_str(name) {
                    headers.insert(NAME_HEADER, v);
                }
            }
            // What the methods read of params is readable as they read it.
            if let Some(params) = &message.params {
                for object in [&params.arguments, &params.meta].into_iter().flatten().flatten() {
                    for name in object.names() {
                        let _ = object.text(name);
                        assert!(object.contains(name));
                    }
                }
            }
            match era::classify(&message, &headers) {
                Ok(_) => {}
                Err(e) => {
                    assert!(CODES.contains(&e.code), "{}", e.code);
                    assert_eq!(e.id, message.id);
                    object(&e.body());
                }
            }
            if let Some(id) = &message.id {
                let answer = object(&jsonrpc::result_body(id, &[b"{", b"}"]));
                let echoed: Value = serde_json::from_str(id.json()).expect("an id is JSON");
                assert_eq!(answer["id"], echoed);
            }
        }
    }
});

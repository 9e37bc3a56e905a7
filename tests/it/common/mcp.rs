//! MCP over raw HTTP for the tests: one JSON-RPC message per POST to
//! `/api/mcp`, in either era, read back exactly as sent.

use super::{parse_response, Response};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// The 2026-07-28 revision, stateless.
pub const MODERN: &str = "2026-07-28";

/// A POST of `body` to `/api/mcp` on a fresh connection.
pub fn post(addr: SocketAddr, body: &[u8], headers: &[(&str, &str)]) -> Response {
    let mut stream = TcpStream::connect(addr).expect("connect to gateway");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let mut req = format!(
        "POST /api/mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    let mut bytes = req.into_bytes();
    bytes.extend_from_slice(body);
    // The server may answer and close before reading a refused body whole.
    let _ = stream.write_all(&bytes);
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    parse_response(&raw, false)
}

/// A 2026-07-28 request: `_meta` in the params and the headers that mirror it.
pub fn modern(addr: SocketAddr, id: u64, method: &str, mut params: Value) -> Response {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "socket-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let name = params["name"].as_str().map(str::to_owned);
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let mut headers = vec![("MCP-Protocol-Version", MODERN), ("Mcp-Method", method)];
    if let Some(name) = name.as_deref() {
        headers.push(("Mcp-Name", name));
    }
    post(addr, body.to_string().as_bytes(), &headers)
}

/// A handshake-era request carrying `version` in `MCP-Protocol-Version`.
pub fn handshake(
    addr: SocketAddr,
    version: &str,
    id: u64,
    method: &str,
    params: Value,
) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    post(
        addr,
        body.to_string().as_bytes(),
        &[("MCP-Protocol-Version", version)],
    )
}

/// A 2026-07-28 `tools/call` of `tool` with `arguments`.
pub fn call(addr: SocketAddr, tool: &str, arguments: Value) -> Response {
    modern(
        addr,
        7,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    )
}

/// The `result` of a JSON-RPC answer, after checking it is one.
pub fn result(r: &Response) -> Value {
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let body = r.json();
    assert_eq!(body["jsonrpc"], "2.0");
    assert!(body.get("error").is_none(), "{body}");
    body["result"].clone()
}

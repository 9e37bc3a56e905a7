//! `--demo DIR` on directories a capture never writes: a file that links
//! outside DIR (an answer or the index), a FIFO, a directory or a second
//! name where an answer should be, an answer asking for far more boards than
//! a batch holds, and answers whose start-up was quadratic (orphans copied
//! to every board of a batch, a long `parentId` chain reaching no board).
//! Each is refused with exit 2, the file and the reason, or starts.

use super::*;
use serde_json::json;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

/// How long a start-up may take before the test takes it for blocked (a
/// FIFO read): far past any honest start, even on a loaded machine, so the
/// test fails instead of hanging; it is no bound on how fast start-up is.
const BLOCKED: Duration = Duration::from_secs(180);

/// `-t --demo DIR` (reads the capture as `--demo` does, then exits): exit
/// code and output.
fn check_demo(dir: &Path) -> (i32, String) {
    let child = Command::new(env!("CARGO_BIN_EXE_shared-board-api"))
        .args(["-t", "--demo"])
        .arg(dir)
        .env("RUST_LOG", "error")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("binary runs");
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let Ok(out) = rx.recv_timeout(BLOCKED) else {
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
        panic!("-t --demo {} did not exit: start-up blocked", dir.display());
    };
    let out = out.expect("binary output");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), text)
}

/// An index listing one boards answer, `file`, asked for `ids`.
fn index(ids: &[String], file: &str) -> String {
    json!({
        "format": "shared-board-api capture 1", "board": ids[0],
        "answers": [{"request": "boards", "ids": ids, "status": 200, "file": file}]
    })
    .to_string()
}

/// A capture directory `capture` inside a fresh `tag` directory, with an
/// index naming `02-boards.json` for board `b1`, and a valid answer
/// outside it (`../outside.json`).
fn layout(tag: &str) -> (PathBuf, PathBuf, PathBuf) {
    let top = temp_dir(tag);
    let capture = top.join("capture");
    std::fs::create_dir_all(&capture).expect("capture dir");
    std::fs::write(
        capture.join("index.json"),
        index(&["b1".to_owned()], "02-boards.json"),
    )
    .expect("index");
    let outside = top.join("outside.json");
    let answer = json!({"elements": {"b1": {"_id": "b1", "elementType": "BOARD",
        "content": {"title": "SECRET FROM OUTSIDE"}}}});
    std::fs::write(&outside, answer.to_string()).expect("outside file");
    (top, capture, outside)
}

/// Exit 2, naming `file` and saying `reason`, and nothing of the outside
/// file.
fn assert_refused(capture: &Path, file: &str, reason: &str) {
    let (code, text) = check_demo(capture);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains(file) && text.contains(reason), "{text}");
    assert!(!text.contains("SECRET FROM OUTSIDE"), "{text}");
}

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(status.success(), "mkfifo {}", path.display());
}

#[test]
fn an_answer_that_links_outside_the_directory_is_refused() {
    let (top, capture, outside) = layout("link-answer");
    std::os::unix::fs::symlink(&outside, capture.join("02-boards.json")).expect("symlink");
    assert_refused(&capture, "02-boards.json", "is a symbolic link");
    // The same through the library, and a symlink to a directory.
    let e = Captured::load(&capture).expect_err("refused");
    assert!(e.to_string().contains("symbolic link"), "{e}");
    std::fs::remove_file(capture.join("02-boards.json")).expect("rm");
    std::os::unix::fs::symlink(&top, capture.join("02-boards.json")).expect("symlink");
    assert!(Captured::load(&capture).is_err());
    let _ = std::fs::remove_dir_all(&top);
}

#[test]
fn an_index_that_links_outside_the_directory_is_refused() {
    let (top, capture, outside) = layout("link-index");
    std::fs::copy(&outside, capture.join("02-boards.json")).expect("answer");
    let elsewhere = top.join("index-elsewhere.json");
    std::fs::rename(capture.join("index.json"), &elsewhere).expect("move the index");
    std::os::unix::fs::symlink(&elsewhere, capture.join("index.json")).expect("symlink");
    assert_refused(&capture, "index.json", "is a symbolic link");
    let _ = std::fs::remove_dir_all(&top);
}

#[test]
fn a_fifo_never_blocks_start_up() {
    let (top, capture, _) = layout("fifo");
    mkfifo(&capture.join("02-boards.json"));
    assert_refused(&capture, "02-boards.json", "is a FIFO");
    std::fs::remove_file(capture.join("index.json")).expect("rm");
    mkfifo(&capture.join("index.json"));
    assert_refused(&capture, "index.json", "is a FIFO");
    let _ = std::fs::remove_dir_all(&top);
}

#[test]
fn a_directory_or_a_second_name_is_no_answer_file() {
    let (top, capture, outside) = layout("kinds");
    std::fs::create_dir(capture.join("02-boards.json")).expect("dir");
    let e = Captured::load(&capture).expect_err("refused");
    assert!(e.to_string().contains("is a directory"), "{e}");
    std::fs::remove_dir(capture.join("02-boards.json")).expect("rmdir");
    std::fs::hard_link(&outside, capture.join("02-boards.json")).expect("hard link");
    let e = Captured::load(&capture).expect_err("refused");
    assert!(e.to_string().contains("hard links"), "{e}");
    // Copied in, the same bytes are read.
    std::fs::remove_file(capture.join("02-boards.json")).expect("rm");
    std::fs::copy(&outside, capture.join("02-boards.json")).expect("copy");
    let captured = Captured::load(&capture).expect("a regular file reads");
    assert_eq!(captured.board_ids(), ["b1"]);
    let _ = std::fs::remove_dir_all(&top);
}

#[test]
fn an_answer_asking_for_more_boards_than_a_batch_is_refused() {
    let top = temp_dir("many-ids");
    let ids: Vec<String> = (0..60_000).map(|i| format!("b{i}")).collect();
    std::fs::write(top.join("index.json"), index(&ids, "02-boards.json")).expect("index");
    let orphans: serde_json::Map<String, Value> = (0..20_000)
        .map(|i| {
            (
                format!("o{i}"),
                json!({"_id": format!("o{i}"), "location": {"parentId": "nowhere"}}),
            )
        })
        .collect();
    let answer = json!({ "elements": orphans }).to_string();
    std::fs::write(top.join("02-boards.json"), &answer).expect("answer");
    assert_refused(&top, "02-boards.json", "asked for 60000 boards");
    // A full batch with the same orphans starts: they are kept once.
    std::fs::write(top.join("index.json"), index(&ids[..50], "02-boards.json")).expect("index");
    let (code, text) = check_demo(&top);
    assert_eq!(code, 0, "{text}");
    let captured = Captured::load(&top).expect("reads");
    assert_eq!(captured.board_ids().len(), 50);
    let _ = std::fs::remove_dir_all(&top);
}

#[test]
fn a_long_parent_chain_that_reaches_no_board_starts() {
    let top = temp_dir("chain");
    let n = 60_000;
    let elements: serde_json::Map<String, Value> = (0..n)
        .map(|i| {
            let parent = format!("c{}", i + 1);
            (
                format!("c{i}"),
                json!({"_id": format!("c{i}"), "location": {"parentId": parent}}),
            )
        })
        .collect();
    std::fs::write(
        top.join("index.json"),
        index(&["root".to_owned()], "02-boards.json"),
    )
    .expect("index");
    std::fs::write(
        top.join("02-boards.json"),
        json!({ "elements": elements }).to_string(),
    )
    .expect("answer");
    let (code, text) = check_demo(&top);
    assert_eq!(code, 0, "{text}");
    let _ = std::fs::remove_dir_all(&top);
}

//! A capture directory on disk: `index.json` naming each upstream answer's
//! file, and reading one back as untrusted input (sizes bounded, names and
//! ids checked, every failure an error that says which file and why).
//!
//! ```text
//! DIR/index.json          {"format": "shared-board-api capture 1", "board": ..., "answers": [...]}
//! DIR/01-token.json       the token endpoint's answer, token replaced
//! DIR/02-boards.json      the root board's answer
//! DIR/03-boards.json      a batch of nested boards, ...
//! ```

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The `format` of an index this build writes and reads.
pub const FORMAT: &str = "shared-board-api capture 1";
/// The index file's name in a capture directory.
pub const INDEX: &str = "index.json";

/// Largest `index.json` read back.
const MAX_INDEX_BYTES: u64 = 1024 * 1024;
/// Largest answer file read back: twice the provider client's default
/// response limit, for the placeholders and a raised limit.
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// Most bytes of answer files read back from one directory.
pub const MAX_TOTAL_BYTES: u64 = 256 * 1024 * 1024;
/// Most answers one index may list.
const MAX_ANSWERS: usize = 4096;

/// `index.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Index {
    pub format: String,
    /// The root board's id.
    pub board: String,
    /// `board_api.provider.name` of the configuration captured with.
    #[serde(default)]
    pub provider: String,
    /// When the capture was made (`YYYY-MM-DDTHH:MM:SS.sssZ`).
    #[serde(default)]
    pub captured_at: String,
    /// How the load ended, in the words of the gateway's own error.
    #[serde(default)]
    pub outcome: String,
    /// What the placeholders stand for.
    #[serde(default)]
    pub placeholders: Value,
    pub answers: Vec<Entry>,
}

/// One upstream answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    /// `token` or `boards`.
    pub request: String,
    /// The board ids asked for (the board of a token request).
    pub ids: Vec<String>,
    /// A batch of nested boards (not the root).
    #[serde(default)]
    pub nested: bool,
    /// The HTTP status it came with.
    pub status: u16,
    /// The file in the directory holding the answer, scrubbed; none when
    /// the body was not JSON (it is not kept).
    #[serde(default)]
    pub file: Option<String>,
}

/// A capture read back: its index and each boards answer with its ids.
#[derive(Debug, Default)]
pub struct Loaded {
    pub board: String,
    /// `(ids asked for, answer)` of each 2xx boards answer, in order.
    pub answers: Vec<(Vec<String>, Value)>,
}

/// Why a capture directory could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadError(pub String);

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ReadError {}

fn fail<T>(message: impl Into<String>) -> Result<T, ReadError> {
    Err(ReadError(message.into()))
}

/// A file name this format writes: `[A-Za-z0-9_.-]{1,64}`, not starting with
/// a dot, so an index can never name a path outside its directory.
pub fn is_file_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// The shape of a board id: `[A-Za-z0-9_-]{1,256}`.
fn is_board_id(id: &str) -> bool {
    (1..=256).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
}

/// Reads at most `limit` bytes of `path`; more is an error.
fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let name = path.display();
    let file = std::fs::File::open(path).or_else(|e| fail(format!("cannot read {name}: {e}")))?;
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .or_else(|e| fail(format!("cannot read {name}: {e}")))?;
    if bytes.len() as u64 > limit {
        return fail(format!("{name} is larger than {limit} bytes"));
    }
    Ok(bytes)
}

/// Reads the capture in `dir`: its index, then each 2xx boards answer it
/// lists.
///
/// # Errors
/// A [`ReadError`] naming the file and the fault: missing or unreadable,
/// over its size limit, not JSON of the expected shape, an unknown
/// `format`, a file name outside the directory, an id that is not a board
/// id.
pub fn read(dir: &Path) -> Result<Loaded, ReadError> {
    let index_path = dir.join(INDEX);
    let bytes = read_bounded(&index_path, MAX_INDEX_BYTES)?;
    let index: Index = serde_json::from_slice(&bytes).or_else(|e| {
        fail(format!(
            "{} is not a capture index: {e}",
            index_path.display()
        ))
    })?;
    if index.format != FORMAT {
        return fail(format!(
            "{}: format {:?} is not {FORMAT:?}",
            index_path.display(),
            index.format
        ));
    }
    if !is_board_id(&index.board) {
        return fail(format!("{}: board is not a board id", index_path.display()));
    }
    if index.answers.len() > MAX_ANSWERS {
        return fail(format!(
            "{}: more than {MAX_ANSWERS} answers",
            index_path.display()
        ));
    }
    let mut loaded = Loaded {
        board: index.board.clone(),
        answers: Vec::new(),
    };
    let mut total = 0u64;
    for entry in &index.answers {
        let ok = (200..300).contains(&entry.status);
        let (Some(name), "boards", true) = (&entry.file, entry.request.as_str(), ok) else {
            continue;
        };
        let path = answer_path(dir, name)?;
        if entry.ids.is_empty() || !entry.ids.iter().all(|id| is_board_id(id)) {
            return fail(format!("{}: ids are not board ids", path.display()));
        }
        let left = MAX_TOTAL_BYTES - total;
        if std::fs::metadata(&path).is_ok_and(|m| m.len() > left && m.len() <= MAX_FILE_BYTES) {
            return fail(format!(
                "{}: the capture's files are larger than {MAX_TOTAL_BYTES} bytes together",
                path.display()
            ));
        }
        let bytes = read_bounded(&path, MAX_FILE_BYTES.min(left))?;
        total += bytes.len() as u64;
        let value: Value = match serde_json::from_slice(&bytes) {
            Ok(v @ Value::Object(_)) => v,
            Ok(_) => return fail(format!("{} is not a JSON object", path.display())),
            Err(e) => return fail(format!("{} is not JSON: {e}", path.display())),
        };
        if value.get("elements").is_some_and(|e| !e.is_object()) {
            return fail(format!("{}: elements is not an object", path.display()));
        }
        loaded.answers.push((entry.ids.clone(), value));
    }
    Ok(loaded)
}

fn answer_path(dir: &Path, name: &str) -> Result<PathBuf, ReadError> {
    if !is_file_name(name) || name == INDEX {
        return fail(format!(
            "{}: {name:?} is not an answer file name",
            dir.join(INDEX).display()
        ));
    }
    Ok(dir.join(name))
}

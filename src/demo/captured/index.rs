//! A capture directory on disk: `index.json` naming each upstream answer's
//! file, and reading one back as untrusted input for `--demo DIR`
//! ([`super::Captured::load`]): only regular files directly inside the
//! directory, never through a symbolic link, sizes and counts bounded,
//! names and ids checked, every failure an error that says which file and
//! why.
//!
//! ```text
//! DIR/index.json          {"format": "shared-board-api capture 1", "board": ..., "answers": [...]}
//! DIR/01-token.json       the token endpoint's answer, token replaced
//! DIR/02-boards.json      the root board's answer
//! DIR/03-boards.json      a batch of nested boards, ...
//! ```

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashSet;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The `format` of an index this build writes and reads.
pub const FORMAT: &str = "shared-board-api capture 1";
/// The index file's name in a capture directory.
pub const INDEX: &str = "index.json";

/// Largest `index.json` read back: an index of 10,000 boards (the largest
/// `board_api.provider.max_boards`) asked one at a time, as written
/// (pretty-printed), is under 2 MiB.
const MAX_INDEX_BYTES: u64 = 4 * 1024 * 1024;
/// Largest answer file read back: twice the provider client's default
/// response limit, for the placeholders and a raised limit.
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// Most bytes of answer files read back from one directory.
pub const MAX_TOTAL_BYTES: u64 = 256 * 1024 * 1024;
/// Most answers one index may list: more than a capture writes (a token,
/// then one answer per board at `max_boards` 10,000 and `batch_size` 1).
const MAX_ANSWERS: usize = 16_384;
/// Most board ids one answer may have asked for: the largest
/// `board_api.provider.batch_size`. What belongs to none of them is served
/// with each, so this also bounds how far an answer fans out.
pub const MAX_IDS_PER_ANSWER: usize = 50;
/// Most distinct board ids in one capture.
pub const MAX_BOARDS: usize = 16_384;
/// Most elements in all the answers together: two and a half times the
/// default `board_api.provider.max_elements`.
pub const MAX_ELEMENTS: usize = 500_000;
/// Most JSON values (objects, arrays, their members) in all the answers
/// together, counted before an answer is parsed ([`count_values`]): parsed,
/// a value takes tens to hundreds of bytes, so the byte limits alone would
/// let 256 MiB of `[{},{},...]` take gigabytes. An element as the web app
/// writes it is about 30 values: 200,000 elements (the default
/// `max_elements`) are about 6 million.
pub const MAX_VALUES: usize = 8_000_000;

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

/// Why a capture's file is refused, told the same way everywhere.
const ONLY_REGULAR: &str =
    "a capture is read only from regular files directly inside its directory";

/// Opens `path` for reading when it is a regular file with one name: never
/// through a symbolic link (not even one swapped in after the check), and
/// never a FIFO or a device, which could block start-up or read forever.
/// Returns the file and its size.
fn open_regular(path: &Path) -> Result<(std::fs::File, u64), ReadError> {
    let name = path.display();
    let before =
        std::fs::symlink_metadata(path).or_else(|e| fail(format!("cannot read {name}: {e}")))?;
    check_kind(path, &before)?;
    let file = open_no_follow(path).or_else(|e| {
        if is_link_error(&e) {
            fail(format!("{name} is a symbolic link; {ONLY_REGULAR}"))
        } else {
            fail(format!("cannot read {name}: {e}"))
        }
    })?;
    // What was opened, not what the name pointed at a moment before.
    let opened = file
        .metadata()
        .or_else(|e| fail(format!("cannot read {name}: {e}")))?;
    check_kind(path, &opened)?;
    Ok((file, opened.len()))
}

/// A regular file with one link, else an error naming what it is.
fn check_kind(path: &Path, meta: &std::fs::Metadata) -> Result<(), ReadError> {
    let name = path.display();
    let kind = meta.file_type();
    let what = if kind.is_symlink() {
        "a symbolic link"
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_file() {
        return check_links(path, meta);
    } else {
        special_kind(&kind)
    };
    fail(format!("{name} is {what}; {ONLY_REGULAR}"))
}

#[cfg(unix)]
fn special_kind(kind: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_block_device() || kind.is_char_device() {
        "a device"
    } else {
        "not a regular file"
    }
}

#[cfg(not(unix))]
fn special_kind(_: &std::fs::FileType) -> &'static str {
    "not a regular file"
}

/// A file with a second name may be a file from elsewhere, linked in: a
/// capture's files are written with one.
#[cfg(unix)]
fn check_links(path: &Path, meta: &std::fs::Metadata) -> Result<(), ReadError> {
    use std::os::unix::fs::MetadataExt;
    match meta.nlink() {
        0 | 1 => Ok(()),
        n => fail(format!(
            "{} has {n} hard links (it may be a file from elsewhere); {ONLY_REGULAR}, \
             each with one name (copy it in)",
            path.display()
        )),
    }
}

#[cfg(not(unix))]
fn check_links(_: &Path, _: &std::fs::Metadata) -> Result<(), ReadError> {
    Ok(())
}

/// Opens `path` read-only without following a symbolic link in its last
/// part, and without blocking (a FIFO opened this way returns at once, and
/// is then refused by its type).
#[cfg(unix)]
fn open_no_follow(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
}

#[cfg(not(unix))]
fn open_no_follow(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::File::open(path)
}

/// `O_NOFOLLOW` on a symbolic link fails with `ELOOP`.
#[cfg(unix)]
fn is_link_error(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(libc::ELOOP)
}

#[cfg(not(unix))]
fn is_link_error(_: &std::io::Error) -> bool {
    false
}

/// Reads the opened `file` of `path`: at most `limit` bytes, more is an
/// error (a file that grows after it was checked included).
fn read_at_most(file: std::fs::File, path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let name = path.display();
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
/// a symbolic link, a FIFO, a device, a directory or a file with a second
/// name, over its size limit (or all files over theirs), not JSON of the
/// expected shape, an unknown `format`, a file name outside the directory,
/// an id that is not a board id, more answers, ids, boards, elements or
/// JSON values than the limits above.
pub fn read(dir: &Path) -> Result<Loaded, ReadError> {
    let index_path = dir.join(INDEX);
    let shown = index_path.display();
    let (file, size) = open_regular(&index_path)?;
    if size > MAX_INDEX_BYTES {
        return fail(format!("{shown} is larger than {MAX_INDEX_BYTES} bytes"));
    }
    let bytes = read_at_most(file, &index_path, MAX_INDEX_BYTES)?;
    let index: Index = serde_json::from_slice(&bytes)
        .or_else(|e| fail(format!("{shown} is not a capture index: {e}")))?;
    if index.format != FORMAT {
        return fail(format!(
            "{shown}: format {:?} is not {FORMAT:?}",
            index.format
        ));
    }
    if !is_board_id(&index.board) {
        return fail(format!("{shown}: board is not a board id"));
    }
    if index.answers.len() > MAX_ANSWERS {
        return fail(format!("{shown}: more than {MAX_ANSWERS} answers"));
    }
    let mut loaded = Loaded {
        board: index.board.clone(),
        answers: Vec::new(),
    };
    let mut total = 0u64;
    let mut elements = 0usize;
    let mut values = 0usize;
    let mut boards: HashSet<&str> = HashSet::new();
    for entry in &index.answers {
        let ok = (200..300).contains(&entry.status);
        let (Some(name), "boards", true) = (&entry.file, entry.request.as_str(), ok) else {
            continue;
        };
        let path = answer_path(dir, name)?;
        let shown = path.display();
        if entry.ids.is_empty() || !entry.ids.iter().all(|id| is_board_id(id)) {
            return fail(format!("{shown}: ids are not board ids"));
        }
        if entry.ids.len() > MAX_IDS_PER_ANSWER {
            return fail(format!(
                "{shown}: asked for {} boards; a captured answer asks for at most \
                 {MAX_IDS_PER_ANSWER} (the largest batch_size)",
                entry.ids.len()
            ));
        }
        boards.extend(entry.ids.iter().map(String::as_str));
        if boards.len() > MAX_BOARDS {
            return fail(format!(
                "{shown}: the capture has more than {MAX_BOARDS} boards"
            ));
        }
        let (file, size) = open_regular(&path)?;
        let left = MAX_TOTAL_BYTES - total;
        if size > MAX_FILE_BYTES {
            return fail(format!("{shown} is larger than {MAX_FILE_BYTES} bytes"));
        }
        if size > left {
            return fail(format!(
                "{shown}: the capture's files are larger than {MAX_TOTAL_BYTES} bytes together"
            ));
        }
        let bytes = read_at_most(file, &path, MAX_FILE_BYTES.min(left))?;
        total += bytes.len() as u64;
        values += count_values(&bytes);
        if values > MAX_VALUES {
            return fail(format!(
                "{shown}: the capture has more than {MAX_VALUES} JSON values"
            ));
        }
        let value: Value = match serde_json::from_slice(&bytes) {
            Ok(v @ Value::Object(_)) => v,
            Ok(_) => return fail(format!("{shown} is not a JSON object")),
            Err(e) => return fail(format!("{shown} is not JSON: {e}")),
        };
        match value.get("elements") {
            None => {}
            Some(Value::Object(map)) => elements += map.len(),
            Some(_) => return fail(format!("{shown}: elements is not an object")),
        }
        if elements > MAX_ELEMENTS {
            return fail(format!(
                "{shown}: the capture has more than {MAX_ELEMENTS} elements"
            ));
        }
        loaded.answers.push((entry.ids.clone(), value));
    }
    Ok(loaded)
}

/// About how many values the JSON text `bytes` holds, in one linear pass
/// and without parsing: one for the text, and one for each `{`, `[` or `,`
/// outside a string (each member of a container follows one of them; an
/// empty container counts one more than it holds).
pub fn count_values(bytes: &[u8]) -> usize {
    let mut count = 1;
    let mut in_string = false;
    let mut escaped = false;
    for &b in bytes {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
        } else {
            match b {
                b'"' => in_string = true,
                b'{' | b'[' | b',' => count += 1,
                _ => {}
            }
        }
    }
    count
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_counted_without_parsing() {
        let cases: &[(&str, usize)] = &[
            ("{}", 2),
            ("[]", 2),
            ("1", 1),
            (r#"{"a":1,"b":[1,2]}"#, 5),
            (r#"["{,[", "\"{", "\\"]"#, 4),
            ("[{},{},{}]", 7),
        ];
        for (text, expected) in cases {
            assert_eq!(count_values(text.as_bytes()), *expected, "{text}");
        }
        // Never fewer than the values serde_json builds.
        let text =
            r#"{"elements":{"a":{"_id":"a","location":{"parentId":"b"}},"c":[[],{},"x,y"]}}"#;
        assert!(count_values(text.as_bytes()) >= 10);
    }
}

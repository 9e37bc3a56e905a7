//! The tools, `read_board`, `search_board` and `board_changes`: their definitions (input
//! schemas, annotations) and their arguments, checked into what the board
//! endpoints check (a share link, a selection) or refused as the endpoints
//! refuse a query, with the same codes. Every definition is sent to an
//! agent on every turn, so each says what it must in few words.

use super::jsonrpc::{self, Object};
use crate::api::error::ApiError;
use crate::pipeline::search::{DEFAULT_LIMIT, MAX_LIMIT, MAX_QUERY_CHARS};
use std::ops::RangeInclusive;

/// `read_board`'s answer budget when the call names none, in characters.
pub const DEFAULT_MAX_CHARS: usize = 40_000;
/// The budgets a call may name.
pub const MAX_CHARS: RangeInclusive<usize> = 1_000..=400_000;
use serde_json::{json, Value};
use std::borrow::Cow;

/// The tools, as `tools/list` lists them (in this order, always).
pub fn definitions() -> Value {
    let annotations = |title: &str| {
        json!({
            "title": title,
            "readOnlyHint": true,
            "destructiveHint": false,
            "idempotentHint": true,
            "openWorldHint": true,
        })
    };
    let url = json!({
        "type": "string",
        "minLength": 1,
        "maxLength": 2048,
        "description": "The board's share link: https://app.milanote.com/<boardId>/<slug>?p=<permissionId> (the slug may be left out)",
    });
    let selectors = |what: &str| json!({"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}], "description": what});
    json!([
        {
            "name": "read_board",
            "title": "Read a Milanote board",
            "description": "Reads a public Milanote board (and the nested boards loaded with it) from its share link as Markdown in reading order, at most max_chars characters per call: when more follows, the answer says so and gives nextCursor; call again with the same arguments and that cursor. board reads one nested board (ids from search_board or the list of boards not shown). format json gives the BoardDocument JSON.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "url": url,
                    "board": {"type": "string", "description": "Id of a nested board to read as the root"},
                    "max_chars": {"type": "integer", "minimum": MAX_CHARS.start(), "maximum": MAX_CHARS.end(), "default": DEFAULT_MAX_CHARS, "description": "About 4 characters a token: above 100000, only for a client that accepts that many tokens"},
                    "cursor": {"type": "string", "description": "nextCursor of the previous answer"},
                    "view": {"type": "string", "enum": ["compact", "standard", "full"], "description": "compact: ids, types and titles only; full (default): everything"},
                    "include": selectors("Field selectors to keep, e.g. board.title,board.children.title"),
                    "exclude": selectors("Field selectors to leave out"),
                    "format": {"type": "string", "enum": ["markdown", "json"], "default": "markdown"},
                },
                "required": ["url"],
                "additionalProperties": false,
            },
            "annotations": annotations("Read a Milanote board"),
        },
        {
            "name": "search_board",
            "title": "Search a Milanote board",
            "description": "Finds text (case-insensitive) in a public Milanote board and its loaded nested boards: titles, text, captions, URLs, file names, table cells, comments. Lists matches in reading order with id, type, path, snippet and the boardId that holds them (read_board with board reads there).",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "url": url,
                    "query": {"type": "string", "minLength": 1, "maxLength": MAX_QUERY_CHARS, "description": "The text to find"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT, "description": "Most matches to list (default 20, at most 100)"},
                },
                "required": ["url", "query"],
                "additionalProperties": false,
            },
            "outputSchema": {
                "type": "object",
                "properties": {
                    "board": {"type": "object", "properties": {"id": {"type": "string"}, "title": {"type": "string"}}, "required": ["id", "title"]},
                    "query": {"type": "string"},
                    "total": {"type": "integer", "minimum": 0},
                    "matches": {"type": "array", "items": {
                        "type": "object",
                        "properties": {
                            "id": {"type": "string"},
                            "type": {"type": "string"},
                            "path": {"type": "array", "items": {"type": "string"}},
                            "boardId": {"type": "string"},
                            "field": {"type": "string", "enum": ["title", "text", "caption", "url", "fileName", "table", "comment"]},
                            "snippet": {"type": "string"},
                        },
                        "required": ["id", "type", "path", "boardId", "field", "snippet"],
                    }},
                    "unloadedBoards": {"type": "integer", "minimum": 0},
                },
                "required": ["board", "query", "total", "matches", "unloadedBoards"],
            },
            "annotations": annotations("Search a Milanote board"),
        },
        {
            "name": "board_changes",
            "title": "What changed on a Milanote board",
            "description": "Lists what was added, removed, changed or moved on a board since a version (the version read_board returned). Markdown text by default; with format json, the JSON in structuredContent (and as text).",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "url": url,
                    "since": {"type": "string", "pattern": "^[0-9a-f]{32}$", "description": "A board version seen before"},
                    "wait": {"type": "integer", "minimum": 1, "maximum": 30, "description": "Seconds to wait for a change when nothing changed since `since` (a long poll)"},
                    "format": {"type": "string", "enum": ["markdown", "json"], "description": "markdown (default): the changes as text; json: as structuredContent"},
                },
                "required": ["url", "since"],
                "additionalProperties": false,
            },
            "annotations": annotations("What changed on a Milanote board"),
        },
    ])
}

/// A tool this server has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    ReadBoard,
    SearchBoard,
    BoardChanges,
}

impl Tool {
    pub fn named(name: &str) -> Option<Tool> {
        match name {
            "read_board" => Some(Tool::ReadBoard),
            "search_board" => Some(Tool::SearchBoard),
            "board_changes" => Some(Tool::BoardChanges),
            _ => None,
        }
    }

    /// The name, for metrics and the access log.
    pub fn name(self) -> &'static str {
        match self {
            Tool::ReadBoard => "read_board",
            Tool::SearchBoard => "search_board",
            Tool::BoardChanges => "board_changes",
        }
    }
}

/// `read_board`'s arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadArgs<'a> {
    /// `url`, `view`, `include`, `exclude`, as the endpoints take them
    /// (selector arrays joined with commas).
    pub values: [Option<Cow<'a, str>>; 4],
    pub json: bool,
    /// The answer's budget in characters.
    pub max_chars: usize,
    /// Where the previous answer stopped.
    pub cursor: Option<Cow<'a, str>>,
    /// A nested board to read as the root.
    pub board: Option<Cow<'a, str>>,
}

/// `search_board`'s arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchArgs<'a> {
    pub url: Option<Cow<'a, str>>,
    /// Trimmed, 1 to [`MAX_QUERY_CHARS`] characters.
    pub query: String,
    pub limit: usize,
}

/// # Errors
/// `INVALID_REQUEST` for an unknown argument, a value of the wrong type, an
/// unknown `format`, or a `max_chars` outside [`MAX_CHARS`].
pub fn read_args<'a>(args: &Object<'a>) -> Result<ReadArgs<'a>, ApiError> {
    known(
        args,
        &[
            "url",
            "view",
            "include",
            "exclude",
            "format",
            "max_chars",
            "cursor",
            "board",
        ],
    )?;
    let json = json_format(args)?;
    let max_chars = integer(args, "max_chars", MAX_CHARS)?.unwrap_or(DEFAULT_MAX_CHARS);
    Ok(ReadArgs {
        values: [
            text(args, "url")?,
            text(args, "view")?,
            selectors(args, "include")?,
            selectors(args, "exclude")?,
        ],
        json,
        max_chars,
        cursor: text(args, "cursor")?,
        board: text(args, "board")?,
    })
}

/// A selector list: absent, a comma-separated string, or an array of
/// selector strings (joined with commas, as the endpoints take them).
fn selectors<'a>(args: &Object<'a>, name: &str) -> Result<Option<Cow<'a, str>>, ApiError> {
    let Some(raw) = args.get(name) else {
        return Ok(None);
    };
    if raw.get().starts_with('[') {
        let items: Vec<String> = serde_json::from_str(raw.get()).map_err(|_| {
            ApiError::invalid_request(
                name,
                format!("{name} must be a string or an array of strings"),
            )
        })?;
        return Ok(Some(Cow::Owned(items.join(","))));
    }
    text(args, name).map_err(|_| {
        ApiError::invalid_request(
            name,
            format!("{name} must be a string or an array of strings"),
        )
    })
}

/// An integer argument as written (not `5.0`, not `"5"`) within `range`;
/// `None` when absent or `null`.
fn integer(
    args: &Object<'_>,
    name: &str,
    range: RangeInclusive<usize>,
) -> Result<Option<usize>, ApiError> {
    match args.get(name) {
        None => Ok(None),
        Some(v) if jsonrpc::is_null(v) => Ok(None),
        Some(v) => (v.get().bytes().all(|b| b.is_ascii_digit()))
            .then(|| v.get().parse::<usize>().ok())
            .flatten()
            .filter(|n| range.contains(n))
            .map(Some)
            .ok_or_else(|| {
                ApiError::invalid_request(
                    name,
                    format!(
                        "{name} must be an integer from {} to {}",
                        range.start(),
                        range.end()
                    ),
                )
            }),
    }
}

/// # Errors
/// `INVALID_REQUEST` for an unknown argument, a value of the wrong type, a
/// missing or empty query, one over [`MAX_QUERY_CHARS`] characters, or a
/// limit outside 1 to [`MAX_LIMIT`].
pub fn search_args<'a>(args: &Object<'a>) -> Result<SearchArgs<'a>, ApiError> {
    known(args, &["url", "query", "limit"])?;
    let url = text(args, "url")?;
    let query = text(args, "query")?;
    let query = query.as_deref().map(str::trim).unwrap_or("");
    if query.is_empty() {
        return Err(ApiError::invalid_request(
            "query",
            "query must not be empty",
        ));
    }
    if query.chars().count() > MAX_QUERY_CHARS {
        return Err(ApiError::invalid_request(
            "query",
            format!("query must be at most {MAX_QUERY_CHARS} characters"),
        ));
    }
    let limit = integer(args, "limit", 1..=MAX_LIMIT)?.unwrap_or(DEFAULT_LIMIT);
    Ok(SearchArgs {
        url,
        query: query.to_owned(),
        limit,
    })
}

/// Whether `format` asks for JSON (`json`) rather than Markdown (`markdown`,
/// the default).
fn json_format(args: &Object<'_>) -> Result<bool, ApiError> {
    match text(args, "format")?.as_deref() {
        None | Some("markdown") => Ok(false),
        Some("json") => Ok(true),
        Some(_) => Err(ApiError::invalid_request(
            "format",
            "format must be markdown or json",
        )),
    }
}

/// `board_changes`'s arguments: `url`, `since` and `wait` (1 to 30 seconds),
/// as `/changes` takes them, and `format`.
///
/// # Errors
/// `INVALID_REQUEST` for an unknown argument, a value that is not a string
/// or an unknown `format`.
pub fn changes_args<'a>(args: &Object<'a>) -> Result<ChangesArgs<'a>, ApiError> {
    known(args, &["url", "since", "wait", "format"])?;
    let wait = integer(args, "wait", 1..=MAX_WAIT)?;
    Ok(ChangesArgs {
        values: [text(args, "url")?, text(args, "since")?],
        wait,
        json: json_format(args)?,
    })
}

/// `board_changes`'s arguments.
pub struct ChangesArgs<'a> {
    /// `url` and `since`.
    pub values: [Option<Cow<'a, str>>; 2],
    pub wait: Option<usize>,
    /// `format: json`: the answer's `data` as `structuredContent` (and as
    /// text), instead of its Markdown.
    pub json: bool,
}

/// The longest `wait` of `board_changes`, in seconds.
pub const MAX_WAIT: usize = 30;

/// An argument that is absent (or `null`), or a string.
fn text<'a>(args: &Object<'a>, name: &str) -> Result<Option<Cow<'a, str>>, ApiError> {
    match args.get(name) {
        None => Ok(None),
        Some(v) if jsonrpc::is_null(v) => Ok(None),
        Some(v) => jsonrpc::text(v)
            .map(Some)
            .ok_or_else(|| ApiError::invalid_request(name, format!("{name} must be a string"))),
    }
}

/// Refuses an argument the tool does not take, naming it only when it is a
/// short plain name (a share link pasted as a name is never echoed).
fn known(args: &Object<'_>, names: &[&str]) -> Result<(), ApiError> {
    let Some(other) = args.names().find(|k| !names.contains(k)) else {
        return Ok(());
    };
    let plain = (1..=64).contains(&other.len())
        && other.starts_with(|c: char| c.is_ascii_alphabetic())
        && other
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    Err(ApiError::InvalidRequest {
        field: plain.then(|| other.to_owned()),
        message: format!("unknown argument; allowed: {}", names.join(", ")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `v` as the arguments of a tool call, read as the endpoint reads them.
    fn args(v: Value) -> Object<'static> {
        let body =
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"arguments": v}});
        let body: &'static [u8] = body.to_string().into_bytes().leak();
        let message = jsonrpc::parse(body).expect("a message");
        message
            .params
            .and_then(|p| p.arguments)
            .expect("arguments")
            .expect("an object")
    }

    fn field(e: ApiError) -> (String, Option<String>) {
        (e.code().to_owned(), e.field().map(str::to_owned))
    }

    #[test]
    fn read_board_arguments() {
        let a = args(json!({"url": "u", "view": "compact", "format": "json"}));
        let read = read_args(&a).expect("valid");
        assert_eq!(
            read.values.each_ref().map(Option::as_deref),
            [Some("u"), Some("compact"), None, None]
        );
        assert!(read.json);
        assert!(
            !read_args(&args(json!({"url": "u", "format": null})))
                .expect("valid")
                .json
        );
        let cases = [
            (json!({"url": 3}), "url"),
            (json!({"url": "u", "format": "html"}), "format"),
            (json!({"url": "u", "view": ["full"]}), "view"),
            (json!({"url": "u", "depth": 2}), "depth"),
        ];
        for (a, want) in cases {
            let e = read_args(&args(a.clone())).expect_err("refused");
            assert_eq!(
                field(e),
                ("INVALID_REQUEST".into(), Some(want.into())),
                "{a}"
            );
        }
        let e = read_args(&args(json!({"https://app.milanote.com/b?p=SECRET": 1}))).expect_err("x");
        assert_eq!(e.field(), None);
        assert!(!e.message().contains("SECRET"));
    }

    #[test]
    fn search_board_arguments() {
        let a = args(json!({"url": "u", "query": "  Porto "}));
        let s = search_args(&a).expect("valid");
        assert_eq!((s.query.as_str(), s.limit), ("Porto", DEFAULT_LIMIT));
        let a = args(json!({"url": "u", "query": "x", "limit": 100}));
        assert_eq!(search_args(&a).expect("valid").limit, 100);
        let long = "q".repeat(MAX_QUERY_CHARS + 1);
        for (a, want) in [
            (json!({"url": "u"}), "query"),
            (json!({"url": "u", "query": "   "}), "query"),
            (json!({"url": "u", "query": long}), "query"),
            (json!({"url": "u", "query": "x", "limit": 0}), "limit"),
            (json!({"url": "u", "query": "x", "limit": 101}), "limit"),
            (json!({"url": "u", "query": "x", "limit": 2.5}), "limit"),
            (json!({"url": "u", "query": "x", "limit": "5"}), "limit"),
        ] {
            let e = search_args(&args(a.clone())).expect_err("refused");
            assert_eq!(
                field(e),
                ("INVALID_REQUEST".into(), Some(want.into())),
                "{a}"
            );
        }
    }

    #[test]
    fn definitions_name_both_tools_read_only() {
        let defs = definitions();
        let names: Vec<&str> = defs
            .as_array()
            .expect("array")
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert_eq!(names, ["read_board", "search_board", "board_changes"]);
        for tool in defs.as_array().expect("array") {
            assert_eq!(tool["annotations"]["readOnlyHint"], true);
            assert_eq!(tool["annotations"]["openWorldHint"], true);
            assert_eq!(tool["inputSchema"]["type"], "object");
            assert!(Tool::named(tool["name"].as_str().unwrap_or("")).is_some());
        }
    }
}

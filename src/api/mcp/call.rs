//! `tools/call`: a tool's arguments checked, the board read through the
//! same store as the endpoints (process cache, fleet tier, coalescing,
//! admission, the work pool), and the answer written as a tool result.
//!
//! A tool result is cached as its *core* (`content`, `structuredContent`,
//! `isError`), derived once from the cached render or search answer and
//! kept in the same byte budget; each request only wraps it for its
//! revision (`resultType` and `serverInfo` on 2026-07-28) and its id, so a
//! cached call costs what a cached endpoint answer costs plus one copy.
//! `read_board` in Markdown reads the very render `GET /api/detail` with
//! `Accept: text/markdown` caches, so either warms the other.
//!
//! A tool that fails answers a result with `isError: true`, whose text and
//! `structuredContent.error` carry the API's error code and message (never
//! the permission id, the link or provider text), so an agent sees why.

use super::era::Era;
use super::jsonrpc::{Object, Params, RpcError, INVALID_PARAMS};
use super::read;
use super::server::MODERN_META;
use super::tools::{self, Tool};
use crate::api::error::ApiError;
use crate::api::respond::Served;
use crate::api::{api_error, log_failure, timing, BoardApi, RequestParts};
use crate::document::Coverage;
use crate::encoding::Encoding;
use crate::pipeline::markdown::{self, pages::Paged};
use crate::pipeline::nested::nested_document;
use crate::pipeline::render::{render_bytes, PREFIX};
use crate::pipeline::search::{self, Found};
use crate::pipeline::Representation;
use crate::store::{Doc, LoadError, Source};
use bytes::Bytes;
use http::HeaderValue;
use serde_json::json;
use std::fmt::Write as _;
use std::sync::{Arc, LazyLock};
use std::time::Instant;

/// What a tool call answered, beside its result.
#[derive(Default)]
pub(super) struct Called {
    pub tool: Option<Tool>,
    /// `Server-Timing` of a call that read a board.
    pub timing: Option<HeaderValue>,
    /// Whether the tool failed (`isError`).
    pub failed: bool,
}

impl BoardApi {
    /// Runs the `tools/call` with `params`, answering its result's core (see
    /// [`result`] for the object around it).
    ///
    /// # Errors
    /// `-32602` for a call that names no tool this server has or gives
    /// arguments that are not an object; everything else is a tool result.
    pub(super) async fn call_tool(
        &self,
        params: Option<&Params<'_>>,
        req: &RequestParts<'_>,
        served: &mut Served,
        called: &mut Called,
    ) -> Result<Bytes, RpcError> {
        let invalid = |message: String| RpcError::new(None, INVALID_PARAMS, message);
        let name = params.and_then(|p| p.name.as_deref());
        let tool = match name.map(Tool::named) {
            Some(Some(tool)) => tool,
            Some(None) => {
                return Err(invalid(
                    "Unknown tool; this server has read_board, search_board and board_changes"
                        .into(),
                ))
            }
            None => return Err(invalid("params.name must name a tool".into())),
        };
        called.tool = Some(tool);
        served.tool = Some(tool.name());
        let empty = Object::default();
        let args = match params.and_then(|p| p.arguments.as_ref()) {
            None => &empty,
            Some(Ok(args)) => args,
            Some(Err(())) => return Err(invalid("params.arguments must be an object".into())),
        };
        let started = Instant::now();
        match self
            .run_tool(tool, args, req, served, called, started)
            .await
        {
            Ok(core) => Ok(core),
            Err(e) => {
                called.failed = true;
                Ok(Bytes::from(error_core(&e)))
            }
        }
    }

    async fn run_tool(
        &self,
        tool: Tool,
        args: &Object<'_>,
        req: &RequestParts<'_>,
        served: &mut Served,
        called: &mut Called,
        started: Instant,
    ) -> Result<Bytes, ApiError> {
        if let (Some(limiter), Some(ip)) = (&self.limiter, req.client_ip) {
            limiter.check(ip)?;
        }
        let (read, search) = match tool {
            Tool::BoardChanges => {
                let tools::ChangesArgs {
                    values: [url, since],
                    wait,
                    json,
                } = tools::changes_args(args)?;
                // Boxed, as the endpoint's: its future nests deep.
                let changes = self.board_changes(
                    [url.as_deref(), since.as_deref()],
                    (wait, json, req.client_ip),
                    served,
                    called,
                    started,
                );
                return Box::pin(changes).await;
            }
            Tool::ReadBoard => (Some(tools::read_args(args)?), None),
            Tool::SearchBoard => {
                let a = tools::search_args(args)?;
                let read = tools::ReadArgs {
                    values: [a.url, None, None, None],
                    json: false,
                    max_chars: tools::DEFAULT_MAX_CHARS,
                    cursor: None,
                    board: None,
                };
                (Some(read), Some((a.query, a.limit)))
            }
        };
        let Some(read) = read else {
            return Err(ApiError::Internal);
        };
        let request = self.parsed_values(read.values.each_ref().map(Option::as_deref))?;
        let board_id = request.link.board_id.as_str();
        served.board = Some(Arc::from(board_id));
        // A read is bound to a board version (its cursors are), which only
        // a full document has: it is loaded whole, whatever the selection.
        let coverage = if search.is_some() {
            request.selection.coverage()
        } else {
            Coverage::Full
        };
        let (outcome, source) = self
            .boards
            .document(board_id, &request.link.permission_id, coverage)
            .await;
        served.cache = Some(source.name());
        self.metrics.cache(source != Source::Miss);
        let doc = outcome.map_err(|e| {
            log_failure(board_id, started.elapsed(), &e, source);
            api_error(e)
        })?;
        let internal = |e| {
            log::error!("board {board_id}: {e}");
            api_error(e)
        };
        let core = match search {
            Some((query, limit)) => {
                let key: Arc<str> = format!("{limit}:{query}").into();
                self.boards
                    .derived(&doc, "mcp.search_board", key, move |board| {
                        let found = search::search(board.document_json(), &query, limit)
                            .map_err(|e| e.to_string())?;
                        Ok(Bytes::from(search_core(&found)))
                    })
                    .await
                    .map_err(internal)?
            }
            None if read.json => self.read_json(&doc, &request.selection, &read).await?,
            None => {
                self.read_page(&doc, board_id, &request.selection, &read)
                    .await?
            }
        };
        Ok(self.finish(core, &doc, source, started, called))
    }

    /// `read_board` as JSON: the document (or the nested board asked for)
    /// as `/api/detail` renders it, refused when over the budget (JSON is
    /// not cut: its parts are what selectors and `board` are for).
    async fn read_json(
        &self,
        doc: &Doc,
        selection: &crate::select::Selection,
        read: &tools::ReadArgs<'_>,
    ) -> Result<Bytes, ApiError> {
        let internal = |e: LoadError| {
            log::error!("read_board: {e}");
            api_error(e)
        };
        let canonical = selection.canonical_shared();
        let core = match read.board.as_deref() {
            None => {
                let kind = "mcp.read_board.json";
                match self.boards.cached_derived(doc, kind, &canonical) {
                    Some(core) => core,
                    None => {
                        let variant = self
                            .boards
                            .variant(
                                doc,
                                "detail",
                                selection,
                                Representation::Json,
                                Encoding::Identity,
                            )
                            .await
                            .map_err(internal)?;
                        let body = variant.rendered.body;
                        self.boards
                            .derived(doc, kind, canonical, move |_| {
                                read_core(&body, true).map(Bytes::from)
                            })
                            .await
                            .map_err(internal)?
                    }
                }
            }
            Some(nested) => {
                let key: Arc<str> = format!("{canonical}\0{nested}").into();
                let (selection, nested) = (selection.clone(), nested.to_owned());
                let core = self
                    .boards
                    .derived(doc, "mcp.read_board.json.nested", key, move |board| {
                        // No such board: empty bytes, which no core is.
                        let Ok(sub) = nested_document(board.document_json(), &nested) else {
                            return Ok(Bytes::new());
                        };
                        let canonical = selection.canonical();
                        let body = render_bytes("detail", &selection, &canonical, &sub)
                            .map_err(|e| e.to_string())?
                            .body;
                        read_core(&body, true).map(Bytes::from)
                    })
                    .await
                    .map_err(internal)?;
                if core.is_empty() {
                    return Err(no_such_board());
                }
                core
            }
        };
        // The core holds the JSON twice (text and structuredContent).
        let chars = char_count(&core) / 2;
        if chars > read.max_chars {
            return Err(ApiError::invalid_request(
                "max_chars",
                format!(
                    "the board as JSON is about {chars} characters, over max_chars ({}): read it as Markdown (format markdown, paged with cursor), narrow it with view, include or exclude, or read one nested board with board",
                    read.max_chars
                ),
            ));
        }
        Ok(core)
    }

    /// `read_board` as Markdown: one page within the budget, from the start
    /// or from where a cursor says (see [`read`]).
    async fn read_page(
        &self,
        doc: &Doc,
        board_id: &str,
        selection: &crate::select::Selection,
        args: &tools::ReadArgs<'_>,
    ) -> Result<Bytes, ApiError> {
        let internal = |e: LoadError| {
            log::error!("board {board_id}: {e}");
            api_error(e)
        };
        let version: Arc<str> = doc.board.version().unwrap_or_default().into();
        let canonical = selection.canonical_shared();
        let nested = args.board.as_deref().map(str::to_owned);
        let bound = read::binding(&canonical, nested.as_deref(), false);
        let start = match args.cursor.as_deref() {
            Some(cursor) => read::resume(cursor, board_id, &version, &bound)?,
            None => 0,
        };
        let max_chars = args.max_chars;
        let page_key: Arc<str> = format!("{bound}:{start}:{max_chars}").into();
        // (A refused start is never cached, below; an empty core would
        // not be a result's JSON, so none is taken from the cache.)
        if let Some(core) = self
            .boards
            .cached_derived(doc, "mcp.read_board.md", &page_key)
            .filter(|core| !core.is_empty())
        {
            return Ok(core);
        }
        let paged_key: Arc<str> =
            format!("{canonical}\0{}", nested.as_deref().unwrap_or("")).into();
        let paged = {
            let selection = selection.clone();
            self.boards
                .derived(doc, "mcp.read_board.paged", paged_key, move |board| {
                    let text = match &nested {
                        // No such board: empty bytes, which no layout is.
                        Some(id) => match nested_document(board.document_json(), id) {
                            Ok(sub) => markdown::render_paged(&selection, &sub),
                            Err(_) => return Ok(Bytes::new()),
                        },
                        None => markdown::render_paged(&selection, board.document_json()),
                    };
                    let text = text.map_err(|_| "board document is not compact JSON".to_owned())?;
                    Ok(text.encode())
                })
                .await
                .map_err(internal)?
        };
        if paged.is_empty() {
            return Err(no_such_board());
        }
        let board = board_id.to_owned();
        let refused: Arc<std::sync::Mutex<Option<ApiError>>> = Arc::default();
        let refusal = Arc::clone(&refused);
        let made = self
            .boards
            .derived(doc, "mcp.read_board.md", page_key, move |_| {
                let paged = Paged::decode(&paged).ok_or("a paged render that does not decode")?;
                let next = |offset| {
                    read::Cursor {
                        renderer: read::RENDERER.to_owned(),
                        board_id: board.clone(),
                        version: version.to_string(),
                        bound: bound.clone(),
                        offset,
                    }
                    .encode()
                };
                match read::show(&paged, start, max_chars, next) {
                    Ok(shown) => Ok(Bytes::from(read::core(&shown, &version, paged.title()))),
                    Err(e) => {
                        // A start where no block starts: refused. An error
                        // of `make` is not cached, so the next call with
                        // this cursor is refused the same way (an empty
                        // core, cached, was answered as an empty result).
                        if let Ok(mut slot) = refusal.lock() {
                            *slot = Some(e);
                        }
                        Err("a refused cursor".to_owned())
                    }
                }
            })
            .await;
        if let Some(refused) = refused.lock().ok().and_then(|mut r| r.take()) {
            return Err(refused);
        }
        made.map_err(internal)
    }

    /// A tool's core, once read: notes its `Server-Timing`.
    fn finish(
        &self,
        core: Bytes,
        doc: &Doc,
        source: Source,
        started: Instant,
        called: &mut Called,
    ) -> Bytes {
        let load = (source == Source::Miss).then_some(doc.timing);
        called.timing = Some(timing::server_timing(
            source.name(),
            load,
            started.elapsed(),
        ));
        core
    }
}

impl BoardApi {
    /// `board_changes`: `/changes` through the same code, its Markdown as
    /// text and its JSON `data` as `structuredContent`, cached as one core.
    async fn board_changes(
        &self,
        [url, since]: [Option<&str>; 2],
        (wait, json, client): (Option<usize>, bool, Option<std::net::IpAddr>),
        served: &mut Served,
        called: &mut Called,
        started: Instant,
    ) -> Result<Bytes, ApiError> {
        let request = crate::api::changes::from_values(url, since, &self.share_host)?;
        if let Some(wait) = wait {
            let (doc, _) = self.load_full(&request.link, served).await?;
            if doc.board.version() == Some(request.since.as_str()) {
                let wait = std::time::Duration::from_secs(wait as u64);
                self.wait_for_version(&request.link, &request.since, wait, client)
                    .await?;
            }
        }
        // Only the form asked for is built (each is up to twice the board).
        let form = if json {
            Representation::Json
        } else {
            Representation::Markdown
        };
        let (answer, source) = self.changes_of(&request, form, served).await?;
        let doc = answer.doc;
        let key: Arc<str> = Arc::from(format!("{}:{json}", request.since).as_str());
        let body = answer.rendered.body;
        let core = self
            .boards
            .derived(&doc, "mcp.board_changes", key, move |_| {
                read_core(&body, json).map(Bytes::from)
            })
            .await
            .map_err(|e| {
                log::error!("board {}: {e}", request.link.board_id);
                api_error(e)
            })?;
        Ok(self.finish(core, &doc, source, started, called))
    }
}

/// The result object around a core, in `era`'s shape, as the pieces to
/// write in order.
pub(super) fn result(era: Era, core: &[u8]) -> [&[u8]; 3] {
    // No core is empty; were one ever, the answer is still an object.
    let core = if core.is_empty() {
        EMPTY_CORE.as_bytes()
    } else {
        core
    };
    match era {
        Era::Modern => [
            b"{\"resultType\":\"complete\",",
            core,
            MODERN_TAIL.as_bytes(),
        ],
        Era::Handshake => [b"{", core, b"}"],
    }
}

/// What a result holds in place of an empty core: an internal error.
static EMPTY_CORE: LazyLock<String> = LazyLock::new(|| error_core(&ApiError::Internal));

/// What follows a 2026-07-28 result's core: `serverInfo` in `_meta`.
static MODERN_TAIL: LazyLock<String> = LazyLock::new(|| format!(",\"_meta\":{}}}", *MODERN_META));

/// `"content":[{"type":"text","text":TEXT}]` then `rest`. Made once per
/// cached core, on the work pool.
fn core(text: &str, rest: &str) -> String {
    // A str always serializes.
    let quoted = serde_json::to_string(text).unwrap_or_default();
    let mut out = String::with_capacity(quoted.len() + rest.len() + 40);
    out.push_str("\"content\":[{\"type\":\"text\",\"text\":");
    out.push_str(&quoted);
    out.push_str("}]");
    out.push_str(rest);
    out
}

/// `read_board`'s core: the Markdown as text; or the envelope's `data` as
/// `structuredContent` with the same JSON as text.
fn read_core(body: &[u8], json: bool) -> Result<String, String> {
    let text = if json {
        body.get(PREFIX.len()..body.len().saturating_sub(1))
            .ok_or("a JSON render without its envelope")?
    } else {
        body
    };
    let text = std::str::from_utf8(text).map_err(|e| e.to_string())?;
    let mut rest = String::with_capacity(if json { text.len() + 40 } else { 20 });
    if json {
        rest.push_str(",\"structuredContent\":");
        rest.push_str(text);
    }
    rest.push_str(",\"isError\":false");
    Ok(core(text, &rest))
}

/// `search_board`'s core: a readable list as text, the answer as
/// `structuredContent`.
fn search_core(found: &Found) -> String {
    let mut text = String::new();
    let listed = found.matches.len();
    let _ = write!(
        text,
        "{} match{} for {:?} in the board {:?}",
        found.total,
        if found.total == 1 { "" } else { "es" },
        found.query,
        found.board.title
    );
    if listed < found.total {
        let _ = write!(
            text,
            " (the first {listed} listed; {} more not listed: raise limit, at most {}, or narrow the query)",
            found.total - listed,
            search::MAX_LIMIT
        );
    }
    text.push('\n');
    for (i, m) in found.matches.iter().enumerate() {
        let _ = writeln!(
            text,
            "{}. {} {} in {} ({}): {}",
            i + 1,
            m.kind,
            m.id,
            m.path.join(" › "),
            m.field,
            m.snippet
        );
    }
    if found.unloaded_boards > 0 {
        let _ = writeln!(
            text,
            "{} nested board(s) were not loaded and were not searched.",
            found.unloaded_boards
        );
    }
    let structured = serde_json::to_string(found).unwrap_or_else(|_| "{}".into());
    core(
        &text,
        &format!(",\"structuredContent\":{structured},\"isError\":false"),
    )
}

/// The error of a `board` argument that names no board of the tree.
fn no_such_board() -> ApiError {
    ApiError::invalid_request(
        "board",
        "no board with this id in the loaded board: use an id from search_board's boardId or from the list of nested boards not shown",
    )
}

/// Characters in UTF-8 `bytes`.
fn char_count(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| (b as i8) >= -0x40).count()
}

/// A failed tool's core: `CODE: message` (and the hint, when there is one)
/// as text, the error object as `structuredContent.error`.
fn error_core(e: &ApiError) -> String {
    let mut error = json!({"code": e.code(), "message": e.message()});
    if let Some(field) = e.field() {
        error["field"] = field.into();
    }
    let mut text = format!("{}: {}", e.code(), e.message());
    if let Some(hint) = e.hint() {
        error["hint"] = hint.into();
        text.push_str(&format!(" (did you mean {hint}?)"));
    }
    core(
        &text,
        &format!(
            ",\"structuredContent\":{},\"isError\":true",
            json!({ "error": error })
        ),
    )
}

#[cfg(test)]
mod tests;

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
use super::server::MODERN_META;
use super::tools::{self, Tool};
use crate::api::error::ApiError;
use crate::api::respond::Served;
use crate::api::{api_error, log_failure, timing, BoardApi, RequestParts};
use crate::encoding::Encoding;
use crate::metrics;
use crate::pipeline::render::PREFIX;
use crate::pipeline::search::{self, Found};
use crate::pipeline::Representation;
use crate::store::{Doc, Source};
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
        let (values, json, search) = match tool {
            Tool::BoardChanges => {
                let [url, since] = tools::changes_args(args)?;
                // Boxed, as the endpoint's: its future nests deep.
                let changes =
                    self.board_changes(url.as_deref(), since.as_deref(), served, called, started);
                return Box::pin(changes).await;
            }
            Tool::ReadBoard => {
                let a = tools::read_args(args)?;
                (a.values, a.json, None)
            }
            Tool::SearchBoard => {
                let a = tools::search_args(args)?;
                ([a.url, None, None, None], false, Some((a.query, a.limit)))
            }
        };
        let request = self.parsed_values(values.each_ref().map(Option::as_deref))?;
        let board_id = request.link.board_id.as_str();
        served.board = Some(Arc::from(board_id));
        let (outcome, source) = self
            .boards
            .document(
                board_id,
                &request.link.permission_id,
                request.selection.coverage(),
            )
            .await;
        served.cache = Some(source.name());
        metrics::cache(source != Source::Miss);
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
            None => {
                let kind = if json {
                    "mcp.read_board.json"
                } else {
                    "mcp.read_board.md"
                };
                let key = request.selection.canonical_shared();
                if let Some(core) = self.boards.cached_derived(&doc, kind, &key) {
                    return Ok(self.finish(core, &doc, source, started, called));
                }
                let representation = if json {
                    Representation::Json
                } else {
                    Representation::Markdown
                };
                let variant = self
                    .boards
                    .variant(
                        &doc,
                        "detail",
                        &request.selection,
                        representation,
                        Encoding::Identity,
                    )
                    .await
                    .map_err(internal)?;
                let body = variant.rendered.body;
                let version = doc.board.version().unwrap_or_default().to_owned();
                self.boards
                    .derived(&doc, kind, key, move |_| {
                        read_core(&body, json, &version).map(Bytes::from)
                    })
                    .await
                    .map_err(internal)?
            }
        };
        Ok(self.finish(core, &doc, source, started, called))
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
        url: Option<&str>,
        since: Option<&str>,
        served: &mut Served,
        called: &mut Called,
        started: Instant,
    ) -> Result<Bytes, ApiError> {
        let request = crate::api::changes::from_values(url, since, &self.share_host)?;
        let (markdown, source) = self
            .changes_of(&request, Representation::Markdown, served)
            .await?;
        let (json, _) = self
            .changes_of(&request, Representation::Json, served)
            .await?;
        let doc = markdown.doc;
        let key: Arc<str> = Arc::from(request.since.as_str());
        let (text, body) = (markdown.rendered.body, json.rendered.body);
        let core = self
            .boards
            .derived(&doc, "mcp.board_changes", key, move |_| {
                let data = body
                    .get(PREFIX.len()..body.len().saturating_sub(1))
                    .ok_or("a JSON render without its envelope")?;
                let data = std::str::from_utf8(data).map_err(|e| e.to_string())?;
                let text = std::str::from_utf8(&text).map_err(|e| e.to_string())?;
                Ok(Bytes::from(core(
                    text,
                    &format!(",\"structuredContent\":{data},\"isError\":false"),
                )))
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
    match era {
        Era::Modern => [
            b"{\"resultType\":\"complete\",",
            core,
            MODERN_TAIL.as_bytes(),
        ],
        Era::Handshake => [b"{", core, b"}"],
    }
}

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

/// `read_board`'s core: the Markdown as text, with the board's version as
/// `structuredContent.version` (what `board_changes` takes as `since`); or
/// the envelope's `data` as `structuredContent` with the same JSON as text
/// (whose `version` is the document format's: the board's is added as
/// `structuredContent.boardVersion`; the text stays the document).
fn read_core(body: &[u8], json: bool, version: &str) -> Result<String, String> {
    let text = if json {
        body.get(PREFIX.len()..body.len().saturating_sub(1))
            .ok_or("a JSON render without its envelope")?
    } else {
        body
    };
    let text = std::str::from_utf8(text).map_err(|e| e.to_string())?;
    let mut rest = String::with_capacity(if json { text.len() + 120 } else { 80 });
    // 32 hex digits (or empty): nothing to escape.
    if json {
        // The document with the board's version as its first member.
        let members = text
            .strip_prefix('{')
            .ok_or("a JSON render that is not an object")?;
        let _ = write!(
            rest,
            ",\"structuredContent\":{{\"boardVersion\":\"{version}\","
        );
        rest.push_str(members);
    } else {
        let _ = write!(rest, ",\"structuredContent\":{{\"version\":\"{version}\"}}");
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
mod tests {
    use super::*;
    use serde_json::Value;

    fn parsed(era: Era, core: &str) -> Value {
        let whole: Vec<u8> = result(era, core.as_bytes()).concat();
        serde_json::from_slice(&whole).expect("JSON")
    }

    #[test]
    fn markdown_and_json_cores() {
        let md = read_core(b"# T\n\n\"quoted\" \\ text\n", false, "ab").expect("core");
        let v = parsed(Era::Handshake, &md);
        assert_eq!(v["content"][0]["text"], "# T\n\n\"quoted\" \\ text\n");
        assert_eq!(v["isError"], false);
        assert_eq!(v["structuredContent"], json!({"version": "ab"}));
        assert!(v.get("resultType").is_none());
        let body = br#"{"ok":true,"data":{"board":{"title":"T"}}}"#;
        let js = read_core(body, true, "ab").expect("core");
        let v = parsed(Era::Modern, &js);
        assert_eq!(
            v["structuredContent"],
            json!({"boardVersion": "ab", "board": {"title": "T"}})
        );
        assert_eq!(v["content"][0]["text"], r#"{"board":{"title":"T"}}"#);
        assert_eq!(v["resultType"], "complete");
        assert!(v["_meta"]["io.modelcontextprotocol/serverInfo"]["name"].is_string());
    }

    #[test]
    fn errors_carry_the_api_code() {
        let e = ApiError::InvalidShareUrl {
            message: "not a share link",
        };
        let v = parsed(Era::Modern, &error_core(&e));
        assert_eq!(v["isError"], true);
        assert_eq!(
            v["content"][0]["text"],
            "INVALID_SHARE_URL: not a share link"
        );
        assert_eq!(
            v["structuredContent"]["error"],
            json!({"code": "INVALID_SHARE_URL", "message": "not a share link", "field": "url"})
        );
    }
}

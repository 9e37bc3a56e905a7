//! The bundled sample Milanote upstream: a small HTTP/1.1 server on loopback
//! that serves the token and boards endpoints from the embedded fixture boards
//! (`src/demo/fixtures/boards/*.json`), plus fault scenarios. The binary's
//! `--demo` and every integration test point the provider client at it.
//!
//! # Endpoints
//!
//! - `GET /api/permissions/token/{p}?elementId={boardId}` → `{"token":"smpl.…"}`.
//!   Any ordinary permission id gets a fresh token (derived from, but never
//!   containing, the id); `elementId` is required (400 otherwise).
//! - `GET /api/boards?ids=a,b&tokens=T&…` → the requested boards' fixtures merged
//!   (`elements`, `comments`, `canvasOrder`), with `childrenReturned`, `errors`,
//!   `boardIds` and `fetchedTime`. A token this server did not issue gets
//!   `errors[id] = ACCESS_DENIED` and `childrenReturned[id] = false`; an unknown
//!   board gets `BOARD_NOT_FOUND`. Always HTTP 200, like Milanote.
//! - `GET /images/{name}/{size}.png` → a small bundled PNG (`tram28`,
//!   `francesinha`; any of Milanote's sizes), so the demo boards' images load
//!   offline. Fixtures write this server's origin as `http://sample-upstream.invalid`;
//!   every boards answer carries the real one instead.
//!
//! - `POST /demo/edit/{boardId}` → `{"board": id, "edits": n}`: one more
//!   edit of a bundled board (see `edits.rs`): later boards answers show a
//!   note card added, changed and moved, and a task toggled, so `/changes`
//!   has something to say. `404` for a board with no fixture.
//!
//! # Fault scenarios
//!
//! Selected by the permission id (token endpoint) or by a board id anywhere in
//! `ids` (boards endpoint; an HTTP-level fault then answers the whole request,
//! so test nested faults with `batch_size` 1).
//!
//! | Id | Where | The sample answers | The client returns |
//! |---|---|---|---|
//! | `fault-denied` | token | `{"token":null}` | `AccessDenied` |
//! | `fault-missing` | token | `{}` | `AccessDenied` |
//! | `fault-wrong-token` | token | a token the boards endpoint rejects (root `ACCESS_DENIED`) | `AccessDenied` |
//! | `fault-gzip` | token | a token; it and every boards answer made with it are gzip-encoded | the board |
//! | `fault-token-empty` / `-space` / `-ctrl` / `-long` / `-number` | token | `""`, `" smpl.padded "`, a BEL character, 9000 bytes, `42` | `Upstream` |
//! | `fault-401` / `fault-403` | both | HTTP 401 / 403 | `AccessDenied` |
//! | `fault-404` | both | HTTP 404 | `NotFound` |
//! | `fault-500` | both | HTTP 500 | `Upstream` (nested: that board not loaded) |
//! | `fault-challenge` / `fault-waf-challenge` | both | 202, `x-amzn-waf-action: challenge`, HTML (AWS WAF's JavaScript challenge) | `Challenged` |
//! | `fault-waf-captcha` | both | 405, `x-amzn-waf-action: captcha`, HTML (AWS WAF's CAPTCHA) | `Challenged` |
//! | `fault-garbage` | both | 200, non-JSON body | `Upstream` |
//! | `fault-huge` | both | 64 MiB of JSON-looking bytes, `Content-Length` announced | `Upstream` |
//! | `fault-huge-chunked` | both | the same, chunked (no length up front) | `Upstream` |
//! | `fault-gzip-bomb` | both | ~64 KiB of gzip inflating to 64 MiB | `Upstream` |
//! | `fault-slow` | both | answers after 30 s, unless the client closes the connection first ([`SampleUpstream::abandoned`]) | `Timeout` (nested: that board not loaded) |
//! | `fault-reset` | both | closes the connection without answering | `Upstream` |
//! | `fault-no-elements` | boards | a 200 without `elements` | `Upstream` |
//! | `fault-denied` | boards | `errors: ACCESS_DENIED`, SKELETON element | `AccessDenied` (nested: not loaded, BOARD kept) |
//! | `fault-board-denied` | boards | `BOARD_ACCESS_DENIED` | `AccessDenied` |
//! | `fault-password` | boards | `PASSWORD_PROTECTED` | `AccessDenied` |
//! | `fault-not-found` / `fault-deleted` / `fault-board-deleted` | boards | `NOT_FOUND` / `deleted` / `BOARD_DELETED` | `NotFound` |
//! | `fault-odd-error` | boards | an unknown error code | `Upstream` |
//! | `fault-skeleton` | boards | the root element is a `SKELETON` | `AccessDenied` |
//! | `fault-not-returned` | boards | `childrenReturned: false`, no error | `AccessDenied` |
//! | `fault-not-board` | boards | the root element is a `CARD` | `Upstream` |
//! | `s-nested-faults` | boards | a root whose nested boards are `t-mid-b` (fine), `fault-500`, `fault-slow`, `fault-denied`, `fault-skeleton` | the board, only `t-mid-b` loaded below it |
//! | `s-hole-slow` / `s-hole-denied` / `s-hole-missing` / `s-hole-500` | boards | a root with one card and one nested board: `fault-slow`, `fault-denied`, `s-no-such-board` (no fixture), `fault-500` | the board, the nested one not loaded (`DEADLINE` with a short deadline, `ACCESS_DENIED`, `NOT_FOUND`, `UPSTREAM_ERROR`) |
//! | `s-deep-0` … `s-deep-99` | boards | synthetic chain, each board holding the next | nesting-depth tests |
//! | `s-wide` | boards | a root with 5 nested boards `s-wide-1..5`; `s-wide-1` holds `s-wide-1-1` | batching and breadth-first tests |
//!
//! The `fault-*` board answers that are data (not HTTP faults) and `s-*` boards
//! live in `src/demo/fixtures/scenarios/`; `build.rs` embeds them with the boards.

mod big;
mod boards;
mod captured;
mod edits;
mod fixtures;
mod images;
mod scenarios;
mod wire;

/// The capture directory's format, for the writer (`crate::capture`).
pub(crate) use captured::index as capture_index;
pub use captured::Captured;

// For the crate's own tests and fuzz targets, not part of the documented
// surface (`sample_boards_body`: the capture reader's fuzz target serves
// what it read with it).
#[cfg(feature = "internals")]
#[doc(hidden)]
pub use boards::boards_body as sample_boards_body;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub use fixtures::board_ids as fixture_board_ids;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub use scenarios::{HUGE_BYTES, SLOW_DELAY};

use scenarios::{Reply, TokenRegistry};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use wire::{HeadError, RequestHead};

/// One request as the sample upstream received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedRequest {
    /// `GET`, `HEAD`, ...
    pub method: String,
    /// The request target as sent: path and query.
    pub target: String,
    /// Header names (lower-case) and values, in the order received.
    pub headers: Vec<(String, String)>,
}

impl RecordedRequest {
    /// The ids of a `/api/boards` request, in order; `None` for other requests.
    pub fn board_ids(&self) -> Option<Vec<String>> {
        let url = url::Url::parse(&format!("http://sample{}", self.target)).ok()?;
        if url.path() != "/api/boards" {
            return None;
        }
        let ids = url.query_pairs().find(|(k, _)| k == "ids")?.1.into_owned();
        Some(ids.split(',').map(str::to_owned).collect())
    }
}

#[derive(Debug, Default)]
struct State {
    /// `http://127.0.0.1:PORT`, for the bundled images' URLs.
    origin: String,
    log: Mutex<Vec<RecordedRequest>>,
    /// Targets of slow answers whose client closed the connection first.
    abandoned: Mutex<Vec<String>>,
    connections: std::sync::atomic::AtomicUsize,
    tokens: TokenRegistry,
    /// Boards captured with `--capture`, served before the bundled ones.
    captured: Captured,
    /// Boards edited with `POST /demo/edit/{boardId}`.
    edits: edits::Edits,
}

/// A running sample Milanote upstream. Dropping it (or [`SampleUpstream::shutdown`])
/// stops the listener and every open connection.
#[derive(Debug)]
pub struct SampleUpstream {
    addr: SocketAddr,
    state: Arc<State>,
    task: tokio::task::JoinHandle<()>,
    /// Set by [`SampleUpstream::start_in_thread`]: dropping it ends the thread.
    thread_stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl SampleUpstream {
    /// Bind `addr` (e.g. `127.0.0.1:0`) and serve on the current tokio runtime.
    ///
    /// # Errors
    ///
    /// The bind error, e.g. the port is taken.
    ///
    /// # Panics
    ///
    /// When called outside a tokio runtime (like `tokio::spawn`).
    pub async fn start(addr: SocketAddr) -> std::io::Result<SampleUpstream> {
        Self::start_with(addr, Captured::default()).await
    }

    /// As [`SampleUpstream::start`], serving the `captured` boards too (a
    /// captured board wins over a bundled one of the same id).
    ///
    /// # Errors
    /// As [`SampleUpstream::start`].
    ///
    /// # Panics
    /// As [`SampleUpstream::start`].
    pub async fn start_with(
        addr: SocketAddr,
        captured: Captured,
    ) -> std::io::Result<SampleUpstream> {
        let listener = TcpListener::bind(addr).await?;
        Self::serve(listener, captured)
    }

    /// Serves on `listener`, on the current tokio runtime.
    fn serve(listener: TcpListener, captured: Captured) -> std::io::Result<SampleUpstream> {
        let addr = listener.local_addr()?;
        let state = Arc::new(State {
            origin: format!("http://{addr}"),
            captured,
            ..State::default()
        });
        let task = tokio::spawn(accept_loop(listener, Arc::clone(&state)));
        log::info!("sample Milanote upstream listening on http://{addr}");
        Ok(SampleUpstream {
            addr,
            state,
            task,
            thread_stop: None,
        })
    }

    /// Serve on a listener bound earlier with [`std::net::TcpListener`], on
    /// the current tokio runtime: the binary binds before Pingora forks
    /// (`-d`), so the port is known to the configuration, and serves from a
    /// background service after the fork, where threads and runtimes live.
    ///
    /// # Errors
    /// The listener cannot be made non-blocking or handed to tokio.
    ///
    /// # Panics
    /// As [`SampleUpstream::start`].
    pub fn serve_bound(
        listener: std::net::TcpListener,
        captured: Captured,
    ) -> std::io::Result<SampleUpstream> {
        listener.set_nonblocking(true)?;
        Self::serve(TcpListener::from_std(listener)?, captured)
    }

    /// Bind `addr` and serve from a dedicated thread with its own tokio
    /// runtime, for callers without a runtime of their own (tests, tools;
    /// not a process that forks afterwards: the thread would not survive).
    ///
    /// # Errors
    ///
    /// The bind error, or the error creating the thread or its runtime.
    pub fn start_in_thread(addr: SocketAddr) -> std::io::Result<SampleUpstream> {
        Self::start_in_thread_with(addr, Captured::default())
    }

    /// As [`SampleUpstream::start_in_thread`], serving the `captured` boards too.
    ///
    /// # Errors
    /// As [`SampleUpstream::start_in_thread`].
    pub fn start_in_thread_with(
        addr: SocketAddr,
        captured: Captured,
    ) -> std::io::Result<SampleUpstream> {
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        std::thread::Builder::new()
            .name("sample-upstream".into())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                runtime.block_on(async move {
                    let _ = ready_tx.send(SampleUpstream::start_with(addr, captured).await);
                    // Serve until the handle is dropped.
                    let _ = stop_rx.await;
                });
            })?;
        let mut upstream = ready_rx
            .recv()
            .map_err(|_| std::io::Error::other("sample upstream thread exited before binding"))??;
        upstream.thread_stop = Some(stop_tx);
        Ok(upstream)
    }

    /// The bound address (the real port when started on port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The origin to configure the provider client with: `http://127.0.0.1:PORT`.
    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Request targets (path and query) received so far, in order.
    pub fn requests(&self) -> Vec<String> {
        self.request_log().into_iter().map(|r| r.target).collect()
    }

    /// Every request received so far, with its headers.
    pub fn request_log(&self) -> Vec<RecordedRequest> {
        self.state
            .log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The ids of each `/api/boards` request received so far, in order.
    pub fn board_batches(&self) -> Vec<Vec<String>> {
        self.request_log()
            .iter()
            .filter_map(RecordedRequest::board_ids)
            .collect()
    }

    /// Number of TCP connections accepted so far (pooling shows as fewer
    /// connections than requests).
    pub fn connections(&self) -> usize {
        self.state
            .connections
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Request targets whose client closed the connection while the sample
    /// was still holding back a slow answer (`fault-slow`), in order: how a
    /// test sees that a load it abandoned really stopped asking.
    pub fn abandoned(&self) -> Vec<String> {
        self.state
            .abandoned
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Forget the requests received so far.
    pub fn clear_requests(&self) {
        self.state
            .log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    /// Stop serving: the listener and all connections are closed.
    pub fn shutdown(self) {
        drop(self);
    }
}

impl Drop for SampleUpstream {
    fn drop(&mut self) {
        // Aborting the accept task drops its JoinSet, which aborts every connection.
        self.task.abort();
    }
}

async fn accept_loop(listener: TcpListener, state: Arc<State>) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    state.connections.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    connections.spawn(serve_connection(stream, Arc::clone(&state)));
                }
                Err(e) => {
                    log::warn!("sample upstream: accept failed: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

async fn serve_connection(mut stream: TcpStream, state: Arc<State>) {
    let mut buf = Vec::new();
    loop {
        let head = match wire::read_head(&mut stream, &mut buf).await {
            Ok(head) => head,
            Err(HeadError::Closed) => return,
            Err(HeadError::Bad(status)) => {
                let _ = wire::write_full(&mut stream, status, &[], b"", true, false).await;
                return;
            }
        };
        state
            .log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(RecordedRequest {
                method: head.method.clone(),
                target: head.target.clone(),
                headers: head.headers.clone(),
            });
        let reply = scenarios::route(
            &state.tokens,
            &state.origin,
            &state.captured,
            &state.edits,
            &head,
        );
        let keep_alive = head.keep_alive();
        let reply = match reply {
            Reply::Slow(delay, inner) => {
                tokio::select! {
                    () = tokio::time::sleep(delay) => *inner,
                    () = closed(&mut stream) => {
                        state
                            .abandoned
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push(head.target.clone());
                        return;
                    }
                }
            }
            reply => reply,
        };
        match send(&mut stream, &head, reply, keep_alive).await {
            Ok(true) if keep_alive => continue,
            _ => return,
        }
    }
}

/// Resolves when the client closes the connection (or it fails). The
/// provider client never sends a second request before an answer, so
/// bytes read meanwhile are dropped.
async fn closed(stream: &mut TcpStream) {
    use tokio::io::AsyncReadExt;
    let mut scratch = [0u8; 512];
    while let Ok(n) = stream.read(&mut scratch).await {
        if n == 0 {
            return;
        }
    }
}

/// Send `reply`; `Ok(true)` when the connection may serve another request.
async fn send(
    stream: &mut TcpStream,
    head: &RequestHead,
    reply: Reply,
    keep_alive: bool,
) -> std::io::Result<bool> {
    let send_body = head.method != "HEAD";
    match reply {
        Reply::Full {
            status,
            headers,
            body,
        } => {
            wire::write_full(stream, status, &headers, &body, send_body, keep_alive).await?;
            Ok(true)
        }
        // A slow reply was waited for by the caller; a nested one is not made.
        Reply::Reset | Reply::Slow(..) => Ok(false),
        Reply::Huge { len, chunked } => {
            send_huge(stream, len, chunked, send_body).await?;
            Ok(false)
        }
    }
}

/// Stream `len` bytes of `{"elements":{},"pad":"xxxx…` without building them in memory.
async fn send_huge(
    stream: &mut TcpStream,
    len: usize,
    chunked: bool,
    send_body: bool,
) -> std::io::Result<()> {
    let headers = [("Content-Type", "application/json".to_owned())];
    let head = wire::render_head(200, &headers, (!chunked).then_some(len), false);
    stream.write_all(&head).await?;
    if !send_body {
        return Ok(());
    }
    let prefix = b"{\"elements\":{},\"pad\":\"";
    let block = vec![b'x'; 64 * 1024];
    let mut sent = 0;
    while sent < len {
        let piece: &[u8] = if sent == 0 { prefix } else { &block };
        let piece = &piece[..piece.len().min(len - sent)];
        if chunked {
            stream
                .write_all(format!("{:x}\r\n", piece.len()).as_bytes())
                .await?;
            stream.write_all(piece).await?;
            stream.write_all(b"\r\n").await?;
        } else {
            stream.write_all(piece).await?;
        }
        sent += piece.len();
    }
    if chunked {
        stream.write_all(b"0\r\n\r\n").await?;
    }
    stream.flush().await
}

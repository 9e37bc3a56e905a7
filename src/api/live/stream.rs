//! `GET {prefix}/changes` with `Accept: text/event-stream`: the board's
//! changes as Server-Sent Events, one `board.changed` event per new
//! version the node sees, until the board is gone, the stream's time is
//! up, the server shuts down or the client leaves. Transport-neutral: the
//! host writes the header, then each chunk [`EventStream::next`] gives.

use super::super::changes::{self, ChangesRequest};
use super::super::error::ApiError;
use super::super::respond::Served;
use super::super::share_link::ShareLink;
use super::super::{BoardApi, RequestParts};
use super::{Latest, Slot, Waiter};
use crate::pipeline::Representation;
use bytes::Bytes;
use http::HeaderMap;
use std::collections::VecDeque;
use std::time::Duration;
use tokio::time::Instant;

/// At most this long between two chunks: a `: keep-alive` comment when
/// nothing else is sent.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The reconnection delay told to clients, in milliseconds.
pub const RETRY_MS: u64 = 5000;

/// The media type of an event stream.
pub const EVENT_STREAM: &str = "text/event-stream";

/// Whether a request asks for the event stream: a `GET` whose `Accept`
/// names `text/event-stream`.
pub fn wants_events(method: &http::Method, headers: &HeaderMap) -> bool {
    *method == http::Method::GET
        && headers
            .get_all(http::header::ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|item| {
                let mut parts = item.split(';');
                let kind = parts.next().unwrap_or("").trim();
                let refused = parts.any(|p| {
                    let p = p.trim().replace(' ', "");
                    p == "q=0" || p == "q=0.0" || p == "q=0.00" || p == "q=0.000"
                });
                kind.eq_ignore_ascii_case(EVENT_STREAM) && !refused
            })
}

/// Why a stream ended, for the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// `max_stream_seconds` passed.
    TimeUp,
    /// The board was revoked or vanished (an `error` event was sent).
    Gone,
    /// The server shuts down.
    Shutdown,
}

impl Ended {
    pub fn name(self) -> &'static str {
        match self {
            Ended::TimeUp => "time up",
            Ended::Gone => "board gone",
            Ended::Shutdown => "shutdown",
        }
    }
}

/// An open event stream: its board key (in its waiter), the link to load
/// changes through, the version it last told of. No document.
pub struct EventStream {
    link: ShareLink,
    last: String,
    waiter: Waiter,
    _slot: Slot,
    pending: VecDeque<Bytes>,
    deadline: Instant,
    shutdown: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>,
    ended: Option<Ended>,
    /// Events sent (keep-alive comments aside).
    pub events: usize,
}

impl EventStream {
    /// The board id, for the log.
    pub fn board(&self) -> &str {
        &self.link.board_id
    }

    /// The board version the stream last told of: before the first
    /// [`EventStream::next`], the one it opened at (its `Board-Version`).
    pub fn version(&self) -> &str {
        &self.last
    }

    /// Why the stream ended, once [`EventStream::next`] returned `None`.
    pub fn ended(&self) -> Option<Ended> {
        self.ended
    }

    /// The next chunk to write: an event, or a `: keep-alive` comment;
    /// `None` when the stream is over (the last chunk, an `error` event,
    /// was given before).
    pub async fn next(&mut self, api: &BoardApi) -> Option<Bytes> {
        loop {
            if let Some(chunk) = self.pending.pop_front() {
                return Some(chunk);
            }
            if self.ended.is_some() {
                return None;
            }
            let latest = tokio::select! {
                biased;
                () = &mut self.shutdown => {
                    self.ended = Some(Ended::Shutdown);
                    return None;
                }
                () = tokio::time::sleep_until(self.deadline) => {
                    self.ended = Some(Ended::TimeUp);
                    return None;
                }
                latest = self.waiter.next() => latest,
                () = tokio::time::sleep(KEEP_ALIVE) => {
                    return Some(Bytes::from_static(b": keep-alive\n\n"));
                }
            };
            match latest {
                Latest::Gone(code) => self.end_with(api, code),
                Latest::Version(version) if *version == *self.last => {}
                // Boxed: the change is loaded rarely, and inline its future
                // (a load of the board) would size this one, which an idle
                // stream holds between events.
                Latest::Version(_) => {
                    match Box::pin(api.change_event(&self.link, &self.last)).await {
                        Ok((event, to)) => {
                            if to != self.last {
                                self.last = to;
                                self.events += 1;
                                api.live.metrics().live_event();
                                self.pending.push_back(event);
                            }
                        }
                        Err(e) => self.end_with(api, e.code()),
                    }
                }
            }
        }
    }

    fn end_with(&mut self, api: &BoardApi, code: &str) {
        let data = serde_json::json!({ "code": code });
        self.pending
            .push_back(Bytes::from(format!("event: error\ndata: {data}\n\n")));
        self.events += 1;
        api.live.metrics().live_event();
        self.ended = Some(Ended::Gone);
    }
}

impl BoardApi {
    /// Opens the event stream a request asks for: the query (`url`, an
    /// optional `since`; `Last-Event-ID` wins over `since`), the bounds,
    /// then the board's current version (or the changes since the version
    /// named), as `/changes` loads it.
    ///
    /// # Errors
    /// The endpoint's errors, before anything is streamed.
    pub(crate) async fn open_stream(
        &self,
        req: &RequestParts<'_>,
        served: &mut Served,
    ) -> Result<EventStream, ApiError> {
        self.limit_rate(req)?;
        let q = changes::query(req.query)?;
        if q.wait.is_some() {
            return Err(ApiError::invalid_request(
                "wait",
                "wait is for the long poll, not with Accept: text/event-stream",
            ));
        }
        let url = super::super::params::url_value(q.url.as_deref())?;
        let since = match changes::last_event_id(req.headers)? {
            Some(id) => Some(id.to_owned()),
            None => match q.since.as_deref().map(str::trim) {
                Some(since) => {
                    changes::check_version("since", since)?;
                    Some(since.to_owned())
                }
                None => None,
            },
        };
        let link = changes::link_value(url, &self.share_host)?;
        served.board = Some(std::sync::Arc::from(link.board_id.as_str()));
        let slot = self.live.admit(req.client_ip)?;
        let mut pending = VecDeque::new();
        pending.push_back(Bytes::from(format!("retry: {RETRY_MS}\n\n")));
        let mut events = 0;
        let last = match since {
            Some(since) => {
                let (event, to) = self.change_event_served(&link, &since, served).await?;
                if to != since {
                    pending.push_back(event);
                    events += 1;
                }
                to
            }
            None => {
                let (doc, _) = self.load_full(&link, served).await?;
                let Some(version) = doc.board.version().map(str::to_owned) else {
                    return Err(ApiError::Internal);
                };
                let data = serde_json::json!({
                    "boardId": link.board_id,
                    "version": version,
                });
                pending.push_back(Bytes::from(format!(
                    "id: {version}\nevent: board.version\ndata: {data}\n\n"
                )));
                events += 1;
                version
            }
        };
        for _ in 0..events {
            self.live.metrics().live_event();
        }
        let waiter = slot.watch(&link, &last);
        Ok(EventStream {
            link,
            last,
            waiter,
            _slot: slot,
            pending,
            deadline: Instant::now() + self.live.settings().max_stream,
            shutdown: Box::pin(self.live.shutting_down()),
            ended: None,
            events,
        })
    }

    /// The `board.changed` event from `since` to the board now, and the
    /// version it goes to.
    async fn change_event(
        &self,
        link: &ShareLink,
        since: &str,
    ) -> Result<(Bytes, String), ApiError> {
        self.change_event_served(link, since, &mut Served::default())
            .await
    }

    async fn change_event_served(
        &self,
        link: &ShareLink,
        since: &str,
        served: &mut Served,
    ) -> Result<(Bytes, String), ApiError> {
        let request = ChangesRequest {
            link: link.clone(),
            since: since.to_owned(),
            wait: None,
        };
        let (answered, _) = self
            .changes_of(&request, Representation::Json, served)
            .await?;
        let answer: serde_json::Value =
            serde_json::from_slice(&answered.rendered.body).map_err(|e| {
                log::error!(
                    "board {}: a changes answer that is not JSON: {e}",
                    link.board_id
                );
                ApiError::Internal
            })?;
        let data = &answer["data"];
        let Some(to) = data["to"].as_str().map(str::to_owned) else {
            log::error!("board {}: a changes answer without data.to", link.board_id);
            return Err(ApiError::Internal);
        };
        // `to` is 32 hex digits and the data one line of JSON: nothing in
        // either can break the event's framing.
        let event = format!("id: {to}\nevent: board.changed\ndata: {data}\n\n");
        Ok((Bytes::from(event), to))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_get_that_names_the_stream_gets_it() {
        let with = |accept: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(
                http::header::ACCEPT,
                http::HeaderValue::from_str(accept).expect("a value"),
            );
            headers
        };
        let get = http::Method::GET;
        assert!(wants_events(&get, &with("text/event-stream")));
        assert!(wants_events(
            &get,
            &with("application/json, Text/Event-Stream;q=0.5")
        ));
        assert!(!wants_events(&get, &with("text/event-stream;q=0")));
        assert!(!wants_events(&get, &with("*/*")));
        assert!(!wants_events(&get, &HeaderMap::new()));
        assert!(!wants_events(
            &http::Method::HEAD,
            &with("text/event-stream")
        ));
    }
}

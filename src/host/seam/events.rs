//! The event stream of `GET {prefix}/changes` (Server-Sent Events), served
//! through the seam: which requests ask for it, and the stream itself, from
//! its opening (or the endpoint's JSON error) to its last chunk, with the
//! client watched throughout.

use super::{client_gone, write, Answered, CLIENT_GONE};
use crate::api::live::stream;
use crate::api::request_id::{self, RequestIds};
use crate::api::respond::Served;
use crate::api::{BoardApi, RequestParts};
use pingora_error::Result;
use pingora_http::{RequestHeader, ResponseHeader};
use pingora_proxy::Session;
use tracing::Instrument as _;

impl BoardApi {
    /// Whether the request is for the event stream of `/changes`.
    pub(super) fn is_event_stream(&self, req: &RequestHeader) -> bool {
        matches!(
            crate::api::route::route(req.uri.path(), self.prefix()),
            crate::api::route::Route::Changes
        ) && stream::wants_events(&req.method, &req.headers)
    }

    /// `GET {prefix}/changes` as Server-Sent Events: the endpoint's JSON
    /// error before the stream starts; then the header, and each chunk as
    /// it comes, until the stream ends or the client leaves. Compression is
    /// off for the stream (a compressor holds bytes back).
    pub(super) async fn serve_events(
        &self,
        session: &mut Session,
        client_ip: Option<std::net::IpAddr>,
    ) -> Result<Answered> {
        let ids = RequestIds::for_request(&session.req_header().headers);
        let span = crate::trace::spans::request(&ids.trace);
        span.record("route", "changes");
        let mut served = Served::default();
        // The request is read while the client is watched (which needs the
        // session mutably), so from a copy of its header; the copy is gone
        // before the stream starts: what a stream holds for hours is only
        // what it needs.
        let opened = {
            let head = session.req_header().clone();
            let parts = RequestParts::new(
                &head.method,
                head.uri.path(),
                head.uri.query(),
                &head.headers,
            )
            .with_client_ip(client_ip);
            tokio::select! {
                biased;
                opened = Box::pin(self.open_stream(&parts, &mut served)).instrument(span.clone()) => Some(opened),
                () = client_gone(&mut session.downstream_session) => None,
            }
        };
        served.request_id = Some(ids.request_id.clone());
        served.trace_id = Some(ids.trace.trace_id_hex());
        let mut stream = match opened {
            None => {
                session.set_keepalive(None);
                return Ok(Answered {
                    status: CLIENT_GONE,
                    bytes: 0,
                    served,
                });
            }
            Some(Err(e)) => {
                let mut response = self.refused_stream(&e, &ids, served);
                self.count_request("changes", response.status.as_u16());
                crate::trace::spans::answered(
                    &span,
                    response.status.as_u16(),
                    response.body.len(),
                    response.served.cache,
                );
                let mut answered = Answered {
                    status: response.status.as_u16(),
                    bytes: response.body.len(),
                    served: std::mem::take(&mut response.served),
                };
                if Box::pin(write(session, response, false)).await.is_err() {
                    answered.bytes = 0;
                }
                return Ok(answered);
            }
            Some(Ok(stream)) => stream,
        };
        self.count_request("changes", 200);
        if let Some(c) = session
            .downstream_modules_ctx
            .get_mut::<pingora_core::modules::http::compression::ResponseCompression>()
        {
            c.adjust_level(0);
        }
        let header = stream_header(stream.version(), ids.request_id)?;
        span.record("status", 200);
        // A stream is not followed by another request on its connection.
        session.set_keepalive(None);
        let mut bytes = 0;
        // Writes are boxed, here and below: the future of this function is
        // what a stream holds between its events, and it is as large as its
        // largest state; a write is rare (an event, a keep-alive comment
        // every 15 s), its box short-lived.
        let mut gone = Box::pin(session.write_response_header(Box::new(header), false))
            .await
            .is_err();
        while !gone {
            let next = tokio::select! {
                biased;
                () = client_gone(&mut session.downstream_session) => None,
                chunk = stream.next(self) => Some(chunk),
            };
            match next {
                None => gone = true,
                Some(None) => break,
                Some(Some(chunk)) => {
                    let len = chunk.len();
                    if Box::pin(session.write_response_body(Some(chunk), false))
                        .await
                        .is_err()
                    {
                        gone = true;
                    } else {
                        bytes += len;
                    }
                }
            }
        }
        if !gone {
            let _ = Box::pin(session.write_response_body(None, true)).await;
        }
        let why = if gone {
            "client gone"
        } else {
            stream.ended().map_or("ended", stream::Ended::name)
        };
        span.record("bytes", bytes);
        log::info!(
            "event stream of board {} ended ({why}): {} events",
            stream.board(),
            stream.events
        );
        Ok(Answered {
            status: 200,
            bytes,
            served,
        })
    }
}

/// The response header of an event stream that opened at `version`, kept
/// by the session for as long as the stream lasts: without the map of the
/// names' case (they go out in lower case, as HTTP/2 sends them), with
/// room for `X-Request-Id` and what Pingora adds (`Transfer-Encoding`,
/// `Connection`).
fn stream_header(version: &str, request_id: http::HeaderValue) -> Result<ResponseHeader> {
    let headers = crate::api::respond::stream_headers(version);
    let mut header = ResponseHeader::build_no_case(200, Some(headers.len() + 3))?;
    for (name, value) in &headers {
        header.append_header(name.clone(), value.clone())?;
    }
    header.insert_header(request_id::X_REQUEST_ID, request_id)?;
    Ok(header)
}

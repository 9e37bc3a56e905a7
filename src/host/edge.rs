//! Connection time limits on the standalone API listeners: a kept-alive
//! HTTP/1.1 connection closes when no request starts within
//! `board_api.server.keepalive_idle_seconds`, and a request head must be
//! whole within `head_timeout_seconds` of its first byte (of the
//! connection's start, for its first request). Built by `service.rs`, whose
//! `early_request_filter` and `logging` call [`head_done`] and
//! [`answered`].
//!
//! Pingora 0.9 offers neither for HTTP/1.1: after the first request a
//! connection's keep-alive turns `Infinite` (`respect_keepalive` in
//! `protocols/http/v1/server.rs`), so the next head is awaited without any
//! timeout, and `read_request` times each read, never the whole head, so a
//! header line every few seconds holds a connection for ever. Changing
//! Pingora's reading would mean a fork; instead the connection's stream is
//! wrapped ([`Clocked`]) before Pingora's HTTP/1.1 loop gets it: the wrapper
//! knows when a head's first byte arrives, and a read that is still waiting
//! when the phase's time is up ends, as a closed connection (between
//! requests, which Pingora closes quietly) or as a timed-out read (inside a
//! head, which Pingora answers by closing). Requests bodies and answers are
//! not timed here (Pingora's own per-read timeouts stay).
//!
//! The wrapper also joins writes: what Pingora writes of an answer (its
//! head, then its body) is held until the next write would pass
//! [`JOIN_LIMIT`] or Pingora flushes, and then leaves in one write (vectored
//! when the held bytes and a large body go together). Pingora's connection
//! buffer is 1,460 bytes, so without this the head of a cached answer (about
//! 600 bytes) went out alone whenever the body was larger than about 860
//! bytes: two sends for one answer. The held bytes are freed at each flush,
//! so an idle connection holds no buffer of ours.
//!
//! HTTP/2 connections are not wrapped: Pingora's `h2_idle_timeout`
//! (`HttpServerOptions`) closes one with no open stream after the same idle
//! time, and the h2 crate bounds a stream's header block by size. With h2c,
//! the look at the connection preface is itself bounded by the head timeout.

use crate::config::EdgeTimes;
use async_trait::async_trait;
use pingora_core::apps::ServerApp;
use pingora_core::protocols::raw_connect::ProxyDigest;
use pingora_core::protocols::tls::{SslDigest, TlsRef, ALPN};
use pingora_core::protocols::{
    GetProxyDigest, GetSocketDigest, GetTimingDigest, SocketDigest, TimingDigest,
};
use pingora_core::protocols::{Peek, Shutdown, Ssl, Stream, UniqueID, UniqueIDType};
use pingora_core::server::ShutdownWatch;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// The HTTP/2 connection preface, as Pingora's h2c check reads it.
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// A listening app (Pingora's HTTP proxy) whose HTTP/1.x connections are
/// [`Clocked`].
pub(crate) struct Edge<A> {
    inner: Arc<A>,
    times: EdgeTimes,
    h2c: bool,
}

impl<A> Edge<A> {
    pub(crate) fn new(inner: A, times: EdgeTimes, h2c: bool) -> Self {
        Edge {
            inner: Arc::new(inner),
            times,
            h2c,
        }
    }
}

#[async_trait]
impl<A: ServerApp + Send + Sync + 'static> ServerApp for Edge<A> {
    async fn process_new(
        self: &Arc<Self>,
        mut stream: Stream,
        shutdown: &ShutdownWatch,
    ) -> Option<Stream> {
        let mut h2 = matches!(stream.selected_alpn_proto(), Some(ALPN::H2));
        if !h2 && self.h2c && stream.get_ssl_digest().is_none() {
            // Pingora peeks for the preface without a timeout; a client that
            // sends fewer bytes would hold the connection. What is peeked is
            // put back for Pingora's own look.
            let mut buf = [0u8; H2_PREFACE.len()];
            match tokio::time::timeout(self.times.head, stream.try_peek(&mut buf)).await {
                Ok(Ok(peeked)) => h2 = peeked && buf == H2_PREFACE,
                Ok(Err(_)) | Err(_) => return None,
            }
        }
        if h2 {
            return self.inner.process_new(stream, shutdown).await;
        }
        let clocked: Stream = Box::new(Clocked::new(stream, self.times));
        self.inner.process_new(clocked, shutdown).await
    }

    async fn cleanup(&self) {
        self.inner.cleanup().await;
    }
}

/// Where a connection is between requests, and until when it may wait.
#[derive(Debug, Clone, Copy)]
enum Phase {
    /// Waiting for a request's first byte; at the deadline the connection ends.
    Idle(Instant),
    /// Inside a request head; at the deadline the read fails.
    Head(Instant),
    /// The request is being answered: no deadline here.
    Serving,
}

/// The phase a connection's filters and its stream share.
#[derive(Debug)]
struct Clock {
    phase: Mutex<Phase>,
    times: EdgeTimes,
}

impl Clock {
    fn set(&self, phase: Phase) {
        *self.phase.lock().unwrap_or_else(|p| p.into_inner()) = phase;
    }

    fn get(&self) -> Phase {
        *self.phase.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Most bytes [`Clocked`] holds back before it writes: a head and a short
/// body, a chunk of an event stream.
const JOIN_LIMIT: usize = 4096;

/// A connection's stream that ends reads past its phase's deadline and
/// joins an answer's writes.
#[derive(Debug)]
pub(crate) struct Clocked {
    inner: Stream,
    clock: Arc<Clock>,
    sleep: Pin<Box<Sleep>>,
    armed: Option<Instant>,
    /// Written to us and not yet to `inner`: at most [`JOIN_LIMIT`] bytes,
    /// empty (and unallocated) after each flush.
    held: Vec<u8>,
}

impl Clocked {
    fn new(inner: Stream, times: EdgeTimes) -> Self {
        let deadline = Instant::now() + times.head;
        Clocked {
            inner,
            clock: Arc::new(Clock {
                phase: Mutex::new(Phase::Head(deadline)),
                times,
            }),
            sleep: Box::pin(tokio::time::sleep_until(deadline)),
            armed: Some(deadline),
            held: Vec::new(),
        }
    }

    /// Takes `bufs` into the held bytes when they fit within [`JOIN_LIMIT`].
    fn hold(&mut self, bufs: &[io::IoSlice<'_>]) -> Option<usize> {
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        if self.held.len() + total > JOIN_LIMIT {
            return None;
        }
        if self.held.capacity() == 0 {
            self.held.reserve_exact(JOIN_LIMIT);
        }
        for b in bufs {
            self.held.extend_from_slice(b);
        }
        Some(total)
    }

    /// Writes the held bytes to `inner`, all of them, before anything else.
    fn poll_release(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while !self.held.is_empty() {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.held))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.held.drain(..n);
        }
        // Freed: an idle connection keeps no buffer of ours.
        self.held = Vec::new();
        Poll::Ready(Ok(()))
    }
}

/// The clock of a session's HTTP/1.x connection, when it has one.
fn clock_of(session: &pingora_core::protocols::http::ServerSession) -> Option<&Clock> {
    let stream = session.stream()?;
    let clocked = (**stream).as_any().downcast_ref::<Clocked>()?;
    Some(&clocked.clock)
}

/// The request head has been read: stop its deadline.
pub(crate) fn head_done(session: &pingora_core::protocols::http::ServerSession) {
    if let Some(clock) = clock_of(session) {
        clock.set(Phase::Serving);
    }
}

/// The answer is complete: the next request must start within the idle time.
pub(crate) fn answered(session: &pingora_core::protocols::http::ServerSession) {
    if let Some(clock) = clock_of(session) {
        clock.set(Phase::Idle(Instant::now() + clock.times.idle));
    }
}

impl AsyncRead for Clocked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() > before {
                    if let Phase::Idle(_) = this.clock.get() {
                        // A new request's first byte: its head is timed now.
                        this.clock
                            .set(Phase::Head(Instant::now() + this.clock.times.head));
                    }
                }
                return Poll::Ready(Ok(()));
            }
            other => {
                if !other.is_pending() {
                    return other;
                }
            }
        }
        let (deadline, in_head) = match this.clock.get() {
            Phase::Serving => return Poll::Pending,
            Phase::Idle(d) => (d, false),
            Phase::Head(d) => (d, true),
        };
        if this.armed != Some(deadline) {
            this.sleep.as_mut().reset(deadline);
            this.armed = Some(deadline);
        }
        if this.sleep.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        if in_head {
            let head: Duration = this.clock.times.head;
            Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("request head not whole within {head:?}"),
            )))
        } else {
            // Nothing read: Pingora takes it as the client's close.
            Poll::Ready(Ok(()))
        }
    }
}

impl AsyncWrite for Clocked {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if let Some(n) = this.hold(&[io::IoSlice::new(buf)]) {
            return Poll::Ready(Ok(n));
        }
        // Too much to hold: the held bytes and `buf` in one write. A short
        // write may end inside the held bytes; they go first, and `buf`
        // counts only once they are all out.
        while !this.held.is_empty() {
            let held = this.held.len();
            let both = [io::IoSlice::new(&this.held), io::IoSlice::new(buf)];
            let n = ready!(Pin::new(&mut this.inner).poll_write_vectored(cx, &both))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            if n < held {
                this.held.drain(..n);
                continue;
            }
            this.held = Vec::new();
            if n > held {
                return Poll::Ready(Ok(n - held));
            }
        }
        Pin::new(&mut this.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_release(cx))?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_release(cx))?;
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if let Some(n) = this.hold(bufs) {
            return Poll::Ready(Ok(n));
        }
        ready!(this.poll_release(cx))?;
        Pin::new(&mut this.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[async_trait]
impl Shutdown for Clocked {
    async fn shutdown(&mut self) {
        // What is held goes out first, as Pingora's own buffer does.
        let _ = std::future::poll_fn(|cx| self.poll_release(cx)).await;
        self.inner.shutdown().await;
    }
}

impl UniqueID for Clocked {
    fn id(&self) -> UniqueIDType {
        self.inner.id()
    }
}

impl Ssl for Clocked {
    fn get_ssl(&self) -> Option<&TlsRef> {
        self.inner.get_ssl()
    }

    fn get_ssl_digest(&self) -> Option<Arc<SslDigest>> {
        self.inner.get_ssl_digest()
    }

    fn selected_alpn_proto(&self) -> Option<ALPN> {
        self.inner.selected_alpn_proto()
    }
}

impl GetTimingDigest for Clocked {
    fn get_timing_digest(&self) -> Vec<Option<TimingDigest>> {
        self.inner.get_timing_digest()
    }

    fn get_read_pending_time(&self) -> Duration {
        self.inner.get_read_pending_time()
    }

    fn get_write_pending_time(&self) -> Duration {
        self.inner.get_write_pending_time()
    }
}

impl GetProxyDigest for Clocked {
    fn get_proxy_digest(&self) -> Option<Arc<ProxyDigest>> {
        self.inner.get_proxy_digest()
    }

    fn set_proxy_digest(&mut self, digest: ProxyDigest) {
        self.inner.set_proxy_digest(digest);
    }
}

impl GetSocketDigest for Clocked {
    fn get_socket_digest(&self) -> Option<Arc<SocketDigest>> {
        self.inner.get_socket_digest()
    }

    fn set_socket_digest(&mut self, digest: SocketDigest) {
        self.inner.set_socket_digest(digest);
    }
}

#[async_trait]
impl Peek for Clocked {
    async fn try_peek(&mut self, buf: &mut [u8]) -> io::Result<bool> {
        self.inner.try_peek(buf).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn times() -> EdgeTimes {
        EdgeTimes {
            idle: Duration::from_secs(2),
            head: Duration::from_secs(3),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_head_that_never_ends_fails_at_its_deadline() {
        let (client, server) = tokio::io::duplex(1024);
        let mut clocked = Clocked::new(Box::new(server), times());
        let mut client = client;
        let started = Instant::now();
        client.write_all(b"GET / HTTP/1.1\r\n").await.unwrap();
        let mut buf = [0u8; 64];
        assert!(clocked.read(&mut buf).await.unwrap() > 0);
        let e = clocked.read(&mut buf).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert_eq!(started.elapsed(), Duration::from_secs(3));
    }

    #[tokio::test(start_paused = true)]
    async fn between_requests_the_idle_time_ends_the_connection_and_a_head_restarts_the_clock() {
        let (mut client, server) = tokio::io::duplex(1024);
        let mut clocked = Clocked::new(Box::new(server), times());
        let clock = Arc::clone(&clocked.clock);
        let mut buf = [0u8; 64];
        // Serving: no deadline of ours.
        clock.set(Phase::Serving);
        let waited = tokio::time::timeout(Duration::from_secs(30), clocked.read(&mut buf)).await;
        assert!(waited.is_err(), "no deadline while serving");
        // Answered: the next request must start within the idle time.
        clock.set(Phase::Idle(Instant::now() + clock.times.idle));
        let started = Instant::now();
        assert_eq!(clocked.read(&mut buf).await.unwrap(), 0, "a close");
        assert_eq!(started.elapsed(), Duration::from_secs(2));
        // A first byte within the idle time starts the head's own clock.
        clock.set(Phase::Idle(Instant::now() + clock.times.idle));
        tokio::time::sleep(Duration::from_millis(1500)).await;
        client.write_all(b"G").await.unwrap();
        assert_eq!(clocked.read(&mut buf).await.unwrap(), 1);
        let head_started = Instant::now();
        let e = clocked.read(&mut buf).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert_eq!(head_started.elapsed(), Duration::from_secs(3));
    }

    /// What the client has been sent so far, waiting at most `wait` for it.
    async fn sent(client: &mut tokio::io::DuplexStream, wait: Duration) -> Vec<u8> {
        let mut buf = vec![0u8; 1 << 16];
        match tokio::time::timeout(wait, client.read(&mut buf)).await {
            Ok(Ok(n)) => buf[..n].to_vec(),
            _ => Vec::new(),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_head_waits_for_its_body_and_both_leave_at_the_flush() {
        let (mut client, server) = tokio::io::duplex(1 << 16);
        let mut clocked = Clocked::new(Box::new(server), times());
        clocked.write_all(b"HTTP/1.1 200 OK\r\n\r\n").await.unwrap();
        clocked.write_all(&[b'x'; 1500]).await.unwrap();
        assert!(sent(&mut client, Duration::from_millis(10))
            .await
            .is_empty());
        clocked.flush().await.unwrap();
        let got = sent(&mut client, Duration::from_secs(1)).await;
        assert_eq!(got.len(), 19 + 1500);
        assert!(got.starts_with(b"HTTP/1.1 200 OK\r\n\r\nxxx"));
        assert_eq!(clocked.held.capacity(), 0, "nothing kept between answers");
    }

    #[tokio::test]
    async fn a_long_body_follows_the_held_head_through_short_writes() {
        // A pipe of 64 bytes: every write is short and most wait.
        let (mut client, server) = tokio::io::duplex(64);
        let reader = tokio::spawn(async move {
            let mut all = Vec::new();
            client.read_to_end(&mut all).await.unwrap();
            all
        });
        let mut clocked = Clocked::new(Box::new(server), times());
        let head: Vec<u8> = (0..100u8).collect();
        let body: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        clocked.write_all(&head).await.unwrap();
        clocked.write_all(&body).await.unwrap();
        clocked.write_all(b"tail").await.unwrap();
        clocked.flush().await.unwrap();
        AsyncWriteExt::shutdown(&mut clocked).await.unwrap();
        drop(clocked);
        let all = reader.await.unwrap();
        assert_eq!(all, [head, body, b"tail".to_vec()].concat());
    }

    #[tokio::test(start_paused = true)]
    async fn what_is_held_is_written_before_the_connection_closes() {
        let (mut client, server) = tokio::io::duplex(1 << 16);
        let mut clocked = Clocked::new(Box::new(server), times());
        clocked
            .write_all(b"HTTP/1.1 408 Request Timeout\r\n\r\n")
            .await
            .unwrap();
        Shutdown::shutdown(&mut clocked).await;
        drop(clocked);
        let mut all = Vec::new();
        client.read_to_end(&mut all).await.unwrap();
        assert_eq!(all, b"HTTP/1.1 408 Request Timeout\r\n\r\n");
    }
}

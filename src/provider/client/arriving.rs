//! A boards answer read on the work pool while its body is still arriving.
//!
//! The transport copies each read of the connection into one buffer (sized
//! from the announced length), as it does for any body. Here, once a part
//! of at least [`PART_BYTES`] has come and the reader is idle, the part is
//! split off the front of that buffer (for a plain body, no copy: the
//! reader's body and the rest of the buffer are one allocation) and handed
//! to an
//! [`AnswerStream`] on the work pool, while the transport goes on reading
//! the connection. A part that comes while the reader is busy waits for
//! it, so parts grow when reading is slower than the network; the reader
//! never holds a pool thread while it waits for bytes.
//!
//! A gzip body (what the provider sends when asked) is inflated part by
//! part on the pool too, in steps of [`INFLATE_STEP`] compressed bytes so
//! that no step inflates far past the size limit, and the reader reads what
//! each part inflates to.
//!
//! When the last byte has come, what is left is read with the stream's
//! end. The answer is the one the whole-body path gives: the stream reads
//! as [`AnswerStream`] says, and a gzip body whose inflating as it came
//! failed in any way (corrupt, cut short, over the limit) is inflated again
//! whole, by the whole-body path, for its verdict. Only the time moves,
//! into the time the body takes to arrive.

use super::body::decode_body;
use super::hooks::{self, Hooked, Offload};
use crate::provider::answer::{Answer, AnswerError, AnswerStream};
use crate::provider::error::FetchError;
use bytes::buf::Writer;
use bytes::{BufMut, Bytes, BytesMut};
use flate2::write::MultiGzDecoder;
use std::io::Write as _;
use std::sync::Arc;
use std::task::Poll;

/// The least body handed to the reader at once: a hand-off to the pool
/// costs some microseconds, reading this much some tens.
pub(super) const PART_BYTES: usize = 64 * 1024;

/// The most compressed bytes inflated before the size limit is checked:
/// deflate inflates at most about a thousandfold, so a step cannot go past
/// the limit by more than about a MiB.
pub(super) const INFLATE_STEP: usize = 1024;

/// A body's reader and what it needs between parts, moved to the pool and
/// back with each part.
struct Reader {
    stream: AnswerStream,
    /// Inflates a gzip body; `None` for a plain one.
    inflate: Option<Inflate>,
}

impl Reader {
    /// Reads one part of the body as it came.
    fn read(&mut self, part: BytesMut) {
        match &mut self.inflate {
            None => self.stream.read_more(part),
            Some(inflate) => {
                if let Some(inflated) = inflate.part(part.freeze()) {
                    self.stream.read_more(inflated);
                }
            }
        }
    }

    /// Reads the last part: the body (inflated) and its answer.
    fn finish(
        mut self,
        last: BytesMut,
    ) -> Result<(Bytes, Result<Answer, AnswerError>), FetchError> {
        let Some(mut inflate) = self.inflate.take() else {
            return Ok(self.stream.finish(last));
        };
        match inflate.part(last.freeze()).filter(|_| inflate.end()) {
            Some(inflated) => Ok(self.stream.finish(inflated)),
            // The whole-body path's verdict, from the body as it came. What
            // the stream holds goes first: a body inflated over the limit is
            // not held twice.
            None => {
                drop(self.stream);
                let body = decode_body(Some("gzip"), inflate.raw.concat(), inflate.max)?;
                let answer = Answer::parse_bytes(&body);
                Ok((body, answer))
            }
        }
    }
}

/// A gzip body inflated as it comes.
struct Inflate {
    decoder: MultiGzDecoder<Writer<BytesMut>>,
    /// Bytes inflated so far.
    inflated: usize,
    max: usize,
    /// The body as it came, for the whole-body path if inflating fails.
    raw: Vec<Bytes>,
    failed: bool,
}

impl Inflate {
    fn new(capacity: usize, max: usize) -> Inflate {
        Inflate {
            decoder: MultiGzDecoder::new(BytesMut::with_capacity(capacity).writer()),
            inflated: 0,
            max,
            raw: Vec::new(),
            failed: false,
        }
    }

    /// What `raw`, the next part of the body, inflates to; `None` once
    /// inflating has failed or gone past the limit.
    fn part(&mut self, raw: Bytes) -> Option<BytesMut> {
        self.raw.push(raw.clone());
        if self.failed {
            return None;
        }
        let start = self.inflated;
        for step in raw.chunks(INFLATE_STEP) {
            if self.decoder.write_all(step).is_err() {
                self.failed = true;
                return None;
            }
            // What the decoder holds back is counted at the flush below.
            self.inflated = start + self.decoder.get_ref().get_ref().len();
            if self.inflated > self.max {
                self.failed = true;
                return None;
            }
        }
        // The decoder keeps some output of its own until it is flushed.
        self.failed = self.decoder.flush().is_err();
        self.inflated = start + self.decoder.get_ref().get_ref().len();
        if self.failed || self.inflated > self.max {
            self.failed = true;
            return None;
        }
        Some(self.decoder.get_mut().get_mut().split())
    }

    /// Whether the body ended where its last gzip member ends, its checksum
    /// and length right (anything else is the whole-body path's to judge).
    fn end(&mut self) -> bool {
        !self.failed
            && self.decoder.try_finish().is_ok()
            && self.decoder.get_ref().get_ref().is_empty()
    }
}

/// The body read so far, and its reader.
pub(super) struct Arriving {
    /// What has come since the last part was handed over, at the front of
    /// the buffer the rest of the body is read into.
    come: BytesMut,
    /// The reader, when it is not reading a part.
    idle: Option<Reader>,
    /// A part being read on the pool: the reader comes back when it is done
    /// (`None` if its job never returned). Polled by the task that reads
    /// the connection, each time a read comes: a task of its own would not
    /// run (not even to queue the job) while that task has reads ready.
    busy: Option<Hooked<'static, Option<Reader>>>,
    offload: Option<Arc<dyn Offload>>,
    /// The least part handed over ([`PART_BYTES`]; less in tests).
    part_bytes: usize,
}

impl Arriving {
    /// A body of about `capacity` bytes as it comes, `gzip` or plain,
    /// read on `offload` (inline without one); a gzip body may inflate to
    /// at most `max` bytes.
    pub(super) fn new(
        capacity: usize,
        gzip: bool,
        max: usize,
        offload: Option<Arc<dyn Offload>>,
    ) -> Arriving {
        // A board's JSON inflates about tenfold; more room is taken as it
        // is needed.
        let inflate = gzip.then(|| Inflate::new(capacity.saturating_mul(12).min(max), max));
        Arriving {
            come: BytesMut::with_capacity(capacity),
            idle: Some(Reader {
                stream: AnswerStream::new(),
                inflate,
            }),
            busy: None,
            offload,
            part_bytes: PART_BYTES,
        }
    }

    /// Takes one read of the connection, and hands what has come to the
    /// reader when it is idle and enough has come.
    pub(super) async fn push(&mut self, chunk: &[u8]) {
        self.come.extend_from_slice(chunk);
        if self.come.len() < self.part_bytes || !self.settle().await {
            return;
        }
        let Some(mut reader) = self.idle.take() else {
            // Its job never returned: `finish` says so.
            return;
        };
        let part = self.come.split();
        let offload = self.offload.clone();
        self.busy = Some(Box::pin(async move {
            hooks::run_on(offload.as_deref(), move || {
                reader.read(part);
                reader
            })
            .await
        }));
        // Polled once now, which queues the job on the pool.
        self.settle().await;
    }

    /// Polls the part being read, if any, once: whether the reader is idle.
    async fn settle(&mut self) -> bool {
        let Some(busy) = &mut self.busy else {
            return true;
        };
        match std::future::poll_fn(|cx| Poll::Ready(busy.as_mut().poll(cx))).await {
            Poll::Ready(reader) => {
                self.idle = reader;
                self.busy = None;
                true
            }
            Poll::Pending => false,
        }
    }

    /// Reads the rest once the whole body has come: the body (inflated)
    /// and the answer.
    ///
    /// # Errors
    /// As the whole-body path refuses a gzip body; `Upstream` when a job of
    /// the reader never returned (it panicked, or the pool closed).
    pub(super) async fn finish(
        mut self,
    ) -> Result<(Bytes, Result<Answer, AnswerError>), FetchError> {
        if let Some(busy) = self.busy.take() {
            self.idle = busy.await;
        }
        let reader = self.idle.take().ok_or_else(super::job_lost)?;
        let last = std::mem::take(&mut self.come);
        hooks::run_on(self.offload.as_deref(), move || reader.finish(last))
            .await
            .ok_or_else(super::job_lost)?
    }
}

#[cfg(test)]
mod tests;

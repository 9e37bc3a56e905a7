//! A boards answer read on the work pool while its body is still arriving.
//!
//! The transport copies each read of the connection into one buffer (sized
//! from the announced length), as it does for any body. Here, once a part
//! of at least [`PART_BYTES`] has come and the reader is idle, the part is
//! split off the front of that buffer (no copy: the reader's body and the
//! rest of the buffer are one allocation) and handed to an
//! [`AnswerStream`] on the work pool, while the transport goes on reading
//! the connection. A part that comes while the reader is busy waits for
//! it, so parts grow when reading is slower than the network; the reader
//! never holds a pool thread while it waits for bytes.
//!
//! When the last byte has come, what is left is read with the stream's
//! end. The answer is the one the whole-body reader gives (see
//! [`AnswerStream`]); only its time moves, into the time the body takes to
//! arrive.

use super::hooks::{self, Hooked, Offload};
use crate::provider::answer::{Answer, AnswerError, AnswerStream};
use bytes::{Bytes, BytesMut};
use std::sync::Arc;
use std::task::Poll;

/// The least body handed to the reader at once: a hand-off to the pool
/// costs some microseconds, reading this much some tens.
pub(super) const PART_BYTES: usize = 64 * 1024;

/// The body read so far, and its reader.
pub(super) struct Arriving {
    /// What has come since the last part was handed over, at the front of
    /// the buffer the rest of the body is read into.
    come: BytesMut,
    /// The reader, when it is not reading a part.
    idle: Option<AnswerStream>,
    /// A part being read on the pool: the reader comes back when it is done
    /// (`None` if its job never returned). Polled by the task that reads
    /// the connection, each time a read comes: a task of its own would not
    /// run (not even to queue the job) while that task has reads ready.
    busy: Option<Hooked<'static, Option<AnswerStream>>>,
    offload: Option<Arc<dyn Offload>>,
}

impl Arriving {
    /// A body of about `capacity` bytes, read on `offload` (inline without one).
    pub(super) fn new(capacity: usize, offload: Option<Arc<dyn Offload>>) -> Arriving {
        Arriving {
            come: BytesMut::with_capacity(capacity),
            idle: Some(AnswerStream::new()),
            busy: None,
            offload,
        }
    }

    /// Takes one read of the connection, and hands what has come to the
    /// reader when it is idle and enough has come.
    pub(super) async fn push(&mut self, chunk: &[u8]) {
        self.come.extend_from_slice(chunk);
        if self.come.len() < PART_BYTES || !self.settle().await {
            return;
        }
        let Some(mut stream) = self.idle.take() else {
            // Its job never returned: `finish` says so.
            return;
        };
        let part = self.come.split();
        let offload = self.offload.clone();
        self.busy = Some(Box::pin(async move {
            hooks::run_on(offload.as_deref(), move || {
                stream.read_more(part);
                stream
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
            Poll::Ready(stream) => {
                self.idle = stream;
                self.busy = None;
                true
            }
            Poll::Pending => false,
        }
    }

    /// Reads the rest once the whole body has come: the body and the
    /// answer; `None` when a job of the reader never returned (it panicked,
    /// or the pool closed).
    pub(super) async fn finish(mut self) -> Option<(Bytes, Result<Answer, AnswerError>)> {
        if let Some(busy) = self.busy.take() {
            self.idle = busy.await;
        }
        let stream = self.idle.take()?;
        let last = std::mem::take(&mut self.come);
        hooks::run_on(self.offload.as_deref(), move || stream.finish(last)).await
    }
}

//! The fleet tier as a level of the store: what a node does on a process
//! cache miss when the tier is configured. Look; on a miss take the lock
//! and load (or wait for the node that holds it, `lock_ms` at most); store
//! what was loaded. A document read back is used only once its tag and its
//! content check out ([`super::check`]).

use super::check;
use super::format::{self, Header};
use super::keys::BoardKeys;
use super::tier::{wait_share, Backoff, Lock, LockSeen, LockValue, Looked, SharedTier};
use crate::document::{Completeness, Coverage};
use crate::governance::WorkPool;
use crate::pipeline::{render, LoadedBoard};
use crate::store::load::Loader;
use crate::store::{CacheSettings, Doc, LoadError, LoadTiming};
use bytes::Bytes;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// Values up to this size are checked and inflated on the calling thread;
/// larger ones on the work pool.
const INLINE_DECODE_BYTES: usize = 64 * 1024;

/// A load's outcome and how long the process cache may keep it.
pub(crate) type Kept = (Result<Doc, LoadError>, Duration);

/// The board through the tier: a stored document (kept by the process for
/// the time it has left in the tier), a shared failure, or a load by this
/// node, under the fleet's lock when it can take it (or, when the tier
/// does not answer, a load as if there were no tier). A lock another node
/// holds delays the load by this request's share of its deadline at most
/// ([`wait_share`]); then this node loads the board itself, so only its own
/// load passing the deadline is a timeout.
pub(crate) async fn through(
    tier: &Arc<SharedTier>,
    loader: &Loader,
    (board_id, permission_id): (&str, &str),
    coverage: Coverage,
    deadline: Instant,
    settings: &CacheSettings,
) -> Kept {
    let keys = tier.keys(board_id, permission_id);
    let load = Load {
        tier,
        loader,
        keys: &keys,
        ids: (board_id, permission_id),
        coverage,
        deadline,
        settings,
    };
    let mut looked = tier.lookup(&keys, coverage).await;
    let mut share: Option<Instant> = None;
    let mut backoff = Backoff::default();
    loop {
        looked = match looked {
            Looked::Doc {
                value,
                key,
                coverage: stored,
                left,
            } => match decode(loader.pool(), value, tier, (&key, stored), board_id).await {
                Ok(doc) => return (Ok(doc), left),
                Err(why) => {
                    tier.reject(&key, &why).await;
                    Looked::Miss(LockSeen::Free)
                }
            },
            Looked::Failure(e, left) => return (Err(LoadError::Fetch(e)), left),
            Looked::Unavailable => {
                let outcome = loader
                    .load(board_id, permission_id, coverage, deadline)
                    .await;
                return (outcome, settings.ttl);
            }
            Looked::Miss(seen) => {
                let until = *share
                    .get_or_insert_with(|| wait_share(Instant::now(), deadline, tier.lock_life()));
                match tier.lock(&keys, coverage, &seen).await {
                    Lock::Taken(value) => return load.stored(Some(value)).await,
                    Lock::Held => match tier.wait(&keys, coverage, until, &mut backoff).await {
                        Some(other) => other,
                        // Waited this request's share: load it here.
                        None => return load.stored(None).await,
                    },
                    Lock::Unavailable => Looked::Unavailable,
                }
            }
        };
    }
}

/// A load by this node whose outcome goes to the tier.
struct Load<'a> {
    tier: &'a Arc<SharedTier>,
    loader: &'a Loader,
    keys: &'a BoardKeys,
    ids: (&'a str, &'a str),
    coverage: Coverage,
    deadline: Instant,
    settings: &'a CacheSettings,
}

impl Load<'_> {
    /// Loads the board and stores the outcome (a document, or the
    /// provider's `403`/`404`) off the request's path, then releases the
    /// lock when this node holds it: the answer does not wait for the
    /// writes.
    async fn stored(&self, lock: Option<LockValue>) -> Kept {
        let (board_id, permission_id) = self.ids;
        let outcome = self
            .loader
            .load(board_id, permission_id, self.coverage, self.deadline)
            .await;
        let (ttl, error_ttl) = (self.settings.ttl, self.settings.error_ttl);
        let tier = Arc::clone(self.tier);
        let pool = self.loader.pool().clone();
        let keys = self.keys.clone();
        let coverage = self.coverage;
        let stored = outcome.clone();
        tokio::spawn(async move {
            match &stored {
                Ok(doc) => store(&tier, &pool, &keys, doc, ttl, error_ttl).await,
                Err(LoadError::Fetch(e)) => tier.store_failure(&keys, e).await,
                Err(_) => {}
            }
            if let Some(value) = lock {
                tier.unlock(&keys, coverage, &value).await;
            }
        });
        (outcome, ttl)
    }
}

/// A fresh load's outcome written to the tier before the caller goes on
/// (the live poll announces its version next, and the nodes told of it
/// read the document here): a document as [`store`] writes it, the
/// provider's `403`/`404` shared; anything else is this node's own.
pub(crate) async fn share(
    tier: &Arc<SharedTier>,
    pool: &WorkPool,
    (board_id, permission_id): (&str, &str),
    outcome: &Result<Doc, LoadError>,
    settings: &CacheSettings,
) {
    let keys = tier.keys(board_id, permission_id);
    match outcome {
        Ok(doc) => store(tier, pool, &keys, doc, settings.ttl, settings.error_ttl).await,
        Err(LoadError::Fetch(e)) => tier.store_failure(&keys, e).await,
        Err(_) => {}
    }
}

/// A value stored under `key` for `board_id`, verified, inflated and
/// checked (on the work pool when large), as a document of this node.
async fn decode(
    pool: &WorkPool,
    value: Bytes,
    tier: &Arc<SharedTier>,
    (key, coverage): (&str, Coverage),
    board_id: &str,
) -> Result<Doc, format::Invalid> {
    let board = if value.len() <= INLINE_DECODE_BYTES {
        verified(&value, tier, (key, coverage), board_id)
    } else {
        let tier = Arc::clone(tier);
        let (key, board_id) = (key.to_owned(), board_id.to_owned());
        pool.run(move || verified(&value, &tier, (&key, coverage), &board_id))
            .await
            .map_err(|_| format::Invalid("decoding did not finish"))?
    }?;
    Ok(Doc::from_tier(board, LoadTiming::default()))
}

/// [`decode`]'s CPU work: the tag, the body, then the document itself,
/// which must be of its key's coverage and as complete as the header says.
fn verified(
    value: &[u8],
    tier: &SharedTier,
    (key, coverage): (&str, Coverage),
    board_id: &str,
) -> Result<LoadedBoard, format::Invalid> {
    let limits = tier.limits();
    // Inflated inside the envelope the board is kept in, so as not to copy it.
    let (front, back) = (render::PREFIX, b"}");
    let (header, envelope) = format::decode_framed(
        value,
        limits.max_document_bytes,
        tier.seal(),
        key,
        front,
        back,
    )?;
    if header.coverage != coverage {
        return Err(format::Invalid(
            "a document of another coverage than its key's",
        ));
    }
    let json = &envelope[front.len()..envelope.len() - back.len()];
    let checked = check::document(json, board_id, limits.max_nodes)?;
    let completeness = checked.completeness;
    let announced = Completeness {
        unloaded: header.unloaded,
        transient: header.transient,
    };
    if completeness != announced {
        return Err(format::Invalid("completeness differs from the header"));
    }
    Ok(
        LoadedBoard::from_envelope(envelope, header.coverage, completeness)
            .with_entries(checked.entries),
    )
}

/// Encodes a loaded document on the pool and stores it for `ttl`; one too
/// large for `max_document_bytes` is not stored. A document with a board
/// that a retry may fill is stored for `error_ttl` at most, and only where
/// no document is (it never replaces a complete one).
async fn store(
    tier: &Arc<SharedTier>,
    pool: &WorkPool,
    keys: &BoardKeys,
    doc: &Doc,
    ttl: Duration,
    error_ttl: Duration,
) {
    let board = Arc::clone(&doc.board);
    if board.document_json().len() > tier.limits().max_document_bytes {
        return;
    }
    let completeness = board.completeness();
    let ttl = if completeness.transient {
        ttl.min(error_ttl)
    } else {
        ttl
    };
    let header = Header {
        coverage: board.coverage(),
        unloaded: completeness.unloaded,
        transient: completeness.transient,
        expires_at_ms: SharedTier::expiry(ttl),
    };
    let transient = header.transient;
    let coverage = header.coverage;
    let name = keys.doc(coverage);
    let sealer = Arc::clone(tier);
    let encoded = pool
        .run(move || format::encode(&header, board.document_json(), sealer.seal(), &name))
        .await;
    if let Ok(Ok(value)) = encoded {
        tier.store(keys, coverage, value, ttl, transient).await;
    }
}

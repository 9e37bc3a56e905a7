//! The renders of a document and the answers derived from it, cached in the
//! process cache beside the documents: a view, a selection or Markdown in
//! one encoding ([`Boards::variant`]), and whatever an endpoint computes
//! from a document once per generation ([`Boards::derived`]).

use super::{Boards, Doc, Entry, Key, LoadError, Variant, RENDER_OVERHEAD};
use crate::encoding::{self, Encoding};
use crate::pipeline::{LoadedBoard, Rendered, Representation};
use crate::select::Selection;
use std::sync::Arc;
use tracing::Instrument as _;

impl Boards {
    /// `doc` rendered for `scope` and `selection` as `representation` in
    /// `encoding`, from the cache or rendered (and compressed) on the pool
    /// and cached: a Markdown body is kept and compressed once, like JSON.
    ///
    /// # Errors
    /// [`LoadError::Internal`] when rendering or compressing failed.
    pub async fn variant(
        &self,
        doc: &Doc,
        scope: &'static str,
        selection: &Selection,
        representation: Representation,
        encoding: Encoding,
    ) -> Result<Variant, LoadError> {
        let canonical = selection.canonical_shared();
        let key = |encoding| Key::Render {
            generation: doc.generation,
            scope,
            selection: canonical.clone(),
            representation,
            encoding,
        };
        let identity = match self.cached_render(&key(Encoding::Identity)) {
            Some(v) => v,
            None => {
                let board = Arc::clone(&doc.board);
                let selection = selection.clone();
                let rendered = self
                    .pool()
                    .run(move || board.render_as(representation, scope, &selection))
                    .instrument(tracing::info_span!(
                        "shared_board_api.render",
                        representation = representation.name()
                    ))
                    .await
                    .map_err(|e| LoadError::Internal(e.to_string()))?
                    .map_err(|e| LoadError::Internal(e.to_string()))?;
                let variant = Variant {
                    rendered,
                    encoding: Encoding::Identity,
                };
                self.keep_render(key(Encoding::Identity), &variant, canonical.len());
                variant
            }
        };
        if encoding == Encoding::Identity
            || identity.rendered.body.len() < encoding::MIN_COMPRESS_BYTES
        {
            return Ok(identity);
        }
        if let Some(v) = self.cached_render(&key(encoding)) {
            return Ok(v);
        }
        let body = identity.rendered.body.clone();
        let compressed = self
            .pool()
            .run(move || encoding::compress(encoding, &body))
            .await
            .map_err(|e| LoadError::Internal(e.to_string()))?
            .map_err(LoadError::Internal)?;
        let variant = Variant {
            rendered: Rendered {
                body: compressed,
                etag: identity.rendered.etag,
                disposition: identity.rendered.disposition,
            },
            encoding,
        };
        self.keep_render(key(encoding), &variant, canonical.len());
        Ok(variant)
    }

    fn cached_render(&self, key: &Key) -> Option<Variant> {
        match self.inner.cache.as_ref()?.budget.get(key)? {
            Entry::Render(v) => Some(v),
            Entry::Document(_) | Entry::Derived(_) => None,
        }
    }

    /// The answer [`Boards::derived`] keeps for `doc`, `kind` and `key`,
    /// when it is in the process cache: a hit without the work `derived`
    /// would need its inputs for.
    pub fn cached_derived(
        &self,
        doc: &Doc,
        kind: &'static str,
        key: &Arc<str>,
    ) -> Option<bytes::Bytes> {
        let key = Key::Derived {
            generation: doc.generation,
            kind,
            key: Arc::clone(key),
        };
        match self.inner.cache.as_ref()?.budget.get(&key) {
            Some(Entry::Derived(bytes)) => Some(bytes),
            _ => None,
        }
    }

    /// Bytes derived from `doc` by `make` (a search answer, a tool result),
    /// from the cache or made on the work pool and cached in the same byte
    /// budget as renders, until the document is replaced. `kind` names what
    /// is derived and `key` what it was derived for (the query, the
    /// selection); equal pairs must make equal bytes.
    ///
    /// # Errors
    /// [`LoadError::Internal`] when `make` failed or its job panicked.
    pub async fn derived<F>(
        &self,
        doc: &Doc,
        kind: &'static str,
        key: Arc<str>,
        make: F,
    ) -> Result<bytes::Bytes, LoadError>
    where
        F: FnOnce(&LoadedBoard) -> Result<bytes::Bytes, String> + Send + 'static,
    {
        let key = Key::Derived {
            generation: doc.generation,
            kind,
            key,
        };
        let cache = self.inner.cache.as_ref();
        if let Some(Entry::Derived(bytes)) = cache.and_then(|c| c.budget.get(&key)) {
            return Ok(bytes);
        }
        let board = Arc::clone(&doc.board);
        let bytes = self
            .pool()
            .run(move || make(&board))
            .await
            .map_err(|e| LoadError::Internal(e.to_string()))?
            .map_err(LoadError::Internal)?;
        if let (Some(cache), Key::Derived { key: text, .. }) = (cache, &key) {
            let weight = bytes.len() + text.len() + RENDER_OVERHEAD;
            let ttl = cache.settings.ttl;
            cache
                .budget
                .put(key, Entry::Derived(bytes.clone()), weight, ttl);
        }
        Ok(bytes)
    }

    fn keep_render(&self, key: Key, variant: &Variant, key_bytes: usize) {
        if let Some(cache) = &self.inner.cache {
            let bytes = variant.rendered.body.len() + key_bytes + RENDER_OVERHEAD;
            cache.budget.put(
                key,
                Entry::Render(variant.clone()),
                bytes,
                cache.settings.ttl,
            );
        }
    }
}

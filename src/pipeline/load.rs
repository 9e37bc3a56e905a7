//! Load: fetch a board from the provider, normalize it into BoardDocument v1
//! and remove the sensitive fields; the work behind a cache miss.

use super::render::PREFIX;
use super::LoadedBoard;
use crate::document::Coverage;
use crate::provider::error::FetchError;
use crate::provider::normalize::write;
use crate::provider::Fetched;

/// The CPU half of a load: normalize what the provider sent into
/// BoardDocument v1 (all of it, or its outline: see [`Coverage`]), written
/// as compact JSON node by node while the tree is walked, so the document is
/// never held as a tree. The normalizer leaves
/// every sensitive key out of the raw values it copies, so the bytes are the
/// sanitized document without a sanitizing walk (`reference::build` is the
/// walk, and the tests hold the two equal). The board carries its
/// [`crate::document::Completeness`], counted on the same walk.
///
/// # Errors
/// A document the normalizer cannot use is an upstream error.
pub fn build(
    fetched: Fetched,
    board_id: &str,
    provider_name: &str,
    coverage: Coverage,
) -> Result<LoadedBoard, FetchError> {
    // The document is about its content text (written once as blocks, once
    // as plain text) plus a few hundred bytes per node; sized up front so
    // that it is not grown by doubling, which holds old and new at once.
    // An outline has no content text, and about 400 bytes per node (ids,
    // place, times), measured on the bench boards.
    let estimate = match coverage {
        Coverage::Full => fetched.content_bytes() * 3 / 2 + fetched.element_count() * 320,
        Coverage::Outline => fetched.element_count() * 448,
    } + 1024;
    let mut bytes = Vec::with_capacity(estimate);
    // Written inside the success envelope, the full view's body.
    bytes.extend_from_slice(PREFIX);
    let written = write(&fetched, provider_name, coverage, &mut bytes)
        .map_err(|e| FetchError::Upstream(format!("board {board_id} not normalizable: {e:?}")))?;
    bytes.push(b'}');
    drop(fetched);
    Ok(
        LoadedBoard::from_envelope(bytes, coverage, written.completeness)
            .with_entries(written.entries),
    )
}

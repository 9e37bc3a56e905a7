//! The reference pipeline: the plain, tree-based steps (normalize, convert to
//! a value, sanitize walk, select on the value, serialize). Not the serving
//! path; the differential tests, the fuzz target and the benchmarks hold
//! [`super::load::build`] and [`super::LoadedBoard::render`] to the exact
//! bytes and ETags it produces.

use super::render::{render, render_markdown_reference, RenderError, Rendered};
use crate::document::sanitize::sanitize;
use crate::provider::error::FetchError;
use crate::provider::normalize::normalize;
use crate::provider::Fetched;
use crate::select::Selection;
use serde_json::Value;

/// The sanitized full document as a value tree.
///
/// # Errors
/// As [`super::load::build`].
pub fn build(fetched: &Fetched, board_id: &str, provider_name: &str) -> Result<Value, FetchError> {
    let document = normalize(fetched, provider_name)
        .map_err(|e| FetchError::Upstream(format!("board {board_id} not normalizable: {e:?}")))?;
    let mut value = serde_json::to_value(&document)
        .map_err(|e| FetchError::Upstream(format!("document not serializable: {e}")))?;
    sanitize(&mut value);
    Ok(value)
}

/// The body and ETag of `selection` on `document` for the endpoint `scope`.
///
/// # Errors
/// As [`render`].
pub fn rendered(
    scope: &str,
    selection: &Selection,
    document: &Value,
) -> Result<Rendered, RenderError> {
    render(scope, &selection.canonical(), &selection.apply(document))
}

/// The Markdown body and ETag of `selection` on `doc`, the compact JSON of a
/// sanitized document: selected into JSON bytes, which serde_json reads for
/// the writer. [`super::LoadedBoard::render_as`] selects and reads in one
/// pass and must give the same bytes.
///
/// # Errors
/// As [`super::render::render_markdown`].
pub fn rendered_markdown(
    scope: &str,
    selection: &Selection,
    doc: &[u8],
) -> Result<Rendered, RenderError> {
    render_markdown_reference(scope, selection, &selection.canonical(), doc)
}

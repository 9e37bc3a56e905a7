//! The selected `data` of a board as GitHub Flavored Markdown, for clients
//! that ask for `text/markdown`: the representation agents and text tools
//! read, smaller than the JSON tree.
//!
//! What is written is what the JSON response of the same request would
//! hold: the selection's walk (view, include, exclude) reads the cached
//! document once into a value that borrows its strings (`read`,
//! `value`), which is then written straight into one output buffer (`out`):
//! the board tree (`nodes`), rich text (`rich`, `draft`) and tables
//! (`table`). `fetchedAt`, `source` and `version` are not written, so
//! the text depends only on what the ETag covers.
//!
//! Board text is untrusted: it is escaped so it never becomes HTML or
//! Markdown structure, and only `http:`/`https:` URLs become link or image
//! targets (see `out`). The document has already been sanitized, so no
//! token or permission id is in it to write.

mod draft;
mod nodes;
pub(crate) mod out;
pub mod pages;
mod read;
mod rich;
mod table;
mod value;

use crate::select::stream::Malformed;
use crate::select::Selection;

/// The Markdown of `selection` applied to `doc`, the compact JSON of a
/// sanitized document: one pass over `doc` selects and reads it
/// (`read`), then the writer walks the value.
///
/// # Errors
/// [`Malformed`] when `doc` is not compact JSON or nests deeper than 127 containers.
pub fn render(selection: &Selection, doc: &[u8]) -> Result<String, Malformed> {
    // The arena starts at half the JSON for `full` and grows by doubling:
    // the value of a whole board takes about one and a half times its JSON
    // (8 MB for the 5.7 MB bench board). Starting at that size in one chunk
    // measured no faster in 4 interleaved rounds, and the `standard` renders
    // benched after it slower. A pruned selection starts small.
    let arena = value::Bump::with_capacity(if selection.is_full() {
        doc.len() / 2
    } else {
        doc.len() / 16
    });
    let mut scratch = Vec::new();
    let mut tree = read::Tree::new(&arena);
    selection.apply_into(doc, &mut scratch, &mut tree)?;
    let value = tree.finish()?;
    Ok(write(&value, arena.allocated_bytes()))
}

/// [`render`], in pages: the same text, with where its blocks and board
/// sections start ([`pages::Paged`]).
///
/// # Errors
/// As [`render`].
pub fn render_paged(selection: &Selection, doc: &[u8]) -> Result<pages::Paged, Malformed> {
    let arena = value::Bump::with_capacity(doc.len() / 16);
    let mut scratch = Vec::new();
    let mut tree = read::Tree::new(&arena);
    selection.apply_into(doc, &mut scratch, &mut tree)?;
    let value = tree.finish()?;
    let mut out = out::Out::with_capacity(arena.allocated_bytes() / 8 + 256);
    nodes::document(&mut out, &value);
    Ok(pages::Paged::from_out(out))
}

/// The Markdown of one element and what it holds (its attached comment
/// threads, a task list's tasks), written as the board's Markdown writes it
/// under the board's heading: the text of one card of the JSON Canvas
/// export, from the same writer, so the two never read a card differently.
/// `node` is the element's JSON (compact or pretty).
///
/// # Errors
/// `node` is not JSON, or nests deeper than serde_json allows.
pub fn element(node: &[u8]) -> Result<String, serde_json::Error> {
    let arena = value::Bump::with_capacity(node.len());
    let node = value::V::parse(node, &arena)?;
    let children = arena.alloc_slice_copy(&[node]);
    let members = arena.alloc_slice_copy(&[("children", value::V::Arr(children))]);
    let mut out = out::Out::with_capacity(arena.allocated_bytes() / 8 + 64);
    nodes::held(&mut out, &value::V::Obj(members));
    Ok(out.finish())
}

/// The reference reading: the compact or pretty JSON of an already selected
/// document read with serde_json (`value::V::parse`), then written. Not
/// the serving path; the tests and the benchmark hold [`render`] to it.
///
/// # Errors
/// `data` is not JSON, or nests deeper than serde_json allows.
#[cfg(any(test, feature = "internals"))]
pub fn render_reference(data: &[u8]) -> Result<String, serde_json::Error> {
    let arena = value::Bump::with_capacity(data.len() / 2);
    let value = value::V::parse(data, &arena)?;
    Ok(write(&value, arena.allocated_bytes()))
}

/// What the writer is given for `selection` on `doc`, as a plain JSON
/// value: for the tests that hold the one-pass reader to
/// [`read_reference`], which shows differences the text may hide.
///
/// # Errors
/// As [`render`].
#[cfg(any(test, feature = "internals"))]
pub fn read(selection: &Selection, doc: &[u8]) -> Result<serde_json::Value, Malformed> {
    let arena = value::Bump::new();
    let mut scratch = Vec::new();
    let mut tree = read::Tree::new(&arena);
    selection.apply_into(doc, &mut scratch, &mut tree)?;
    Ok(tree.finish()?.plain())
}

/// What the writer is given when it reads the selected JSON `data` with
/// serde_json, as a plain JSON value.
///
/// # Errors
/// As [`render_reference`].
#[cfg(any(test, feature = "internals"))]
pub fn read_reference(data: &[u8]) -> Result<serde_json::Value, serde_json::Error> {
    let arena = value::Bump::new();
    Ok(value::V::parse(data, &arena)?.plain())
}

/// The Markdown of `data`, whose value takes `value_bytes` of its arena.
fn write(data: &value::V, value_bytes: usize) -> String {
    // The Markdown of a board runs at about a fifteenth of the value it is
    // written from (a tenth of the JSON); the body is shrunk to its length
    // when it is cached.
    let mut out = out::Out::with_capacity(value_bytes / 8 + 256);
    nodes::document(&mut out, data);
    out.finish()
}

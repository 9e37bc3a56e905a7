//! The selected `data` of a board as GitHub Flavored Markdown, for clients
//! that ask for `text/markdown`: the representation agents and text tools
//! read, smaller than the JSON tree.
//!
//! The selection is applied first (view, include, exclude), so what is
//! written is what the JSON response of the same request would hold. The
//! bytes are read once into a value that borrows their strings
//! ([`value`]), then written straight into one output buffer ([`out`]):
//! the board tree ([`nodes`]), rich text ([`rich`], [`draft`]) and tables
//! ([`table`]). `fetchedAt`, `source` and `version` are not written, so
//! the text depends only on what the ETag covers.
//!
//! Board text is untrusted: it is escaped so it never becomes HTML or
//! Markdown structure, and only `http:`/`https:` URLs become link or image
//! targets (see [`out`]). The document has already been sanitized, so no
//! token or permission id is in it to write.

mod draft;
mod nodes;
mod out;
mod rich;
mod table;
mod value;

/// The Markdown of `data`, the compact JSON of a selected document.
///
/// # Errors
/// `data` is not JSON, or nests deeper than the JSON reader allows.
pub fn render(data: &[u8]) -> Result<String, serde_json::Error> {
    // The Markdown of a board runs at about a third of its JSON's size.
    let mut out = out::Out::with_capacity(data.len() / 3 + 256);
    // The value takes about half the JSON's size; one chunk up front.
    let arena = value::Bump::with_capacity(data.len() / 2);
    let data = value::V::parse(data, &arena)?;
    nodes::document(&mut out, &data);
    Ok(out.finish())
}

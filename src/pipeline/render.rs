//! Render: the success envelope `{"ok":true,"data":...}` of one selection,
//! serialized once, and its weak ETag hashed on the way (xxh3-128).
//!
//! The ETag covers the endpoint, the canonical selection and every top-level
//! entry of `data` except `fetchedAt`, so an unchanged board revalidates to
//! `304` although it was fetched again, while another selection or another
//! endpoint never shares a tag.

use super::{canvas, markdown};
use crate::select::stream::{entries, Malformed};
use crate::select::Selection;
use bytes::Bytes;
use http::HeaderValue;
use serde_json::Value;
use std::ops::Range;
use xxhash_rust::xxh3::Xxh3;

/// A rendered success body and its weak ETag: what a selection of one
/// document produces, reusable until the document changes.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    pub body: Bytes,
    pub etag: HeaderValue,
    /// The `Content-Disposition` of a representation that is a file to
    /// save (the JSON Canvas export); `None` for the others.
    pub disposition: Option<HeaderValue>,
}

/// A document that could not be written as JSON (a bug, never input).
#[derive(Debug)]
pub struct RenderError(Reason);

#[derive(Debug)]
enum Reason {
    Serialize(serde_json::Error),
    Malformed,
    /// The selected document could not be read for Markdown (the
    /// reference render).
    #[cfg(any(test, feature = "internals"))]
    Markdown(serde_json::Error),
    /// A selection that needs bodies asked of an outline.
    Outline,
    /// The document could not be read for its JSON Canvas.
    Canvas(serde_json::Error),
}

impl RenderError {
    pub(crate) fn outline() -> RenderError {
        RenderError(Reason::Outline)
    }
}

impl From<Malformed> for RenderError {
    fn from(_: Malformed) -> Self {
        RenderError(Reason::Malformed)
    }
}

impl std::fmt::Display for RenderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Reason::Serialize(e) => write!(f, "board document not serializable: {e}"),
            Reason::Malformed => f.write_str("board document bytes are not compact JSON"),
            #[cfg(any(test, feature = "internals"))]
            Reason::Markdown(e) => write!(f, "board document not renderable as Markdown: {e}"),
            Reason::Outline => f.write_str("a selection with bodies asked of an outline"),
            Reason::Canvas(e) => write!(f, "board document not renderable as JSON Canvas: {e}"),
        }
    }
}

impl std::error::Error for RenderError {}

/// Serializes `{"ok":true,"data":...}` for the endpoint named `scope` and
/// the canonical text of its selection.
///
/// # Errors
/// [`RenderError`] if `data` cannot be serialized (it always can).
pub fn render(scope: &str, selection: &str, data: &Value) -> Result<Rendered, RenderError> {
    let mut hasher = Xxh3::new();
    hasher.update(scope.as_bytes());
    hasher.update(b"\0");
    hasher.update(selection.as_bytes());
    hasher.update(b"\0");
    let mut body = Vec::with_capacity(4096);
    body.extend_from_slice(br#"{"ok":true,"data":"#);
    match data {
        Value::Object(map) => {
            body.push(b'{');
            for (i, (key, value)) in map.iter().enumerate() {
                if i > 0 {
                    body.push(b',');
                }
                let start = body.len();
                serde_json::to_writer(&mut body, key)
                    .map_err(|e| RenderError(Reason::Serialize(e)))?;
                body.push(b':');
                serde_json::to_writer(&mut body, value)
                    .map_err(|e| RenderError(Reason::Serialize(e)))?;
                if key != "fetchedAt" {
                    hasher.update(&body[start..]);
                    hasher.update(b"\0");
                }
            }
            body.push(b'}');
        }
        other => {
            let start = body.len();
            serde_json::to_writer(&mut body, other)
                .map_err(|e| RenderError(Reason::Serialize(e)))?;
            hasher.update(&body[start..]);
        }
    }
    body.push(b'}');
    Ok(Rendered {
        body: exact(body),
        etag: weak_etag(hasher.digest128()),
        disposition: None,
    })
}

/// [`render`] from bytes: the envelope around `selection` applied to `doc`,
/// the compact JSON of a sanitized full document, written once into the
/// body; the ETag is hashed over the written entries. Same body and ETag as
/// [`render`] of [`Selection::apply`] on the parsed document.
///
/// # Errors
/// [`RenderError`] when `doc` is not compact JSON (it always is).
pub fn render_bytes(
    scope: &str,
    selection: &Selection,
    canonical: &str,
    doc: &[u8],
) -> Result<Rendered, RenderError> {
    let mut body =
        Vec::with_capacity(PREFIX.len() + 1 + if selection.is_full() { doc.len() } else { 4096 });
    body.extend_from_slice(PREFIX);
    selection.apply_bytes(doc, &mut body)?;
    let etag = etag_of(scope, canonical, &body[PREFIX.len()..])?;
    body.push(b'}');
    Ok(Rendered {
        body: exact(body),
        etag,
        disposition: None,
    })
}

/// [`render_bytes`] of the full view, whose body is `envelope` (the
/// document inside `{"ok":true,"data":...}`): shared, not copied. With
/// `entries`, the spans of the document's top-level entries (see
/// [`super::LoadedBoard::with_entries`]), the ETag hashes them without
/// walking the document; empty, the document is walked.
///
/// # Errors
/// [`RenderError`] when the document is not compact JSON (it always is).
pub fn render_envelope(
    scope: &str,
    canonical: &str,
    envelope: &Bytes,
    entries: &[Range<usize>],
) -> Result<Rendered, RenderError> {
    let end = envelope.len().checked_sub(1).ok_or(Malformed)?;
    let data = envelope.get(PREFIX.len()..end).ok_or(Malformed)?;
    let etag = if entries.is_empty() {
        etag_of(scope, canonical, data)?
    } else {
        let mut hasher = etag_hasher(scope, canonical);
        for span in entries {
            let entry = data.get(span.clone()).ok_or(Malformed)?;
            hash_entry(&mut hasher, entry);
        }
        weak_etag(hasher.digest128())
    };
    Ok(Rendered {
        body: envelope.clone(),
        etag,
        disposition: None,
    })
}

/// The Markdown of `selection` applied to `doc` (the compact JSON of a
/// sanitized document), selected and read in one pass, and its ETag: the
/// representation, the endpoint, the canonical selection and the Markdown
/// itself, which leaves `fetchedAt` out. Hashing the text rather
/// than the selected JSON hashes a tenth of the bytes, and no JSON tag can
/// equal it.
///
/// # Errors
/// [`RenderError`] when `doc` is not compact JSON (it always is) or nests
/// deeper than the JSON reader allows.
pub fn render_markdown(
    scope: &str,
    selection: &Selection,
    canonical: &str,
    doc: &[u8],
) -> Result<Rendered, RenderError> {
    let text = markdown::render(selection, doc)?;
    Ok(markdown_rendered(scope, canonical, text))
}

/// The Markdown `text` of one selection as a [`Rendered`], its ETag hashed
/// over the representation, the endpoint, the canonical selection and the text.
pub(crate) fn markdown_rendered(scope: &str, canonical: &str, text: String) -> Rendered {
    let mut hasher = Xxh3::new();
    for part in [
        b"text/markdown".as_slice(),
        scope.as_bytes(),
        canonical.as_bytes(),
    ] {
        hasher.update(part);
        hasher.update(b"\0");
    }
    hasher.update(text.as_bytes());
    Rendered {
        body: exact(text.into_bytes()),
        etag: weak_etag(hasher.digest128()),
        disposition: None,
    }
}

/// `doc` (the compact JSON of a sanitized full document) as a JSON Canvas
/// file to save, for the endpoint named `scope`: its ETag hashes the
/// representation, the endpoint and the canvas itself (which holds no
/// fetch time), and it carries `Content-Disposition: attachment` with the
/// board's title as the file's name.
///
/// # Errors
/// [`RenderError`] when `doc` is not a document the pipeline wrote.
pub fn render_canvas(scope: &str, doc: &[u8]) -> Result<Rendered, RenderError> {
    let canvas = canvas::render(doc).map_err(|e| RenderError(Reason::Canvas(e)))?;
    let mut hasher = Xxh3::new();
    for part in [b"application/json+canvas".as_slice(), scope.as_bytes()] {
        hasher.update(part);
        hasher.update(b"\0");
    }
    hasher.update(&canvas.body);
    Ok(Rendered {
        body: exact(canvas.body),
        etag: weak_etag(hasher.digest128()),
        disposition: Some(attachment(&canvas::file_name(&canvas.title))),
    })
}

/// `attachment; filename="<name>"; filename*=UTF-8''<name>`: the name in
/// ASCII for every client (other characters as `_`), and whole, percent
/// encoded, for those that read RFC 6266's extended form.
fn attachment(name: &str) -> HeaderValue {
    let ascii: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_graphic() || c == ' ' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let mut encoded = String::with_capacity(name.len() * 3);
    for byte in name.bytes() {
        if byte.is_ascii_alphanumeric() || b"!#$&+-.^_`|~".contains(&byte) {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    let value = format!("attachment; filename=\"{ascii}\"; filename*=UTF-8''{encoded}");
    HeaderValue::from_str(&value)
        .unwrap_or_else(|_| HeaderValue::from_static("attachment; filename=\"board.canvas\""))
}

/// [`render_markdown`] the reference way: the selection applied into JSON
/// bytes, which serde_json then reads for the writer.
///
/// # Errors
/// As [`render_markdown`].
#[cfg(any(test, feature = "internals"))]
pub(crate) fn render_markdown_reference(
    scope: &str,
    selection: &Selection,
    canonical: &str,
    doc: &[u8],
) -> Result<Rendered, RenderError> {
    let mut selected = Vec::with_capacity(4096);
    selection.apply_bytes(doc, &mut selected)?;
    let text =
        markdown::render_reference(&selected).map_err(|e| RenderError(Reason::Markdown(e)))?;
    Ok(markdown_rendered(scope, canonical, text))
}

/// The start of every success body.
pub(crate) const PREFIX: &[u8] = br#"{"ok":true,"data":"#;

/// The weak ETag of `data` (compact JSON of an object) for the endpoint
/// `scope` and the canonical selection: every entry but `fetchedAt`.
fn etag_of(scope: &str, canonical: &str, data: &[u8]) -> Result<HeaderValue, RenderError> {
    let mut hasher = etag_hasher(scope, canonical);
    entries(data, |_, entry| hash_entry(&mut hasher, entry))?;
    Ok(weak_etag(hasher.digest128()))
}

/// The hasher of a JSON ETag, fed the endpoint and the canonical selection.
fn etag_hasher(scope: &str, canonical: &str) -> Xxh3 {
    let mut hasher = Xxh3::new();
    hasher.update(scope.as_bytes());
    hasher.update(b"\0");
    hasher.update(canonical.as_bytes());
    hasher.update(b"\0");
    hasher
}

/// One top-level entry (`"key":value`) into a JSON ETag: every entry but
/// `fetchedAt`, so that a reload of unchanged content keeps its tag.
fn hash_entry(hasher: &mut Xxh3, entry: &[u8]) {
    if !entry.starts_with(b"\"fetchedAt\":") {
        hasher.update(entry);
        hasher.update(b"\0");
    }
}

/// `body` as `Bytes` without spare capacity: the cache weighs a body by its
/// length, and spare capacity would stay allocated behind it unweighed.
pub(crate) fn exact(mut body: Vec<u8>) -> Bytes {
    body.shrink_to_fit();
    Bytes::from(body)
}

/// `body`, whole, as the answer of the endpoint `scope` in the media type
/// `media` (a feed), with its weak ETag over both and the body.
pub(crate) fn whole_rendered(media: &str, scope: &str, body: Vec<u8>) -> Rendered {
    let mut hasher = Xxh3::new();
    for part in [media.as_bytes(), scope.as_bytes()] {
        hasher.update(part);
        hasher.update(b"\0");
    }
    hasher.update(&body);
    Rendered {
        body: exact(body),
        etag: weak_etag(hasher.digest128()),
        disposition: None,
    }
}

/// `W/"<32 hex digits>"`.
fn weak_etag(digest: u128) -> HeaderValue {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut tag = *b"W/\"00000000000000000000000000000000\"";
    for (i, slot) in tag[3..35].iter_mut().enumerate() {
        *slot = HEX[((digest >> (124 - 4 * i)) & 0xf) as usize];
    }
    HeaderValue::from_bytes(&tag).unwrap_or_else(|_| HeaderValue::from_static("W/\"0\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weak_etag_is_the_digest_in_hex() {
        let tag = weak_etag(0x0123_4567_89ab_cdef_fedc_ba98_7654_3210);
        assert_eq!(tag, "W/\"0123456789abcdeffedcba9876543210\"");
        assert_eq!(weak_etag(0), "W/\"00000000000000000000000000000000\"");
    }
}

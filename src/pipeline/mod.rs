//! The board pipeline, in two halves that the cache sits between:
//!
//! - [`load`]: share link -> provider fetch -> normalize -> sanitize, the work
//!   behind a cache miss, producing a [`LoadedBoard`];
//! - [`render`]: a selection of a loaded board -> the success body and its
//!   weak ETag, written in one pass over the document's compact JSON.
//!
//! - [`markdown`]: the same selection written as GitHub Flavored Markdown,
//!   for clients that ask for `text/markdown`.
//! - [`canvas`]: the whole board as a JSON Canvas document, a file to save
//!   (`GET {prefix}/canvas`).
//! - [`search`]: the elements of a loaded board that hold a piece of text,
//!   in reading order, for the MCP `search_board` tool.
//!
//! [`reference`] keeps the simple tree pipeline (a `serde_json::Value` per
//! step) that the tests compare the fast path with, byte for byte.
//!
//! Nothing here knows HTTP statuses or Pingora: the API maps outcomes to
//! answers, the cache stores loaded boards and their renders.

pub mod canvas;
pub mod changes;
pub mod load;
pub mod markdown;
pub mod nested;
#[cfg(any(test, feature = "internals"))]
pub mod reference;
pub mod render;
pub mod search;
pub mod version;

#[cfg(any(feature = "fleet", test, feature = "internals"))]
pub use render::render;
pub use render::{RenderError, Rendered};

use crate::document::{Completeness, Coverage};
use crate::select::Selection;
use bytes::Bytes;
use std::ops::Range;

/// Which representation of a selection a response carries: the JSON
/// envelope (the default) or the Markdown text of its `data`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Representation {
    #[default]
    Json,
    Markdown,
    /// The whole board as a JSON Canvas file ([`canvas`]), whatever the
    /// selection.
    Canvas,
}

impl Representation {
    /// `json`, `markdown` or `canvas`.
    pub fn name(self) -> &'static str {
        match self {
            Representation::Json => "json",
            Representation::Markdown => "markdown",
            Representation::Canvas => "canvas",
        }
    }

    /// The `Content-Type` of a `200` in this representation.
    pub fn content_type(self) -> &'static str {
        match self {
            Representation::Json | Representation::Canvas => "application/json; charset=utf-8",
            Representation::Markdown => "text/markdown; charset=utf-8; variant=GFM",
        }
    }
}

/// One loaded board: the sanitized document as compact JSON bytes, so its
/// size in memory is its serialized size and the cache's weight is exact.
/// What is rendered from it is cached beside it, weighed in the same byte
/// budget.
///
/// The bytes are held inside the success envelope, `{"ok":true,"data":`
/// document `}`, which is the body of the full view: rendering it shares
/// the buffer instead of copying the document.
///
/// It carries its [`Completeness`], computed when the document was written,
/// so that every answer can report it and the caches can choose how long to
/// keep it without reading the document again.
pub struct LoadedBoard {
    envelope: Bytes,
    coverage: Coverage,
    completeness: Completeness,
    /// The spans of the document's top-level entries, when a pass that read
    /// or wrote the whole document noted them (the load's writer, the fleet
    /// tier's check); empty when not known.
    entries: Box<[Range<usize>]>,
    /// The board version of a full document ([`version`]); `None` for an
    /// outline.
    version: Option<Box<str>>,
}

impl LoadedBoard {
    /// A loaded board from the compact JSON of a sanitized full document
    /// with every nested board loaded (for tests and hand-built documents;
    /// see [`LoadedBoard::with_completeness`]).
    #[cfg(any(test, feature = "internals"))]
    pub fn from_json(document: Vec<u8>) -> Self {
        LoadedBoard::with_coverage(document, Coverage::Full)
    }

    /// A loaded board from the compact JSON of a sanitized, complete
    /// document that holds `coverage` of the board.
    #[cfg(any(test, feature = "internals"))]
    pub fn with_coverage(document: Vec<u8>, coverage: Coverage) -> Self {
        LoadedBoard::with_completeness(document, coverage, Completeness::default())
    }

    /// A loaded board from the compact JSON of a sanitized document that
    /// holds `coverage` of the board and is as complete as `completeness`
    /// says: how a cache level that keeps documents as bytes rebuilds one,
    /// with the completeness recorded when it was first built. The bytes
    /// are trusted to be what [`load::build`] wrote.
    #[cfg(any(test, feature = "internals"))]
    pub fn with_completeness(
        document: Vec<u8>,
        coverage: Coverage,
        completeness: Completeness,
    ) -> Self {
        let mut envelope = Vec::with_capacity(render::PREFIX.len() + document.len() + 1);
        envelope.extend_from_slice(render::PREFIX);
        envelope.extend_from_slice(&document);
        envelope.push(b'}');
        LoadedBoard::from_envelope(envelope, coverage, completeness)
    }

    /// A loaded board from `{"ok":true,"data":` document `}`, as
    /// [`load::build`] writes it.
    pub(crate) fn from_envelope(
        envelope: Vec<u8>,
        coverage: Coverage,
        completeness: Completeness,
    ) -> Self {
        let envelope = render::exact(envelope);
        let end = envelope.len().saturating_sub(1);
        let version = (coverage == Coverage::Full).then(|| {
            version::version_of(envelope.get(render::PREFIX.len()..end).unwrap_or_default())
        });
        LoadedBoard {
            envelope,
            coverage,
            completeness,
            entries: Box::default(),
            version,
        }
    }

    /// This board, with the byte ranges of its document's top-level entries
    /// (`"key":value`, offsets into [`LoadedBoard::document_json`]) as a pass
    /// over the whole document found them: the full view's ETag then hashes
    /// them without walking the document again. The caller vouches for them
    /// (a pass that read every byte found them); ranges not even shaped like
    /// the entries of the object (`{`, each starting with a quote, apart by
    /// one `,`, then `}`) are not kept, and the render walks instead.
    pub fn with_entries(mut self, entries: Vec<Range<usize>>) -> Self {
        if tiles(self.document_json(), &entries) {
            self.entries = entries.into_boxed_slice();
        }
        self
    }

    /// The sanitized document, compact JSON.
    pub fn document_json(&self) -> &[u8] {
        let end = self.envelope.len().saturating_sub(1);
        self.envelope
            .get(render::PREFIX.len()..end)
            .unwrap_or_default()
    }

    /// The board version (`Board-Version`) of a full document; `None` for
    /// an outline.
    pub fn version(&self) -> Option<&str> {
        self.version.as_deref()
    }

    /// How much of the board the document holds.
    #[cfg(any(feature = "fleet", test, feature = "internals"))]
    pub fn coverage(&self) -> Coverage {
        self.coverage
    }

    /// How many nested boards were not loaded, and whether a later load
    /// may fill them.
    pub fn completeness(&self) -> Completeness {
        self.completeness
    }

    /// Whether `selection` can be rendered from this document.
    pub fn serves(&self, selection: &Selection) -> bool {
        self.coverage == Coverage::Full || selection.coverage() == Coverage::Outline
    }

    /// The response body and ETag of `selection` on this document for the
    /// endpoint named `scope`. CPU work: callers run it on the work pool
    /// and cache the result.
    ///
    /// # Errors
    /// As [`render::render_bytes`].
    #[cfg(any(test, feature = "internals"))]
    pub fn render(
        &self,
        scope: &'static str,
        selection: &Selection,
    ) -> Result<Rendered, RenderError> {
        self.render_as(Representation::Json, scope, selection)
    }

    /// [`LoadedBoard::render`] in `representation`: the JSON envelope, or
    /// the Markdown of the same selected `data` with its own ETag.
    ///
    /// # Errors
    /// As [`render::render_bytes`] and [`render::render_markdown`].
    pub fn render_as(
        &self,
        representation: Representation,
        scope: &'static str,
        selection: &Selection,
    ) -> Result<Rendered, RenderError> {
        if !self.serves(selection) {
            return Err(RenderError::outline());
        }
        if representation == Representation::Canvas {
            return render::render_canvas(scope, self.document_json());
        }
        if representation == Representation::Markdown {
            return render::render_markdown(
                scope,
                selection,
                &selection.canonical(),
                self.document_json(),
            );
        }
        if selection.is_full() {
            return render::render_envelope(
                scope,
                &selection.canonical(),
                &self.envelope,
                &self.entries,
            );
        }
        render::render_bytes(
            scope,
            selection,
            &selection.canonical(),
            self.document_json(),
        )
    }

    /// The heap bytes this board holds, for the cache's byte budget.
    pub fn weight(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.envelope.len()
            + std::mem::size_of_val::<[Range<usize>]>(&self.entries)
            + self.version.as_ref().map_or(0, |v| v.len())
    }
}

/// Whether `entries` are the entries of the object `doc`, one after
/// another: each starts with a key's quote, the first right after the `{`,
/// each next one after a `,`, and the last ends at the `}`.
fn tiles(doc: &[u8], entries: &[Range<usize>]) -> bool {
    let mut at = 1;
    for (n, entry) in entries.iter().enumerate() {
        let before = if n == 0 { b'{' } else { b',' };
        if entry.start != at
            || entry.end <= entry.start
            || doc.get(entry.start - 1) != Some(&before)
            || doc.get(entry.start) != Some(&b'"')
        {
            return false;
        }
        at = entry.end + 1;
    }
    !entries.is_empty() && at == doc.len() && doc.last() == Some(&b'}')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn board(doc: serde_json::Value) -> LoadedBoard {
        LoadedBoard::from_json(serde_json::to_vec(&doc).expect("serializes"))
    }

    /// A full render hashes the noted entries to the very tag a walk of the
    /// document gives; entries that do not tile the document are not kept.
    #[test]
    fn noted_entries_give_the_walks_etag() {
        use crate::select::View;
        let json = br#"{"version":1,"fetchedAt":"t","board":{"id":"b","t":"}\"{"},"n":[]}"#;
        let spans = |cuts: &[usize]| -> Vec<Range<usize>> {
            cuts.windows(2).map(|w| w[0] + 1..w[1]).collect()
        };
        let commas: Vec<usize> = [0, 12, 28, 58, json.len() - 1].to_vec();
        assert_eq!(&json[commas[3]..commas[3] + 5], b",\"n\":");
        let full = Selection::view(View::Full);
        let walked = LoadedBoard::from_json(json.to_vec());
        let noted = LoadedBoard::from_json(json.to_vec()).with_entries(spans(&commas));
        assert_eq!(noted.entries.len(), 4);
        let tag = |b: &LoadedBoard| b.render("detail", &full).expect("renders").etag;
        assert_eq!(tag(&noted), tag(&walked));
        for bad in [
            vec![],
            spans(&commas[..4]),
            std::iter::once(0..json.len()).collect(),
            vec![1..13, 13..28, 29..58, 59..json.len() - 1],
            vec![1..12, 13..28, 30..58, 59..json.len() - 1],
        ] {
            let board = LoadedBoard::from_json(json.to_vec()).with_entries(bad.clone());
            assert!(board.entries.is_empty(), "{bad:?}");
            assert_eq!(tag(&board), tag(&walked));
        }
    }

    /// A load notes its document's entries as it writes them (the board
    /// last, whatever it holds), full or outline, and its full view's ETag
    /// is the one a walk of the document gives.
    #[test]
    fn a_load_notes_its_entries_and_keeps_the_walks_etag() {
        use crate::provider::Fetched;
        use crate::select::View;
        let elements = json!({
            "r": {"id": "r", "elementType": "BOARD", "content": {"title": "R \"}{\" ,\"board\":"}},
            "c": {"id": "c", "elementType": "CARD", "location": {"parentId": "r"},
                  "content": {"text": {"type": "doc", "content": [{"type": "paragraph",
                      "content": [{"type": "text", "text": "}]},\"fetchedAt\":"}]}]}}},
        });
        let mut fetched = Fetched::from_elements("r", elements.as_object().unwrap().clone());
        fetched.loaded_boards.insert("r".into());
        let full = Selection::view(View::Full);
        let tag = |b: &LoadedBoard| b.render("detail", &full).expect("renders").etag;
        for coverage in [Coverage::Full, Coverage::Outline] {
            let built = load::build(fetched.clone(), "r", "milanote", coverage).expect("builds");
            let keys: Vec<&[u8]> = built
                .entries
                .iter()
                .map(|e| &built.document_json()[e.start..e.start + 7])
                .collect();
            assert_eq!(
                keys,
                [&b"\"versio"[..], b"\"source", b"\"fetche", b"\"board\""],
                "{coverage:?}"
            );
            let walked = LoadedBoard::with_completeness(
                built.document_json().to_vec(),
                coverage,
                built.completeness(),
            );
            assert!(walked.entries.is_empty());
            // An outline has no full view.
            if coverage == Coverage::Full {
                assert_eq!(tag(&built), tag(&walked));
            }
        }
    }

    #[test]
    fn render_is_per_endpoint_and_selection() {
        use crate::select::View;
        let board = board(
            json!({"version": 1, "source": {"provider": "p", "boardId": "b"}, "fetchedAt": "t", "board": {"id": "b", "type": "BOARD", "title": "T", "children": []}}),
        );
        let compact = Selection::view(View::Compact);
        let first = board.render("search", &compact).expect("renders");
        assert_eq!(board.render("search", &compact).expect("renders"), first);
        let detail = board.render("detail", &compact).expect("renders");
        assert_ne!(detail.etag, first.etag);
    }

    #[test]
    fn markdown_has_its_own_etag_per_endpoint_and_selection() {
        use crate::select::View;
        let board = board(
            json!({"version": 1, "fetchedAt": "t", "board": {"id": "b", "type": "BOARD", "title": "T", "children": [{"id": "c", "type": "CARD", "richText": {"plainText": "hi", "blocks": []}, "children": []}]}}),
        );
        let refetched = self::board(
            json!({"version": 1, "fetchedAt": "u", "board": {"id": "b", "type": "BOARD", "title": "T", "children": [{"id": "c", "type": "CARD", "richText": {"plainText": "hi", "blocks": []}, "children": []}]}}),
        );
        let mut tags = std::collections::HashSet::new();
        for view in [View::Full, View::Compact] {
            let selection = Selection::view(view);
            for scope in ["search", "detail"] {
                let md = board
                    .render_as(Representation::Markdown, scope, &selection)
                    .expect("renders");
                let json = board.render(scope, &selection).expect("renders");
                assert!(tags.insert(md.etag.clone()) && tags.insert(json.etag));
                let again = refetched
                    .render_as(Representation::Markdown, scope, &selection)
                    .expect("renders");
                assert_eq!(again, md, "fetchedAt changes neither body nor tag");
            }
        }
        let full = board
            .render_as(
                Representation::Markdown,
                "detail",
                &Selection::view(View::Full),
            )
            .expect("renders");
        assert_eq!(&full.body[..], b"# T\n\nhi\n");
    }

    #[test]
    fn the_full_view_shares_the_envelope() {
        use crate::select::View;
        let board = board(
            json!({"version": 1, "fetchedAt": "t", "board": {"id": "b", "children": [{"id": "c"}]}}),
        );
        let full = Selection::view(View::Full);
        let shared = board.render("detail", &full).expect("renders");
        let copied =
            render::render_bytes("detail", &full, &full.canonical(), board.document_json())
                .expect("renders");
        assert_eq!(shared, copied);
        assert_eq!(shared.body.as_ptr(), board.envelope.as_ptr());
        assert!(shared
            .body
            .starts_with(br#"{"ok":true,"data":{"version":1,"#));
    }

    #[test]
    fn weight_is_the_document_size() {
        let doc = json!({"board": {"children": (0..500).map(|i| json!({"id": format!("e{i}"), "title": "card ".repeat(i % 7)})).collect::<Vec<_>>()}});
        let real = serde_json::to_vec(&doc).expect("serializes").len();
        let board = board(doc);
        // The struct, the envelope around the document and the version.
        assert!(board.weight() >= real && board.weight() < real + 160);
    }
}

//! BoardDocument v1: the Rust model, its JSON Schema, the selector model tree
//! derived from it, sensitive-field removal, and how complete a loaded
//! board is ([`Completeness`]).

pub mod completeness;
pub mod kinds;
pub mod leaves;
pub mod model;
pub mod reading;
pub mod sanitize;
pub mod schema;
pub mod types;

pub use completeness::Completeness;
pub use kinds::*;
pub use leaves::*;
pub use types::*;

/// How much of a board a loaded document holds.
///
/// An element's *body* is its bulk: rich text (`richText` of cards, tasks,
/// documents, table cells and comments), the `caption` of a link or a
/// colour swatch, a table's `table`, the `drawing` of a sketch or an
/// annotation and an unknown element's raw `content`. An outline is the document without
/// them: every node with its id, type, title, place, times and other fields.
/// A selection that cannot output any body field ([`BODY_FIELDS`]) renders
/// the same bytes from an outline as from the full document, and an
/// outline costs a fraction of the work, since bodies are most of a board.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Coverage {
    /// The whole document.
    Full,
    /// Everything but the element bodies.
    Outline,
}

/// The document fields that hold element bodies (see [`Coverage`]).
pub const BODY_FIELDS: [&str; 5] = ["richText", "caption", "table", "drawing", "content"];

//! Milanote rich text (TipTap/ProseMirror or Draft.js, possibly stored as a
//! JSON string) -> [`RichText`](crate::document::leaves::RichText)
//! `{blocks, plainText}`, for the normalizer.
//!
//! - TipTap/ProseMirror `{"type":"doc","content":[...]}`: `blocks` are the
//!   doc's `content` nodes.
//! - Draft.js `{"blocks":[...],"entityMap":{...}}`: `blocks` are `blocks`.
//! - A string whose trimmed text starts with `{` and parses as one of those is
//!   read as that (Milanote often stores rich text as a JSON string).
//! - Any other non-empty string is plain text: `blocks` is `[]` (there are no
//!   provider blocks to pass through; none are invented) and `plainText` is the
//!   string unchanged. An empty string is no rich text (`None`).
//! - Anything else (numbers, arrays, other objects) is no rich text (`None`).
//!
//! `plainText`: a node's `text` where present; `hardBreak` is a newline; a
//! `mention` is `@` and its `label` (one `@`), an `inlineBoardLink` its
//! `title`; children of `paragraph`, `heading`, `listItem`, and of the
//! blocks that hold a line of text the same way (`smallText`, `codeBlock`,
//! `taskItem`), join with nothing; other containers (`callout`,
//! `taskList`, lists, quotes, a node this code does not know) and Draft.js
//! blocks join with newlines; empty parts are dropped. No other attribute
//! of a node is text: a mention's `id` (a user id) never is.
//! The walk is iterative, so deep documents cannot overflow the stack.
//! Blocks are written as compact JSON text keeping at most
//! [`crate::provider::raw::MAX_RAW_DEPTH`] nested levels.
//!
//! Three readers give these results:
//! - [`rich_text_at`], from the bytes of text serde_json has already
//!   accepted ([`cursor`]): the serving path for the content of cards,
//!   tasks, documents, links and swatches;
//! - [`stream`]'s serde visitor, from any JSON text without building a
//!   value: comments, table cells, and whatever the bytes reader hands back
//!   (it reads the common shapes, and the visitor the rest);
//! - `value`, from a parsed `serde_json::Value`, which only the reference
//!   pipeline, the tests (`oracle`) and the `rich_text` fuzz target build,
//!   to hold the other two to the same blocks and plain text.
//!
//! The first two share every rule of the copy (`copy`'s `Array` and
//! `Object`); only what drives them differs.

mod copy;
pub mod cursor;
pub mod stream;
#[cfg(any(test, feature = "internals"))]
mod value;

pub(crate) use copy::{quote, write_str};
pub use copy::{CopyBuffers, KeySeed};
pub use stream::{rich_text_at, RichSeed};
#[cfg(any(test, feature = "internals"))]
pub use stream::{rich_text_from_bytes, rich_text_from_str};
#[cfg(any(test, feature = "internals"))]
pub use value::{mention_text, rich_text};

#[cfg(test)]
mod oracle;

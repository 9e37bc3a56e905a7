//! The fields of each node type of BoardDocument v1, one struct per type
//! (what `NodeKind` in [`super::types`] carries), and why a nested board was
//! not loaded. The shapes these fields share are in [`super::leaves`]; the
//! schema is derived from all three.

use super::leaves::{File, Icon, Image, Raw, RichText, Scalar};
use schemars::JsonSchema;
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BoardFields {
    /// `Untitled board` when the provider has none.
    pub title: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub color: Option<Scalar>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secondary_color: Option<Scalar>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_color_palette: Option<Vec<Raw>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub published: Option<Scalar>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub icon: Option<Icon>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<Image>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<File>,
    /// False when this board's own children could not be fetched (limits, deadline, failure).
    pub children_loaded: bool,
    /// Why the children were not loaded; present exactly when `childrenLoaded` is false.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unloaded_reason: Option<UnloadedReason>,
}

/// Why a board's own children are not in the document.
///
/// `BoardLimit`, `AccessDenied` and `NotFound` are stable: asking again gives
/// the same answer. `Deadline` and `UpstreamError` are transient: a later
/// load may fill the hole ([`UnloadedReason::is_transient`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum UnloadedReason {
    /// Cut by the limits on how much of a board is loaded (`max_boards`,
    /// the nesting depth, `max_elements`).
    BoardLimit,
    /// The fetch deadline passed before it loaded.
    Deadline,
    /// The provider refused it (a denial code, its children not returned,
    /// or only a `SKELETON` of it).
    AccessDenied,
    /// The provider says it does not exist or was deleted.
    NotFound,
    /// Its request failed: unreachable, 5xx, malformed or oversized.
    UpstreamError,
}

impl UnloadedReason {
    /// Whether a later load may fill the hole (`DEADLINE`, `UPSTREAM_ERROR`).
    pub fn is_transient(self) -> bool {
        matches!(
            self,
            UnloadedReason::Deadline | UnloadedReason::UpstreamError
        )
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ColumnFields {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CardFields {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rich_text: Option<RichText>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub background: Option<Scalar>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transparent: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImageFields {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<Image>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<File>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileFields {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<File>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preview_image: Option<Image>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preview_ready: Option<Scalar>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_mode: Option<Scalar>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LinkFields {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub favicon_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<LinkProvider>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub media_type: Option<Scalar>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caption: Option<RichText>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub show_caption: Option<Scalar>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LinkProvider {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<Scalar>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<Scalar>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display: Option<Scalar>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskListFields {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub show_title: Option<Scalar>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskFields {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rich_text: Option<RichText>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completed: Option<bool>,
    /// A calendar date (`2030-04-05`), passed through unchanged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub due_date: Option<Scalar>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub has_due_date_time: Option<Scalar>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reminder_at: Option<String>,
}

/// A table's `width` is a field of every node (its size in grid units).
#[derive(Debug, Clone, PartialEq, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TableFields {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table: Option<Table>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Table {
    /// Rows of cells; both array levels are invisible to selectors.
    pub rows: Vec<Vec<TableCell>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column_widths: Option<Vec<Raw>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<Scalar>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TableCell {
    /// The raw value, else the plain text of the cell's rich text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<Scalar>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rich_text: Option<RichText>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_styles: Option<Vec<Raw>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub background: Option<Scalar>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommentThreadFields {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    /// Sorted by `createdAt`.
    pub comments: Vec<Comment>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Comment {
    pub id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rich_text: Option<RichText>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DocumentFields {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rich_text: Option<RichText>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ColorSwatchFields {
    /// The colour as the provider writes it (`#e8b730`, a palette name, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub color: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caption: Option<RichText>,
}

/// `SKETCH` and `ANNOTATION`: a freehand drawing.
#[derive(Debug, Clone, PartialEq, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DrawingFields {
    /// The provider's drawing (paths, and an `svg` string), sanitized but
    /// otherwise untouched; a leaf for selectors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drawing: Option<Raw>,
}

/// `LINE`: a connector between two elements or two points. Each end is an
/// element id, an object naming one (`elementId` or `id`), or a point with
/// `x` and `y`, as the provider sent it; all four fields are leaves.
#[derive(Debug, Clone, PartialEq, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LineFields {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start: Option<Raw>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end: Option<Raw>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control: Option<Raw>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line_style: Option<Raw>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkeletonFields {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root_board: Option<Scalar>,
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnknownFields {
    /// The provider's own type name.
    pub element_type: String,
    /// The provider's raw content, sanitized but otherwise untouched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<Raw>,
}

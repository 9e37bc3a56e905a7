//! BoardDocument v1 as Rust types.
//!
//! These types are the one source of truth for the document: the provider's
//! normalizer builds them, `schemars` derives `boardDocumentSchema` from them
//! (see [`super::schema`]), and the selector model is derived from that schema
//! (see [`super::model`]), so the three cannot drift apart.
//!
//! Every optional field is omitted when absent, never `null`. Values whose type
//! the document format does not fix pass through as [`Scalar`]s.

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::Value;
use std::borrow::Cow;

/// The complete, unpruned document: what `view=full` returns.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(title = "BoardDocument v1")]
pub struct BoardDocument {
    /// Always 1 for this format.
    pub version: Version1,
    pub source: Source,
    /// `YYYY-MM-DDTHH:MM:SS.sssZ`: the provider's `fetchedTime`, else the time of the fetch.
    pub fetched_at: String,
    pub board: RootBoard,
}

/// The format version marker; serializes as the number `1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Version1;

impl Serialize for Version1 {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u32(1)
    }
}

impl JsonSchema for Version1 {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "Version1".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "integer", "const": 1 })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Source {
    /// The configured provider name (`milanote`).
    pub provider: String,
    /// The requested board id.
    pub board_id: String,
}

/// A JSON scalar passed through as the provider sent it (string, number or boolean).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Scalar(pub Value);

impl Scalar {
    /// `Some` for a string, number or boolean; `None` for null, arrays and objects.
    pub fn from_value(value: &Value) -> Option<Scalar> {
        match value {
            Value::String(_) | Value::Number(_) | Value::Bool(_) => Some(Scalar(value.clone())),
            Value::Null | Value::Array(_) | Value::Object(_) => None,
        }
    }
}

impl JsonSchema for Scalar {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "Scalar".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": ["string", "number", "boolean"] })
    }
}

/// Raw JSON kept as the provider sent it (rich-text blocks, unknown content).
/// The selector model treats it as a leaf.
///
/// Held as compact JSON text, not as a value tree: the bulk of a board is
/// rich text, and a tree costs several times its text in memory and a walk
/// to write. Serializing a `Raw` copies its text.
#[derive(Debug, Clone, Serialize)]
#[serde(transparent)]
pub struct Raw(Box<RawValue>);

impl Raw {
    /// A raw value from compact JSON text that the caller has already
    /// depth-bounded and sanitized (the normalizer's `raw_leaf`).
    pub fn from_json(json: Box<RawValue>) -> Raw {
        Raw(json)
    }

    /// `value` written as it is, for tests and hand-built documents. The
    /// normalizer never uses this: its raw values are bounded and sanitized.
    pub fn verbatim(value: &Value) -> Raw {
        let text = serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned());
        Raw(RawValue::from_string(text).unwrap_or_else(|_| RawValue::NULL.to_owned()))
    }

    /// The compact JSON text.
    pub fn json(&self) -> &str {
        self.0.get()
    }

    /// The value as a tree.
    pub fn to_value(&self) -> Value {
        serde_json::from_str(self.0.get()).unwrap_or(Value::Null)
    }
}

impl PartialEq for Raw {
    fn eq(&self, other: &Raw) -> bool {
        self.0.get() == other.0.get()
    }
}

impl JsonSchema for Raw {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "Raw".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!(true)
    }
}

/// The root board: the fields every node has plus the `BOARD` row's.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RootBoard {
    pub id: String,
    /// Always `BOARD`.
    #[serde(rename = "type")]
    pub kind: BoardType,
    #[serde(flatten)]
    pub fields: BoardFields,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamps: Option<Timestamps>,
    pub children: Vec<Node>,
}

/// The `type` of the root: the constant `BOARD`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, JsonSchema)]
pub enum BoardType {
    #[default]
    #[serde(rename = "BOARD")]
    Board,
}

/// Any node below the root.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Node {
    pub id: String,
    /// `type` plus the fields of that type.
    #[serde(flatten)]
    pub kind: NodeKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamps: Option<Timestamps>,
    pub children: Vec<Node>,
}

/// The node types of BoardDocument v1, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "type")]
// Boxing BOARD's fields would save memory per node but change the public type;
// nodes are built once per request and serialized, so size is not the cost.
#[allow(clippy::large_enum_variant)]
pub enum NodeKind {
    #[serde(rename = "BOARD")]
    Board(BoardFields),
    #[serde(rename = "COLUMN")]
    Column(ColumnFields),
    #[serde(rename = "CARD")]
    Card(CardFields),
    #[serde(rename = "IMAGE")]
    Image(ImageFields),
    #[serde(rename = "FILE")]
    File(FileFields),
    #[serde(rename = "LINK")]
    Link(LinkFields),
    #[serde(rename = "TASK_LIST")]
    TaskList(TaskListFields),
    #[serde(rename = "TASK")]
    Task(TaskFields),
    #[serde(rename = "TABLE")]
    Table(TableFields),
    #[serde(rename = "COMMENT_THREAD")]
    CommentThread(CommentThreadFields),
    #[serde(rename = "DOCUMENT")]
    Document(DocumentFields),
    #[serde(rename = "COLOR_SWATCH")]
    ColorSwatch(ColorSwatchFields),
    #[serde(rename = "SKETCH")]
    Sketch(DrawingFields),
    #[serde(rename = "ANNOTATION")]
    Annotation(DrawingFields),
    #[serde(rename = "LINE")]
    Line(LineFields),
    #[serde(rename = "SKELETON")]
    Skeleton(SkeletonFields),
    #[serde(rename = "UNKNOWN")]
    Unknown(UnknownFields),
}

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

#[derive(Debug, Clone, PartialEq, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TableFields {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub width: Option<Scalar>,
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

#[derive(Debug, Clone, PartialEq, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Location {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub section: Option<Scalar>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root_board: Option<Scalar>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position: Option<Position>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Position {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub x: Option<Scalar>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub y: Option<Scalar>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<Scalar>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<Scalar>,
}

/// All `YYYY-MM-DDTHH:MM:SS.sssZ` (UTC).
#[derive(Debug, Clone, PartialEq, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Timestamps {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modified_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub significant_modified_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location_modified_at: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Icon {
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<Scalar>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<Scalar>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<Scalar>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub svg_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub png_url: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Image {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub original_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thumbnail_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub large_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub huge_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub width: Option<Scalar>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub height: Option<Scalar>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub primary_color: Option<Scalar>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub colors: Option<Vec<Raw>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transparent: Option<Scalar>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct File {
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<Scalar>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extension: Option<Scalar>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<Scalar>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filename: Option<Scalar>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<Scalar>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modified_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uploaded_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// Rich text: the raw blocks (TipTap/ProseMirror `content` nodes or Draft.js
/// `blocks`) and their plain text.
#[derive(Debug, Clone, PartialEq, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RichText {
    pub blocks: Vec<Raw>,
    pub plain_text: String,
}

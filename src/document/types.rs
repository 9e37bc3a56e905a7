//! BoardDocument v1 as Rust types: the document, its root board and the
//! node with its kinds. The fields of each kind are in [`super::kinds`], the
//! shapes they share in [`super::leaves`].
//!
//! These types are the one source of truth for the document: the provider's
//! normalizer builds them, `schemars` derives `boardDocumentSchema` from them
//! (see [`super::schema`]), and the selector model is derived from that schema
//! (see [`super::model`]), so the three cannot drift apart.
//!
//! Every optional field is omitted when absent, never `null`. Values whose type
//! the document format does not fix pass through as [`Scalar`](super::leaves::Scalar)s.

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Serialize, Serializer};
use std::borrow::Cow;

use super::kinds::*;
use super::leaves::{Location, Size, Timestamps};

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
    #[serde(flatten)]
    pub size: Size,
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
    #[serde(flatten)]
    pub size: Size,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamps: Option<Timestamps>,
    pub children: Vec<Node>,
}

/// The node types of BoardDocument v1, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "type")]
// The four kinds whose fields pass 400 bytes (a board's 1,400, a file's
// 1,032, an image's 864, a link's 472) are boxed: a node's kind is moved by
// value several times as it is built and written, and unboxed every one of
// the 7,000 cards of the bench board moved 1,400 bytes each time (about 6 M
// instructions of copying a load). The JSON and the schema are the same.
#[allow(clippy::large_enum_variant)]
pub enum NodeKind {
    #[serde(rename = "BOARD")]
    Board(Box<BoardFields>),
    #[serde(rename = "COLUMN")]
    Column(ColumnFields),
    #[serde(rename = "CARD")]
    Card(CardFields),
    #[serde(rename = "IMAGE")]
    Image(Box<ImageFields>),
    #[serde(rename = "FILE")]
    File(Box<FileFields>),
    #[serde(rename = "LINK")]
    Link(Box<LinkFields>),
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

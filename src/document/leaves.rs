//! The leaf shapes of BoardDocument v1 that node fields share: scalars and
//! raw JSON passed through as the provider sent them, a node's place and
//! times, icons, images, files and rich text. They use nothing else of the
//! document, so [`super::kinds`] and [`super::types`] both build on them.

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;
use std::borrow::Cow;

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
    #[cfg(any(test, feature = "internals"))]
    pub fn verbatim(value: &Value) -> Raw {
        let text = serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned());
        Raw(RawValue::from_string(text).unwrap_or_else(|_| RawValue::NULL.to_owned()))
    }

    /// The compact JSON text.
    #[cfg(any(test, feature = "internals"))]
    pub fn json(&self) -> &str {
        self.0.get()
    }

    /// The value as a tree.
    #[cfg(any(test, feature = "internals"))]
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

/// An element's size on its board, in the board's grid units (the unit of
/// `position.x` and `y`; a default card or column is 34 units wide), as
/// the provider stores it in the element's `content`. `height` is absent
/// when the element grows with its content (`autoHeight`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Size {
    /// The element's width in grid units (about 9 px each at 100 % zoom;
    /// a default card or column is 34), as the provider stores it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub width: Option<Scalar>,
    /// The element's height in grid units; absent when it grows with its
    /// content.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub height: Option<Scalar>,
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
    pub blocks: Blocks,
    pub plain_text: String,
}

/// A rich text's raw blocks: one JSON array, held as its compact text.
///
/// The blocks are only ever written out whole, so they are kept as the
/// array the reader copied them into: one string per rich text rather than
/// one per block (a 7,000-card board has about 12,500 blocks). It
/// serializes as that array, exactly as a list of [`Raw`] blocks would.
#[derive(Debug, Clone, Default)]
pub struct Blocks(Option<Box<RawValue>>);

impl Blocks {
    /// Blocks from the compact text of a JSON array whose items the caller
    /// has already depth-bounded and sanitized (the rich-text reader).
    pub fn from_json(json: Box<RawValue>) -> Blocks {
        Blocks(Some(json))
    }

    /// `blocks` as one array (the value reader, tests).
    #[cfg(any(test, feature = "internals"))]
    pub fn of(blocks: &[Raw]) -> Blocks {
        if blocks.is_empty() {
            return Blocks::default();
        }
        let len = blocks.iter().map(|b| b.json().len() + 1).sum::<usize>() + 1;
        let mut text = String::with_capacity(len);
        text.push('[');
        for (i, block) in blocks.iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            text.push_str(block.json());
        }
        text.push(']');
        // Each block is one JSON value, so the array is one too; the parse
        // only confirms it (this is not the serving path).
        Blocks(RawValue::from_string(text).ok())
    }

    /// The array's compact JSON text (`[]` when there are none).
    pub fn json(&self) -> &str {
        self.0.as_deref().map_or("[]", RawValue::get)
    }

    /// Whether the array is empty.
    #[cfg(any(test, feature = "internals"))]
    pub fn is_empty(&self) -> bool {
        self.json() == "[]"
    }
}

impl PartialEq for Blocks {
    fn eq(&self, other: &Blocks) -> bool {
        self.json() == other.json()
    }
}

impl Serialize for Blocks {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Some(raw) => raw.serialize(serializer),
            None => {
                use serde::ser::SerializeSeq as _;
                serializer.serialize_seq(Some(0))?.end()
            }
        }
    }
}

impl JsonSchema for Blocks {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "Blocks".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        // What a list of `Raw` blocks described: an array of anything.
        json_schema!({ "type": "array", "items": true })
    }
}

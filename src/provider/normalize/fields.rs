//! One raw element -> its normalized fields (one row per element type),
//! for the tree builder. Children are attached by [`super::tree`].
//!
//! Rules where the table leaves room:
//! - A field of the wrong type is omitted. Titles and other strings pass
//!   through unchanged; URL fields and fallbacks take non-empty strings only.
//! - Nested objects that end up with no fields (`location`, `position`,
//!   `timestamps`, `icon`, `image`, `file`, `provider`) are omitted.
//! - `BOARD.title` is `Untitled board` when missing, not a string, or empty.
//! - `TASK.completed` is the first boolean among `isComplete`, `completed`, `checked`.
//! - `TABLE`: a row that is not an array becomes `[]` and a cell that is not an
//!   object becomes `{}` (a scalar cell becomes its `value`), so row and column
//!   positions are kept. A cell's rich text is `draftContent`, else
//!   `textContent`. Its `value` is the raw scalar unless that is missing, `null`
//!   or `""`; then the rich text's plain text when non-empty; else a raw `""`.
//! - `COLOR_SWATCH.color` is a string as sent, else the string `value` of an
//!   object; `SKETCH`/`ANNOTATION.drawing` and `LINE.start`, `end`,
//!   `control`, `lineStyle` are raw leaves (any non-null JSON, bounded and
//!   sanitized like `UNKNOWN.content`).
//! - `UNKNOWN.elementType` is the raw `elementType` string, `""` when missing.

use super::tree::ContentReader;
use crate::document::*;
use crate::provider::fetched::RawComment;
use crate::provider::head::{Head, HeldScalar};
use crate::provider::raw::{
    boolean, ident, non_empty, object, own_id, raw, raw_array, scalar, string,
};
#[cfg(any(test, feature = "internals"))]
use crate::provider::rich_text::rich_text;
use crate::provider::rich_text::stream::rich_text_from_str as rich_text_from_text;
use crate::provider::time::normalize_time;
use serde_json::{Map, Value};

/// A content object's members, read by key: a parsed object (the
/// reference) or the serving path's [`super::content::Members`].
pub trait Lookup {
    /// The value of `key` (its last copy, when the object repeats it).
    fn get(&self, key: &str) -> Option<&Value>;
}

impl Lookup for Map<String, Value> {
    fn get(&self, key: &str) -> Option<&Value> {
        Map::get(self, key)
    }
}

/// `BOARD` title when the provider has none.
pub const UNTITLED_BOARD: &str = "Untitled board";

/// An element's `width` and `height` (grid units), from its `content`;
/// outlines keep them (they are no body).
pub fn size<C: Lookup>(content: Option<&C>) -> Size {
    let c = content;
    let get = |k: &str| scalar(c.and_then(|c| c.get(k)));
    Size {
        width: get("width"),
        height: get("height"),
    }
}

/// The fields of every type except `COMMENT_THREAD` (see [`comment_thread`]).
///
/// `content` is the element's raw `content`, kept apart from its other
/// fields by the provider client.
/// For an outline (`bodies` false), `content` comes without the members
/// that hold bodies ([`crate::provider::Fetched::outline_content`]), so
/// rich text, captions and tables come out empty; an unknown element's raw
/// content is its body and is left out here.
/// `unloaded` is why a `BOARD`'s own children were not loaded (`None`
/// when they were); other types ignore it.
///
/// `rich` is where the rich text comes from: read from `content` here
/// ([`Rich::Tree`]), or already read from the content's text
/// ([`Rich::Read`], see [`rich_key`]).
pub fn kind(
    element: &Head,
    content: Option<&Value>,
    mut rich: Rich,
    unloaded: Option<UnloadedReason>,
    bodies: bool,
) -> NodeKind {
    let empty = Map::new();
    let c = object(content).unwrap_or(&empty);
    kind_of(element, c, content, &mut rich, unloaded, bodies)
}

/// The member that holds the body of an element of type `element_type`,
/// for the types whose only body is rich text or a table: the member the
/// serving path reads from its text rather than as a value.
pub fn rich_key(element_type: &str) -> Option<&'static str> {
    match element_type {
        "CARD" | "TASK" | "DOCUMENT" => Some("textContent"),
        "LINK" | "COLOR_SWATCH" => Some("caption"),
        "TABLE" => Some("tableContent"),
        _ => None,
    }
}

/// Where an element's body (rich text, or a table's cells) comes from.
pub enum Rich {
    /// Its member in the content object, a parsed value (the reference).
    #[cfg(any(test, feature = "internals"))]
    Tree,
    /// Rich text read already (its [`rich_key`] member, left out of the object).
    Read(Option<RichText>),
    /// A table read already (`tableContent`, left out of the object).
    Table(Option<Table>),
}

impl Rich {
    // `c` is read only by the reference.
    #[cfg_attr(not(any(test, feature = "internals")), allow(unused_variables))]
    fn get(&mut self, c: &impl Lookup, key: &str) -> Option<RichText> {
        match self {
            Rich::Read(read) => read.take(),
            Rich::Table(_) => None,
            #[cfg(any(test, feature = "internals"))]
            Rich::Tree => c.get(key).and_then(rich_text),
        }
    }

    #[cfg_attr(not(any(test, feature = "internals")), allow(unused_variables))]
    fn table(&mut self, c: &impl Lookup) -> Option<Table> {
        match self {
            Rich::Table(read) => read.take(),
            Rich::Read(_) => None,
            #[cfg(any(test, feature = "internals"))]
            Rich::Tree => object(c.get("tableContent")).map(table),
        }
    }
}

/// [`kind`] on the content object `c` (`content` itself, for the raw
/// content of an unknown element and a thread id).
pub fn kind_of(
    element: &Head,
    c: &impl Lookup,
    content: Option<&Value>,
    rich: &mut Rich,
    unloaded: Option<UnloadedReason>,
    bodies: bool,
) -> NodeKind {
    match element.element_type() {
        "BOARD" => NodeKind::Board(Box::new(board(c, unloaded))),
        "COLUMN" => NodeKind::Column(ColumnFields {
            title: string(c.get("title")),
        }),
        "CARD" => NodeKind::Card(CardFields {
            rich_text: rich.get(c, "textContent"),
            background: scalar(c.get("background")),
            transparent: match c.get("transparent") {
                Some(Value::Object(t)) => boolean(t.get("enabled")),
                other => boolean(other),
            },
        }),
        "IMAGE" => NodeKind::Image(Box::new(ImageFields {
            image: image(c.get("image")),
            file: file(c.get("file")),
        })),
        "FILE" => NodeKind::File(Box::new(FileFields {
            title: string(c.get("title")),
            file: file(c.get("file")),
            preview_image: image(c.get("image")),
            preview_ready: scalar(c.get("previewReady")),
            display_mode: scalar(c.get("displayMode")),
        })),
        "LINK" => NodeKind::Link(Box::new(link(c, rich))),
        "TASK_LIST" => NodeKind::TaskList(TaskListFields {
            title: string(c.get("title")),
            show_title: scalar(c.get("showTitle")),
        }),
        "TASK" => NodeKind::Task(TaskFields {
            rich_text: rich.get(c, "textContent"),
            completed: ["isComplete", "completed", "checked"]
                .iter()
                .find_map(|k| boolean(c.get(k))),
            due_date: scalar(c.get("dueDate")),
            has_due_date_time: scalar(c.get("hasDueDateTime")),
            reminder_at: c.get("dueReminderTimestamp").and_then(normalize_time),
        }),
        "TABLE" => NodeKind::Table(TableFields {
            table: rich.table(c),
        }),
        "COMMENT_THREAD" => NodeKind::CommentThread(CommentThreadFields {
            thread_id: thread_id(element, content),
            comments: Vec::new(),
        }),
        "DOCUMENT" => NodeKind::Document(DocumentFields {
            title: string(c.get("title")),
            rich_text: rich.get(c, "textContent"),
        }),
        "COLOR_SWATCH" => NodeKind::ColorSwatch(ColorSwatchFields {
            color: swatch_color(c.get("color")),
            caption: rich.get(c, "caption"),
        }),
        "SKETCH" => NodeKind::Sketch(DrawingFields {
            drawing: raw(c.get("drawing")),
        }),
        "ANNOTATION" => NodeKind::Annotation(DrawingFields {
            drawing: raw(c.get("drawing")),
        }),
        "LINE" => NodeKind::Line(LineFields {
            start: raw(c.get("start")),
            end: raw(c.get("end")),
            control: raw(c.get("control")),
            line_style: raw(c.get("lineStyle")),
        }),
        "SKELETON" => NodeKind::Skeleton(SkeletonFields {
            root_board: element
                .location
                .as_ref()
                .and_then(|l| l.root_board.as_ref().map(HeldScalar::scalar)),
        }),
        other => NodeKind::Unknown(UnknownFields {
            element_type: other.to_owned(),
            content: if bodies { raw(content) } else { None },
        }),
    }
}

pub fn board(c: &impl Lookup, unloaded: Option<UnloadedReason>) -> BoardFields {
    BoardFields {
        title: non_empty(c.get("title")).unwrap_or_else(|| UNTITLED_BOARD.to_owned()),
        color: scalar(c.get("color")),
        secondary_color: scalar(c.get("secondaryColor")),
        default_color_palette: raw_array(c.get("defaultColorPalette")),
        published: scalar(c.get("published")),
        icon: icon(c.get("icon")),
        image: image(c.get("image")),
        file: file(c.get("file")),
        children_loaded: unloaded.is_none(),
        unloaded_reason: unloaded,
    }
}

/// A swatch's colour: a string as sent, or the string `value` of an object.
fn swatch_color(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::Object(o) => string(o.get("value")),
        other => string(Some(other)),
    }
}

fn icon(value: Option<&Value>) -> Option<Icon> {
    let i = object(value)?;
    let icon = Icon {
        kind: scalar(i.get("type")),
        id: scalar(i.get("id")),
        name: scalar(i.get("name")),
        svg_url: non_empty(i.get("svg")),
        png_url: non_empty(i.get("png")),
    };
    (icon != Icon::default()).then_some(icon)
}

fn image(value: Option<&Value>) -> Option<Image> {
    let i = object(value)?;
    let url = ["regular", "large", "original", "url"]
        .iter()
        .find_map(|k| non_empty(i.get(*k)));
    let image = Image {
        url,
        original_url: non_empty(i.get("original")),
        thumbnail_url: non_empty(i.get("thumb")),
        large_url: non_empty(i.get("large")),
        huge_url: non_empty(i.get("huge")),
        width: scalar(i.get("width")),
        height: scalar(i.get("height")),
        primary_color: scalar(i.get("primaryColor")),
        colors: raw_array(i.get("colors")),
        transparent: scalar(i.get("transparent")),
    };
    (image != Image::default()).then_some(image)
}

fn file(value: Option<&Value>) -> Option<File> {
    let f = object(value)?;
    let file = File {
        kind: scalar(f.get("type")),
        extension: scalar(f.get("ext")),
        mime_type: scalar(f.get("mime")),
        filename: scalar(f.get("filename")),
        size_bytes: scalar(f.get("size")),
        modified_at: f.get("lastModified").and_then(normalize_time),
        uploaded_at: f.get("uploadedTimestamp").and_then(normalize_time),
        url: non_empty(f.get("url")),
    };
    (file != File::default()).then_some(file)
}

fn link(c: &impl Lookup, rich: &mut Rich) -> LinkFields {
    let l = object(c.get("link"));
    let provider = object(c.get("provider")).map(|p| LinkProvider {
        name: scalar(p.get("name")),
        url: scalar(p.get("url")),
        display: scalar(p.get("display")),
    });
    LinkFields {
        url: non_empty(l.and_then(|l| l.get("url"))).or_else(|| non_empty(c.get("url"))),
        title: string(l.and_then(|l| l.get("title"))),
        favicon_url: non_empty(l.and_then(|l| l.get("favicon"))),
        provider: provider.filter(|p| *p != LinkProvider::default()),
        media_type: scalar(c.get("mediaType")),
        caption: rich.get(c, "caption"),
        show_caption: scalar(c.get("showCaption")),
    }
}

#[cfg(any(test, feature = "internals"))]
fn table(t: &Map<String, Value>) -> Table {
    let rows = t.get("data").and_then(Value::as_array);
    let rows = rows.map(Vec::as_slice).unwrap_or_default();
    Table {
        rows: rows
            .iter()
            .map(|row| {
                let cells = row.as_array().map(Vec::as_slice).unwrap_or_default();
                cells.iter().map(cell).collect()
            })
            .collect(),
        column_widths: raw_array(t.get("colWidthsGU")),
        version: scalar(t.get("version")),
    }
}

#[cfg(any(test, feature = "internals"))]
fn cell(value: &Value) -> TableCell {
    let Some(c) = value.as_object() else {
        return scalar_cell(value);
    };
    let rich = ["draftContent", "textContent"]
        .iter()
        .find_map(|k| c.get(*k).and_then(rich_text));
    cell_of(c, rich)
}

/// A cell that is not an object: its value when it is a scalar.
pub fn scalar_cell(value: &Value) -> TableCell {
    TableCell {
        value: scalar(Some(value)),
        ..TableCell::default()
    }
}

/// A cell object `c` (its rich text members left out or not) with its rich
/// text `rich`, read already.
pub fn cell_of(c: &Map<String, Value>, rich: Option<RichText>) -> TableCell {
    // The value, falling back to the rich text's plain text when
    // it is absent or empty (a formatted cell keeps its text in the rich text).
    let raw_value = scalar(c.get("value"));
    let value = match raw_value {
        Some(Scalar(Value::String(s))) if s.is_empty() => rich
            .as_ref()
            .map(|r| Scalar(Value::String(r.plain_text.clone())))
            .or(Some(Scalar(Value::String(s)))),
        Some(v) => Some(v),
        None => rich
            .as_ref()
            .map(|r| Scalar(Value::String(r.plain_text.clone()))),
    };
    TableCell {
        value,
        rich_text: rich,
        text_styles: raw_array(c.get("textStyle")),
        background: scalar(c.get("background")),
    }
}

/// `threadId` from `content`, else from the element's top level.
pub fn thread_id(element: &Head, content: Option<&Value>) -> Option<String> {
    ident(object(content).and_then(|c| c.get("threadId")))
        .or_else(|| element.thread_id().map(str::to_owned))
}

/// One comment of the top-level `comments` map. `userId` and other fields
/// beyond the table are not copied.
/// Its rich text is a body: left out when `bodies` is false. `reader`
/// says whether it is read from its text or from the text parsed into a
/// value (the reference pipeline).
pub fn comment(key: &str, raw: &RawComment, bodies: bool, reader: ContentReader) -> Comment {
    Comment {
        id: own_id(raw.id.as_ref(), raw.underscore_id.as_ref()).unwrap_or_else(|| key.to_owned()),
        thread_id: ident(raw.thread_id.as_ref()),
        rich_text: match (bodies, reader) {
            (false, _) => None,
            (true, ContentReader::Text) => raw
                .text
                .as_ref()
                .and_then(|t| rich_text_from_text(t.text()).ok().flatten()),
            #[cfg(any(test, feature = "internals"))]
            (true, ContentReader::Tree) => raw.text().as_ref().and_then(rich_text),
        },
        created_at: raw.created_at.as_ref().and_then(normalize_time),
        updated_at: raw.updated_at.as_ref().and_then(normalize_time),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn comment_id_table() {
        let cases: &[(Value, &str)] = &[
            (json!({"id": "a", "_id": "b"}), "a"),
            (json!({"_id": "b"}), "b"),
            (json!({}), "key"),
            (json!({"id": "", "_id": "b"}), "b"),
            (json!({"id": null, "_id": ""}), "key"),
            (json!({"id": 42}), "42"),
            (json!({"id": 4.5}), "key"),
            (json!({"id": ["x"], "_id": {"y": 1}}), "key"),
        ];
        for (raw, want) in cases {
            let id = comment("key", &RawComment::of(raw), true, ContentReader::Text).id;
            assert_eq!(id, *want, "{raw}");
        }
    }

    #[test]
    fn cell_value_table() {
        let rich = json!({"blocks": [{"text": "rt"}]});
        let cases: Vec<(Value, Value)> = vec![
            (json!({"value": "v", "draftContent": rich}), json!("v")),
            (json!({"value": false, "draftContent": rich}), json!(false)),
            (json!({"value": "", "draftContent": rich}), json!("rt")),
            (json!({"value": null, "textContent": rich}), json!("rt")),
            (json!({"value": [1], "draftContent": rich}), json!("rt")),
            (json!({"value": ""}), json!("")),
            (
                json!({"value": "", "draftContent": {"blocks": []}}),
                json!(""),
            ),
            (json!({"draftContent": {"blocks": []}}), json!("")),
            (json!({}), Value::Null),
            (json!(3), json!(3)),
            (json!(null), Value::Null),
            (json!([1]), Value::Null),
        ];
        for (raw_cell, want) in cases {
            let got = cell(&raw_cell).value.map_or(Value::Null, |s| s.0);
            assert_eq!(got, want, "{raw_cell}");
        }
    }

    #[test]
    fn thread_id_table() {
        let cases: Vec<(Value, Option<&str>)> = vec![
            (
                json!({"content": {"threadId": "a"}, "threadId": "b"}),
                Some("a"),
            ),
            (
                json!({"content": {"threadId": ""}, "threadId": "b"}),
                Some("b"),
            ),
            (json!({"content": {"threadId": 9}}), Some("9")),
            (json!({"content": {}}), None),
        ];
        for (element, want) in cases {
            let head = Head::read(&element);
            assert_eq!(
                thread_id(&head, element.get("content")).as_deref(),
                want,
                "{element:?}"
            );
        }
    }
}

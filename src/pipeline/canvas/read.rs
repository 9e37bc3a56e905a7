//! What the canvas writer (`super`) reads of the document's elements:
//! which ones are the board, their kind, id, place and size, and the
//! Markdown a text node shows (the board's Markdown writer, given one
//! element at a time, with what it must not show removed first).

use super::{layout, style};
use serde_json::Value;

/// The Markdown an element's text node shows: the element and what it
/// holds, as the board's Markdown writes them, without its lines (they are
/// edges), the elements of a nested board (a board is its title here), or
/// any URL that carries a permission id.
pub(super) fn markdown(element: &Value) -> Result<String, serde_json::Error> {
    let mut element = element.clone();
    prune(&mut element);
    style::scrub(&mut element);
    let json = serde_json::to_vec(&element)?;
    let text = crate::pipeline::markdown::element(&json)?;
    Ok(text.trim_end().to_owned())
}

/// Removes what a text node does not show from an element's subtree: a
/// nested board's elements, lines, elements in the trash.
pub(super) fn prune(element: &mut Value) {
    let board = kind(element) == "BOARD";
    if let Some(Value::Array(children)) = element.get_mut("children") {
        if board {
            children.clear();
        }
        children.retain(|c| kind(c) != "LINE" && !removed(c));
        for child in children {
            prune(child);
        }
    }
}

/// The elements under `node` that are the board: not in the trash nor
/// deleted, whatever their parent (the normalizer already leaves them out;
/// an export must never show one).
pub(super) fn shown(node: &Value) -> Vec<&Value> {
    node.get("children")
        .and_then(Value::as_array)
        .map(|c| c.iter().filter(|c| !removed(c)).collect())
        .unwrap_or_default()
}

pub(super) fn removed(node: &Value) -> bool {
    let section = node
        .get("location")
        .and_then(|l| l.get("section"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    section.eq_ignore_ascii_case("TRASH") || section.eq_ignore_ascii_case("DELETED")
}

/// The lines of this board under `node`, not those of a nested board.
pub(super) fn collect_lines<'v>(node: &'v Value, into: &mut Vec<&'v Value>) {
    match kind(node) {
        "LINE" => into.push(node),
        "BOARD" => return,
        _ => {}
    }
    for child in shown(node) {
        collect_lines(child, into);
    }
}

pub(super) fn kind(node: &Value) -> &str {
    node.get("type")
        .and_then(Value::as_str)
        .unwrap_or("UNKNOWN")
}

pub(super) fn id(node: &Value) -> &str {
    node.get("id").and_then(Value::as_str).unwrap_or_default()
}

/// An element's place on the board, in grid units.
pub(super) fn position(node: &Value) -> Option<(f64, f64)> {
    let p = node.get("location")?.get("position")?;
    Some((number(p.get("x")?)?, number(p.get("y")?)?))
}

/// A finite number, or a string holding one (older elements store some).
pub(super) fn number(value: &Value) -> Option<f64> {
    let n = match value {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => s.trim().parse().ok()?,
        _ => return None,
    };
    n.is_finite().then_some(n)
}

pub(super) fn width_units(node: &Value) -> f64 {
    layout::stored_units(node.get("width")).unwrap_or_else(|| layout::default_width(kind(node)))
}

/// The height in px an image element's picture takes at `width` px, from
/// its stored size.
pub(super) fn image_height(element: &Value, width: f64) -> Option<f64> {
    let image = element.get("image")?;
    let (w, h) = (
        image.get("width")?.as_f64()?,
        image.get("height")?.as_f64()?,
    );
    (w > 0.0 && h > 0.0).then(|| (width - 32.0) * h / w)
}

pub(super) fn is_web_url(url: &str) -> bool {
    url::Url::parse(url.trim()).is_ok_and(|u| matches!(u.scheme(), "http" | "https"))
}

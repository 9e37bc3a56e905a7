//! The two walks (keep for `include`, remove for `exclude`), driven by a compiled [`Program`]:
//! `include` builds a new value from nothing, `exclude` deletes in place. Both
//! look at object keys only through the automaton, so keys outside the model and
//! everything inside a leaf (`blocks`, `content`, ...) are never matched.
//!
//! The walks recurse along the document and go no deeper than
//! [`MAX_DEPTH`] containers: below that, `include` keeps nothing and the
//! prunes and `exclude` leave the value as it is. A value parsed by
//! serde_json is never deeper (its parser refuses the 128th container);
//! serde_json's own clone, serialization and drop of a value recurse as
//! deep as the value does.

use super::compile::{Program, Step};
use crate::document::model::{self, Model, NodeId};
use serde_json::{Map, Value};

pub use super::stream::MAX_DEPTH;

/// `include`: a new document holding what the selectors keep; `{}` when nothing.
pub fn include(program: &Program, doc: &Value) -> Value {
    let kept = match (program.start(), doc) {
        (Some(start), Value::Object(root)) => include_object(program, root, start, 1),
        _ => None,
    };
    Value::Object(kept.unwrap_or_default())
}

/// The kept keys of `obj`, or `None` when none is kept (the object is dropped).
fn include_object(
    program: &Program,
    obj: &Map<String, Value>,
    state: u32,
    depth: usize,
) -> Option<Map<String, Value>> {
    let mut out = Map::new();
    for (key, value) in obj {
        let kept = match program.step(state, key) {
            Step::Skip => None,
            Step::End(node) => keep_whole(value, node as NodeId),
            Step::Descend(next) => include_value(program, value, next, depth),
        };
        if let Some(kept) = kept {
            out.insert(key.clone(), kept);
        }
    }
    (!out.is_empty()).then_some(out)
}

/// Where selectors pass through: objects descend, arrays keep the elements that
/// produced something and are kept even when that leaves them `[]` (nested
/// arrays, i.e. table rows, likewise); a scalar here produces nothing.
fn include_value(program: &Program, value: &Value, state: u32, depth: usize) -> Option<Value> {
    match value {
        Value::Object(_) | Value::Array(_) if depth >= MAX_DEPTH => None,
        Value::Object(obj) => include_object(program, obj, state, depth + 1).map(Value::Object),
        Value::Array(items) => Some(Value::Array(
            items
                .iter()
                .filter_map(|item| include_value(program, item, state, depth + 1))
                .collect(),
        )),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => None,
    }
}

/// Where a selector ends: the value whole, except that objects left empty
/// inside it are dropped (recursively, so an object holding only empty objects
/// goes too); arrays are kept, even empty. The pruning reaches inside leaves
/// too (raw `content` or `blocks` that sanitizing emptied), although no
/// selector ever matches there.
fn keep_whole(value: &Value, node: NodeId) -> Option<Value> {
    // A bulk clone then an in-place prune is cheaper than rebuilding key by
    // key: empty objects are rare in real documents.
    let mut kept = value.clone();
    (!prune_empty(model::get(), &mut kept, node, 0)).then_some(kept)
}

/// Drops the empty objects at model positions inside `value`; returns true when
/// `value` is itself an empty object (after pruning) and must go too.
fn prune_empty(model: &Model, value: &mut Value, node: NodeId, depth: usize) -> bool {
    let here = model.node(node);
    match value {
        Value::Object(obj) if depth >= MAX_DEPTH => obj.is_empty(),
        Value::Object(_) | Value::Array(_) if here.is_leaf() => prune_raw(value, depth),
        Value::Object(obj) => {
            let mut emptied = false;
            for (key, child) in obj.iter_mut() {
                if !matches!(child, Value::Object(_) | Value::Array(_)) {
                    continue; // scalars: nothing to prune, no lookup needed
                }
                // Keys outside the model (absent from sanitized documents) are kept as they are.
                if let Some(child_node) = here.child(key) {
                    emptied |= prune_empty(model, child, child_node, depth + 1);
                }
            }
            if emptied {
                obj.retain(|key, child| match (here.child(key), child) {
                    (Some(_), Value::Object(inner)) => !inner.is_empty(),
                    _ => true,
                });
            }
            obj.is_empty()
        }
        Value::Array(items) => {
            if depth < MAX_DEPTH {
                items.retain_mut(|item| !prune_empty(model, item, node, depth + 1));
            }
            false
        }
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => false,
    }
}

/// [`prune_empty`] inside a leaf, where every key is raw: drops every object
/// that is or becomes empty (from its object or array); arrays stay.
fn prune_raw(value: &mut Value, depth: usize) -> bool {
    match value {
        Value::Object(obj) if depth >= MAX_DEPTH => obj.is_empty(),
        Value::Object(obj) => {
            obj.retain(|_, child| !prune_raw(child, depth + 1));
            obj.is_empty()
        }
        Value::Array(items) => {
            if depth < MAX_DEPTH {
                items.retain_mut(|item| !prune_raw(item, depth + 1));
            }
            false
        }
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => false,
    }
}

/// `exclude`, in place: deletes every key where a selector ends. An object that
/// loses all its keys this way is dropped (from its parent object or array);
/// arrays are never dropped; an object that was already empty stays. The root
/// is never dropped: emptied, it is `{}`.
pub fn exclude(program: &Program, doc: &mut Value) {
    if let (Some(start), Value::Object(root)) = (program.start(), doc) {
        exclude_object(program, root, start, 1);
    }
}

/// Returns true when `obj` had keys and lost all of them here.
fn exclude_object(
    program: &Program,
    obj: &mut Map<String, Value>,
    state: u32,
    depth: usize,
) -> bool {
    if obj.is_empty() {
        return false;
    }
    obj.retain(|key, value| match program.step(state, key) {
        Step::Skip => true,
        Step::End(_) => false,
        Step::Descend(_) if depth >= MAX_DEPTH => true,
        Step::Descend(next) => match value {
            Value::Object(inner) => !exclude_object(program, inner, next, depth + 1),
            Value::Array(items) => {
                exclude_array(program, items, next, depth + 1);
                true
            }
            Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => true,
        },
    });
    obj.is_empty()
}

fn exclude_array(program: &Program, items: &mut Vec<Value>, state: u32, depth: usize) {
    if depth >= MAX_DEPTH {
        return;
    }
    items.retain_mut(|item| match item {
        Value::Object(inner) => !exclude_object(program, inner, state, depth + 1),
        Value::Array(inner) => {
            exclude_array(program, inner, state, depth + 1);
            true
        }
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => true,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::select::compile::compile;
    use crate::select::parse::parse_list;
    use serde_json::json;

    fn program(list: &str) -> Program {
        compile(&parse_list(list).expect("parses")).expect("compiles")
    }

    fn doc() -> Value {
        json!({
            "version": 1,
            "board": {
                "id": "b", "location": {"position": {}}, "icon": {},
                "children": [
                    {"id": "n", "location": {}, "children": [], "content": {"k": {}, "v": [[{}], {"e": {}}, 1]}},
                    {"id": "t", "table": {"rows": [[{}], [{"value": 1}, {}]]}, "children": []}
                ]
            }
        })
    }

    #[test]
    fn include_table() {
        let cases: &[(&str, Value)] = &[
            // Empty objects inside a kept value go, recursively, inside leaves too.
            (
                "board",
                json!({"board": {"id": "b", "children": [
                    {"id": "n", "children": [], "content": {"v": [[], 1]}},
                    {"id": "t", "table": {"rows": [[], [{"value": 1}]]}, "children": []}
                ]}}),
            ),
            ("board.location", json!({})),
            ("board.icon,version", json!({"version": 1})),
            (
                "board.children.table.rows",
                json!({"board": {"children": [{"table": {"rows": [[], [{"value": 1}]]}}]}}),
            ),
            (
                "board.children.table.rows.value",
                json!({"board": {"children": [{"table": {"rows": [[], [{"value": 1}]]}}]}}),
            ),
            (
                "board.children.location",
                json!({"board": {"children": []}}),
            ),
        ];
        for (list, expected) in cases {
            assert_eq!(include(&program(list), &doc()), *expected, "{list}");
        }
    }

    #[test]
    fn exclude_table() {
        let cases: &[(&str, Value)] = &[
            // Already-empty objects stay; emptied ones go, cascading up to array elements.
            ("version", json!({"board": doc()["board"].clone()})),
            (
                "board.location.position",
                json!({"version": 1, "board": {
                    "id": "b", "icon": {}, "children": doc()["board"]["children"].clone()
                }}),
            ),
            (
                "board.children.table.rows.value",
                json!({"version": 1, "board": {
                    "id": "b", "location": {"position": {}}, "icon": {},
                    "children": [
                        {"id": "n", "location": {}, "children": [], "content": {"k": {}, "v": [[{}], {"e": {}}, 1]}},
                        {"id": "t", "table": {"rows": [[{}], [{}]]}, "children": []}
                    ]
                }}),
            ),
            (
                "board.children.*",
                json!({"version": 1, "board": {
                    "id": "b", "location": {"position": {}}, "icon": {}, "children": []
                }}),
            ),
            (
                "board.id,board.location,board.icon,board.children,version",
                json!({}),
            ),
        ];
        for (list, expected) in cases {
            let mut out = doc();
            exclude(&program(list), &mut out);
            assert_eq!(out, *expected, "{list}");
        }
    }
}

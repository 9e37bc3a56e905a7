//! The selector model: the field tree of BoardDocument v1,
//! derived from the generated JSON Schema so that the Rust types, the schema and
//! the selector model cannot drift apart. `select::compile` walks it to validate
//! selectors and build its automaton.
//!
//! The model is a graph, not a tree: `children` of a node leads back to the node
//! union, so it is an arena of [`ModelNode`]s addressed by [`NodeId`]. Array
//! levels are invisible (the walk descends through `items`), `$ref`, `allOf`,
//! `oneOf` and `anyOf` contribute the union of their properties, and a schema
//! with no properties is a leaf. A few names are leaves whatever their schema
//! says ([`LEAF_NAMES`]), and sensitive names ([`super::sanitize::is_sensitive`])
//! are never in the model.

use super::sanitize::is_sensitive;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::sync::LazyLock;

/// Names whose values are raw or opaque data: never walked into by selectors.
pub const LEAF_NAMES: [&str; 6] = [
    "blocks",
    "content",
    "colors",
    "defaultColorPalette",
    "textStyles",
    "columnWidths",
];

/// Index of a node in the model's node table (`Model::nodes`).
pub type NodeId = usize;

/// One position of the model: the fields an object there may have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelNode {
    /// Sorted by name: a field's index is its place here.
    fields: Vec<(Box<str>, NodeId)>,
    /// The fields' indices grouped by the length of their names:
    /// `by_length[n]..by_length[n + 1]` in [`ModelNode::lengths`] are those
    /// of length `n`. A walk looks up every key it reads, and a key is
    /// compared with the one or few names of its length instead of a
    /// binary search's half dozen.
    by_length: Vec<u32>,
    lengths: Vec<u32>,
}

impl ModelNode {
    /// True when nothing below this position can be selected.
    pub fn is_leaf(&self) -> bool {
        self.fields.is_empty()
    }

    /// The fields, sorted by name, with the node each one leads to.
    pub fn fields(&self) -> impl Iterator<Item = (&str, NodeId)> {
        self.fields.iter().map(|(name, id)| (&**name, *id))
    }

    /// The number of fields.
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    /// True for a leaf.
    #[cfg(any(test, feature = "internals"))]
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// The node with these fields (sorted by name, as the model makes them).
    fn new(fields: Vec<(Box<str>, NodeId)>) -> ModelNode {
        let longest = fields.iter().map(|(name, _)| name.len()).max().unwrap_or(0);
        let mut by_length = vec![0u32; longest + 2];
        let mut lengths: Vec<u32> = (0..fields.len())
            .filter_map(|i| u32::try_from(i).ok())
            .collect();
        lengths.sort_by_key(|&i| fields[i as usize].0.len());
        for (name, _) in &fields {
            by_length[name.len() + 1] += 1;
        }
        for n in 1..by_length.len() {
            by_length[n] += by_length[n - 1];
        }
        ModelNode {
            fields,
            by_length,
            lengths,
        }
    }

    /// The position of `name` among [`ModelNode::fields`], if it is a field here.
    pub fn field_index(&self, name: &str) -> Option<usize> {
        let n = name.len();
        let (&start, &end) = (self.by_length.get(n)?, self.by_length.get(n + 1)?);
        self.lengths
            .get(start as usize..end as usize)?
            .iter()
            .map(|&i| i as usize)
            .find(|&i| self.fields[i].0.as_bytes() == name.as_bytes())
    }

    /// The node `name` leads to, if it is a field here.
    pub fn child(&self, name: &str) -> Option<NodeId> {
        self.field_index(name).map(|i| self.fields[i].1)
    }
}

/// The whole model: an arena of nodes, with the document root at [`Model::ROOT`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Model {
    nodes: Vec<ModelNode>,
    /// `parents[n]`: the nodes with a field leading to `n` (for reverse reachability).
    parents: Vec<Vec<NodeId>>,
}

/// Why a schema could not be turned into a model (a bug in the types, not input data).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelError {
    /// A `$ref` that is not a local JSON pointer into the schema.
    UnresolvedRef(String),
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelError::UnresolvedRef(r) => write!(f, "unresolved $ref in schema: {r}"),
        }
    }
}

impl std::error::Error for ModelError {}

static MODEL: LazyLock<Model> = LazyLock::new(|| {
    // The schema is generated from our own types; a failure is a build-time bug
    // that `tests::model_builds_from_generated_schema` catches.
    match Model::from_schema(&super::schema::generate()) {
        Ok(model) => model,
        Err(e) => panic!("selector model: {e}"),
    }
});

/// The model of BoardDocument v1, built once from [`super::schema::generate`].
pub fn get() -> &'static Model {
    &MODEL
}

impl Model {
    /// The document root (`version`, `source`, `fetchedAt`, `board`).
    pub const ROOT: NodeId = 0;
    /// The one shared leaf node.
    pub const LEAF: NodeId = 1;

    /// The node at `id`.
    ///
    /// # Panics
    /// When `id` is not a node of this model (a caller bug).
    pub fn node(&self, id: NodeId) -> &ModelNode {
        &self.nodes[id]
    }

    /// The number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Never true: a model has at least its root and its leaf.
    #[cfg(any(test, feature = "internals"))]
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The nodes with a field leading to `id`.
    pub fn parents(&self, id: NodeId) -> &[NodeId] {
        &self.parents[id]
    }

    /// Builds the model from a JSON Schema whose `$ref`s are local (`#/...`).
    ///
    /// A model node stands for the union of a set of schema objects; two places
    /// whose unions have the same property-bearing schemas share one node, which
    /// is how the recursion through `children` closes.
    ///
    /// # Errors
    /// [`ModelError::UnresolvedRef`] for a `$ref` that does not resolve.
    pub fn from_schema(schema: &Value) -> Result<Model, ModelError> {
        let mut builder = Builder {
            schema,
            ids: HashMap::new(),
            nodes: Vec::new(),
            pending: Vec::new(),
        };
        let root = builder.closure(&[String::new()])?;
        builder.intern(root);
        // Id 1 is the leaf: the empty set of property-bearing schemas.
        builder.intern(BTreeSet::new());
        while let Some((id, key)) = builder.pending.pop() {
            let fields = builder.fields_of(&key)?;
            builder.nodes[id] = ModelNode::new(fields);
        }
        let mut parents = vec![Vec::new(); builder.nodes.len()];
        for (id, node) in builder.nodes.iter().enumerate() {
            for (_, child) in node.fields() {
                if !parents[child].contains(&id) {
                    parents[child].push(id);
                }
            }
        }
        Ok(Model {
            nodes: builder.nodes,
            parents,
        })
    }
}

/// A set of JSON pointers to the schema objects that carry `properties`.
type Key = BTreeSet<String>;

struct Builder<'a> {
    schema: &'a Value,
    ids: HashMap<Key, NodeId>,
    nodes: Vec<ModelNode>,
    pending: Vec<(NodeId, Key)>,
}

impl Builder<'_> {
    fn intern(&mut self, key: Key) -> NodeId {
        if let Some(&id) = self.ids.get(&key) {
            return id;
        }
        let id = self.nodes.len();
        self.nodes.push(ModelNode::new(Vec::new()));
        if !key.is_empty() {
            self.pending.push((id, key.clone()));
        }
        self.ids.insert(key, id);
        id
    }

    fn resolve(&self, pointer: &str) -> Option<&Value> {
        self.schema.pointer(pointer)
    }

    /// Every schema object reachable from `start` through `$ref`, `allOf`,
    /// `oneOf`, `anyOf` and `items`, keeping those that declare `properties`.
    fn closure(&self, start: &[String]) -> Result<Key, ModelError> {
        let mut seen = BTreeSet::new();
        let mut key = Key::new();
        let mut stack: Vec<String> = start.to_vec();
        while let Some(pointer) = stack.pop() {
            if !seen.insert(pointer.clone()) {
                continue;
            }
            let Some(Value::Object(obj)) = self.resolve(&pointer) else {
                continue; // `true`, `false` or a missing optional part: no fields
            };
            if obj.get("properties").is_some_and(Value::is_object) {
                key.insert(pointer.clone());
            }
            if let Some(reference) = obj.get("$ref").and_then(Value::as_str) {
                let target = reference
                    .strip_prefix('#')
                    .ok_or_else(|| ModelError::UnresolvedRef(reference.to_owned()))?;
                if self.resolve(target).is_none() {
                    return Err(ModelError::UnresolvedRef(reference.to_owned()));
                }
                stack.push(target.to_owned());
            }
            for combinator in ["allOf", "oneOf", "anyOf"] {
                if let Some(Value::Array(parts)) = obj.get(combinator) {
                    for i in 0..parts.len() {
                        stack.push(format!("{pointer}/{combinator}/{i}"));
                    }
                }
            }
            if obj.contains_key("items") {
                stack.push(format!("{pointer}/items"));
            }
        }
        Ok(key)
    }

    /// The union of the properties of the schemas in `key`, each mapped to its node.
    fn fields_of(&mut self, key: &Key) -> Result<Vec<(Box<str>, NodeId)>, ModelError> {
        let mut by_name: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for pointer in key {
            if let Some(Value::Object(props)) =
                self.resolve(pointer).and_then(|s| s.get("properties"))
            {
                for name in props.keys() {
                    if is_sensitive(name) {
                        continue;
                    }
                    let child = format!("{pointer}/properties/{}", escape_pointer(name));
                    by_name.entry(name.clone()).or_default().push(child);
                }
            }
        }
        let mut fields = Vec::with_capacity(by_name.len());
        for (name, pointers) in by_name {
            let id = if LEAF_NAMES.contains(&name.as_str()) {
                Model::LEAF
            } else {
                let child_key = self.closure(&pointers)?;
                self.intern(child_key)
            };
            fields.push((name.into_boxed_str(), id));
        }
        Ok(fields)
    }
}

/// RFC 6901 escaping of one reference token.
fn escape_pointer(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::sanitize::SENSITIVE_KEYS;
    use serde_json::json;

    /// Follows a dotted path of exact names from the root.
    fn walk(path: &str) -> Option<NodeId> {
        let model = get();
        let mut node = Model::ROOT;
        for name in path.split('.') {
            node = model.node(node).child(name)?;
        }
        Some(node)
    }

    /// The lookup by length finds what a binary search of the sorted names
    /// finds, for every name of every node and for names near them.
    #[test]
    fn a_field_is_found_by_its_name_alone() {
        let model = get();
        let mut names: Vec<String> = vec![String::new(), "x".repeat(200), "é".into()];
        for id in 0..model.len() {
            for (name, _) in model.node(id).fields() {
                names.extend([
                    name.to_owned(),
                    name[..name.len() - 1].to_owned(),
                    format!("{name}s"),
                    name.to_uppercase(),
                ]);
            }
        }
        for id in 0..model.len() {
            let node = model.node(id);
            let sorted: Vec<&str> = node.fields().map(|(name, _)| name).collect();
            assert!(sorted.windows(2).all(|w| w[0] < w[1]), "{sorted:?}");
            for name in &names {
                let want = sorted.binary_search(&name.as_str()).ok();
                assert_eq!(node.field_index(name), want, "{name} in node {id}");
            }
        }
    }

    #[test]
    fn model_builds_from_generated_schema() {
        assert!(Model::from_schema(&crate::document::schema::generate()).is_ok());
        assert!(get().len() > 10);
    }

    #[test]
    fn paths_in_and_out_of_the_model() {
        let cases: &[(&str, bool)] = &[
            ("version", true),
            ("source.provider", true),
            ("source.boardId", true),
            ("fetchedAt", true),
            ("board.id", true),
            ("board.type", true),
            ("board.title", true),
            ("board.color", true),
            ("board.childrenLoaded", true),
            ("board.icon.svgUrl", true),
            ("board.location.position.x", true),
            ("board.timestamps.createdAt", true),
            ("board.caption", false),
            ("board.richText", false),
            ("board.elementType", false),
            ("board.children.caption.plainText", true),
            ("board.children.caption.blocks", true),
            ("board.children.elementType", true),
            ("board.children.content", true),
            ("board.children.table.rows.value", true),
            ("board.children.table.rows.richText.plainText", true),
            ("board.children.table.columnWidths", true),
            ("board.children.comments.richText.plainText", true),
            ("board.children.children.children.id", true),
            ("board.children.rootBoard", true),
            ("board.children.previewImage.colors", true),
            ("board.children.provider.display", true),
            ("board.children.image.width", true),
            ("board.children.file.url", true),
            ("board.children.nope", false),
            ("source.id", false),
            ("board.children.comments.userId", false),
        ];
        for (path, expected) in cases {
            assert_eq!(walk(path).is_some(), *expected, "{path}");
        }
    }

    #[test]
    fn leaves_are_leaves() {
        let cases = [
            "board.children.richText.blocks",
            "board.children.content",
            "board.children.image.colors",
            "board.defaultColorPalette",
            "board.children.table.rows.textStyles",
            "board.children.table.columnWidths",
            "board.title",
            "board.type",
            "version",
        ];
        for path in cases {
            let id = walk(path).unwrap_or_else(|| panic!("{path} in model"));
            assert!(get().node(id).is_leaf(), "{path}");
        }
    }

    #[test]
    fn children_recurse_into_one_node() {
        let a = walk("board.children").expect("children");
        let b = walk("board.children.children").expect("children.children");
        assert_eq!(a, b);
        assert_ne!(
            walk("board"),
            Some(a),
            "the root board is not the node union"
        );
    }

    #[test]
    fn sensitive_names_are_never_in_the_model() {
        let model = get();
        for id in 0..model.len() {
            for (name, _) in model.node(id).fields() {
                assert!(!is_sensitive(name), "{name} is sensitive");
                assert!(!SENSITIVE_KEYS.contains(&name.to_ascii_lowercase().as_str()));
            }
        }
    }

    #[test]
    fn sensitive_properties_in_a_schema_are_skipped() {
        let schema = json!({"properties": {"userId": {"type": "string"}, "Token": {}, "a": {"properties": {"b": {}}}}});
        let model = Model::from_schema(&schema).expect("model");
        let names: Vec<&str> = model.node(Model::ROOT).fields().map(|(n, _)| n).collect();
        assert_eq!(names, ["a"]);
    }

    #[test]
    fn unresolved_ref_is_an_error() {
        let schema = json!({"properties": {"a": {"$ref": "#/$defs/Missing"}}});
        assert_eq!(
            Model::from_schema(&schema),
            Err(ModelError::UnresolvedRef("#/$defs/Missing".into()))
        );
    }
}

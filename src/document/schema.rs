//! `boardDocumentSchema`: the JSON Schema (draft 2020-12) of BoardDocument v1,
//! generated from [`super::types`] and shipped as
//! `schema/board-document.schema.json`. A test keeps the shipped file equal to
//! the generated one; `UPDATE_SCHEMA=1 cargo test schema` rewrites it.

use super::types::BoardDocument;
use schemars::generate::SchemaSettings;
use schemars::transform::RecursiveTransform;
use schemars::Schema;
use serde_json::Value;

/// The shipped schema file, as committed.
#[cfg(any(test, feature = "internals"))]
pub const SCHEMA_JSON: &str = include_str!("../../schema/board-document.schema.json");

/// Generates the schema from the Rust types.
///
/// Optional fields are omitted, never `null`, so the generated schema does not
/// allow `null` anywhere.
pub fn generate() -> Value {
    let settings = SchemaSettings::draft2020_12()
        .for_serialize()
        .with_transform(RecursiveTransform(forbid_null));
    let schema = settings
        .into_generator()
        .into_root_schema_for::<BoardDocument>();
    schema.to_value()
}

/// Removes the `null` alternatives schemars adds for `Option<T>`.
fn forbid_null(schema: &mut Schema) {
    let Some(obj) = schema.as_object_mut() else {
        return;
    };
    if let Some(Value::Array(types)) = obj.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types[0].clone();
            obj.insert("type".into(), only);
        }
    }
    if let Some(Value::Array(alternatives)) = obj.get_mut("anyOf") {
        alternatives.retain(|a| a.get("type") != Some(&Value::from("null")));
        if alternatives.len() == 1 {
            let only = alternatives.remove(0);
            obj.remove("anyOf");
            if let Value::Object(inner) = only {
                for (k, v) in inner {
                    obj.entry(k).or_insert(v);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_schema_is_the_generated_one() {
        let generated = generate();
        let pretty = serde_json::to_string_pretty(&generated).expect("schema serializes") + "\n";
        if std::env::var_os("UPDATE_SCHEMA").is_some() {
            std::fs::write(
                concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/schema/board-document.schema.json"
                ),
                &pretty,
            )
            .expect("write schema");
            return;
        }
        let shipped: Value = serde_json::from_str(SCHEMA_JSON).expect("shipped schema is JSON");
        assert_eq!(
            shipped, generated,
            "schema/board-document.schema.json is stale: run UPDATE_SCHEMA=1 cargo test schema"
        );
    }
}

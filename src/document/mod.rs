//! BoardDocument v1: the Rust model, its JSON Schema, the selector model tree
//! derived from it, and sensitive-field removal.

pub mod model;
pub mod sanitize;
pub mod schema;
pub mod types;

pub use types::*;

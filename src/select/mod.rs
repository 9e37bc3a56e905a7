//! TODO(owner: select helper)

//! TODO(owner: provider helper): rich_text

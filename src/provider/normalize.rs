//! TODO(owner: provider helper): normalize

//! TODO(owner: provider helper): sample

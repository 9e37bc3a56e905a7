//! TODO(owner: provider helper): time

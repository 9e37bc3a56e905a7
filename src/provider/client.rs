//! TODO(owner: provider helper): client

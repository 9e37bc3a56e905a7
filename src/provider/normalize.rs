//! TEMPORARY STUB (replaced by the normalize branch).
use super::Fetched;
use crate::document::BoardDocument;
#[derive(Debug)]
pub enum NormalizeError {
    RootMissing,
}
pub fn normalize(
    _fetched: &Fetched,
    _provider_name: &str,
) -> Result<BoardDocument, NormalizeError> {
    Err(NormalizeError::RootMissing)
}

//! TEMPORARY STUB (replaced by the client branch).
use super::Fetched;
use std::time::Duration;
#[derive(Debug, Clone)]
pub struct ProviderSettings {
    pub origin: url::Url,
    pub user_agent: String,
    pub ca_file: Option<std::path::PathBuf>,
    pub connect_timeout: Duration,
    pub read_timeout: Duration,
    pub fetch_deadline: Duration,
    pub max_response_bytes: usize,
    pub max_boards: usize,
    pub batch_size: usize,
    pub concurrency: usize,
    pub max_elements: usize,
}
impl Default for ProviderSettings {
    fn default() -> Self {
        ProviderSettings {
            origin: url::Url::parse("https://app.milanote.com").expect("static"),
            user_agent: "x".into(),
            ca_file: None,
            connect_timeout: Duration::from_secs(2),
            read_timeout: Duration::from_secs(5),
            fetch_deadline: Duration::from_secs(15),
            max_response_bytes: 32 << 20,
            max_boards: 100,
            batch_size: 50,
            concurrency: 4,
            max_elements: 200_000,
        }
    }
}
#[derive(Debug, Clone)]
pub enum FetchError {
    AccessDenied,
    NotFound,
    Upstream(String),
    Timeout,
}
pub struct ProviderClient {
    _s: ProviderSettings,
}
impl ProviderClient {
    pub fn new(settings: ProviderSettings) -> Result<Self, String> {
        Ok(ProviderClient { _s: settings })
    }
    pub async fn fetch(
        &self,
        _board_id: &str,
        _permission_id: &str,
    ) -> Result<Fetched, FetchError> {
        Err(FetchError::Timeout)
    }
}

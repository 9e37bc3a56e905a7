//! `board_api.server.otlp`: where the standalone binary exports its spans
//! (OTLP over HTTP, protobuf), validated once at start-up and by `-t`, so a
//! value that passes never fails later. The headers' values come from
//! environment variables (a collector's API key is a secret; the file can
//! be shared, the key cannot), read here.

use super::watch::variable;
use super::{fail, ConfigError};
use http::header::{HeaderName, HeaderValue};
use serde::Deserialize;
use std::collections::BTreeMap;

/// Spans waiting for export at most, by default: a few seconds of a busy
/// node's spans while a batch is sent.
const QUEUE_SPANS: usize = 8192;

/// `board_api.server.otlp:` as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct OtlpConf {
    /// The collector's traces URL, `http://` or `https://`; a URL without
    /// a path gets OTLP's `/v1/traces`.
    pub endpoint: String,
    /// Request header name -> the environment variable holding its value.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The share of traces starting here that are exported (default 1.0).
    #[serde(default)]
    pub sample_ratio: Option<f64>,
    /// Finished spans waiting for export at most (default 8192).
    #[serde(default)]
    pub queue_spans: Option<usize>,
}

/// The span export, validated. Its `Debug` shows header names, never their
/// values.
#[derive(Clone)]
pub struct OtlpSettings {
    pub endpoint: url::Url,
    pub headers: Vec<(HeaderName, HeaderValue)>,
    pub sample_ratio: f64,
    pub queue_spans: usize,
}

impl std::fmt::Debug for OtlpSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OtlpSettings")
            .field("endpoint", &self.endpoint.as_str())
            .field(
                "headers",
                &self.headers.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .field("sample_ratio", &self.sample_ratio)
            .field("queue_spans", &self.queue_spans)
            .finish()
    }
}

/// Headers the exporter writes itself.
const OWN_HEADERS: [&str; 6] = [
    "host",
    "content-type",
    "content-length",
    "transfer-encoding",
    "connection",
    "user-agent",
];

impl OtlpConf {
    pub(crate) fn validate(self) -> Result<OtlpSettings, ConfigError> {
        const KEY: &str = "board_api.server.otlp";
        let endpoint_key = format!("{KEY}.endpoint");
        let mut endpoint = match url::Url::parse(self.endpoint.trim()) {
            Ok(url) => url,
            Err(e) => return fail(&endpoint_key, format!("not a URL: {e}")),
        };
        if !matches!(endpoint.scheme(), "http" | "https") {
            return fail(&endpoint_key, "must be an http:// or https:// URL");
        }
        if endpoint.host_str().is_none_or(str::is_empty) {
            return fail(&endpoint_key, "names no host");
        }
        if !endpoint.username().is_empty() || endpoint.password().is_some() {
            return fail(
                &endpoint_key,
                "must not hold credentials (send them in board_api.server.otlp.headers)",
            );
        }
        if endpoint.fragment().is_some() {
            return fail(&endpoint_key, "must not have a #fragment");
        }
        if endpoint.path() == "/" {
            endpoint.set_path("/v1/traces");
        }
        let mut headers = Vec::with_capacity(self.headers.len());
        for (name, env) in &self.headers {
            let key = format!("{KEY}.headers.{name}");
            let Ok(header) = HeaderName::from_bytes(name.trim().as_bytes()) else {
                return fail(&key, "not a header name");
            };
            if OWN_HEADERS.contains(&header.as_str()) {
                return fail(&key, "the exporter sets this header itself");
            }
            let value = variable(&key, env)?;
            let Ok(value) = HeaderValue::from_str(&value) else {
                return fail(
                    &key,
                    format!("the environment variable {env} is not a header value"),
                );
            };
            headers.push((header, value));
        }
        let sample_ratio = self.sample_ratio.unwrap_or(1.0);
        if !(0.0..=1.0).contains(&sample_ratio) {
            return fail(&format!("{KEY}.sample_ratio"), "must be 0.0 to 1.0");
        }
        let queue_spans = self.queue_spans.unwrap_or(QUEUE_SPANS);
        if !(1..=1_048_576).contains(&queue_spans) {
            return fail(&format!("{KEY}.queue_spans"), "must be 1 to 1048576 spans");
        }
        Ok(OtlpSettings {
            endpoint,
            headers,
            sample_ratio,
            queue_spans,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(endpoint: &str) -> OtlpConf {
        OtlpConf {
            endpoint: endpoint.into(),
            headers: BTreeMap::new(),
            sample_ratio: None,
            queue_spans: None,
        }
    }

    #[test]
    fn endpoints() {
        let cases: [(&str, Option<&str>); 9] = [
            (
                "http://127.0.0.1:4318",
                Some("http://127.0.0.1:4318/v1/traces"),
            ),
            (
                "https://otlp.example.com/",
                Some("https://otlp.example.com/v1/traces"),
            ),
            (
                "http://c:4318/custom/traces",
                Some("http://c:4318/custom/traces"),
            ),
            ("grpc://c:4317", None),
            ("c:4318", None),
            ("", None),
            ("http://user:pw@c:4318", None),
            ("http://c:4318/#x", None),
            ("file:///tmp/x", None),
        ];
        for (endpoint, want) in cases {
            let got = conf(endpoint)
                .validate()
                .ok()
                .map(|s| s.endpoint.to_string());
            assert_eq!(got.as_deref(), want, "{endpoint}");
        }
    }

    #[test]
    fn headers_ratio_and_queue() {
        std::env::set_var("SBAPI_TEST_OTLP_KEY", "key-123");
        let mut c = conf("http://c:4318");
        c.headers
            .insert("x-api-key".into(), "SBAPI_TEST_OTLP_KEY".into());
        let s = c.clone().validate().expect("valid");
        assert_eq!(s.headers[0].1, "key-123");
        assert_eq!((s.sample_ratio, s.queue_spans), (1.0, QUEUE_SPANS));
        assert!(!format!("{s:?}").contains("key-123"));

        let refused = |c: OtlpConf| c.validate().expect_err("refused").key;
        let mut unset = conf("http://c:4318");
        unset
            .headers
            .insert("x-api-key".into(), "SBAPI_TEST_OTLP_UNSET".into());
        assert_eq!(refused(unset), "board_api.server.otlp.headers.x-api-key");
        let mut own = c.clone();
        own.headers = BTreeMap::from([("Host".into(), "SBAPI_TEST_OTLP_KEY".into())]);
        assert_eq!(refused(own), "board_api.server.otlp.headers.Host");
        let mut bad_name = c.clone();
        bad_name.headers = BTreeMap::from([("a b".into(), "SBAPI_TEST_OTLP_KEY".into())]);
        assert_eq!(refused(bad_name), "board_api.server.otlp.headers.a b");
        for ratio in [-0.1, 1.5, f64::NAN] {
            let mut r = c.clone();
            r.sample_ratio = Some(ratio);
            assert_eq!(refused(r), "board_api.server.otlp.sample_ratio", "{ratio}");
        }
        for n in [0, 2_000_000] {
            let mut q = c.clone();
            q.queue_spans = Some(n);
            assert_eq!(refused(q), "board_api.server.otlp.queue_spans", "{n}");
        }
    }
}

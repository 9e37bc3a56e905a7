//! Capture a board as the provider sends it, so a board that reads or draws
//! wrong in the field becomes a fixture (`shared-board-api -c CONF
//! --capture '<share link>' --out DIR`), and read such a capture back for
//! the sample upstream to serve (`--demo DIR`).
//!
//! The board is fetched through the configured provider by the same client
//! and the same steps a request's load takes (token, root board, nested
//! boards within the configured limits); the client shows each answer to a
//! tap as it came. Only when the fetch has ended are the answers
//! scrubbed ([`scrub`]: the token, the permission id, every person's id and
//! e-mail address, and whatever sits under a sensitive key become
//! placeholders) and only then is anything written: one file per
//! answer plus `index.json` (the format: `crate::demo`'s `capture_index`,
//! which reads it back). The answers are held in memory
//! until then, bounded by the same limits that bound a load.

pub mod scrub;

use crate::api::share_link;
use crate::config::Settings;
use crate::demo::capture_index::{Entry, Index, FORMAT, INDEX};
use crate::provider::client::{Asked, ProviderClient, ProviderSettings, Tap};
use bytes::Bytes;
use scrub::Scrubber;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// What a capture wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub dir: PathBuf,
    pub board: String,
    /// Answer files written (the index not counted).
    pub files: usize,
    /// Distinct person ids replaced by placeholders.
    pub users: usize,
    /// `None` when the board loaded; else the load's error, as the gateway
    /// would report it (never a secret).
    pub failure: Option<String>,
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "captured board {}: {} answer file{} and {INDEX} written to {}; the token, \
             the permission id and {} person id{} were replaced by placeholders",
            self.board,
            self.files,
            if self.files == 1 { "" } else { "s" },
            self.dir.display(),
            self.users,
            if self.users == 1 { "" } else { "s" },
        )?;
        if let Some(failure) = &self.failure {
            write!(f, "\nthe board did not load: {failure}")?;
        }
        Ok(())
    }
}

/// Why nothing (or not everything) was captured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureError(pub String);

impl std::fmt::Display for CaptureError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CaptureError {}

/// One answer as the client saw it.
struct Recorded {
    request: &'static str,
    ids: Vec<String>,
    nested: bool,
    status: u16,
    body: Bytes,
}

/// The tap: every answer, in the order they came.
#[derive(Default)]
struct Recorder {
    answers: Mutex<Vec<Recorded>>,
}

impl Tap for Recorder {
    fn answer(&self, asked: Asked<'_>, status: u16, body: &Bytes) {
        let (request, ids, nested) = match asked {
            Asked::Token { board_id } => ("token", vec![board_id.to_owned()], false),
            Asked::Boards { ids, nested } => ("boards", ids.to_vec(), nested),
        };
        self.answers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Recorded {
                request,
                ids,
                nested,
                status,
                body: body.clone(),
            });
    }
}

/// Fetches the board of `link` through the provider `settings` configure and
/// writes the scrubbed answers to `out` (created; it must not hold files).
///
/// A load that fails after some answers came still writes them: a denied
/// root or a provider error is worth a bug report too.
///
/// # Errors
/// A bad link (the text never echoes it), an `out` that exists with files
/// in it or cannot be written, a provider client that cannot be built.
pub fn capture(settings: &Settings, link: &str, out: &Path) -> Result<Report, CaptureError> {
    let api = settings.api();
    let link = share_link::parse(link, &api.share_host)
        .map_err(|e| CaptureError(format!("--capture: {}", e.message())))?;
    prepare_dir(out)?;
    let recorder = Arc::new(Recorder::default());
    // As a load builds it (store::load::Loader), without the work pool.
    let provider = ProviderSettings {
        max_in_flight: api.limits.max_upstream_requests,
        ..api.provider.clone()
    };
    let client = ProviderClient::tapped(provider, recorder.clone())
        .map_err(|e| CaptureError(format!("cannot build the provider client: {e}")))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CaptureError(format!("cannot start a runtime: {e}")))?;
    let result = runtime.block_on(client.fetch(&link.board_id, &link.permission_id));
    drop(client);
    let failure = result.err().map(|e| e.to_string());
    let answers = std::mem::take(&mut *recorder.answers.lock().unwrap_or_else(|e| e.into_inner()));

    let mut scrubber = Scrubber::new(&link.permission_id);
    let mut parsed: Vec<Option<Value>> = answers
        .iter()
        .map(|a| serde_json::from_slice::<Value>(&a.body).ok())
        .collect();
    for (answer, value) in answers.iter().zip(&parsed) {
        if let (Some(Value::String(token)), "token") =
            (value.as_ref().and_then(|v| v.get("token")), answer.request)
        {
            scrubber.add_token(token);
        }
    }
    for value in parsed.iter().flatten() {
        scrubber.learn(value);
    }
    scrubber.finish();
    for value in parsed.iter_mut().flatten() {
        scrubber.scrub(value);
    }

    let mut entries = Vec::with_capacity(answers.len());
    let mut files = 0;
    for (n, (answer, value)) in answers.iter().zip(&parsed).enumerate() {
        let file = match value {
            Some(value) => {
                let name = format!("{:02}-{}.json", n + 1, answer.request);
                let bytes = serde_json::to_vec(value)
                    .map_err(|e| CaptureError(format!("cannot encode {name}: {e}")))?;
                write(&out.join(&name), &bytes)?;
                files += 1;
                Some(name)
            }
            None => None,
        };
        entries.push(Entry {
            request: answer.request.to_owned(),
            ids: answer.ids.clone(),
            nested: answer.nested,
            status: answer.status,
            file,
        });
    }
    let index = Index {
        format: FORMAT.to_owned(),
        board: link.board_id.clone(),
        provider: api.provider_name.clone(),
        captured_at: crate::provider::time::format_epoch_ms(crate::clock::now_ms_i64())
            .unwrap_or_default(),
        outcome: failure.clone().unwrap_or_else(|| "loaded".to_owned()),
        placeholders: json!({
            "permission-1": "the share link's permission id",
            "token-1": "the token the provider gave for it",
            "user-N": "a person's id or e-mail address (the same N is the same person)",
            "permission-N, token-N (N > 1)": "other permission ids and tokens found in the answers",
            "redacted": "other text under a person's, a permission's or a token's key",
            "0": "a number under such a key",
        }),
        answers: entries,
    };
    let bytes = serde_json::to_vec_pretty(&index)
        .map_err(|e| CaptureError(format!("cannot encode {INDEX}: {e}")))?;
    write(&out.join(INDEX), &bytes)?;
    Ok(Report {
        dir: out.to_owned(),
        board: link.board_id,
        files,
        users: scrubber.users(),
        failure,
    })
}

/// Creates `dir`, or accepts an empty one: a capture never mixes with or
/// overwrites another.
fn prepare_dir(dir: &Path) -> Result<(), CaptureError> {
    let shown = dir.display();
    // Only its owner reads a new directory: the board's text is in it.
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(dir)
        .map_err(|e| CaptureError(format!("--out: cannot create {shown}: {e}")))?;
    let mut entries = std::fs::read_dir(dir)
        .map_err(|e| CaptureError(format!("--out: cannot read {shown}: {e}")))?;
    if entries.next().is_some() {
        return Err(CaptureError(format!(
            "--out: {shown} is not empty (a capture goes into a directory of its own)"
        )));
    }
    Ok(())
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), CaptureError> {
    std::fs::write(path, bytes)
        .map_err(|e| CaptureError(format!("cannot write {}: {e}", path.display())))
}

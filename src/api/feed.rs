//! `GET {prefix}/changes?url=<share link>` without `since`, asking for a
//! feed by `Accept` ([`accept::feed`]): the board's recent changes as Atom
//! or JSON Feed ([`crate::pipeline::changes::feed`]), so a feed reader or a
//! chat channel can follow a board.
//!
//! The board is loaded as `/changes` loads it (the permission check is the
//! current load's; its errors are the endpoint's JSON errors), then its
//! kept versions are listed newest first by when each was first kept, at
//! most `board_api.live.feed_entries` + 1, and each pair of consecutive
//! versions is compared on the work pool, one pair at a time (two
//! documents held at once). The feed is cached with the document like a
//! render, under the list it was made from: a request that finds the same
//! list reads no kept version.

use super::changes::{self, pack, set_version, store_unavailable, unpack};
use super::error::ApiError;
use super::params::url_value;
use super::respond::{self, ApiResponse, Served};
use super::{timing, BoardApi, RequestParts};
use crate::encoding::Encoding;
use crate::pipeline::changes::feed::{self, Format, Step};
use crate::pipeline::changes::{compare_flat, flat, Changes};
use crate::pipeline::render::whole_rendered;
use crate::pipeline::{LoadedBoard, Representation};
use crate::store::versions::Listed;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Instant;

/// One side of a comparison: the board now (already in memory) or a kept
/// version read back.
#[derive(Clone)]
enum Side {
    Now(Arc<LoadedBoard>),
    Kept(Arc<Vec<u8>>),
}

impl Side {
    fn bytes(&self) -> &[u8] {
        match self {
            Side::Now(board) => board.document_json(),
            Side::Kept(doc) => doc,
        }
    }
}

impl BoardApi {
    /// The feed `format` of the board of the request's `url` (`since` is
    /// absent: the caller checked).
    ///
    /// # Errors
    /// The endpoint's: a bad query (`wait` has no meaning here), the
    /// load's, `503` when the store of kept versions does not answer.
    pub(super) async fn feed(
        &self,
        req: &RequestParts<'_>,
        format: Format,
        query: changes::Query,
        served: &mut Served,
    ) -> Result<ApiResponse, ApiError> {
        let started = Instant::now();
        if query.wait.is_some() {
            return Err(ApiError::invalid_request(
                "wait",
                "wait is for the long poll (with since), not for a feed",
            ));
        }
        let url = url_value(query.url.as_deref())?;
        let link = changes::link_value(url, &self.share_host)?;
        let board_id = link.board_id.clone();
        served.board = Some(Arc::from(board_id.as_str()));
        let (doc, source) = self.load_full(&link, served).await?;
        let entries = self.live.settings().feed_entries;
        let listed = self
            .boards
            .kept_versions(&board_id, &link.permission_id, entries + 1)
            .await
            .map_err(|_| store_unavailable())?;
        let (kind, media) = match format {
            Format::Atom => ("feed.atom", feed::ATOM),
            Format::JsonFeed => ("feed.json", feed::JSON_FEED),
        };
        let key = cache_key(&listed);
        let bytes = match self.boards.cached_derived(&doc, kind, &key) {
            Some(bytes) => bytes,
            None => {
                let steps = self
                    .steps(&board_id, &link.permission_id, &doc, &listed)
                    .await?;
                self.boards
                    .derived(&doc, kind, key, move |now| {
                        let title = flat::read(now.document_json())
                            .ok()
                            .and_then(|f| f.elements.first().map(flat::Element::label))
                            .unwrap_or_default();
                        let body = feed::render(format, &board_id, &title, &steps);
                        Ok(pack(whole_rendered(media, "changes", body)))
                    })
                    .await
                    .map_err(|e| {
                        log::error!("board {}: {e}", link.board_id);
                        ApiError::Internal
                    })?
            }
        };
        let rendered = unpack(bytes).ok_or(ApiError::Internal)?;
        let mut response = respond::success(
            &rendered,
            Representation::Json,
            Encoding::Identity,
            doc.board.completeness(),
            req.headers,
        );
        if response.has_body() {
            response.headers.insert(
                http::header::CONTENT_TYPE,
                http::HeaderValue::from_static(format.content_type()),
            );
        }
        set_version(&mut response, &doc);
        let load = (source == crate::store::Source::Miss).then_some(doc.timing);
        response.headers.insert(
            timing::SERVER_TIMING,
            timing::server_timing(source.name(), load, started.elapsed()),
        );
        response.served = std::mem::take(served);
        Ok(response)
    }

    /// The changes between each pair of consecutive versions of `listed`
    /// (newest first), newest first. A version that cannot be read back
    /// (gone since it was listed, rejected, another board's) is left out,
    /// and its neighbours compared.
    async fn steps(
        &self,
        board_id: &str,
        permission_id: &str,
        doc: &crate::store::Doc,
        listed: &[Listed],
    ) -> Result<Vec<Step>, ApiError> {
        let current = doc.board.version();
        let mut steps = Vec::with_capacity(listed.len().saturating_sub(1));
        let mut newer: Option<(Side, &Listed)> = None;
        for version in listed {
            let side = if Some(version.version.as_str()) == current {
                Side::Now(Arc::clone(&doc.board))
            } else {
                match self
                    .boards
                    .kept_version(board_id, permission_id, &version.version)
                    .await
                    .map_err(|_| store_unavailable())?
                {
                    Some(kept) => Side::Kept(Arc::new(kept)),
                    None => continue,
                }
            };
            let Some((after, to)) = newer.take() else {
                newer = Some((side, version));
                continue;
            };
            let (board, older, from, to_version, newer_side) = (
                board_id.to_owned(),
                side.clone(),
                version.version.clone(),
                to.version.clone(),
                after.clone(),
            );
            let compared = self
                .boards
                .pool()
                .run(move || compare(&board, &older, &from, &after, &to_version))
                .await
                .map_err(|_| store_unavailable())?;
            match compared {
                Ok(changes) => {
                    steps.push(Step {
                        changes,
                        updated_ms: to.first_kept_ms,
                    });
                    newer = Some((side, version));
                }
                // The older side is not a document of this board: the newer
                // one waits for the next.
                Err(Unfit::Older) => newer = Some((newer_side, to)),
                // Nor is the newer: the older one takes its place.
                Err(Unfit::Newer) => newer = Some((side, version)),
            }
        }
        Ok(steps)
    }
}

/// Which side of a comparison is not a document of the board (a value a
/// store holds that hashes to its token, but is unreadable or another
/// board's: never compared).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unfit {
    Older,
    Newer,
}

/// The changes from `older` (`from`) to `newer` (`to`), both documents of
/// `board_id`, cut to what a feed entry lists. CPU work: on the work pool.
///
/// # Errors
/// The side that is not a document of `board_id` (the newer one first).
fn compare(
    board_id: &str,
    older: &Side,
    from: &str,
    newer: &Side,
    to: &str,
) -> Result<Changes, Unfit> {
    let new = flat::read(newer.bytes())
        .ok()
        .filter(|f| f.board_id == board_id)
        .ok_or(Unfit::Newer)?;
    let old = flat::read(older.bytes())
        .ok()
        .filter(|f| f.board_id == board_id)
        .ok_or(Unfit::Older)?;
    let mut changes = compare_flat(&old, from, &new, to);
    changes.truncate(feed::LINES);
    Ok(changes)
}

/// The cache key of a feed made from `listed`: each version and when it
/// was first kept.
fn cache_key(listed: &[Listed]) -> Arc<str> {
    let mut key = String::with_capacity(listed.len() * 48);
    for l in listed {
        let _ = write!(key, "{}@{},", l.version, l.first_kept_ms);
    }
    Arc::from(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_key_names_every_version_and_time() {
        let l = |v: &str, t| Listed {
            version: v.into(),
            first_kept_ms: t,
        };
        assert_eq!(&*cache_key(&[l("a", 2), l("b", 1)]), "a@2,b@1,");
        assert_ne!(cache_key(&[l("a", 2)]), cache_key(&[l("a", 3)]));
        assert_eq!(&*cache_key(&[]), "");
    }

    #[test]
    fn only_documents_of_the_board_are_compared() {
        let doc = |board: &str, title: &str| {
            Side::Kept(Arc::new(format!(
                r#"{{"version":1,"source":{{"provider":"milanote","boardId":"{board}"}},"fetchedAt":"t","board":{{"id":"{board}","type":"BOARD","title":"{title}","children":[]}}}}"#
            ).into_bytes()))
        };
        let (from, to) = ("0".repeat(32), "1".repeat(32));
        let (old, new) = (doc("B", "old"), doc("B", "new"));
        let changes = compare("B", &old, &from, &new, &to).expect("compared");
        assert_eq!(
            (changes.from.as_str(), changes.to.as_str()),
            (from.as_str(), to.as_str())
        );
        assert_eq!(changes.counts.changed, 1, "{changes:?}");
        let other = doc("OTHER", "x");
        assert_eq!(
            compare("B", &other, &from, &new, &to).err(),
            Some(Unfit::Older)
        );
        assert_eq!(
            compare("B", &old, &from, &other, &to).err(),
            Some(Unfit::Newer)
        );
        let junk = Side::Kept(Arc::new(b"not json".to_vec()));
        assert_eq!(
            compare("B", &junk, &from, &junk, &to).err(),
            Some(Unfit::Newer)
        );
    }
}

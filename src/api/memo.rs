//! The parse memo: requests already checked, by their raw text, so a
//! repeated query (or MCP argument set, or POST body) is not parsed again.
//! [`BoardApi::parsed`](super::BoardApi) and its siblings fill and read it.

use super::changes::ChangesRequest;
use super::params::BoardRequest;
use super::route::Endpoint;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

/// Which memo a parse is kept in: one per endpoint's queries, one for the
/// MCP tools' arguments (never mixed: a query and an argument key may be
/// equal texts).
#[derive(Debug, Clone, Copy)]
pub(super) enum Slot {
    Query(Endpoint),
    /// MCP tool arguments and `POST {prefix}/board` bodies: both read
    /// as `/detail` reads its query.
    Tool,
}

/// Parsed requests of one kind by raw text: a plain map behind a
/// read-write lock, so a hit is a shared lock and one hash, with no
/// allocation. It holds at most [`Memo::ENTRIES`] texts of at most
/// [`Memo::MAX_QUERY`] bytes each (about 8 MiB at worst); when full it
/// starts over, since parsing is a pure function of the text and a working
/// set of repeated requests refills it at once.
pub(super) struct Memo<V> {
    map: RwLock<HashMap<Box<str>, Arc<V>>>,
}

impl<V> Default for Memo<V> {
    fn default() -> Self {
        Memo {
            map: RwLock::new(HashMap::new()),
        }
    }
}

impl<V> Memo<V> {
    const ENTRIES: usize = 1024;
    const MAX_QUERY: usize = 8 << 10;

    pub(super) fn get(&self, text: &str) -> Option<Arc<V>> {
        let map = self.map.read().unwrap_or_else(|e| e.into_inner());
        map.get(text).cloned()
    }

    pub(super) fn put(&self, text: &str, parsed: Arc<V>) {
        if text.len() > Self::MAX_QUERY {
            return;
        }
        let mut map = self.map.write().unwrap_or_else(|e| e.into_inner());
        if map.len() >= Self::ENTRIES {
            map.clear();
        }
        map.insert(text.into(), parsed);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.map.read().map(|m| m.len()).unwrap_or(0)
    }
}

/// The memos of an API: one per board endpoint's queries, one for the MCP
/// tools' arguments and POST bodies, one for `/changes` queries.
#[derive(Default)]
pub(super) struct ParseMemo {
    by_slot: [Memo<BoardRequest>; 4],
    changes: Memo<ChangesRequest>,
}

impl ParseMemo {
    fn memo(&self, slot: Slot) -> &Memo<BoardRequest> {
        &self.by_slot[match slot {
            Slot::Query(Endpoint::Search) => 0,
            Slot::Query(Endpoint::Detail) => 1,
            Slot::Query(Endpoint::Canvas) => 3,
            Slot::Tool => 2,
        }]
    }

    pub(super) fn get(&self, slot: Slot, query: &str) -> Option<Arc<BoardRequest>> {
        self.memo(slot).get(query)
    }

    pub(super) fn put(&self, slot: Slot, query: &str, request: Arc<BoardRequest>) {
        self.memo(slot).put(query, request);
    }

    /// `/changes` queries.
    pub(super) fn changes(&self) -> &Memo<ChangesRequest> {
        &self.changes
    }
}

#[cfg(test)]
mod tests {
    use super::super::params;
    use super::*;

    #[test]
    fn the_parse_memo_is_bounded_and_per_endpoint() {
        let memo = ParseMemo::default();
        let request = |board: &str| {
            let query = format!("url=https%3A%2F%2Fapp.milanote.com%2F{board}%2Fb%3Fp%3Dx");
            let parsed = params::parse(Endpoint::Search, Some(&query), "app.milanote.com");
            (query, Arc::new(parsed.expect("a valid query")))
        };
        let (query, parsed) = request("b0");
        memo.put(Slot::Query(Endpoint::Search), &query, Arc::clone(&parsed));
        assert!(memo.get(Slot::Query(Endpoint::Search), &query).is_some());
        assert!(memo.get(Slot::Query(Endpoint::Detail), &query).is_none());
        assert!(memo.get(Slot::Tool, &query).is_none());
        for i in 1..=Memo::<BoardRequest>::ENTRIES {
            let (query, parsed) = request(&format!("b{i}"));
            memo.put(Slot::Query(Endpoint::Search), &query, parsed);
        }
        let held = memo.memo(Slot::Query(Endpoint::Search)).len();
        assert!(held <= Memo::<BoardRequest>::ENTRIES, "{held}");
        let long = "x".repeat(Memo::<BoardRequest>::MAX_QUERY + 1);
        memo.put(Slot::Query(Endpoint::Search), &long, parsed);
        assert!(memo.get(Slot::Query(Endpoint::Search), &long).is_none());
    }
}

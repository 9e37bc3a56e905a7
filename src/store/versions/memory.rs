//! The `memory` store of kept versions: sealed values in the process, for
//! hosts that want no files. Bounded like the others (count per board,
//! age, total bytes); lost on restart.

use super::{Bounds, Kept, Listed};
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

/// One kept version: its token, when it was last seen (ms), its value,
/// when it was first kept (ms).
type Held = (Box<str>, u64, std::sync::Arc<[u8]>, u64);

#[derive(Default)]
struct State {
    /// Per board, oldest first.
    boards: HashMap<String, VecDeque<Held>>,
    /// Every (board, version) in the order stored, for the byte bound.
    order: VecDeque<(String, Box<str>)>,
    bytes: usize,
}

/// The memory store.
pub struct Memory {
    bounds: Bounds,
    state: Mutex<State>,
}

impl Memory {
    pub fn new(bounds: Bounds) -> Self {
        Memory {
            bounds,
            state: Mutex::new(State::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether `version` of `board` is kept; marks it as seen `now`.
    pub fn touch(&self, board: &str, version: &str, now: u64) -> bool {
        let mut state = self.lock();
        let Some(list) = state.boards.get_mut(board) else {
            return false;
        };
        match list.iter().position(|(v, ..)| **v == *version) {
            Some(at) => {
                // Seen again: the newest, so the last to go by count.
                if let Some(mut entry) = list.remove(at) {
                    entry.1 = now;
                    list.push_back(entry);
                }
                true
            }
            None => false,
        }
    }

    /// Keeps `value` as `version` of `board`, then applies the bounds.
    pub fn put(&self, board: &str, version: &str, value: Vec<u8>, now: u64) {
        if value.len() > self.bounds.max_bytes {
            return;
        }
        let mut state = self.lock();
        let state = &mut *state;
        state.bytes += value.len();
        let list = state.boards.entry(board.to_owned()).or_default();
        let mut first = now;
        if let Some(at) = list.iter().position(|(v, ..)| **v == *version) {
            if let Some((_, _, gone, was)) = list.remove(at) {
                state.bytes -= gone.len();
                first = was;
            }
        }
        list.push_back((version.into(), now, value.into(), first));
        state.order.push_back((board.to_owned(), version.into()));
        let oldest = now.saturating_sub(self.bounds.keep_ms());
        while list.len() > self.bounds.keep_versions || list.front().is_some_and(|e| e.1 < oldest) {
            if let Some((_, _, gone, _)) = list.pop_front() {
                state.bytes -= gone.len();
            }
        }
        while state.bytes > self.bounds.max_bytes {
            let Some((b, v)) = state.order.pop_front() else {
                break;
            };
            if let Some(list) = state.boards.get_mut(&b) {
                if let Some(at) = list.iter().position(|(kept, ..)| *kept == v) {
                    if let Some((_, _, gone, _)) = list.remove(at) {
                        state.bytes -= gone.len();
                    }
                }
            }
        }
        state.boards.retain(|_, list| !list.is_empty());
        // The order list names versions already gone too; past twice the
        // versions held, rebuild it from what is held.
        let held: usize = state.boards.values().map(VecDeque::len).sum();
        if state.order.len() > 2 * held + 64 {
            let boards = &state.boards;
            state
                .order
                .retain(|(b, v)| boards.get(b).is_some_and(|l| l.iter().any(|e| e.0 == *v)));
        }
    }

    /// The value kept as `version` of `board`, if younger than the age bound.
    pub fn get(&self, board: &str, version: &str, now: u64) -> Kept {
        let state = self.lock();
        let oldest = now.saturating_sub(self.bounds.keep_ms());
        match state
            .boards
            .get(board)
            .and_then(|list| list.iter().find(|(v, ..)| **v == *version))
        {
            Some((_, at, value, _)) if *at >= oldest => Kept::Value(value.to_vec()),
            _ => Kept::Missing,
        }
    }

    /// The versions of `board` younger than the age bound, with when each
    /// was first kept, newest first, at most `max`.
    pub fn list(&self, board: &str, max: usize, now: u64) -> Vec<Listed> {
        let state = self.lock();
        let oldest = now.saturating_sub(self.bounds.keep_ms());
        let held = state.boards.get(board).into_iter().flatten();
        let listed = held
            .filter(|(_, seen, ..)| *seen >= oldest)
            .map(|(version, _, _, first)| Listed {
                version: version.to_string(),
                first_kept_ms: *first,
            })
            .collect();
        super::newest_first(listed, max)
    }

    /// Total bytes held.
    #[cfg(test)]
    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn bounds(keep_versions: usize, max_bytes: usize) -> Bounds {
        Bounds {
            keep_versions,
            keep: Duration::from_secs(10),
            max_bytes,
            max_document_bytes: 1 << 20,
        }
    }

    #[test]
    fn bounded_by_count_age_and_bytes() {
        let m = Memory::new(bounds(2, 100));
        for (i, v) in ["a", "b", "c"].iter().enumerate() {
            m.put("B", v, vec![0; 10], i as u64);
        }
        assert_eq!(m.get("B", "a", 3), Kept::Missing, "count");
        assert!(matches!(m.get("B", "c", 3), Kept::Value(_)));
        assert_eq!(m.get("B", "b", 20_000), Kept::Missing, "age");
        assert!(m.touch("B", "b", 5));
        m.put("B", "d", vec![0; 10], 6);
        assert!(
            matches!(m.get("B", "b", 6), Kept::Value(_)),
            "touched: newest"
        );
        assert_eq!(m.get("B", "c", 6), Kept::Missing);
        for i in 0..20 {
            m.put(&format!("other{i}"), "x", vec![0; 30], 7);
        }
        assert!(m.bytes() <= 100, "{}", m.bytes());
        m.put("B", "huge", vec![0; 101], 8);
        assert_eq!(m.get("B", "huge", 8), Kept::Missing);
    }

    #[test]
    fn listed_newest_first_by_when_first_kept() {
        let m = Memory::new(bounds(5, 1000));
        for (i, v) in ["a", "b", "c"].iter().enumerate() {
            m.put("B", v, vec![0; 10], 100 + i as u64);
        }
        // Seen again later: still listed by when it was first kept.
        assert!(m.touch("B", "a", 200));
        m.put("B", "b", vec![0; 10], 201);
        let listed = |max, now| {
            m.list("B", max, now)
                .into_iter()
                .map(|l| (l.version, l.first_kept_ms))
                .collect::<Vec<_>>()
        };
        let all = vec![("c".into(), 102), ("b".into(), 101), ("a".into(), 100)];
        assert_eq!(listed(10, 300), all);
        assert_eq!(listed(2, 300), all[..2].to_vec(), "bounded");
        // Past the age bound of what was last seen at 102.
        assert_eq!(listed(10, 10_150), all[1..].to_vec());
        assert!(m.list("other", 10, 300).is_empty());
    }
}

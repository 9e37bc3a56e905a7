//! The `memory` store of kept versions: sealed values in the process, for
//! hosts that want no files. Bounded like the others: count per board key
//! (a board as one share link opens it) and age, then bytes in total, taken
//! first from the board key that holds the most, so one link's large
//! boards never evict another's versions while it holds more. Lost on
//! restart.

use super::{Bounds, Kept, Listed};
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

/// One kept version: its token, when it was last seen (ms), its value,
/// when it was first kept (ms).
type Held = (Box<str>, u64, std::sync::Arc<[u8]>, u64);

/// What one board key holds: its versions, oldest first, and their bytes.
#[derive(Default)]
struct Holder {
    versions: VecDeque<Held>,
    bytes: usize,
}

impl Holder {
    fn pop_oldest(&mut self) -> usize {
        match self.versions.pop_front() {
            Some((_, _, gone, _)) => {
                self.bytes -= gone.len();
                gone.len()
            }
            None => 0,
        }
    }
}

#[derive(Default)]
struct State {
    boards: HashMap<String, Holder>,
    bytes: usize,
}

impl State {
    /// Drops the oldest version of the board key holding the most bytes;
    /// false when nothing is held.
    fn evict_from_largest(&mut self) -> bool {
        let Some(largest) = self
            .boards
            .iter()
            .max_by_key(|(_, h)| h.bytes)
            .map(|(board, _)| board.clone())
        else {
            return false;
        };
        let Some(holder) = self.boards.get_mut(&largest) else {
            return false;
        };
        self.bytes -= holder.pop_oldest();
        if holder.versions.is_empty() {
            self.boards.remove(&largest);
        }
        true
    }
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
        let Some(holder) = state.boards.get_mut(board) else {
            return false;
        };
        let list = &mut holder.versions;
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
        let holder = state.boards.entry(board.to_owned()).or_default();
        let before = holder.bytes;
        let mut first = now;
        if let Some(at) = holder.versions.iter().position(|(v, ..)| **v == *version) {
            if let Some((_, _, gone, was)) = holder.versions.remove(at) {
                holder.bytes -= gone.len();
                first = was;
            }
        }
        holder.bytes += value.len();
        holder
            .versions
            .push_back((version.into(), now, value.into(), first));
        let oldest = now.saturating_sub(self.bounds.keep_ms());
        while holder.versions.len() > self.bounds.keep_versions
            || holder.versions.front().is_some_and(|e| e.1 < oldest)
        {
            holder.pop_oldest();
        }
        state.bytes = state.bytes - before + holder.bytes;
        if holder.versions.is_empty() {
            state.boards.remove(board);
        }
        while state.bytes > self.bounds.max_bytes && state.evict_from_largest() {}
    }

    /// The value kept as `version` of `board`, if younger than the age bound.
    pub fn get(&self, board: &str, version: &str, now: u64) -> Kept {
        let state = self.lock();
        let oldest = now.saturating_sub(self.bounds.keep_ms());
        match state
            .boards
            .get(board)
            .and_then(|h| h.versions.iter().find(|(v, ..)| **v == *version))
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
        let held = state
            .boards
            .get(board)
            .into_iter()
            .flat_map(|h| &h.versions);
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
    fn the_byte_bound_takes_from_the_largest_holder_first() {
        let m = Memory::new(bounds(20, 100));
        m.put("victim", "v1", vec![0; 20], 1);
        // Another link's large boards, loaded after the victim's.
        for (i, v) in ["a", "b", "c", "d", "e"].iter().enumerate() {
            m.put("attacker", v, vec![0; 30], 2 + i as u64);
        }
        assert!(
            matches!(m.get("victim", "v1", 9), Kept::Value(_)),
            "the older, smaller holder keeps its version"
        );
        assert!(m.bytes() <= 100, "{}", m.bytes());
        assert_eq!(m.get("attacker", "a", 9), Kept::Missing, "its own go first");
        assert!(matches!(m.get("attacker", "e", 9), Kept::Value(_)));
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

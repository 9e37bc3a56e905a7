//! The index of a board key's kept versions in Redis (`…:vers`), as text:
//! a mark line, then one line per version, oldest sight first,
//! `version seen_ms bytes`; and beside it (`…:firsts`) when each was first
//! kept, `version first_ms`. The first-kept times live in a key of their
//! own so that the index keeps the shape every build reads: a node of an
//! earlier build, in a fleet being upgraded, takes any other line for an
//! index that is not ours and starts the board afresh, losing its kept
//! versions. What a server hands back is untrusted input: a line is read
//! only when it is exactly what a node writes (a version token, fields of
//! digits only), and any other line makes the whole value not ours. A
//! version with no first-kept time (the key expired, or was never
//! written) counts from when it was last seen. Read and written by the
//! Redis store only ([`super::RedisVersions`]).

use super::super::Listed;
use crate::pipeline::version::is_version;
use std::fmt::Write as _;

/// The first line of an index value.
pub(super) const INDEX_MARK: &str = "SBVI1\n";

/// One line of a board's index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Line {
    pub version: String,
    pub seen_ms: u64,
    pub bytes: usize,
    /// When first kept: never after `seen_ms` (a foreign line's is cut).
    pub first_ms: u64,
}

/// The first line of a first-kept times value.
pub(super) const FIRSTS_MARK: &str = "SBVF1\n";

/// The index's text for `lines`.
pub(super) fn text(lines: &[Line]) -> String {
    let mut text = String::from(INDEX_MARK);
    for l in lines {
        let _ = writeln!(text, "{} {} {}", l.version, l.seen_ms, l.bytes);
    }
    text
}

/// The first-kept times' text for `lines`.
pub(super) fn firsts_text(lines: &[Line]) -> String {
    let mut text = String::from(FIRSTS_MARK);
    for l in lines {
        let _ = writeln!(text, "{} {}", l.version, l.first_ms);
    }
    text
}

/// Sets each line's first-kept time from a first-kept times' text, never
/// past its last sight; `None` (nothing set) when the text is not one a
/// node writes.
pub(super) fn apply_firsts(text: &str, lines: &mut [Line]) -> Option<()> {
    let body = text.strip_prefix(FIRSTS_MARK)?;
    let mut firsts = std::collections::HashMap::new();
    for line in body.lines() {
        let (version, first) = line.split_once(' ')?;
        if !is_version(version) || firsts.len() >= 10_000 {
            return None;
        }
        firsts.insert(version, number::<u64>(first)?);
    }
    for l in lines {
        if let Some(first) = firsts.get(l.version.as_str()) {
            l.first_ms = (*first).min(l.seen_ms);
        }
    }
    Some(())
}

/// The lines younger than the age bound as [`Listed`], newest first.
pub(super) fn listed(lines: Vec<Line>, max: usize, now: u64, keep_ms: u64) -> Vec<Listed> {
    let oldest = now.saturating_sub(keep_ms);
    let listed = lines
        .into_iter()
        .filter(|l| l.seen_ms >= oldest)
        .map(|l| Listed {
            version: l.version,
            first_kept_ms: l.first_ms,
        })
        .collect();
    super::super::newest_first(listed, max)
}

/// The lines of an index's text, each first kept when last seen until
/// [`apply_firsts`] says otherwise; `None` when any line is not one a node
/// writes: `version seen bytes` (or `version seen bytes first`, which no
/// build writes any more, read for the nodes that wrote it for a while).
pub(super) fn parse_index(text: &str) -> Option<Vec<Line>> {
    let body = text.strip_prefix(INDEX_MARK)?;
    let mut lines = Vec::new();
    for line in body.lines() {
        let mut parts = line.split(' ');
        let (Some(version), Some(seen), Some(bytes), first, None) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            return None;
        };
        if !is_version(version) || lines.len() >= 10_000 {
            return None;
        }
        let seen_ms: u64 = number(seen)?;
        let first_ms = match first {
            Some(first) => number::<u64>(first)?.min(seen_ms),
            None => seen_ms,
        };
        lines.push(Line {
            version: version.to_owned(),
            seen_ms,
            bytes: number(bytes)?,
            first_ms,
        });
    }
    Some(lines)
}

/// A field of digits only (`parse` alone would take a leading `+`).
fn number<T: std::str::FromStr>(field: &str) -> Option<T> {
    if field.is_empty() || field.len() > 20 || !field.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    field.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_index_is_read_only_as_written() {
        let v = "0a".repeat(16);
        let ok = format!("{INDEX_MARK}{v} 5 100 4\n{v} 6 7\n");
        let lines = parse_index(&ok).expect("reads");
        assert_eq!(
            lines
                .iter()
                .map(|l| (l.seen_ms, l.bytes, l.first_ms))
                .collect::<Vec<_>>(),
            vec![(5, 100, 4), (6, 7, 6)],
            "a line of an older build: first kept when last seen"
        );
        assert_eq!(parse_index(INDEX_MARK), Some(Vec::new()));
        // A first sight after the last one (a foreign line) is cut to it.
        let late = parse_index(&format!("{INDEX_MARK}{v} 5 100 99\n")).expect("reads");
        assert_eq!(late[0].first_ms, 5);
        for bad in [
            String::new(),
            format!("{v} 5 100\n"),
            format!("{INDEX_MARK}{v} 5\n"),
            format!("{INDEX_MARK}{v} 5 100 9 1\n"),
            format!("{INDEX_MARK}{v} 5 100 x\n"),
            format!("{INDEX_MARK}{v} 5 100 -9\n"),
            format!("{INDEX_MARK}{v} 5 100 +9\n"),
            format!("{INDEX_MARK}{v} 5 100 \n"),
            format!("{INDEX_MARK}{v} 5 100 99999999999999999999999\n"),
            format!("{INDEX_MARK}XYZ 5 100\n"),
            format!("{INDEX_MARK}{v} -5 100\n"),
            format!("{INDEX_MARK}{v} +5 100\n"),
        ] {
            assert_eq!(parse_index(&bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_index_keeps_the_shape_earlier_builds_read_and_firsts_go_beside_it() {
        let v = "0a".repeat(16);
        let w = "0b".repeat(16);
        let lines = vec![
            Line {
                version: v.clone(),
                seen_ms: 9,
                bytes: 100,
                first_ms: 3,
            },
            Line {
                version: w.clone(),
                seen_ms: 12,
                bytes: 7,
                first_ms: 12,
            },
        ];
        let index = text(&lines);
        assert_eq!(index, format!("{INDEX_MARK}{v} 9 100\n{w} 12 7\n"));
        let mut read = parse_index(&index).expect("reads");
        assert_eq!(read[0].first_ms, 9, "last seen until told");
        assert_eq!(apply_firsts(&firsts_text(&lines), &mut read), Some(()));
        assert_eq!(read, lines);
        // Untrusted: a first sight after the last is cut to it; a value
        // not ours sets nothing.
        let mut read = parse_index(&index).expect("reads");
        assert_eq!(
            apply_firsts(&format!("{FIRSTS_MARK}{v} 99\n"), &mut read),
            Some(())
        );
        assert_eq!(read[0].first_ms, 9);
        for bad in [
            String::new(),
            format!("{INDEX_MARK}{v} 1\n"),
            format!("{FIRSTS_MARK}{v}\n"),
            format!("{FIRSTS_MARK}{v} x\n"),
            format!("{FIRSTS_MARK}{v} +1\n"),
            format!("{FIRSTS_MARK}XYZ 1\n"),
            format!("{FIRSTS_MARK}{v} 1 2\n"),
        ] {
            let mut read = parse_index(&index).expect("reads");
            assert_eq!(apply_firsts(&bad, &mut read), None, "{bad:?}");
            assert_eq!(read[0].first_ms, 9, "{bad:?}");
        }
    }

    #[test]
    fn listed_newest_first_by_when_first_kept() {
        let line = |c: char, seen_ms, first_ms| Line {
            version: c.to_string().repeat(32),
            seen_ms,
            bytes: 1,
            first_ms,
        };
        // The index's order is by last sight; the list's by first.
        let lines = vec![
            line('c', 120, 120),
            line('b', 130, 110),
            line('a', 140, 100),
        ];
        let order = |max, now| {
            listed(lines.clone(), max, now, 1000)
                .into_iter()
                .map(|l| (l.version.as_bytes()[0], l.first_kept_ms))
                .collect::<Vec<_>>()
        };
        assert_eq!(order(10, 200), vec![(b'c', 120), (b'b', 110), (b'a', 100)]);
        assert_eq!(order(1, 200), vec![(b'c', 120)], "bounded");
        assert_eq!(order(10, 1125), vec![(b'b', 110), (b'a', 100)], "aged");
    }

    #[test]
    fn what_is_written_reads_back() {
        let lines = vec![Line {
            version: "0a".repeat(16),
            seen_ms: 9,
            bytes: 3,
            first_ms: 4,
        }];
        let mut read = parse_index(&text(&lines)).expect("reads");
        assert_eq!(apply_firsts(&firsts_text(&lines), &mut read), Some(()));
        assert_eq!(read, lines);
    }
}

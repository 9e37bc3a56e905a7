//! The nearest valid selector for one that matches nothing in the model, for
//! the error's `hint` (`board.children.title` for `board.children.titel`;
//! the message itself names only the unknown item). Called by
//! `compile::validate` on its error path only.
//!
//! One name segment is replaced by a field name of the model within a small
//! edit distance (case counts as no difference), and the result must match the
//! model. The candidates are few (names within the distance), so the cost is
//! bounded by the selector's segments times the model's distinct field names.
//! Suggestions come from the model only, which holds no sensitive field, so a
//! hint never names one.

use super::parse::Segment;
use crate::document::model;
use std::sync::LazyLock;

/// Every distinct field name of the model, sorted.
static NAMES: LazyLock<Vec<Box<str>>> = LazyLock::new(|| {
    let model = model::get();
    let mut names: Vec<Box<str>> = (0..model.len())
        .flat_map(|n| model.node(n).fields().map(|(name, _)| Box::from(name)))
        .collect();
    names.sort_unstable();
    names.dedup();
    names
});

/// The selector, written with one name replaced, that is nearest to
/// `segments` and matches the model; `None` when no name is near enough.
pub(crate) fn nearest(
    segments: &[Segment],
    matches: impl Fn(&[Segment]) -> bool,
) -> Option<String> {
    let mut candidates: Vec<(usize, usize, &str)> = Vec::new();
    for (pos, segment) in segments.iter().enumerate() {
        let Segment::Name(name) = segment else {
            continue;
        };
        let limit = allowed(name.len());
        for candidate in NAMES.iter() {
            if **candidate == **name {
                continue;
            }
            if let Some(d) = distance(name, candidate, limit) {
                candidates.push((d, pos, candidate));
            }
        }
    }
    // Nearest first; on a tie, the earlier segment, then the name's order.
    candidates.sort_unstable();
    let mut trial = segments.to_vec();
    for (_, pos, name) in candidates {
        trial[pos] = Segment::Name(name.into());
        if matches(&trial) {
            return Some(write(&trial));
        }
        trial[pos] = segments[pos].clone();
    }
    None
}

/// Edits allowed for a name of `len` characters: one for short names, up to
/// three for long ones, so `nope` suggests nothing and `chilren` does.
fn allowed(len: usize) -> usize {
    match len {
        0..=4 => 1,
        5..=8 => 2,
        _ => 3,
    }
}

/// Levenshtein distance between `a` and `b` ignoring ASCII case, or `None`
/// when it exceeds `limit`.
fn distance(a: &str, b: &str, limit: usize) -> Option<usize> {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len().abs_diff(b.len()) > limit {
        return None;
    }
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, &x) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        let mut best = row[0];
        for (j, &y) in b.iter().enumerate() {
            let cost = usize::from(!x.eq_ignore_ascii_case(&y));
            let next = (diagonal + cost).min(row[j] + 1).min(row[j + 1] + 1);
            diagonal = row[j + 1];
            row[j + 1] = next;
            best = best.min(next);
        }
        if best > limit {
            return None;
        }
    }
    (row[b.len()] <= limit).then_some(row[b.len()])
}

fn write(segments: &[Segment]) -> String {
    let parts: Vec<&str> = segments
        .iter()
        .map(|s| match s {
            Segment::Name(name) => name,
            Segment::AnyOne => "*",
            Segment::AnyDepth => "**",
        })
        .collect();
    parts.join(".")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        let cases = [
            ("title", "title", 2, Some(0)),
            ("titel", "title", 2, Some(2)),
            ("Title", "title", 2, Some(0)),
            ("chilren", "children", 2, Some(1)),
            ("nope", "note", 1, Some(1)),
            ("password", "published", 3, None),
            ("", "id", 2, Some(2)),
            ("abc", "abcdef", 2, None),
        ];
        for (a, b, limit, expected) in cases {
            assert_eq!(distance(a, b, limit), expected, "{a} {b}");
        }
    }
}

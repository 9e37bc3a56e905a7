//! The order of a node's children, for the tree builder.
//!
//! Children listed in `canvasOrder[parent]` come first, in that order (ids that
//! are not children of that parent, and repeats, are ignored). The rest follow
//! ordered by `section`, then `position.score`, `index`, `y`, `x`, then `id`.
//!
//! How values compare, for each of `section`, `score`, `index`, `y`, `x`:
//! numbers < strings < booleans < missing (absent, `null`, arrays, objects).
//! Numbers compare numerically, and a string that is a finite decimal number
//! (`"12"`, `"-0.5"`, `"1e3"`; not `"inf"`, `"NaN"`, `" 1"`) counts as that
//! number, because Milanote has written some positions as strings. Other
//! strings compare by their UTF-8 bytes; `false < true`. Values that compare
//! equal (`1`, `1.0`, `"1"`) fall through to the next key, and `id` (unique in
//! a board) settles the rest, so the order is total and deterministic.

use crate::document::reading::numeric;
use crate::provider::head::{HeldLocation, HeldScalar};
use serde_json::Value;
use std::cmp::Ordering;
use std::collections::HashMap;

/// One comparable value of a sort key.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    Number(f64),
    Text(String),
    Bool(bool),
    Missing,
}

impl Part {
    fn of(value: Option<&HeldScalar>) -> Part {
        match value {
            Some(HeldScalar::Number(n)) => n
                .as_f64()
                .filter(|f| f.is_finite())
                .map_or(Part::Missing, Part::Number),
            Some(HeldScalar::Text(s)) => {
                numeric(s).map_or_else(|| Part::Text(s.as_ref().to_owned()), Part::Number)
            }
            Some(HeldScalar::Bool(b)) => Part::Bool(*b),
            None => Part::Missing,
        }
    }

    fn rank(&self) -> u8 {
        match self {
            Part::Number(_) => 0,
            Part::Text(_) => 1,
            Part::Bool(_) => 2,
            Part::Missing => 3,
        }
    }

    fn compare(&self, other: &Part) -> Ordering {
        match (self, other) {
            // Both finite: partial_cmp is total here (and 0.0 == -0.0).
            (Part::Number(a), Part::Number(b)) => a.partial_cmp(b).unwrap_or(Ordering::Equal),
            (Part::Text(a), Part::Text(b)) => a.cmp(b),
            (Part::Bool(a), Part::Bool(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

/// What the fallback order compares, `id` last.
#[derive(Debug, Clone, PartialEq)]
pub struct SortKey {
    parts: [Part; 5],
    id: String,
}

impl SortKey {
    pub fn new(id: &str, location: Option<&HeldLocation>) -> SortKey {
        // `position` in `POSITION_KEYS`' order: x, y, index, score.
        let coord = |i: usize| Part::of(location.and_then(|l| l.position[i].as_ref()));
        SortKey {
            parts: [
                Part::of(location.and_then(|l| l.section.as_ref())),
                coord(3),
                coord(2),
                coord(1),
                coord(0),
            ],
            id: id.to_owned(),
        }
    }

    pub fn compare(&self, other: &SortKey) -> Ordering {
        self.parts
            .iter()
            .zip(other.parts.iter())
            .map(|(a, b)| a.compare(b))
            .find(|o| o.is_ne())
            .unwrap_or_else(|| self.id.cmp(&other.id))
    }
}

/// Orders `children` (indexes into `keys`): those listed in `canvas_order`
/// first, in that order, then the rest by [`SortKey`].
pub fn order_children(
    children: &[usize],
    keys: &[SortKey],
    canvas_order: Option<&Value>,
) -> Vec<usize> {
    let mut ordered = Vec::with_capacity(children.len());
    let mut placed = vec![false; children.len()];
    if let Some(listed) = canvas_order.and_then(Value::as_array) {
        let by_id: HashMap<&str, usize> = children
            .iter()
            .enumerate()
            .filter_map(|(slot, &i)| Some((keys.get(i)?.id.as_str(), slot)))
            .collect();
        for id in listed {
            let slot = match id {
                Value::String(s) => by_id.get(s.as_str()),
                Value::Number(n) => by_id.get(n.to_string().as_str()),
                _ => None,
            };
            if let Some(&slot) = slot {
                if !placed[slot] {
                    placed[slot] = true;
                    ordered.push(children[slot]);
                }
            }
        }
    }
    let mut rest: Vec<usize> = children
        .iter()
        .zip(placed.iter())
        .filter(|(_, &done)| !done)
        .map(|(&i, _)| i)
        .collect();
    rest.sort_by(|&a, &b| match (keys.get(a), keys.get(b)) {
        (Some(ka), Some(kb)) => ka.compare(kb),
        _ => a.cmp(&b),
    });
    ordered.extend(rest);
    ordered
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(id: &str, section: Value, score: Value, index: Value, y: Value, x: Value) -> SortKey {
        let s = |v: Value| HeldScalar::of(Some(&v));
        let location = HeldLocation {
            section: s(section),
            position: [s(x), s(y), s(index), s(score)],
            ..HeldLocation::default()
        };
        SortKey::new(id, Some(&location))
    }

    fn ids(keys: &[SortKey], order: &[usize]) -> Vec<String> {
        order.iter().map(|&i| keys[i].id.clone()).collect()
    }

    #[test]
    fn part_comparison_table() {
        let n = Value::Null;
        let cases: &[(Value, Value, Ordering)] = &[
            (json!(1), json!(2), Ordering::Less),
            (json!(-1.5), json!(-2), Ordering::Greater),
            (json!(10), json!("9"), Ordering::Greater),
            (json!("10"), json!("9"), Ordering::Greater),
            (json!(1), json!("1.0"), Ordering::Equal),
            (json!(0.0), json!(-0.0), Ordering::Equal),
            (json!("1e3"), json!(999), Ordering::Greater),
            (json!(5), json!("abc"), Ordering::Less),
            (json!("inf"), json!(5), Ordering::Greater),
            (json!(" 1"), json!("a"), Ordering::Less),
            (json!("b"), json!("a"), Ordering::Greater),
            (json!("Z"), json!("a"), Ordering::Less),
            (json!("zzz"), json!(false), Ordering::Less),
            (json!(false), json!(true), Ordering::Less),
            (json!(true), n.clone(), Ordering::Less),
            (n.clone(), n.clone(), Ordering::Equal),
            (json!(1e308), n.clone(), Ordering::Less),
        ];
        for (a, b, want) in cases {
            let pa = Part::of(HeldScalar::of(Some(a)).as_ref());
            let pb = Part::of(HeldScalar::of(Some(b)).as_ref());
            assert_eq!(pa.compare(&pb), *want, "{a} vs {b}");
        }
    }

    #[test]
    fn fallback_order_is_section_score_index_y_x_id() {
        let n = Value::Null;
        let keys = vec![
            key(
                "a",
                json!("b-section"),
                json!(1),
                n.clone(),
                n.clone(),
                n.clone(),
            ),
            key(
                "b",
                json!("a-section"),
                json!(9),
                n.clone(),
                n.clone(),
                n.clone(),
            ),
            key(
                "c",
                json!("a-section"),
                json!(2),
                n.clone(),
                n.clone(),
                n.clone(),
            ),
            key(
                "d",
                json!("a-section"),
                json!(2),
                json!(0),
                n.clone(),
                n.clone(),
            ),
            key(
                "e",
                json!("a-section"),
                json!(2),
                json!(0),
                json!(5),
                json!(1),
            ),
            key(
                "f",
                json!("a-section"),
                json!(2),
                json!(0),
                json!(5),
                json!(0),
            ),
            key(
                "g",
                json!("a-section"),
                json!(2),
                json!(0),
                json!(5),
                json!(0),
            ),
            key("h", n.clone(), n.clone(), n.clone(), n.clone(), n.clone()),
            key("0", n.clone(), n.clone(), n.clone(), n.clone(), n.clone()),
        ];
        let all: Vec<usize> = (0..keys.len()).rev().collect();
        let order = order_children(&all, &keys, None);
        assert_eq!(
            ids(&keys, &order),
            ["f", "g", "e", "d", "c", "b", "a", "0", "h"]
        );
    }

    #[test]
    fn canvas_order_first_then_fallback() {
        let n = Value::Null;
        let keys: Vec<SortKey> = ["a", "b", "c", "d", "7"]
            .iter()
            .map(|id| key(id, n.clone(), n.clone(), n.clone(), n.clone(), n.clone()))
            .collect();
        let all: Vec<usize> = (0..keys.len()).collect();
        let cases: &[(Value, &[&str])] = &[
            (json!(["c", "a"]), &["c", "a", "7", "b", "d"]),
            (
                json!(["c", "x", "c", null, {"id": "b"}, "a"]),
                &["c", "a", "7", "b", "d"],
            ),
            (json!([7, "d"]), &["7", "d", "a", "b", "c"]),
            (json!("c"), &["7", "a", "b", "c", "d"]),
            (json!([]), &["7", "a", "b", "c", "d"]),
        ];
        for (listed, want) in cases {
            let order = order_children(&all, &keys, Some(listed));
            assert_eq!(ids(&keys, &order), *want, "{listed}");
        }
    }
}

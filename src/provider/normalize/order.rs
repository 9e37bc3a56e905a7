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
use crate::provider::answer::JsonText;
use crate::provider::head::{HeldLocation, HeldScalar};
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::fmt;

/// One comparable value of a sort key, borrowed from the element's head.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Part<'a> {
    Number(f64),
    Text(&'a str),
    Bool(bool),
    Missing,
}

impl<'a> Part<'a> {
    fn of(value: Option<&'a HeldScalar>) -> Part<'a> {
        match value {
            Some(HeldScalar::Number(n)) => n
                .as_f64()
                .filter(|f| f.is_finite())
                .map_or(Part::Missing, Part::Number),
            Some(HeldScalar::Bool(b)) => Part::Bool(*b),
            Some(text) => match text.as_str() {
                Some(s) => numeric(s).map_or(Part::Text(s), Part::Number),
                None => Part::Missing,
            },
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

/// What the fallback order compares, `id` last. Borrowed from the heads
/// and made only for the children that `canvasOrder` does not place, while
/// their parent's children are ordered: a board whose canvas lists every
/// card makes none.
#[derive(Debug, Clone, PartialEq)]
pub struct SortKey<'a> {
    parts: [Part<'a>; 5],
    id: &'a str,
}

impl<'a> SortKey<'a> {
    pub fn new(id: &'a str, location: Option<&'a HeldLocation>) -> SortKey<'a> {
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
            id,
        }
    }

    pub fn compare(&self, other: &SortKey) -> Ordering {
        self.parts
            .iter()
            .zip(other.parts.iter())
            .map(|(a, b)| a.compare(b))
            .find(|o| o.is_ne())
            .unwrap_or_else(|| self.id.cmp(other.id))
    }
}

/// Orders `children`, whose ids and locations `child` gives: those listed
/// in `canvas_order` (the raw `canvasOrder` entry of their parent) first,
/// in that order, then the rest by [`SortKey`].
pub fn order_children<'a>(
    children: &[usize],
    child: impl Fn(usize) -> (&'a str, Option<&'a HeldLocation>),
    canvas_order: Option<&JsonText>,
) -> Vec<usize> {
    let mut ordered = Vec::with_capacity(children.len());
    let mut placed = vec![false; children.len()];
    if let Some(listed) = canvas_order {
        let by_id: HashMap<&str, usize> = children
            .iter()
            .enumerate()
            .map(|(slot, &i)| (child(i).0, slot))
            .collect();
        listed_ids(listed, |id| {
            if let Some(&slot) = by_id.get(id) {
                if !placed[slot] {
                    placed[slot] = true;
                    ordered.push(children[slot]);
                }
            }
        });
    }
    let mut rest: Vec<(SortKey<'a>, usize)> = children
        .iter()
        .zip(placed.iter())
        .filter(|(_, &done)| !done)
        .map(|(&i, _)| {
            let (id, location) = child(i);
            (SortKey::new(id, location), i)
        })
        .collect();
    rest.sort_by(|(a, _), (b, _)| a.compare(b));
    ordered.extend(rest.into_iter().map(|(_, i)| i));
    ordered
}

/// Calls `each` with every id a raw `canvasOrder` entry lists, in its
/// order, read from its text without building a value: a string as it
/// is, a number as serde_json writes it (Milanote's ids are strings, and a
/// number names the element whose id is its text); any other item names
/// nothing, and so does an entry that is not an array. The text was
/// checked as a value parse would check it when the answer was read.
fn listed_ids(text: &JsonText, each: impl FnMut(&str)) {
    let mut de = serde_json::Deserializer::from_str(text.text());
    // An entry that is not an array (or, never after the answer's check,
    // bad JSON) lists nothing more.
    let _ = de.deserialize_any(Listed(each));
}

/// The items of a `canvasOrder` array, handed on one by one.
struct Listed<F>(F);

impl<'de, F: FnMut(&str)> Visitor<'de> for Listed<F> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of ids")
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        while let Some(item) = seq.next_element::<ListedId<'de>>()? {
            if let Some(id) = item.0 {
                (self.0)(&id);
            }
        }
        Ok(())
    }
}

/// One item of a `canvasOrder` array: the id it names, if any.
struct ListedId<'de>(Option<Cow<'de, str>>);

impl<'de> Deserialize<'de> for ListedId<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ListedIdVisitor)
    }
}

struct ListedIdVisitor;

impl<'de> Visitor<'de> for ListedIdVisitor {
    type Value = ListedId<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Self::Value, E> {
        Ok(ListedId(Some(Cow::Borrowed(s))))
    }

    fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
        Ok(ListedId(Some(Cow::Owned(s.to_owned()))))
    }

    // Numbers as a value holds them and writes them (`Number`'s text).
    fn visit_u64<E>(self, n: u64) -> Result<Self::Value, E> {
        Ok(ListedId(Some(
            serde_json::Number::from(n).to_string().into(),
        )))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Self::Value, E> {
        Ok(ListedId(Some(
            serde_json::Number::from(n).to_string().into(),
        )))
    }

    fn visit_f64<E>(self, n: f64) -> Result<Self::Value, E> {
        let text = serde_json::Number::from_f64(n).map(|n| n.to_string().into());
        Ok(ListedId(text))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(ListedId(None))
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(ListedId(None))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(ListedId(None))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(ListedId(None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// A child: its id and location.
    type Child = (String, HeldLocation);

    fn key(id: &str, section: Value, score: Value, index: Value, y: Value, x: Value) -> Child {
        let s = |v: Value| HeldScalar::of(Some(&v));
        let location = HeldLocation {
            section: s(section),
            position: [s(x), s(y), s(index), s(score)],
            ..HeldLocation::default()
        };
        (id.to_owned(), location)
    }

    fn order(children: &[Child], all: &[usize], listed: Option<&Value>) -> Vec<String> {
        let listed = listed.map(JsonText::of);
        let child = |i: usize| (children[i].0.as_str(), Some(&children[i].1));
        order_children(all, child, listed.as_ref())
            .iter()
            .map(|&i| children[i].0.clone())
            .collect()
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
            let (ha, hb) = (HeldScalar::of(Some(a)), HeldScalar::of(Some(b)));
            let (pa, pb) = (Part::of(ha.as_ref()), Part::of(hb.as_ref()));
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
        assert_eq!(
            order(&keys, &all, None),
            ["f", "g", "e", "d", "c", "b", "a", "0", "h"]
        );
    }

    #[test]
    fn canvas_order_first_then_fallback() {
        let n = Value::Null;
        let keys: Vec<Child> = ["a", "b", "c", "d", "7"]
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
            (json!([7.0, 7, "d"]), &["7", "d", "a", "b", "c"]),
            (
                json!([[], {"c": "c"}, true, "c", "b\u{0}", "d"]),
                &["c", "d", "7", "a", "b"],
            ),
            (json!({"0": "c"}), &["7", "a", "b", "c", "d"]),
            (json!("c"), &["7", "a", "b", "c", "d"]),
            (json!([]), &["7", "a", "b", "c", "d"]),
        ];
        for (listed, want) in cases {
            assert_eq!(order(&keys, &all, Some(listed)), *want, "{listed}");
        }
    }

    /// Ids are read from the entry's text as a value names them: escapes
    /// unescaped, numbers in serde_json's writing, other items skipped.
    #[test]
    fn listed_ids_are_the_ids_a_value_lists() {
        let body = br#"{"canvasOrder": {"p": ["\u0063", "b\u0000", 7, 7.0, -0, 1e2, 1.50, [7], {"a": 1}, null, true, "a"], "q": "a", "r": {"a": "a"}}}"#;
        let order = crate::provider::answer::Answer::parse(body)
            .unwrap()
            .canvas_order
            .unwrap();
        for key in ["p", "q", "r"] {
            let mut got = Vec::new();
            listed_ids(&order[key], |id| got.push(id.to_owned()));
            let want: Vec<String> = order[key]
                .value()
                .unwrap()
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|item| match item {
                    Value::String(s) => Some(s.clone()),
                    Value::Number(n) => Some(n.to_string()),
                    _ => None,
                })
                .collect();
            assert_eq!(got, want, "{key}");
        }
        let mut p = Vec::new();
        listed_ids(&order["p"], |id| p.push(id.to_owned()));
        assert_eq!(p, ["c", "b\0", "7", "7.0", "-0.0", "100.0", "1.5", "a"]);
    }
}

//! A table's `tableContent` read from its text: rows and cells walked as
//! they come, each cell's rich text (`draftContent`, `textContent`) read
//! straight into blocks and plain text ([`RichSeed`]) and its other members
//! into small values, then made into cells by the rules of
//! [`fields::cell_of`] (see `fields`' module docs). The serving path's
//! reader for `TABLE` content, beside [`super::content`]; the reference
//! pipeline parses the whole content into a value.

use super::fields;
use crate::document::{RichText, Table, TableCell};
use crate::provider::raw::{raw_array, scalar};
use crate::provider::rich_text::RichSeed;
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::fmt;

/// `tableContent`: a table when it is an object.
pub struct TableSeed;

impl<'de> DeserializeSeed<'de> for TableSeed {
    type Value = Option<Table>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TableSeed {
    type Value = Option<Table>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a table")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut rows = None;
        let mut members = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if key == "data" {
                rows = map.next_value_seed(List(Row))?;
            } else {
                members.insert(key, map.next_value()?);
            }
        }
        let rows = rows.unwrap_or_default();
        Ok(Some(Table {
            rows: rows.into_iter().map(Option::unwrap_or_default).collect(),
            column_widths: raw_array(members.get("colWidthsGU")),
            version: scalar(members.get("version")),
        }))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<Value>()?.is_some() {}
        Ok(None)
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    crate::provider::scalars_are_none!();
}

/// Reads one item of a list.
trait ItemSeed: Copy {
    type Item;
    fn seed<'de, D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Item, D::Error>;
}

/// An array of items read by `S`; `None` when not an array.
#[derive(Clone, Copy)]
struct List<S>(S);

struct Each<S>(S);

impl<'de, S: ItemSeed> DeserializeSeed<'de> for Each<S> {
    type Value = S::Item;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<S::Item, D::Error> {
        self.0.seed(deserializer)
    }
}

impl<'de, S: ItemSeed> DeserializeSeed<'de> for List<S> {
    type Value = Option<Vec<S::Item>>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(ListVisitor(self.0))
    }
}

struct ListVisitor<S>(S);

impl<'de, S: ItemSeed> Visitor<'de> for ListVisitor<S> {
    type Value = Option<Vec<S::Item>>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Each(self.0))? {
            items.push(item);
        }
        Ok(Some(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<String, Value>()?.is_some() {}
        Ok(None)
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    crate::provider::scalars_are_none!();
}

/// A row: its cells, `None` when it is not an array (then no cells).
#[derive(Clone, Copy)]
struct Row;

impl ItemSeed for Row {
    type Item = Option<Vec<TableCell>>;
    fn seed<'de, D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Item, D::Error> {
        List(Cell).deserialize(deserializer)
    }
}

/// One cell.
#[derive(Clone, Copy)]
struct Cell;

impl ItemSeed for Cell {
    type Item = TableCell;
    fn seed<'de, D: Deserializer<'de>>(self, deserializer: D) -> Result<TableCell, D::Error> {
        deserializer.deserialize_any(CellVisitor)
    }
}

struct CellVisitor;

impl CellVisitor {
    fn scalar<E>(value: Value) -> Result<TableCell, E> {
        Ok(fields::scalar_cell(&value))
    }
}

impl<'de> Visitor<'de> for CellVisitor {
    type Value = TableCell;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a table cell")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TableCell, A::Error> {
        let mut members = Map::new();
        let (mut draft, mut text): (Option<RichText>, Option<RichText>) = (None, None);
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "draftContent" => draft = map.next_value_seed(RichSeed::default())?,
                "textContent" => text = map.next_value_seed(RichSeed::default())?,
                _ => {
                    members.insert(key, map.next_value()?);
                }
            }
        }
        Ok(fields::cell_of(&members, draft.or(text)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<TableCell, A::Error> {
        while seq.next_element::<Value>()?.is_some() {}
        Ok(TableCell::default())
    }
    fn visit_str<E>(self, s: &str) -> Result<TableCell, E> {
        Self::scalar(Value::String(s.to_owned()))
    }
    fn visit_bool<E>(self, v: bool) -> Result<TableCell, E> {
        Self::scalar(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<TableCell, E> {
        Self::scalar(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<TableCell, E> {
        Self::scalar(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<TableCell, E> {
        Self::scalar(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_unit<E>(self) -> Result<TableCell, E> {
        Self::scalar(Value::Null)
    }
}

//! What is read of an element besides its `content`: its id, type, place,
//! times and thread id, read once from the element's fields when its answer
//! is read (the fields themselves are not kept). Also the one rule for which
//! element an id names.

use crate::document::reading::is_removed_section;
use crate::document::{Location, Position, Timestamps};
#[cfg(test)]
use crate::provider::raw::ident;
#[cfg(any(test, feature = "internals"))]
use crate::provider::raw::object;
use crate::provider::time::{time_ms, EpochText};
#[cfg(any(test, feature = "internals"))]
use serde_json::Map;
#[cfg(any(test, feature = "internals"))]
use serde_json::Value;

mod held;

pub use held::{
    HeldField, HeldScalar, IdField, IdRead, KnownType, ParentField, SharedField, SharedStr,
    SharedStrs, TypeField, TypeName,
};

/// The nested `location.position` keys, in [`Position`]'s order (the
/// answer reader matches them as literals, in this order).
#[cfg(any(test, feature = "internals"))]
pub const POSITION_KEYS: [&str; 4] = ["x", "y", "index", "score"];
/// The older flat position keys (in `location`, else at the element's top
/// level), in [`Position`]'s order.
#[cfg(any(test, feature = "internals"))]
pub const FLAT_POSITION_KEYS: [&str; 4] =
    ["positionX", "positionY", "positionIndex", "positionScore"];
/// The `meta` keys that become `timestamps`, in [`Timestamps`]' order (the
/// answer reader matches them as literals, in this order).
#[cfg(any(test, feature = "internals"))]
pub const TIME_KEYS: [&str; 4] = [
    "createdTime",
    "modifiedTime",
    "significantModified",
    "locationSectionModifiedTime",
];

/// The fields of an element that its head is read from, each as the
/// provider sent it. The answer reader fills it member by member, without
/// building the element; [`HeadFields::of`] takes it from a whole value.
/// Both become a [`Head`] through one rule, [`Head::from_fields`].
///
/// Each field is held as a [`HeldScalar`] (16 bytes), `None` for null, an
/// array or an object as well as for absence: no rule of the head reads
/// anything of a field but a string, a number or a boolean. As values (72
/// bytes each) the fields of one element were about 1.5 KB, moved several
/// times while the element was read.
#[derive(Debug, Default)]
pub struct HeadFields {
    pub id: Option<HeldScalar>,
    /// `id` was a string equal to the element's map key (the answer reader
    /// notes it instead of copying the string, [`IdField`]).
    pub id_is_key: bool,
    pub underscore_id: Option<HeldScalar>,
    /// `elementType`, when it is a string.
    pub element_type: Option<TypeName>,
    pub thread_id: Option<HeldScalar>,
    /// `location`, when it is an object.
    pub location: Option<LocationFields>,
    /// The times of `meta`, when it is an object.
    pub meta: Option<MetaTimes>,
    /// The element's own [`FLAT_POSITION_KEYS`].
    pub flat: [Option<HeldScalar>; 4],
}

/// What is read of `location`.
#[derive(Debug, Default)]
pub struct LocationFields {
    /// `parentId`, when it is an identifier ([`HeldScalar::into_ident`]).
    pub parent_id: Option<SharedStr>,
    pub section: Option<HeldScalar>,
    pub root_board: Option<HeldScalar>,
    /// [`POSITION_KEYS`] of `position`, when it is an object.
    pub position: Option<[Option<HeldScalar>; 4]>,
    /// [`FLAT_POSITION_KEYS`] inside `location`.
    pub flat: [Option<HeldScalar>; 4],
}

/// The [`TIME_KEYS`] of `meta` as epoch milliseconds, formatted only when
/// a node is written ([`MetaTimes::texts`]). Every element holds its times
/// until it is written, so they are held in eight bytes each: a time sent
/// as anything but an integer (a float, a numeric or date string) is read
/// into its milliseconds as it is held ([`time_ms`]), and a time that is
/// absent or unreadable is `NO_TIME`: `i64::MIN` milliseconds, outside
/// the years a document can write, so nothing is written for it either way.
#[derive(Debug, Clone, PartialEq)]
pub struct MetaTimes([i64; 4]);

/// A time that is absent, or not one.
const NO_TIME: i64 = i64::MIN;

impl Default for MetaTimes {
    /// No times (no `meta`, or none of its times).
    fn default() -> MetaTimes {
        MetaTimes([NO_TIME; 4])
    }
}

impl MetaTimes {
    /// The times as sent, in [`TIME_KEYS`]' order.
    pub fn new(times: [Option<HeldScalar>; 4]) -> MetaTimes {
        MetaTimes(times.map(|time| {
            let ms = match time {
                Some(HeldScalar::Number(n)) if n.is_i64() => n.as_i64(),
                Some(other) => time_ms(&other.into_value()),
                None => None,
            };
            ms.unwrap_or(NO_TIME)
        }))
    }

    /// Each time as the document writes it, in [`TIME_KEYS`]' order:
    /// `None` where it is absent or not a time the document can write.
    pub fn texts(&self) -> [Option<EpochText>; 4] {
        self.0.map(EpochText::of_ms)
    }

    /// `timestamps`: each time normalized, `None` when none is left.
    pub fn timestamps(&self) -> Option<Timestamps> {
        let [created, modified, significant, location] = self
            .texts()
            .map(|text| text.map(|text| text.as_str().to_owned()));
        let stamps = Timestamps {
            created_at: created,
            modified_at: modified,
            significant_modified_at: significant,
            location_modified_at: location,
        };
        (stamps != Timestamps::default()).then_some(stamps)
    }
}

#[cfg(any(test, feature = "internals"))]
fn picked<const N: usize>(map: &Map<String, Value>, keys: [&str; N]) -> [Option<HeldScalar>; N] {
    keys.map(|k| HeldScalar::of(map.get(k)))
}

impl HeadFields {
    /// The fields of a whole element (tests, fixtures).
    #[cfg(any(test, feature = "internals"))]
    pub fn of(element: &Map<String, Value>) -> HeadFields {
        let get = |k: &str| HeldScalar::of(element.get(k));
        HeadFields {
            id: get("id"),
            id_is_key: false,
            underscore_id: get("_id"),
            element_type: match element.get("elementType") {
                Some(Value::String(name)) => Some(TypeName::of(name)),
                _ => None,
            },
            thread_id: get("threadId"),
            location: object(element.get("location")).map(|l| LocationFields {
                parent_id: HeldScalar::into_ident(HeldScalar::of(l.get("parentId")))
                    .map(SharedStr::from),
                section: HeldScalar::of(l.get("section")),
                root_board: HeldScalar::of(l.get("rootBoard")),
                position: object(l.get("position")).map(|p| picked(p, POSITION_KEYS)),
                flat: picked(l, FLAT_POSITION_KEYS),
            }),
            meta: object(element.get("meta")).map(|m| MetaTimes::new(picked(m, TIME_KEYS))),
            flat: picked(element, FLAT_POSITION_KEYS),
        }
    }
}

/// `location {parentId, section, rootBoard, position}`: both
/// `location.position` and the older flat `positionX/Y/Index/Score` (in
/// `location`, else at the element's top level) are read, coordinate by
/// coordinate, in that order. Fields of the wrong type are omitted, and so
/// is a location left empty.
///
/// The fields' strings are moved into the location, not copied.
fn location(loc: Option<LocationFields>, top: [Option<HeldScalar>; 4]) -> Option<HeldLocation> {
    let mut loc = loc.unwrap_or_default();
    let mut position = loc.position.take().unwrap_or_default();
    let mut top = top;
    let mut coord = |i: usize| {
        position[i]
            .take()
            .or_else(|| loc.flat[i].take())
            .or_else(|| top[i].take())
    };
    let position = [coord(0), coord(1), coord(2), coord(3)];
    let location = HeldLocation {
        parent_id: loc.parent_id,
        section: loc.section,
        root_board: loc.root_board,
        position,
    };
    (location != HeldLocation::default()).then_some(location)
}

/// An element's [`Location`], its scalars held as [`HeldScalar`]s, never
/// empty in a [`Head`]; [`HeldLocation::location`] makes the document's.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HeldLocation {
    /// `parentId`, when it is an identifier. Shared by the elements that
    /// name the same parent (as the children of one column or board do)
    /// when the answer reader reads them.
    pub parent_id: Option<SharedStr>,
    pub section: Option<HeldScalar>,
    pub root_board: Option<HeldScalar>,
    /// The coordinates in [`POSITION_KEYS`]' order.
    pub position: [Option<HeldScalar>; 4],
}

impl HeldLocation {
    /// The location as the document writes it: `position` absent when no
    /// coordinate is there.
    pub fn location(&self) -> Location {
        let held = |s: &Option<HeldScalar>| s.as_ref().map(HeldScalar::scalar);
        let [x, y, index, score] = self.position.each_ref().map(held);
        let position = Position { x, y, index, score };
        Location {
            parent_id: self.parent_id.as_deref().map(str::to_owned),
            section: held(&self.section),
            root_board: held(&self.root_board),
            position: (position != Position::default()).then_some(position),
        }
    }
}

/// One element's head, 152 bytes: every element's is held from the
/// answer's read until its document is written, so what few elements have
/// is boxed apart (`RareFields`) and the type is one byte.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Head {
    /// Whether the element is an object. Anything else is no element, but
    /// still claims its map key (and can be replaced there).
    pub is_object: bool,
    /// `elementType` when it is one of the types the normalizer reads;
    /// any other string is in `rare`.
    known_type: Option<KnownType>,
    /// An id other than the map key, a `threadId`, or a type the
    /// normalizer does not read; `None` when the element has none of them
    /// (never an empty box, so heads compare by what they hold).
    rare: Option<Box<RareFields>>,
    /// `location`, normalized ([`HeldLocation::location`] writes it).
    pub location: Option<HeldLocation>,
    /// The times of `meta` ([`Head::timestamps`] formats them).
    pub times: MetaTimes,
}

/// The fields of a [`Head`] that few elements have.
#[derive(Debug, Clone, PartialEq, Default)]
struct RareFields {
    /// `id`, else `_id`, when it is an identifier other than the element's
    /// map key (nearly every element claims its key, so the key's string
    /// is not held twice).
    id: Option<Box<str>>,
    /// The top-level `threadId`, when it is an identifier.
    thread_id: Option<Box<str>>,
    /// `elementType`, when it is a string that is not a [`KnownType`].
    other_type: Option<Box<str>>,
}

impl Head {
    /// The head of no element: what a non-object entry holds.
    pub const NONE: Head = Head {
        is_object: false,
        known_type: None,
        rare: None,
        location: None,
        times: MetaTimes([NO_TIME; 4]),
    };

    /// The head of a raw element (its `content` is not read), whose map
    /// key is not known: its `id` is kept even when it is the key.
    #[cfg(any(test, feature = "internals"))]
    pub fn read(element: &Value) -> Head {
        Head::read_keyed(element, None)
    }

    /// The head of a raw element found under map key `key`, as the answer
    /// reader reads it.
    #[cfg(any(test, feature = "internals"))]
    pub fn read_under(key: &str, element: &Value) -> Head {
        Head::read_keyed(element, Some(key))
    }

    #[cfg(any(test, feature = "internals"))]
    fn read_keyed(element: &Value, key: Option<&str>) -> Head {
        match element {
            Value::Object(fields) => Head::from_fields(HeadFields::of(fields), key),
            _ => Head::default(),
        }
    }

    /// The head of an object element with these fields, found under map
    /// key `key` when it is known.
    pub fn from_fields(fields: HeadFields, key: Option<&str>) -> Head {
        let id = if fields.id_is_key {
            None
        } else {
            HeldScalar::into_ident(fields.id)
                .or_else(|| HeldScalar::into_ident(fields.underscore_id))
                .filter(|id| Some(&**id) != key)
        };
        let (known_type, other_type) = match fields.element_type {
            Some(TypeName::Known(known)) => (Some(known), None),
            Some(TypeName::Other(name)) => (None, Some(name)),
            None => (None, None),
        };
        let rare = RareFields {
            id,
            thread_id: HeldScalar::into_ident(fields.thread_id),
            other_type,
        };
        Head {
            is_object: true,
            known_type,
            rare: (rare != RareFields::default()).then(|| Box::new(rare)),
            location: location(fields.location, fields.flat),
            times: fields.meta.unwrap_or_default(),
        }
    }

    /// `id`, else `_id`, when it is an identifier other than the element's
    /// map key (when that was known as it was read); `None` when the
    /// element claims its key.
    pub fn id(&self) -> Option<&str> {
        self.rare.as_ref()?.id.as_deref()
    }

    /// The top-level `threadId`, when it is an identifier.
    pub fn thread_id(&self) -> Option<&str> {
        self.rare.as_ref()?.thread_id.as_deref()
    }

    /// `timestamps` from `meta`, normalized.
    pub fn timestamps(&self) -> Option<Timestamps> {
        self.times.timestamps()
    }

    /// The raw `elementType`, `""` when it is missing or not a string.
    pub fn element_type(&self) -> &str {
        match (self.known_type, &self.rare) {
            (Some(known), _) => known.name(),
            (None, Some(rare)) => rare.other_type.as_deref().unwrap_or_default(),
            (None, None) => "",
        }
    }

    /// Whether the element is in a `TRASH` or `DELETED` section: not part
    /// of the board, nor is anything below it
    /// ([`crate::document::reading::is_removed_section`]).
    pub fn is_removed(&self) -> bool {
        let section = self.location.as_ref().and_then(|l| l.section.as_ref());
        section
            .and_then(HeldScalar::as_str)
            .is_some_and(is_removed_section)
    }

    /// The id this element claims under map key `key`: `id`, else `_id`,
    /// else the key.
    #[cfg(any(test, feature = "internals"))]
    pub fn claimed_id(&self, key: &str) -> String {
        self.id().unwrap_or(key).to_owned()
    }

    /// Whether `self` takes the place of `existing` when both claim one id:
    /// a later copy replaces an earlier one, except that a `SKELETON` never
    /// replaces a `BOARD`.
    pub fn replaces(&self, existing: &Head) -> bool {
        !(self.element_type() == "SKELETON" && existing.element_type() == "BOARD")
    }
}

/// The element of `elements` that is `id`: among the entries claiming `id`
/// ([`Head::claimed_id`]), the one that [`Head::replaces`] the others in map
/// order.
///
/// The one rule for "which element is this id": the client's root check
/// uses it on an answer, and merging answers applies it entry by entry, so
/// the root the client accepted is the root that is normalized.
pub fn find_element<'a>(
    elements: impl IntoIterator<Item = (&'a str, &'a Head)>,
    id: &str,
) -> Option<&'a Head> {
    let mut found: Option<&Head> = None;
    for (key, head) in elements {
        let claims = head.id().unwrap_or(key) == id;
        if claims && found.is_none_or(|existing| head.replaces(existing)) {
            found = Some(head);
        }
    }
    found
}

#[cfg(test)]
mod tests;

//! An element's scalar fields as its head holds them: [`HeldScalar`], a
//! string, number or boolean in 16 bytes instead of a whole value, and
//! [`HeldField`], one field of an answer read into one as the answer is
//! read.

use crate::document::Scalar;
use serde::de::Visitor;
use serde_json::{Number, Value};
use std::borrow::Borrow;
use std::collections::HashSet;
use std::hash::{BuildHasher, Hash, Hasher};
use std::ops::Deref;
use std::sync::Arc;

/// A [`Scalar`] of an element's `location` as the provider sent it, held
/// in 16 bytes until its node is written: a number as serde_json read it
/// (its integer or float, so it is written back as the same text), a
/// boolean, or a string. A `Scalar` holds a whole value, 72 bytes inline,
/// and every element holds six of them until it is written, so each
/// variant keeps to one word beside the tag that serde_json's `Number`
/// already has room for (a test holds it to 16 bytes).
///
/// A string is held in one of three ways, which compare equal when their
/// strings are: its own copy, a name (no copy), or a string shared with
/// other elements.
#[derive(Debug, Clone)]
pub enum HeldScalar {
    Number(Number),
    Bool(bool),
    /// A string of its own, behind one thin pointer: such strings are rare
    /// (a section or coordinate that is neither a name nor a number), so
    /// the second allocation costs less than a wider variant on every
    /// element.
    Text(Box<Box<str>>),
    /// A string that is one of the section names Milanote's answers carry,
    /// held without a copy: every element of a board names its section,
    /// and nearly all name the same one. The reference is to the entry of
    /// the list of names, so it is one word.
    Name(&'static &'static str),
    /// A board id that the answer reader holds once for every element
    /// that names it ([`SharedField`]): `rootBoard`.
    Shared(SharedStr),
}

/// A string held once for every element that names it (a parent or root
/// board id), behind one pointer: 8 bytes where an `Arc<str>` is 16. It
/// hashes, compares and borrows as its `str`, so a set of them is looked
/// up by a `&str`.
#[derive(Clone, PartialEq, Eq)]
pub struct SharedStr(Arc<Box<str>>);

impl SharedStr {
    /// Whether the two are one string held once, not two equal strings.
    #[cfg(test)]
    pub fn is_same(&self, other: &SharedStr) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl From<&str> for SharedStr {
    fn from(s: &str) -> SharedStr {
        SharedStr(Arc::new(s.into()))
    }
}

impl From<Box<str>> for SharedStr {
    /// Moves the string in, without a copy.
    fn from(s: Box<str>) -> SharedStr {
        SharedStr(Arc::new(s))
    }
}

impl Deref for SharedStr {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for SharedStr {
    fn borrow(&self) -> &str {
        self
    }
}

impl Hash for SharedStr {
    fn hash<H: Hasher>(&self, state: &mut H) {
        str::hash(self, state)
    }
}

impl std::fmt::Debug for SharedStr {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        str::fmt(self, f)
    }
}

impl PartialEq for HeldScalar {
    fn eq(&self, other: &HeldScalar) -> bool {
        match (self, other) {
            (HeldScalar::Number(a), HeldScalar::Number(b)) => a == b,
            (HeldScalar::Bool(a), HeldScalar::Bool(b)) => a == b,
            _ => matches!((self.as_str(), other.as_str()), (Some(a), Some(b)) if a == b),
        }
    }
}

/// The section names Milanote's answers carry, in the forms they carry
/// them ([`crate::document::reading`] reads them).
const NAMES: [&str; 7] = [
    "CANVAS",
    "canvas",
    "INBOX",
    "ATTACHED",
    "QUICK_NOTES",
    "TRASH",
    "DELETED",
];

impl HeldScalar {
    /// What [`Scalar::from_value`] keeps of `value`: `Some` for a string,
    /// number or boolean; `None` for null, arrays, objects and absence.
    #[cfg(any(test, feature = "internals"))]
    pub fn of(value: Option<&Value>) -> Option<HeldScalar> {
        match value? {
            Value::Number(n) => Some(HeldScalar::Number(n.clone())),
            Value::Bool(b) => Some(HeldScalar::Bool(*b)),
            Value::String(s) => Some(HeldScalar::text(s)),
            Value::Null | Value::Array(_) | Value::Object(_) => None,
        }
    }

    /// A string, held as a [`HeldScalar::Name`] when it is one.
    pub fn text(s: &str) -> HeldScalar {
        match NAMES.iter().find(|name| **name == s) {
            Some(name) => HeldScalar::Name(name),
            None => HeldScalar::owned(s),
        }
    }

    /// A string held as its own copy.
    pub fn owned(s: &str) -> HeldScalar {
        HeldScalar::Text(Box::new(s.into()))
    }

    /// The value it was read from.
    pub(super) fn into_value(self) -> Value {
        match self {
            HeldScalar::Number(n) => Value::Number(n),
            HeldScalar::Bool(b) => Value::Bool(b),
            HeldScalar::Text(s) => Value::String((*s).into_string()),
            HeldScalar::Name(s) => Value::String(str::to_owned(s)),
            HeldScalar::Shared(s) => Value::String(str::to_owned(&s)),
        }
    }

    /// [`crate::provider::raw::ident`] of a held field: a non-empty
    /// string (moved, not copied), or an integer in decimal.
    pub fn into_ident(held: Option<HeldScalar>) -> Option<Box<str>> {
        match held? {
            HeldScalar::Text(s) if !s.is_empty() => Some(*s),
            HeldScalar::Name(s) => Some((*s).into()),
            HeldScalar::Shared(s) if !s.is_empty() => Some(Box::from(&*s)),
            HeldScalar::Number(n) if n.is_i64() || n.is_u64() => Some(n.to_string().into()),
            _ => None,
        }
    }

    /// The scalar as the document holds it: the value it was read from.
    pub fn scalar(&self) -> Scalar {
        Scalar(match self {
            HeldScalar::Number(n) => Value::Number(n.clone()),
            HeldScalar::Bool(b) => Value::Bool(*b),
            HeldScalar::Text(s) => Value::String(str::to_owned(s)),
            HeldScalar::Name(s) => Value::String(str::to_owned(s)),
            HeldScalar::Shared(s) => Value::String(str::to_owned(s)),
        })
    }

    /// The string, when it is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            HeldScalar::Text(s) => Some(s),
            HeldScalar::Name(s) => Some(s),
            HeldScalar::Shared(s) => Some(s),
            _ => None,
        }
    }
}

/// A field of an element as the answer reader reads it: its scalar, or
/// `None` for null, an array or an object (read through as a value would
/// be, so the answer is refused where parsing it as one value refuses it).
pub struct HeldField(pub Option<HeldScalar>);

impl<'de> serde::Deserialize<'de> for HeldField {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<HeldField, D::Error> {
        deserializer.deserialize_any(HeldFieldVisitor)
    }
}

struct HeldFieldVisitor;

impl<'de> Visitor<'de> for HeldFieldVisitor {
    type Value = HeldField;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, b: bool) -> Result<HeldField, E> {
        Ok(HeldField(Some(HeldScalar::Bool(b))))
    }
    fn visit_i64<E>(self, n: i64) -> Result<HeldField, E> {
        Ok(HeldField(Some(HeldScalar::Number(n.into()))))
    }
    fn visit_u64<E>(self, n: u64) -> Result<HeldField, E> {
        Ok(HeldField(Some(HeldScalar::Number(n.into()))))
    }
    // As a value holds it: a number, or null (here `None`) when not finite.
    fn visit_f64<E>(self, n: f64) -> Result<HeldField, E> {
        Ok(HeldField(Number::from_f64(n).map(HeldScalar::Number)))
    }
    fn visit_str<E>(self, s: &str) -> Result<HeldField, E> {
        Ok(HeldField(Some(HeldScalar::text(s))))
    }
    fn visit_unit<E>(self) -> Result<HeldField, E> {
        Ok(HeldField(None))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<HeldField, A::Error> {
        while seq.next_element::<Value>()?.is_some() {}
        Ok(HeldField(None))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<HeldField, A::Error> {
        while map.next_entry::<serde::de::IgnoredAny, Value>()?.is_some() {}
        Ok(HeldField(None))
    }
}

/// An `elementType` as the answer reader reads it: one of the types the
/// normalizer reads, without a copy of its name, or any other string. Two
/// compare equal when their names are.
#[derive(Debug, Clone)]
pub enum TypeName {
    Known(KnownType),
    Other(Box<str>),
}

impl PartialEq for TypeName {
    fn eq(&self, other: &TypeName) -> bool {
        self.as_str() == other.as_str()
    }
}

impl TypeName {
    pub fn of(name: &str) -> TypeName {
        match KnownType::of(name) {
            Some(known) => TypeName::Known(known),
            None => TypeName::Other(name.into()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            TypeName::Known(known) => known.name(),
            TypeName::Other(name) => name,
        }
    }
}

/// Declares [`KnownType`] with the name each of its types has in an answer.
macro_rules! known_types {
    ($($variant:ident => $name:literal,)*) => {
        /// The element types the normalizer reads, and the `SKELETON`
        /// stand-in for a board, held in one byte.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum KnownType {
            $($variant,)*
        }

        impl KnownType {
            /// The type named `name` exactly, when it is one of these.
            pub fn of(name: &str) -> Option<KnownType> {
                match name {
                    $($name => Some(KnownType::$variant),)*
                    _ => None,
                }
            }

            /// Its name, as an answer spells it.
            pub fn name(self) -> &'static str {
                match self {
                    $(KnownType::$variant => $name,)*
                }
            }

            #[cfg(test)]
            const ALL: &'static [KnownType] = &[$(KnownType::$variant,)*];
        }
    };
}

known_types! {
    Card => "CARD",
    Board => "BOARD",
    Column => "COLUMN",
    Link => "LINK",
    Image => "IMAGE",
    TaskList => "TASK_LIST",
    Task => "TASK",
    Document => "DOCUMENT",
    File => "FILE",
    Line => "LINE",
    ColorSwatch => "COLOR_SWATCH",
    Sketch => "SKETCH",
    Table => "TABLE",
    CommentThread => "COMMENT_THREAD",
    Annotation => "ANNOTATION",
    Skeleton => "SKELETON",
}

/// `elementType` as the answer reader reads it: the type's name when it is
/// a string ([`TypeName::of`], no copy for a known type), else `None`,
/// anything else read as a [`HeldField`] is.
pub struct TypeField(pub Option<TypeName>);

impl<'de> serde::Deserialize<'de> for TypeField {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<TypeField, D::Error> {
        let read = deserializer.deserialize_any(StrVisitor(TypeName::of))?;
        Ok(TypeField(match read {
            StrRead::Str(name) => Some(name),
            StrRead::Other(_) => None,
        }))
    }
}

/// `id` as the answer reader reads it under map key `key`: like a
/// [`HeldField`], except that a string equal to a non-empty key is not
/// copied ([`IdRead::Key`]).
pub struct IdField<'k>(pub &'k str);

/// What [`IdField`] read.
pub enum IdRead {
    /// A string equal to the element's map key.
    Key,
    Held(Option<HeldScalar>),
}

impl<'de> serde::de::DeserializeSeed<'de> for IdField<'_> {
    type Value = IdRead;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<IdRead, D::Error> {
        let key = self.0;
        let on_str = |s: &str| (key.is_empty() || s != key).then(|| HeldScalar::owned(s));
        Ok(match deserializer.deserialize_any(StrVisitor(on_str))? {
            StrRead::Str(None) => IdRead::Key,
            StrRead::Str(held) => IdRead::Held(held),
            StrRead::Other(field) => IdRead::Held(field.0),
        })
    }
}

/// `parentId` as the answer reader reads it: [`HeldScalar::into_ident`]
/// of the field, shared with the elements read before it that named the
/// same parent (`parents`, the answer's parent ids so far, hashed as the
/// answer reader chooses).
pub struct ParentField<'p, S>(pub &'p mut SharedStrs<S>);

impl<'de, S: BuildHasher> serde::de::DeserializeSeed<'de> for ParentField<'_, S> {
    type Value = Option<SharedStr>;

    fn deserialize<D>(self, deserializer: D) -> Result<Option<SharedStr>, D::Error>
    where
        D: serde::Deserializer<'de>,
    {
        let parents = self.0;
        let shared = |s: &str| (!s.is_empty()).then(|| share(parents, s));
        Ok(match deserializer.deserialize_any(StrVisitor(shared))? {
            StrRead::Str(parent) => parent,
            StrRead::Other(field) => HeldScalar::into_ident(field.0).map(SharedStr::from),
        })
    }
}

/// A field held as a [`HeldField`] is, except that a string is held
/// [`HeldScalar::Shared`] with the elements read before it that held the
/// same one (`shared`: the answer's shared strings so far).
pub struct SharedField<'p, S>(pub &'p mut SharedStrs<S>);

impl<'de, S: BuildHasher> serde::de::DeserializeSeed<'de> for SharedField<'_, S> {
    type Value = Option<HeldScalar>;

    fn deserialize<D>(self, deserializer: D) -> Result<Option<HeldScalar>, D::Error>
    where
        D: serde::Deserializer<'de>,
    {
        let set = self.0;
        let shared = |s: &str| HeldScalar::Shared(share(set, s));
        Ok(match deserializer.deserialize_any(StrVisitor(shared))? {
            StrRead::Str(held) => Some(held),
            StrRead::Other(field) => field.0,
        })
    }
}

/// The strings an answer holds once ([`SharedStr`]): parent and root board
/// ids, which nearly every element names.
#[derive(Default)]
pub struct SharedStrs<S> {
    set: HashSet<SharedStr, S>,
    /// The one found or added last: the elements of a board come in runs
    /// that name the same parent and root, so most are found here by a
    /// comparison, without hashing.
    last: Option<SharedStr>,
}

/// `s`, held once in `shared`.
fn share<S: BuildHasher>(shared: &mut SharedStrs<S>, s: &str) -> SharedStr {
    if let Some(last) = &shared.last {
        if **last == *s {
            return last.clone();
        }
    }
    let held = match shared.set.get(s) {
        Some(held) => held.clone(),
        None => {
            let held = SharedStr::from(s);
            shared.set.insert(held.clone());
            held
        }
    };
    shared.last = Some(held.clone());
    held
}

/// A field whose string is handed to a function instead of being copied;
/// any other value is read as [`HeldFieldVisitor`] reads it.
struct StrVisitor<F>(F);

enum StrRead<T> {
    Str(T),
    Other(HeldField),
}

impl<'de, T, F: FnOnce(&str) -> T> Visitor<'de> for StrVisitor<F> {
    type Value = StrRead<T>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<StrRead<T>, E> {
        Ok(StrRead::Str((self.0)(s)))
    }
    fn visit_bool<E: serde::de::Error>(self, b: bool) -> Result<StrRead<T>, E> {
        HeldFieldVisitor.visit_bool(b).map(StrRead::Other)
    }
    fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<StrRead<T>, E> {
        HeldFieldVisitor.visit_i64(n).map(StrRead::Other)
    }
    fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<StrRead<T>, E> {
        HeldFieldVisitor.visit_u64(n).map(StrRead::Other)
    }
    fn visit_f64<E: serde::de::Error>(self, n: f64) -> Result<StrRead<T>, E> {
        HeldFieldVisitor.visit_f64(n).map(StrRead::Other)
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<StrRead<T>, E> {
        HeldFieldVisitor.visit_unit().map(StrRead::Other)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<StrRead<T>, A::Error> {
        HeldFieldVisitor.visit_seq(seq).map(StrRead::Other)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<StrRead<T>, A::Error> {
        HeldFieldVisitor.visit_map(map).map(StrRead::Other)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::value_text;
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn section_names_are_held_without_a_copy_and_read_as_text() {
        for name in &NAMES {
            let held = HeldScalar::text(name);
            assert_eq!(held, HeldScalar::Name(name));
            assert_eq!(held.as_str(), Some(*name));
            assert_eq!(held.scalar(), Scalar(Value::String((*name).to_owned())));
            let read: HeldField = serde_json::from_str(&format!("\"{name}\"")).unwrap();
            assert_eq!(read.0, Some(held));
        }
        // Only the names as they are spelled.
        assert!(matches!(HeldScalar::text("Canvas"), HeldScalar::Text(_)));
        assert!(matches!(HeldScalar::text("CANVAS "), HeldScalar::Text(_)));
        // Held three ways, equal by their strings; never equal to a number.
        let shared = HeldScalar::Shared(SharedStr::from("CANVAS"));
        assert_eq!(shared, HeldScalar::Name(&NAMES[0]));
        assert_eq!(shared, HeldScalar::owned("CANVAS"));
        assert_ne!(shared, HeldScalar::owned("canvas"));
        assert_ne!(HeldScalar::owned("1"), HeldScalar::Number(1.into()));
        assert_ne!(HeldScalar::Bool(true), HeldScalar::owned("true"));
        // An escaped name is the name.
        let read: HeldField = serde_json::from_str(r#""\u0043ANVAS""#).unwrap();
        assert_eq!(read.0, Some(HeldScalar::Name(&NAMES[0])));
    }

    /// Every element's head holds six of these (and `Option`s of them):
    /// a wider variant would widen all six.
    #[test]
    fn a_held_scalar_is_two_words() {
        assert_eq!(std::mem::size_of::<HeldScalar>(), 16);
        assert_eq!(std::mem::size_of::<Option<HeldScalar>>(), 16);
        assert_eq!(std::mem::size_of::<Option<SharedStr>>(), 8);
    }

    #[test]
    fn a_shared_string_is_found_by_its_text() {
        let mut set = SharedStrs::<std::hash::RandomState>::default();
        let first = share(&mut set, "board-1");
        let again = share(&mut set, "board-1");
        assert!(first.is_same(&again));
        assert_eq!(set.set.len(), 1);
        assert_eq!(set.set.get("board-1").map(|s| &**s), Some("board-1"));
        let second = share(&mut set, "board-2");
        assert_ne!(second, first);
        assert_eq!(set.set.len(), 2);
        // Found in the set after another one was last, and held once.
        assert!(share(&mut set, "board-1").is_same(&first));
        assert!(share(&mut set, "board-2").is_same(&second));
        assert_eq!(set.set.len(), 2);
    }

    #[test]
    fn known_types_are_read_by_their_exact_names() {
        assert_eq!(KnownType::ALL.len(), 16);
        for known in KnownType::ALL {
            assert_eq!(KnownType::of(known.name()), Some(*known));
            assert_eq!(TypeName::of(known.name()), TypeName::Known(*known));
            assert_eq!(TypeName::of(known.name()).as_str(), known.name());
        }
        for other in ["card", "CARD ", "", "UNKNOWN", "BOARD\u{0}"] {
            assert_eq!(KnownType::of(other), None);
            assert!(matches!(TypeName::of(other), TypeName::Other(ref n) if &**n == other));
        }
        // A name compares by its text however it is held.
        assert_eq!(TypeName::Other("TASK".into()), TypeName::of("TASK"));
        assert_ne!(TypeName::Other("TASKS".into()), TypeName::of("TASK"));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// A held scalar is written as the same JSON as the value it was
        /// read from, and is held exactly when a [`Scalar`] would be.
        #[test]
        fn held_scalar_writes_its_value(text in value_text()) {
            let value: Value = serde_json::from_str(&text).expect("valid JSON");
            let held = HeldScalar::of(Some(&value)).map(|h| h.scalar());
            let old = Scalar::from_value(&value);
            prop_assert_eq!(
                serde_json::to_string(&held).ok(),
                serde_json::to_string(&old).ok(),
                "{}", text
            );
            prop_assert_eq!(held, old);
        }
    }
}

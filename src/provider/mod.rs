//! The Milanote provider: fetch a shared board through Pingora's client stack
//! and normalize it into a BoardDocument v1.

/// Inside a `serde::de::Visitor` whose `Value` is an `Option`: a number, a
/// boolean or a null is not what it looks for, so it reads as `None` (the
/// visitors of the provider's answer and content, which skip what they do
/// not take rather than fail on it).
macro_rules! scalars_are_none {
    () => {
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
    };
}
pub(crate) use scalars_are_none;

pub mod answer;
pub mod client;
pub mod error;
pub mod fetched;
pub mod head;
pub mod normalize;
pub mod raw;
pub mod rich_text;
pub mod time;

pub use fetched::Fetched;

//! The Milanote provider: fetch a shared board through Pingora's client stack
//! and normalize it into a BoardDocument v1.

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

//! The fleet key and the MACs it puts on the tier's values.
//!
//! Every value a node writes (a document, a shared failure) ends in an
//! HMAC-SHA256 tag over the value's other bytes, made with a key derived
//! from the fleet key and the value's Redis key name: a value copied to
//! another key, written by anyone without the fleet key, or changed by one
//! byte fails to verify. A rotation names the previous key too
//! (`previous_secret_env`): values it sealed still verify, while every new
//! value is sealed with the current key.

#[cfg(feature = "fleet")]
use ring::hmac;
use std::fmt;

/// The length of a tag at the end of a sealed value.
#[cfg(feature = "fleet")]
pub const TAG_BYTES: usize = 32;

/// The shortest fleet key accepted: 256 bits.
pub const MIN_SECRET_BYTES: usize = 32;

/// A fleet key as read from the environment. Its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Vec<u8>);

impl Secret {
    /// `bytes` as a fleet key; `None` when shorter than
    /// [`MIN_SECRET_BYTES`].
    pub fn new(bytes: Vec<u8>) -> Option<Secret> {
        (bytes.len() >= MIN_SECRET_BYTES).then_some(Secret(bytes))
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

/// The keys a node seals with (the current one) and verifies with (the
/// current one, then the previous one during a rotation).
#[cfg(feature = "fleet")]
pub struct Seal {
    current: hmac::Key,
    previous: Option<hmac::Key>,
}

#[cfg(feature = "fleet")]
impl Seal {
    pub fn new(current: &Secret, previous: Option<&Secret>) -> Seal {
        let key = |s: &Secret| hmac::Key::new(hmac::HMAC_SHA256, &s.0);
        Seal {
            current: key(current),
            previous: previous.map(key),
        }
    }

    /// The tag of `data` stored under the Redis key `name`.
    pub fn tag(&self, name: &str, data: &[u8]) -> [u8; TAG_BYTES] {
        let tag = hmac::sign(&derive(&self.current, name), data);
        let mut out = [0; TAG_BYTES];
        out.copy_from_slice(tag.as_ref());
        out
    }

    /// `data` followed by its tag for `name`.
    pub fn seal(&self, name: &str, mut data: Vec<u8>) -> Vec<u8> {
        let tag = self.tag(name, &data);
        data.extend_from_slice(&tag);
        data
    }

    /// The bytes of `value` before its tag, when the tag is right for
    /// `name` under the current or the previous key (compared in constant
    /// time); `None` otherwise.
    pub fn open<'v>(&self, name: &str, value: &'v [u8]) -> Option<&'v [u8]> {
        let split = value.len().checked_sub(TAG_BYTES)?;
        let (data, tag) = value.split_at(split);
        let verifies = |key: &hmac::Key| hmac::verify(&derive(key, name), data, tag).is_ok();
        (verifies(&self.current) || self.previous.as_ref().is_some_and(verifies)).then_some(data)
    }
}

/// The key of the values under `name`: HMAC(fleet key, name), so a tag
/// binds the value to its key name as well as to its bytes.
#[cfg(feature = "fleet")]
fn derive(key: &hmac::Key, name: &str) -> hmac::Key {
    hmac::Key::new(hmac::HMAC_SHA256, hmac::sign(key, name.as_bytes()).as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(fill: u8) -> Secret {
        Secret::new(vec![fill; 32]).expect("long enough")
    }

    #[test]
    fn a_value_opens_only_under_its_name_and_a_fleet_key() {
        let seal = Seal::new(&secret(1), None);
        let sealed = seal.seal("sbapi:{a}:doc:full", b"body".to_vec());
        assert_eq!(sealed.len(), 4 + TAG_BYTES);
        assert_eq!(seal.open("sbapi:{a}:doc:full", &sealed), Some(&b"body"[..]));
        assert_eq!(seal.open("sbapi:{b}:doc:full", &sealed), None);
        let mut changed = sealed.clone();
        changed[1] ^= 1;
        assert_eq!(seal.open("sbapi:{a}:doc:full", &changed), None);
        assert_eq!(seal.open("sbapi:{a}:doc:full", &sealed[..10]), None);
        assert_eq!(seal.open("sbapi:{a}:doc:full", b""), None);
        let other = Seal::new(&secret(2), None);
        assert_eq!(other.open("sbapi:{a}:doc:full", &sealed), None);
        // A rotation: the new key seals, the old one still opens.
        let rotated = Seal::new(&secret(2), Some(&secret(1)));
        assert!(rotated.open("sbapi:{a}:doc:full", &sealed).is_some());
        let new = rotated.seal("sbapi:{a}:doc:full", b"body".to_vec());
        assert!(other.open("sbapi:{a}:doc:full", &new).is_some());
        assert!(seal.open("sbapi:{a}:doc:full", &new).is_none());
    }

    #[test]
    fn short_keys_are_refused_and_never_printed() {
        assert!(Secret::new(vec![7; 31]).is_none());
        let s = Secret::new(b"0123456789abcdef0123456789abcdef".to_vec()).expect("32 bytes");
        assert_eq!(format!("{s:?}"), "[redacted]");
    }
}

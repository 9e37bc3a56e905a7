//! The fleet tier's key names. A board's keys are named by a SHA-256 of
//! (board id, permission id), so a key, a server dump or `MONITOR` never
//! shows the permission id, and the hex digest is a cluster hash tag
//! (`{...}`), so a board's document, lock and failure live on one slot and
//! can be read in one `MGET`.

use crate::document::Coverage;

/// The keys of one board (one share link).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoardKeys {
    /// `{prefix}{<tag>}:` ...
    base: String,
}

impl BoardKeys {
    pub fn new(prefix: &str, board_id: &str, permission_id: &str) -> Self {
        let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
        // Length-prefixed, so ("ab", "c") and ("a", "bc") differ.
        ctx.update(&(board_id.len() as u64).to_le_bytes());
        ctx.update(board_id.as_bytes());
        ctx.update(permission_id.as_bytes());
        let digest = ctx.finish();
        // 128 bits are plenty to tell boards apart.
        let tag = crate::random::hex(&digest.as_ref()[..16]);
        BoardKeys {
            base: format!("{prefix}{{{tag}}}:"),
        }
    }

    fn key(&self, suffix: &str) -> String {
        let mut key = String::with_capacity(self.base.len() + suffix.len());
        key.push_str(&self.base);
        key.push_str(suffix);
        key
    }

    /// The stored document of `coverage`.
    pub fn doc(&self, coverage: Coverage) -> String {
        self.key(match coverage {
            Coverage::Full => "doc:full",
            Coverage::Outline => "doc:outline",
        })
    }

    /// The lock of a load of `coverage`.
    pub fn lock(&self, coverage: Coverage) -> String {
        self.key(match coverage {
            Coverage::Full => "lock:full",
            Coverage::Outline => "lock:outline",
        })
    }

    /// The provider's `403`/`404` for this link.
    pub fn failure(&self) -> String {
        self.key("fail")
    }
}

/// The key of the fleet's budget toward the provider.
pub fn budget(prefix: &str) -> String {
    format!("{prefix}budget")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_share_a_hash_tag_and_carry_no_secret() {
        let k = BoardKeys::new("sbapi:", "1W3ZZU1Qvua02H", "m441fkw92yV");
        let all = [
            k.doc(Coverage::Full),
            k.doc(Coverage::Outline),
            k.lock(Coverage::Full),
            k.failure(),
        ];
        let tag = |key: &str| {
            let open = key.find('{').expect("tag");
            let close = key.find('}').expect("tag");
            key[open..=close].to_string()
        };
        for key in &all {
            assert!(key.starts_with("sbapi:{"), "{key}");
            assert!(!key.contains("m441fkw92yV") && !key.contains("1W3ZZU1Qvua02H"));
            assert_eq!(tag(key), tag(&all[0]));
            assert_eq!(tag(key).len(), 34);
        }
        assert_ne!(all[0], all[1]);
        // Another permission of the same board is another link.
        let other = BoardKeys::new("sbapi:", "1W3ZZU1Qvua02H", "other");
        assert_ne!(tag(&other.failure()), tag(&all[0]));
        assert_ne!(
            BoardKeys::new("p:", "ab", "c"),
            BoardKeys::new("p:", "a", "bc")
        );
    }
}

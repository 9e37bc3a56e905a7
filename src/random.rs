//! Random bytes and tokens from the system's generator (`ring`), and their
//! hex text: the fleet tier's lock tokens, the watches' delivery ids and
//! leases. Hex is also how versions and tier keys write digests.

use ring::rand::SecureRandom as _;

/// `N` random bytes. Should the system's generator fail (it does not on
/// any supported system), the time in nanoseconds and an address of this
/// call's stack keep values distinct within and across processes.
pub fn bytes<const N: usize>() -> [u8; N] {
    let mut out = [0u8; N];
    if ring::rand::SystemRandom::new().fill(&mut out).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let seed = nanos ^ (&out as *const _ as usize as u128);
        for (slot, byte) in out.iter_mut().zip(seed.to_le_bytes().iter().cycle()) {
            *slot = *byte;
        }
    }
    out
}

/// A random number (0 is as likely as any other).
pub fn u64() -> u64 {
    u64::from_le_bytes(bytes::<8>())
}

/// 16 random bytes as 32 lower-case hex digits.
pub fn token() -> String {
    hex(&bytes::<16>())
}

/// `bytes` as lower-case hex, two digits a byte.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_is_two_lower_case_digits_a_byte() {
        assert_eq!(hex(&[0x00, 0x0f, 0xa0, 0xff]), "000fa0ff");
        assert_eq!(hex(&[]), "");
    }

    #[test]
    fn tokens_are_32_hex_digits_and_differ() {
        let (a, b) = (token(), token());
        assert_eq!(a.len(), 32);
        assert!(a
            .bytes()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert_ne!(a, b);
        assert_ne!(bytes::<16>(), bytes::<16>());
    }
}

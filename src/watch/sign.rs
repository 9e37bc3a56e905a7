//! Standard Webhooks signatures: the headers a receiver checks, made with
//! the key a job's `whsec_` secret encodes. Pure functions, called by the
//! delivery for each attempt.

use base64::Engine as _;
use ring::hmac;

/// The headers of one attempt: `webhook-id`, `webhook-timestamp`,
/// `webhook-signature`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signed {
    pub id: String,
    pub timestamp: String,
    pub signature: String,
}

/// Signs `body` as the message `id` sent at `timestamp` (unix seconds):
/// `v1,` and the base64 of HMAC-SHA256(key, "{id}.{timestamp}.{body}").
pub fn sign(key: &[u8], id: &str, timestamp: u64, body: &[u8]) -> Signed {
    let timestamp = timestamp.to_string();
    let key = hmac::Key::new(hmac::HMAC_SHA256, key);
    let mut ctx = hmac::Context::with_key(&key);
    ctx.update(id.as_bytes());
    ctx.update(b".");
    ctx.update(timestamp.as_bytes());
    ctx.update(b".");
    ctx.update(body);
    let tag = ctx.sign();
    let signature = format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(tag.as_ref())
    );
    Signed {
        id: id.to_owned(),
        timestamp,
        signature,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_specifications_example_signs_the_same() {
        // The example of the Standard Webhooks specification (and of its
        // reference libraries' tests).
        let secret = "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let key = base64::engine::general_purpose::STANDARD
            .decode(secret)
            .expect("base64");
        let body = br#"{"test": 2432232314}"#;
        let signed = sign(&key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body);
        assert_eq!(
            signed.signature,
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
        assert_eq!(signed.timestamp, "1614265330");
    }
}

//! E-mail-shaped parts of any string of a captured answer, found wherever
//! they stand (a value, a key, a comment's text, a URL), for the scrubber
//! ([`super::Scrubber`]) to replace: an address names a person under any
//! key, or under none.
//!
//! The shape is the common one, not RFC 5322's: `local@domain`, the local
//! part of `[A-Za-z0-9._%+-]`, the domain two or more labels of
//! `[A-Za-z0-9-]` joined by dots, the last one two letters or more. A match
//! right after a `/` is a path (`icon@2x.png` in an image's URL), not an
//! address. The scan is linear: each side of an `@` stops at the next `@`.

/// The byte ranges of the e-mail-shaped parts of `s`, in order.
pub fn spans(s: &str) -> Vec<(usize, usize)> {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    for at in positions(bytes, b'@') {
        if at < from {
            continue;
        }
        let mut start = at;
        while start > from && is_local(bytes[start - 1]) {
            start -= 1;
        }
        if start == at || (start > 0 && bytes[start - 1] == b'/') {
            continue;
        }
        let Some(end) = domain_end(bytes, at + 1) else {
            continue;
        };
        out.push((start, end));
        from = end;
    }
    out
}

/// Whether `s` holds an e-mail-shaped part.
pub fn contains(s: &str) -> bool {
    s.contains('@') && !spans(s).is_empty()
}

fn positions(bytes: &[u8], needle: u8) -> impl Iterator<Item = usize> + '_ {
    bytes
        .iter()
        .enumerate()
        .filter(move |(_, b)| **b == needle)
        .map(|(i, _)| i)
}

fn is_local(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'%' | b'+' | b'-')
}

/// Where the domain starting at `from` ends, when there is one: labels of
/// `[A-Za-z0-9-]` joined by single dots, two at least, the last of two
/// letters or more. A trailing dot or hyphen (the end of a sentence) is not
/// part of it.
fn domain_end(bytes: &[u8], from: usize) -> Option<usize> {
    let mut end = from;
    while end < bytes.len()
        && (bytes[end].is_ascii_alphanumeric() || matches!(bytes[end], b'.' | b'-'))
    {
        end += 1;
    }
    // Trim what cannot end a domain, then read its labels back.
    while end > from && matches!(bytes[end - 1], b'.' | b'-') {
        end -= 1;
    }
    let domain = &bytes[from..end];
    let labels: Vec<&[u8]> = domain.split(|b| *b == b'.').collect();
    let last = labels.last()?;
    let ok = labels.len() >= 2
        && labels.iter().all(|l| !l.is_empty())
        && last.len() >= 2
        && last.iter().all(u8::is_ascii_alphabetic);
    ok.then_some(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(s: &str) -> Vec<&str> {
        spans(s).into_iter().map(|(a, b)| &s[a..b]).collect()
    }

    #[test]
    fn addresses_are_found_wherever_they_stand() {
        let cases: &[(&str, &[&str])] = &[
            ("alice@example.com", &["alice@example.com"]),
            (
                "write to Bob.Smith+x@mail.example.co.uk.",
                &["Bob.Smith+x@mail.example.co.uk"],
            ),
            (
                "mailto:carol@ex-ample.org?subject=x",
                &["carol@ex-ample.org"],
            ),
            ("a@b.io, d@e.fr", &["a@b.io", "d@e.fr"]),
            (
                "{\"email\": \"PLANTED-SECRET@example.com\"}",
                &["PLANTED-SECRET@example.com"],
            ),
            ("https://u:pw@host.example/", &["pw@host.example"]),
            ("x@@y.com a@b@c.com", &["b@c.com"]),
        ];
        for (s, expected) in cases {
            assert_eq!(found(s), *expected, "{s}");
            assert!(contains(s), "{s}");
        }
    }

    #[test]
    fn what_is_not_an_address() {
        for s in [
            "@ann",
            "ask @bob today",
            "a@b",
            "a@b.c",
            "a@b.c0m",
            "a@.com",
            "a@b..com",
            "https://cdn.example.com/img/icon@2x.png",
            "@",
            "",
            "price: 3@4.50",
        ] {
            assert!(found(s).is_empty(), "{s}: {:?}", found(s));
            assert!(!contains(s), "{s}");
        }
    }

    #[test]
    fn a_long_run_of_ats_is_linear() {
        let s = "a@".repeat(100_000) + "b.com";
        assert_eq!(found(&s), ["a@b.com"]);
    }
}

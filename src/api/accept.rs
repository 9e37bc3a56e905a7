//! `Accept` negotiation for the two endpoints (RFC 9110 section 12.5.1):
//! which [`Representation`] a request gets, JSON unless it prefers Markdown.
//!
//! Each of `text/markdown` and `application/json` takes the q-value of the
//! most specific media range that matches it (`type/subtype`, then
//! `type/*`, then `*/*`; the highest q among equally specific ranges; 0 when
//! none matches). Markdown is chosen when its q is strictly higher than
//! JSON's, or when the two tie and `text/markdown` is named outright while
//! JSON is acceptable only through `*/*` or `application/*`: an agent's usual
//! `text/markdown, text/html, */*` means Markdown, while an explicit
//! `application/json` at the same q still wins. `*/*`, a browser's default
//! `Accept` and a header naming neither type get JSON: there is no `406`. A malformed header (bad
//! token, bad q-value, `*/subtype`, an unclosed quoted string, non-ASCII
//! bytes) counts as absent, which also means JSON. Parameters other than `q`
//! are read and ignored. Called by the API for every read request; pure.
//!
//! `/changes` without `since` also serves feeds (`api::feed`): a request gets
//! one when it names `application/atom+xml` or `application/feed+json`
//! outright (a wildcard never picks a feed) with a q above 0 and at least
//! as high as JSON's and Markdown's; Atom when the two feed types tie.

use crate::pipeline::changes::feed::{self, Format};
use crate::pipeline::Representation;
use http::header::{HeaderMap, ACCEPT};

/// The representation the request's `Accept` lines (one list, RFC 9110
/// section 5.3) ask for.
pub fn negotiate(headers: &HeaderMap) -> Representation {
    let mut prefs = Prefs::default();
    for line in headers.get_all(ACCEPT) {
        if parse_line(line.as_bytes(), &mut prefs).is_none() {
            return Representation::Json;
        }
    }
    let (markdown, json) = (prefs.markdown.q(), prefs.json.q());
    let named_outright = prefs.markdown.specificity() == EXACT && prefs.json.specificity() < EXACT;
    if markdown > json || (markdown == json && markdown > 0 && named_outright) {
        Representation::Markdown
    } else {
        Representation::Json
    }
}

/// The feed the request's `Accept` lines ask for, if any (see the
/// module's doc); `None` for a malformed header.
pub fn feed(headers: &HeaderMap) -> Option<Format> {
    let mut prefs = Prefs::default();
    for line in headers.get_all(ACCEPT) {
        parse_line(line.as_bytes(), &mut prefs)?;
    }
    let named = |best: Best| (best.specificity() == EXACT && best.q() > 0).then(|| best.q());
    let floor = prefs.json.q().max(prefs.markdown.q());
    let (atom, json_feed) = (named(prefs.atom), named(prefs.json_feed));
    let best = match (atom, json_feed) {
        (Some(a), Some(j)) if j > a => (Format::JsonFeed, j),
        (Some(a), _) => (Format::Atom, a),
        (None, Some(j)) => (Format::JsonFeed, j),
        (None, None) => return None,
    };
    (best.1 >= floor).then_some(best.0)
}

/// The specificity of `type/subtype`; `type/*` is 2 and `*/*` 1.
const EXACT: u8 = 3;

/// Best match so far for one media type: (specificity, q in thousandths).
#[derive(Default, Clone, Copy)]
struct Best(Option<(u8, u16)>);

impl Best {
    fn offer(&mut self, specificity: u8, q: u16) {
        self.0 = match self.0 {
            Some((s, old)) if s > specificity || (s == specificity && old >= q) => self.0,
            _ => Some((specificity, q)),
        };
    }

    fn q(self) -> u16 {
        self.0.map_or(0, |(_, q)| q)
    }

    /// How the best match named the type (0 when nothing matched).
    fn specificity(self) -> u8 {
        self.0.map_or(0, |(s, _)| s)
    }
}

#[derive(Default)]
struct Prefs {
    markdown: Best,
    json: Best,
    atom: Best,
    json_feed: Best,
}

/// Reads one header line into `prefs`; `None` when it is malformed.
fn parse_line(line: &[u8], prefs: &mut Prefs) -> Option<()> {
    let mut rest = line;
    loop {
        rest = skip_ows(rest);
        match rest.first() {
            None => return Some(()),
            // Empty list elements are allowed (RFC 9110 section 5.6.1).
            Some(b',') => {
                rest = &rest[1..];
                continue;
            }
            Some(_) => {}
        }
        let (kind, after) = token(rest)?;
        let after = after.strip_prefix(b"/")?;
        let (sub, after) = token(after)?;
        let (q, after) = params(after)?;
        let specificity = match (kind, sub) {
            (b"*", b"*") => 1,
            (b"*", _) => return None,
            (_, b"*") => 2,
            _ => EXACT,
        };
        let names = |t: &[u8], s: &[u8]| {
            (kind.eq_ignore_ascii_case(t) || kind == b"*")
                && (sub.eq_ignore_ascii_case(s) || sub == b"*")
        };
        if names(b"text", b"markdown") {
            prefs.markdown.offer(specificity, q);
        }
        if names(b"application", b"json") {
            prefs.json.offer(specificity, q);
        }
        let (atom, json_feed) = (feed::ATOM.as_bytes(), feed::JSON_FEED.as_bytes());
        if names(&atom[..11], &atom[12..]) {
            prefs.atom.offer(specificity, q);
        }
        if names(&json_feed[..11], &json_feed[12..]) {
            prefs.json_feed.offer(specificity, q);
        }
        rest = skip_ows(after);
        match rest.first() {
            None => return Some(()),
            Some(b',') => rest = &rest[1..],
            Some(_) => return None,
        }
    }
}

/// `*( OWS ";" OWS name "=" value )` up to the next `,` or the end: the
/// q-value (1000 when absent) and what follows.
fn params(mut rest: &[u8]) -> Option<(u16, &[u8])> {
    let mut q = 1000;
    loop {
        let after = skip_ows(rest);
        let Some(after) = after.strip_prefix(b";") else {
            return Some((q, rest));
        };
        let after = skip_ows(after);
        // Empty parameters are allowed (`*( OWS ";" OWS [ parameter ] )`).
        match after.first() {
            None | Some(b',') => return Some((q, after)),
            Some(b';') => {
                rest = after;
                continue;
            }
            Some(_) => {}
        }
        let (name, after) = token(after)?;
        let after = after.strip_prefix(b"=")?;
        let (value, after) = value(after)?;
        if name.eq_ignore_ascii_case(b"q") {
            q = qvalue(value)?;
        }
        rest = after;
    }
}

/// A token or a quoted string; the raw bytes of a token (quoted strings
/// are only skipped: no parameter we read is quoted).
fn value(rest: &[u8]) -> Option<(&[u8], &[u8])> {
    if rest.first() != Some(&b'"') {
        return token(rest);
    }
    let mut i = 1;
    while i < rest.len() {
        match rest[i] {
            b'\\' => i += 2,
            b'"' => return Some((&rest[..0], &rest[i + 1..])),
            b'\t' | b' '..=b'~' => i += 1,
            _ => return None,
        }
    }
    None
}

/// `qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] )`, in
/// thousandths.
fn qvalue(text: &[u8]) -> Option<u16> {
    let (whole, frac) = match text.iter().position(|&b| b == b'.') {
        Some(dot) => (&text[..dot], &text[dot + 1..]),
        None => (text, &text[..0]),
    };
    if frac.len() > 3 || !frac.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut thousandths = 0u16;
    for i in 0..3 {
        thousandths = thousandths * 10 + frac.get(i).map_or(0, |d| u16::from(d - b'0'));
    }
    match whole {
        b"0" => Some(thousandths),
        b"1" if thousandths == 0 => Some(1000),
        _ => None,
    }
}

/// A non-empty run of `tchar`s and what follows it.
fn token(rest: &[u8]) -> Option<(&[u8], &[u8])> {
    let end = rest
        .iter()
        .position(|&b| !is_tchar(b))
        .unwrap_or(rest.len());
    (end > 0).then(|| rest.split_at(end))
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn skip_ows(rest: &[u8]) -> &[u8] {
    let start = rest
        .iter()
        .position(|&b| b != b' ' && b != b'\t')
        .unwrap_or(rest.len());
    &rest[start..]
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;
    use Representation::{Json as J, Markdown as M};

    fn of(lines: &[&[u8]]) -> Representation {
        let mut headers = HeaderMap::new();
        for line in lines {
            headers.append(ACCEPT, HeaderValue::from_bytes(line).expect("header"));
        }
        negotiate(&headers)
    }

    #[test]
    fn negotiation_table() {
        let browser = b"text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8";
        let cases: &[(&[u8], Representation)] = &[
            (b"text/markdown", M),
            (b"TEXT/Markdown", M),
            (b"text/markdown, */*;q=0.1", M),
            (b"text/markdown;q=0.5, application/json", J),
            (b"text/markdown;q=0.5, application/json;q=0.4", M),
            (b"application/json;q=0.5, text/markdown;q=0.5", J),
            (b"text/*", M),
            (b"text/*, application/json", J),
            (b"text/*;q=0.9, */*;q=0.8", M),
            (b"*/*", J),
            (browser, J),
            (b"text/html", J),
            (b"application/json", J),
            (b"text/markdown;q=0", J),
            (b"text/markdown;q=0, */*", J),
            (b"text/markdown;charset=utf-8;variant=GFM", M),
            (b"text/markdown; variant=\"GFM, CommonMark\"; q=1", M),
            (b"text/markdown;q=1.000", M),
            (b"text/markdown;q=0.001", M),
            (b"text/markdown;q=0.001, application/json;q=0", M),
            (
                b"text/*;q=0.2, text/markdown;q=0.1, application/json;q=0.15",
                J,
            ),
            (b" , text/markdown ,, ", M),
            (b"text/markdown;", M),
            (b"text/markdown;;q=1;", M),
            (b"text/markdown ; q=0.5 , application/json ; q=0.4", M),
            (b"", J),
            (b"text/plain, application/*;q=0.5", J),
            (b"text/plain;q=0.1, text/*;q=0.3, application/*;q=0.2", M),
        ];
        for (header, expected) in cases {
            assert_eq!(
                of(&[header]),
                *expected,
                "{}",
                String::from_utf8_lossy(header)
            );
        }
    }

    /// What agents, tools and browsers send, and what each gets.
    #[test]
    fn usual_headers() {
        let cases: &[(&str, &[u8], Representation)] = &[
            // Agents and text tools that prefer Markdown.
            ("agent", b"text/markdown, text/html, */*", M),
            ("agent, q on the rest", b"text/markdown, text/html;q=0.9, */*;q=0.8", M),
            ("agent, plain text second", b"text/markdown, text/plain, */*", M),
            ("markdown beside application/*", b"text/markdown, application/*", M),
            ("markdown beside application/* at a lower q", b"text/markdown;q=0.5, application/*", J),
            ("explicit JSON at the same q", b"text/markdown, application/json", J),
            ("explicit JSON first", b"application/json, text/markdown", J),
            ("explicit JSON with */*", b"text/markdown, application/json, */*", J),
            ("markdown below */*", b"text/markdown;q=0.5, */*", J),
            ("text/* ties */*", b"text/*, */*", J),
            ("markdown refused", b"text/markdown;q=0, */*", J),
            // HTTP clients' defaults.
            ("curl", b"*/*", J),
            ("fetch()", b"*/*", J),
            ("python-requests", b"*/*", J),
            ("a JSON API client", b"application/json", J),
            ("a JSON client with a fallback", b"application/json, text/plain, */*", J),
            // Browsers' navigation defaults.
            ("Chrome", b"text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7", J),
            ("Firefox", b"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", J),
            ("Safari", b"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", J),
        ];
        for (who, header, expected) in cases {
            assert_eq!(
                of(&[header]),
                *expected,
                "{who}: {}",
                String::from_utf8_lossy(header)
            );
        }
    }

    #[test]
    fn malformed_counts_as_absent() {
        let cases: &[&[u8]] = &[
            b"text/markdown;q=2",
            b"text/markdown;q=1.5",
            b"text/markdown;q=0.1234",
            b"text/markdown;q=",
            b"text/markdown;q=abc",
            b"text",
            b"text/",
            b"*/markdown",
            b"text/markdown garbage",
            b"text/markdown;=1",
            b"text/markdown;variant=\"open",
            b"text/markdown;variant=\"\xff\"",
        ];
        for header in cases {
            assert_eq!(of(&[header]), J, "{}", String::from_utf8_lossy(header));
        }
    }

    #[test]
    fn feeds_only_when_named_outright() {
        use Format::{Atom as A, JsonFeed as F};
        let feed_of = |line: &[u8]| {
            let mut headers = HeaderMap::new();
            headers.append(ACCEPT, HeaderValue::from_bytes(line).expect("header"));
            feed(&headers)
        };
        let cases: &[(&[u8], Option<Format>)] = &[
            (b"application/atom+xml", Some(A)),
            (b"Application/Atom+XML", Some(A)),
            (b"application/feed+json", Some(F)),
            (b"application/atom+xml, application/feed+json", Some(A)),
            (b"application/atom+xml;q=0.5, application/feed+json", Some(F)),
            (b"application/feed+json, application/json", Some(F)),
            (b"application/feed+json;q=0.5, application/json", None),
            (b"application/atom+xml;q=0.5, text/markdown", None),
            // What feed readers send.
            (b"application/rss+xml, application/rdf+xml;q=0.8, application/atom+xml;q=0.6, application/xml;q=0.4, text/xml;q=0.4, */*;q=0.1", Some(A)),
            (b"application/atom+xml,application/rdf+xml,application/rss+xml,application/x-netcdf,application/xml;q=0.9,text/xml;q=0.2,*/*;q=0.1", Some(A)),
            (b"application/atom+xml;q=0", None),
            (b"application/*", None),
            (b"*/*", None),
            (b"application/json", None),
            (b"", None),
            (b"application/atom+xml;q=2", None),
        ];
        for (header, expected) in cases {
            assert_eq!(
                feed_of(header),
                *expected,
                "{}",
                String::from_utf8_lossy(header)
            );
        }
        assert_eq!(feed(&HeaderMap::new()), None);
    }

    #[test]
    fn several_lines_are_one_list() {
        assert_eq!(of(&[b"text/markdown", b"application/json;q=0.5"]), M);
        assert_eq!(of(&[b"text/markdown;q=0.5", b"application/json"]), J);
        assert_eq!(of(&[b"text/markdown", b"bad/"]), J);
        assert_eq!(of(&[]), J);
    }
}

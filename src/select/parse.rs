//! The selector grammar and its limits: turns
//! one `include`/`exclude` parameter into de-duplicated [`Selector`]s. Whether a
//! selector fits the model is checked later, by [`super::compile`].
//!
//! ```text
//! list     = item *( "," item )            ; each item trimmed of whitespace
//! item     = segment *( "." segment )      ; 1 to 20 segments
//! segment  = "*" / "**" / ALPHA *( ALPHA / DIGIT / "_" )
//! ```

use std::fmt;

/// At most this many items per parameter, duplicates counted.
pub const MAX_ITEMS: usize = 100;
/// At most this many characters per parameter.
pub const MAX_CHARS: usize = 8192;
/// At most this many segments per selector.
pub const MAX_SEGMENTS: usize = 20;

/// One path segment.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Segment {
    /// An exact field name, e.g. `title`.
    Name(Box<str>),
    /// `*`: exactly one object-field level, any name.
    AnyOne,
    /// `**`: zero or more object-field levels.
    AnyDepth,
}

/// One parsed selector: its text (trimmed) and its segments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector {
    text: Box<str>,
    segments: Vec<Segment>,
}

impl Selector {
    /// The selector as written, trimmed.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The segments, never empty and at most [`MAX_SEGMENTS`].
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }
}

/// What is wrong with a parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The parameter is longer than [`MAX_CHARS`] characters.
    TooLong,
    /// The parameter has more than [`MAX_ITEMS`] items, duplicates counted.
    TooManyItems,
    /// An item is empty or only whitespace (also `,,`, a leading or trailing comma).
    EmptyItem,
    /// A segment is not `*`, `**` or `[A-Za-z][A-Za-z0-9_]*`.
    InvalidSegment,
    /// More than [`MAX_SEGMENTS`] segments.
    TooManySegments,
    /// The selector is well formed but matches no path of the model.
    NoMatch,
    /// The compiled automaton would be too large (see `compile::MAX_DFA_STATES`);
    /// not reachable with the current model.
    TooComplex,
}

/// A rejected parameter: the kind and, for item errors, the offending item (trimmed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    kind: ErrorKind,
    item: Option<Box<str>>,
    /// For item errors: the item's place in its list, from 1.
    position: Option<usize>,
    /// For [`ErrorKind::NoMatch`]: the nearest selector that matches.
    suggestion: Option<Box<str>>,
}

impl ParseError {
    pub(crate) fn whole(kind: ErrorKind) -> ParseError {
        ParseError {
            kind,
            item: None,
            position: None,
            suggestion: None,
        }
    }

    pub(crate) fn item(kind: ErrorKind, item: &str) -> ParseError {
        ParseError {
            kind,
            item: Some(item.into()),
            position: None,
            suggestion: None,
        }
    }

    /// The same error, naming `suggestion` as the nearest valid selector.
    pub(crate) fn suggesting(mut self, suggestion: Option<String>) -> ParseError {
        self.suggestion = suggestion.map(Into::into);
        self
    }

    /// The kind of error.
    #[cfg(any(test, feature = "internals"))]
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The message a client is answered with, for the parameter `param`:
    /// never the client's own text (a permission id pasted into `include`
    /// must not come back), but the item's place, `include item 3: matches
    /// no field of the board document`.
    pub fn client_message(&self, param: &str) -> String {
        let reason = match self.kind {
            ErrorKind::EmptyItem => "empty selector",
            ErrorKind::InvalidSegment => {
                "a segment is not *, ** or a name (a letter, then letters, digits or _)"
            }
            ErrorKind::TooManySegments => "more than 20 segments",
            ErrorKind::NoMatch => "matches no field of the board document",
            ErrorKind::TooLong | ErrorKind::TooManyItems | ErrorKind::TooComplex => {
                return self.to_string();
            }
        };
        match self.position {
            Some(n) => format!("Unknown field selector: {param} item {n}: {reason}"),
            None => format!("Unknown field selector: {param}: {reason}"),
        }
    }

    /// The nearest valid selector (one name away from the offending item),
    /// when there is one: the error's `hint`.
    pub fn suggestion(&self) -> Option<&str> {
        self.suggestion.as_deref()
    }
}

impl fmt::Display for ParseError {
    /// The client-facing message. Every item error reads exactly `Unknown
    /// field selector: <item>` (clients compare it); the nearest valid
    /// selector, when there is one, is [`ParseError::suggestion`], never
    /// part of the message.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            ErrorKind::TooLong => write!(
                f,
                "Field selector list too long: at most {MAX_CHARS} characters are allowed"
            ),
            ErrorKind::TooManyItems => write!(
                f,
                "Too many field selectors: at most {MAX_ITEMS} items are allowed"
            ),
            ErrorKind::TooComplex => write!(f, "Field selectors too complex"),
            ErrorKind::EmptyItem
            | ErrorKind::InvalidSegment
            | ErrorKind::TooManySegments
            | ErrorKind::NoMatch => {
                write!(
                    f,
                    "Unknown field selector: {}",
                    self.item.as_deref().unwrap_or_default()
                )
            }
        }
    }
}

impl std::error::Error for ParseError {}

/// Parses one parameter: limits first, then each item in order; the first bad
/// item is reported. Duplicates are dropped after the checks, keeping the first.
///
/// # Errors
/// A [`ParseError`] of kind [`ErrorKind::TooLong`], [`ErrorKind::TooManyItems`],
/// [`ErrorKind::EmptyItem`], [`ErrorKind::InvalidSegment`] or
/// [`ErrorKind::TooManySegments`].
#[cfg(any(test, feature = "internals"))]
pub fn parse_list(list: &str) -> Result<Vec<Selector>, ParseError> {
    parse_list_checked(list, |_| Ok(()))
}

/// As [`parse_list`], running `check` on each item as soon as it parses, so
/// that the first bad item in the list is the one reported, whatever the
/// reason (grammar or `check`, e.g. the model).
///
/// # Errors
/// As [`parse_list`], or the first error of `check`.
pub fn parse_list_checked(
    list: &str,
    check: impl Fn(&Selector) -> Result<(), ParseError>,
) -> Result<Vec<Selector>, ParseError> {
    if list.len() > MAX_CHARS && list.chars().count() > MAX_CHARS {
        return Err(ParseError::whole(ErrorKind::TooLong));
    }
    if list.split(',').count() > MAX_ITEMS {
        return Err(ParseError::whole(ErrorKind::TooManyItems));
    }
    let mut selectors: Vec<Selector> = Vec::new();
    for (n, raw) in list.split(',').enumerate() {
        let at = |mut e: ParseError| {
            e.position = Some(n + 1);
            e
        };
        let selector = parse_item(raw.trim()).map_err(at)?;
        check(&selector).map_err(at)?;
        if !selectors.iter().any(|s| s.text == selector.text) {
            selectors.push(selector);
        }
    }
    Ok(selectors)
}

/// Parses one trimmed item.
///
/// # Errors
/// As [`parse_list`], for the item kinds.
pub fn parse_item(item: &str) -> Result<Selector, ParseError> {
    if item.is_empty() {
        return Err(ParseError::item(ErrorKind::EmptyItem, item));
    }
    let mut segments = Vec::new();
    for part in item.split('.') {
        if segments.len() == MAX_SEGMENTS {
            return Err(ParseError::item(ErrorKind::TooManySegments, item));
        }
        segments.push(
            parse_segment(part).ok_or_else(|| ParseError::item(ErrorKind::InvalidSegment, item))?,
        );
    }
    Ok(Selector {
        text: item.into(),
        segments,
    })
}

fn parse_segment(part: &str) -> Option<Segment> {
    match part {
        "*" => Some(Segment::AnyOne),
        "**" => Some(Segment::AnyDepth),
        _ => {
            let mut bytes = part.bytes();
            let first = bytes.next()?;
            let ok = first.is_ascii_alphabetic()
                && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_');
            ok.then(|| Segment::Name(part.into()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ErrorKind::*;

    /// `Ok(n)`: parses into `n` segments; `Err(kind)`: rejected with that kind.
    fn item(input: &str) -> Result<usize, ErrorKind> {
        parse_item(input)
            .map(|s| s.segments().len())
            .map_err(|e| e.kind())
    }

    #[test]
    fn item_grammar() {
        let cases: &[(&str, Result<usize, ErrorKind>)] = &[
            ("version", Ok(1)),
            ("board.title", Ok(2)),
            ("board.*.id", Ok(3)),
            ("board.**.id", Ok(3)),
            ("**", Ok(1)),
            ("*", Ok(1)),
            ("**.timestamps", Ok(2)),
            ("a", Ok(1)),
            ("Z", Ok(1)),
            ("a1", Ok(1)),
            ("a_", Ok(1)),
            ("a_b_9", Ok(1)),
            ("camelCase", Ok(1)),
            ("", Err(EmptyItem)),
            ("_a", Err(InvalidSegment)),
            ("1a", Err(InvalidSegment)),
            ("a-b", Err(InvalidSegment)),
            ("a b", Err(InvalidSegment)),
            ("a.", Err(InvalidSegment)),
            (".a", Err(InvalidSegment)),
            ("a..b", Err(InvalidSegment)),
            ("***", Err(InvalidSegment)),
            ("*a", Err(InvalidSegment)),
            ("a*", Err(InvalidSegment)),
            ("a.*b", Err(InvalidSegment)),
            ("é", Err(InvalidSegment)),
            ("aé", Err(InvalidSegment)),
            ("a[0]", Err(InvalidSegment)),
            ("a.0", Err(InvalidSegment)),
            ("a/b", Err(InvalidSegment)),
            ("$", Err(InvalidSegment)),
            ("a\u{0}", Err(InvalidSegment)),
        ];
        for (input, expected) in cases {
            assert_eq!(item(input), *expected, "{input:?}");
        }
    }

    #[test]
    fn segment_limit() {
        let path = |n: usize| vec!["a"; n].join(".");
        assert_eq!(item(&path(19)), Ok(19));
        assert_eq!(item(&path(20)), Ok(20));
        assert_eq!(item(&path(21)), Err(TooManySegments));
        assert_eq!(item(&vec!["**"; 21].join(".")), Err(TooManySegments));
    }

    /// The selectors' texts, or the error message.
    fn list(input: &str) -> Result<Vec<String>, String> {
        parse_list(input)
            .map(|v| v.iter().map(|s| s.text().to_owned()).collect())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn list_splitting_and_messages() {
        let ok = |v: &[&str]| Ok(v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        let unknown = |s: &str| Err(format!("Unknown field selector: {s}"));
        let cases: &[(&str, Result<Vec<String>, String>)] = &[
            ("a", ok(&["a"])),
            ("a,b", ok(&["a", "b"])),
            (" a , b ", ok(&["a", "b"])),
            ("\ta\n", ok(&["a"])),
            ("a,a", ok(&["a"])),
            ("b,a,b", ok(&["b", "a"])),
            ("a, a", ok(&["a"])),
            ("", unknown("")),
            (" ", unknown("")),
            (",", unknown("")),
            ("a,", unknown("")),
            (",a", unknown("")),
            ("a,,b", unknown("")),
            ("a, ,b", unknown("")),
            ("a,b c", unknown("b c")),
            ("a, 1x ", unknown("1x")),
            ("x-y,1x", unknown("x-y")),
        ];
        for (input, expected) in cases {
            assert_eq!(list(input), *expected, "{input:?}");
        }
    }

    #[test]
    fn item_limit_counts_duplicates() {
        let items = |n: usize| vec!["a"; n].join(",");
        assert_eq!(list(&items(99)), Ok(vec!["a".to_owned()]));
        assert_eq!(list(&items(100)), Ok(vec!["a".to_owned()]));
        let err = parse_list(&items(101)).expect_err("101 items");
        assert_eq!(err.kind(), TooManyItems);
        assert!(err.to_string().contains("100"), "{err}");
        // Empty items count too, and the limit is checked before the items.
        assert_eq!(
            parse_list(&",".repeat(100)).map_err(|e| e.kind()).err(),
            Some(TooManyItems)
        );
    }

    #[test]
    fn length_limit() {
        let long = |n: usize| "a".repeat(n);
        assert!(parse_list(&long(8191)).is_ok());
        assert!(parse_list(&long(8192)).is_ok());
        let err = parse_list(&long(8193)).expect_err("8193 chars");
        assert_eq!(err.kind(), TooLong);
        assert!(err.to_string().contains("8192"), "{err}");
        // Characters, not bytes: 8192 two-byte characters are within the limit
        // (and then rejected as an unknown selector, echoed whole).
        let wide = "é".repeat(8192);
        let err = parse_list(&wide).expect_err("not a name");
        assert_eq!(err.kind(), InvalidSegment);
        assert_eq!(err.to_string(), format!("Unknown field selector: {wide}"));
        assert_eq!(
            parse_list(&"é".repeat(8193)).map_err(|e| e.kind()).err(),
            Some(TooLong)
        );
    }
}

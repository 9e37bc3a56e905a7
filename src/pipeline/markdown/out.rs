//! The Markdown output buffer: blocks and their separators, container
//! prefixes (`> `, list indentation) written at each line start, and the
//! escaping that keeps board text text.
//!
//! Board text is written by strangers, so every character that could open
//! Markdown or HTML structure is escaped with a backslash wherever it
//! appears (`\`, `` ` ``, `*`, `_`, `[`, `]`, `<`, `>`, `&`, `|`, `~`, `#`),
//! and at the start of a line also `-`, `+`, `=` and the `.` or `)` after a
//! number; leading blanks of a line are dropped (four would open a code
//! block). Only `http:` and `https:` URLs become link targets, with
//! spaces, parentheses and other delimiters percent-encoded.

/// How a newline inside text is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// A hard line break inside the paragraph.
    Breaks,
    /// A space: headings, table cells, list labels hold one line.
    OneLine,
}

/// Separator before the next block of the current container.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sep {
    /// A blank line (paragraphs, elements).
    Blank,
    /// A plain line break (items of a tight list).
    Line,
}

pub struct Out {
    buf: String,
    /// Written at the start of every line: quote markers and indentation.
    prefix: String,
    /// The current line has nothing on it yet, not even the prefix.
    at_line_start: bool,
    /// Nothing but the prefix or a block marker is on the line: text here
    /// is read as the start of a block.
    fresh: bool,
    /// A list marker was just written: the item's first block goes on its
    /// line.
    after_marker: bool,
    /// The separator owed before the next block, if a block came before it
    /// in the current container.
    owed: Option<Sep>,
    sep: Sep,
    /// Where each block of the document's own level (outside any quote or
    /// list) starts, in bytes: the places a page may end.
    pub(super) blocks: Vec<usize>,
    /// Each board section, as it starts.
    pub(super) boards: Vec<super::pages::BoardMark>,
}

impl Out {
    pub fn with_capacity(bytes: usize) -> Out {
        Out {
            buf: String::with_capacity(bytes),
            prefix: String::new(),
            at_line_start: true,
            fresh: true,
            after_marker: false,
            owed: None,
            sep: Sep::Blank,
            blocks: Vec::new(),
            boards: Vec::new(),
        }
    }

    /// The text written, ending with one newline (empty when nothing was).
    pub fn finish(mut self) -> String {
        self.end_line();
        self.buf
    }

    /// [`Out::finish`], with where its blocks and board sections start.
    pub fn finish_paged(mut self) -> (String, Vec<usize>, Vec<super::pages::BoardMark>) {
        self.end_line();
        (self.buf, self.blocks, self.boards)
    }

    /// Starts a block: on a new line, after the separator owed.
    pub fn begin_block(&mut self) {
        if self.after_marker {
            self.after_marker = false;
            return;
        }
        self.end_line();
        if self.owed.take() == Some(Sep::Blank) {
            self.buf.push_str(self.prefix.trim_end());
            self.buf.push('\n');
        }
        if self.prefix.is_empty() {
            self.blocks.push(self.buf.len());
        }
    }

    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Ends a block: the next one in this container is separated from it.
    pub fn end_block(&mut self) {
        self.after_marker = false;
        self.owed = Some(self.sep);
    }

    /// Runs `inside` as the content of a container whose lines start with
    /// `prefix` more and whose blocks are separated by `sep`.
    pub fn within(&mut self, prefix: &str, sep: Sep, inside: impl FnOnce(&mut Out)) {
        let outer = (self.prefix.len(), self.sep, self.owed.take());
        self.prefix.push_str(prefix);
        self.sep = sep;
        inside(self);
        self.prefix.truncate(outer.0);
        self.sep = outer.1;
        self.owed = outer.2;
    }

    /// Ends the current line if anything is on it.
    pub fn end_line(&mut self) {
        if !self.at_line_start {
            self.buf.push('\n');
            self.at_line_start = true;
            self.fresh = true;
        }
    }

    fn line_prefix(&mut self) {
        if self.at_line_start {
            self.buf.push_str(&self.prefix);
            self.at_line_start = false;
            self.fresh = true;
        }
    }

    /// Markup of our own (heading and emphasis markers, fences), verbatim.
    pub fn markup(&mut self, markup: &str) {
        self.line_prefix();
        self.buf.push_str(markup);
        self.fresh = false;
        self.after_marker = false;
    }

    /// A block marker (`- `, `1. `, `> `-like): what follows it is read
    /// as the start of a block, and the item's first block stays on its
    /// line.
    pub fn marker(&mut self, marker: &str) {
        self.line_prefix();
        self.buf.push_str(marker);
        self.fresh = true;
        self.after_marker = true;
    }

    /// One line of a code block, verbatim after the prefix.
    pub fn code_line(&mut self, line: &str) {
        self.line_prefix();
        self.buf.push_str(line);
        self.buf.push('\n');
        self.at_line_start = true;
        self.fresh = true;
    }

    /// A hard line break inside a paragraph (none at its start).
    pub fn hard_break(&mut self) {
        if !self.fresh && !self.at_line_start {
            self.buf.push_str("\\\n");
            self.at_line_start = true;
            self.fresh = true;
        }
    }

    /// Board text, escaped (see the module docs).
    ///
    /// Past a line's first character, text is copied in runs up to the
    /// next byte that needs care ([`NEEDS_CARE`]); those bytes are all
    /// ASCII, so a run always ends on a character boundary.
    pub fn text(&mut self, text: &str, flow: Flow) {
        let bytes = text.as_bytes();
        let mut i = 0;
        while let Some(&b) = bytes.get(i) {
            if b == b'\n' || b == b'\r' {
                i += if b == b'\r' && bytes.get(i + 1) == Some(&b'\n') {
                    2
                } else {
                    1
                };
                match flow {
                    Flow::Breaks => self.hard_break(),
                    Flow::OneLine => self.push_plain(' '),
                }
                continue;
            }
            self.line_prefix();
            self.after_marker = false;
            if self.fresh {
                if b == b' ' || b == b'\t' {
                    i += 1;
                    continue;
                }
                self.fresh = false;
                if matches!(b, b'-' | b'+' | b'=') {
                    self.buf.push('\\');
                } else if b.is_ascii_digit() {
                    let end = i + bytes[i..].iter().take_while(|d| d.is_ascii_digit()).count();
                    self.buf.push_str(&text[i..end]);
                    if matches!(bytes.get(end), Some(b'.' | b')')) {
                        self.buf.push('\\');
                    }
                    i = end;
                    continue;
                }
            }
            let run = bytes[i..]
                .iter()
                .position(|&b| NEEDS_CARE[usize::from(b)])
                .unwrap_or(bytes.len() - i);
            if run > 0 {
                self.buf.push_str(&text[i..i + run]);
                i += run;
                continue;
            }
            if b == 0 {
                self.buf.push('\u{FFFD}');
            } else {
                self.buf.push('\\');
                self.buf.push(char::from(b));
            }
            i += 1;
        }
    }

    fn push_plain(&mut self, c: char) {
        self.line_prefix();
        if !(self.fresh && c == ' ') {
            self.buf.push(c);
        }
    }

    /// Inline code: the text in a run of backticks longer than any inside
    /// it, newlines as spaces. Nothing for empty text.
    pub fn code_span(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        let fence = longest_run(text, '`') + 1;
        let pad = text.starts_with(['`', ' ']) || text.ends_with(['`', ' ']);
        self.markup("");
        for _ in 0..fence {
            self.buf.push('`');
        }
        if pad {
            self.buf.push(' ');
        }
        for c in text.chars() {
            self.buf.push(if c == '\n' || c == '\r' { ' ' } else { c });
        }
        if pad {
            self.buf.push(' ');
        }
        for _ in 0..fence {
            self.buf.push('`');
        }
    }

    /// A link destination: `url` percent-encoded where Markdown would
    /// read a delimiter. Callers check [`is_web_url`] first.
    pub fn url(&mut self, url: &str) {
        self.markup("");
        for b in url.trim().bytes() {
            if b <= b' ' || b >= 0x7f || b"()<>\\\"'`[]|*_".contains(&b) {
                const HEX: &[u8; 16] = b"0123456789ABCDEF";
                self.buf.push('%');
                self.buf.push(HEX[usize::from(b >> 4)] as char);
                self.buf.push(HEX[usize::from(b & 0xf)] as char);
            } else {
                self.buf.push(b as char);
            }
        }
    }

    /// `[text](url)` when `url` is a web URL, else the text alone.
    pub fn link(&mut self, text: &str, url: Option<&str>) {
        match url.filter(|u| is_web_url(u)) {
            Some(url) => {
                self.markup("[");
                self.text(text, Flow::OneLine);
                self.markup("](");
                self.url(url);
                self.markup(")");
            }
            None => self.text(text, Flow::OneLine),
        }
    }
}

/// The bytes [`Out::text`] does not copy as they are: line ends, NUL (written
/// as U+FFFD) and the characters it escapes with a backslash.
const NEEDS_CARE: [bool; 256] = {
    let mut table = [false; 256];
    let special = b"\n\r\0\\`*_[]<>&|~#";
    let mut i = 0;
    while i < special.len() {
        table[special[i] as usize] = true;
        i += 1;
    }
    table
};

/// `http:` or `https:`, any case; nothing else becomes a link target.
pub fn is_web_url(url: &str) -> bool {
    let url = url.trim_start().as_bytes();
    let has = |scheme: &[u8]| {
        url.len() > scheme.len() && url[..scheme.len()].eq_ignore_ascii_case(scheme)
    };
    has(b"http://") || has(b"https://")
}

/// The longest run of `c` in `text`.
pub fn longest_run(text: &str, c: char) -> usize {
    let (mut longest, mut run) = (0, 0);
    for ch in text.chars() {
        run = if ch == c { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    longest
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::Strategy;

    fn para(text: &str) -> String {
        let mut out = Out::with_capacity(64);
        out.begin_block();
        out.text(text, Flow::Breaks);
        out.finish()
    }

    #[test]
    fn escaping_table() {
        let cases = [
            ("plain words", "plain words\n"),
            ("# not a heading", "\\# not a heading\n"),
            ("- not a list", "\\- not a list\n"),
            ("+ nor this", "\\+ nor this\n"),
            ("1. nor this", "1\\. nor this\n"),
            ("12) nor this", "12\\) nor this\n"),
            ("2027 was fine", "2027 was fine\n"),
            ("> no quote", "\\> no quote\n"),
            ("    no code", "no code\n"),
            ("<script>x</script>", "\\<script\\>x\\</script\\>\n"),
            ("[x](javascript:alert(1))", "\\[x\\](javascript:alert(1))\n"),
            (
                "a *b* _c_ `d` ~e~ f|g h&amp; \\",
                "a \\*b\\* \\_c\\_ \\`d\\` \\~e\\~ f\\|g h\\&amp; \\\\\n",
            ),
            ("one\ntwo\n- three", "one\\\ntwo\\\n\\- three\n"),
            ("===", "\\===\n"),
            ("\n\nlate", "late\n"),
        ];
        for (input, expected) in cases {
            assert_eq!(para(input), expected, "{input:?}");
        }
    }

    /// The escaping rules written one character at a time, as plainly as
    /// they read in the module docs: [`Out::text`]'s runs must agree.
    fn text_by_chars(out: &mut Out, text: &str, flow: Flow) {
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\n' || c == '\r' {
                if c == '\r' && chars.peek() == Some(&'\n') {
                    chars.next();
                }
                match flow {
                    Flow::Breaks => out.hard_break(),
                    Flow::OneLine => out.push_plain(' '),
                }
                continue;
            }
            out.line_prefix();
            out.after_marker = false;
            if out.fresh {
                if c == ' ' || c == '\t' {
                    continue;
                }
                out.fresh = false;
                if matches!(c, '-' | '+' | '=') {
                    out.buf.push('\\');
                } else if c.is_ascii_digit() {
                    out.buf.push(c);
                    while let Some(&d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                        out.buf.push(d);
                        chars.next();
                    }
                    if matches!(chars.peek(), Some('.' | ')')) {
                        out.buf.push('\\');
                    }
                    continue;
                }
            }
            match c {
                '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '&' | '|' | '~' | '#' => {
                    out.buf.push('\\');
                    out.buf.push(c);
                }
                '\0' => out.buf.push('\u{FFFD}'),
                c => out.buf.push(c),
            }
        }
    }

    /// Characters that take every path of the escaping rules.
    const TRICKY: &[char] = &[
        ' ', '\t', '\r', '\n', '\0', '#', '*', '_', '`', '~', '|', '<', '>', '&', '[', ']', '\\',
        '+', '=', '-', '.', ')', '1', '9', 'a', 'é', '€',
    ];

    proptest::proptest! {
        #[test]
        fn text_in_runs_writes_what_one_char_at_a_time_writes(
            pieces in proptest::collection::vec(
                proptest::collection::vec(proptest::sample::select(TRICKY.to_vec()), 0..12)
                    .prop_map(|chars| chars.into_iter().collect::<String>()),
                0..6,
            ),
            one_line in proptest::bool::ANY,
        ) {
            let flow = if one_line { Flow::OneLine } else { Flow::Breaks };
            let (mut fast, mut slow) = (Out::with_capacity(64), Out::with_capacity(64));
            for (i, piece) in pieces.iter().enumerate() {
                for out in [&mut fast, &mut slow] {
                    out.begin_block();
                    if i % 2 == 1 {
                        out.marker("- ");
                    }
                }
                fast.text(piece, flow);
                text_by_chars(&mut slow, piece, flow);
                fast.end_block();
                slow.end_block();
            }
            proptest::prop_assert_eq!(fast.finish(), slow.finish());
        }
    }

    #[test]
    fn urls() {
        assert!(is_web_url("https://x.test/a") && is_web_url("HTTP://x.test"));
        for bad in [
            "javascript:alert(1)",
            "data:text/html,x",
            "//x.test",
            "https:",
            "ftp://x",
            "",
        ] {
            assert!(!is_web_url(bad), "{bad}");
        }
        let mut out = Out::with_capacity(64);
        out.link("a [b]", Some("https://x.test/a b(c)<d>"));
        out.text(" ", Flow::OneLine);
        out.link("js", Some("javascript:alert(1)"));
        assert_eq!(
            out.finish(),
            "[a \\[b\\]](https://x.test/a%20b%28c%29%3Cd%3E) js\n"
        );
    }

    #[test]
    fn containers_prefix_their_lines() {
        let mut out = Out::with_capacity(64);
        out.begin_block();
        out.text("first", Flow::Breaks);
        out.end_block();
        out.begin_block();
        out.within("> ", Sep::Blank, |out| {
            for text in ["quoted\n# line", "second"] {
                out.begin_block();
                out.text(text, Flow::Breaks);
                out.end_block();
            }
        });
        out.end_block();
        out.begin_block();
        out.code_span("a ``b");
        assert_eq!(
            out.finish(),
            "first\n\n> quoted\\\n> \\# line\n>\n> second\n\n```a ``b```\n"
        );
    }
}

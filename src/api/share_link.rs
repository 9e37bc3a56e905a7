//! Step 7 of request checking (after route, method, query shape, combination, view, selectors): a Milanote share link -> board id and
//! permission id, parsed with the `url` crate (WHATWG), never by hand.

use url::Url;

/// A validated share link. `Debug` redacts the permission id so it cannot
/// reach a log by accident.
#[derive(Clone, PartialEq, Eq)]
pub struct ShareLink {
    pub board_id: String,
    pub permission_id: String,
}

impl std::fmt::Debug for ShareLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShareLink")
            .field("board_id", &self.board_id)
            .field("permission_id", &"<redacted>")
            .finish()
    }
}

/// Why a link was refused; the text is safe to show (it never echoes the link).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShareLinkError {
    NotAUrl,
    NotHttps,
    WrongHost,
    WrongPort,
    HasUserInfo,
    BadBoardId,
    MissingPermission,
    RepeatedPermission,
    BadPermission,
}

impl ShareLinkError {
    pub fn message(self) -> &'static str {
        match self {
            ShareLinkError::NotAUrl => "url is not a valid absolute URL",
            ShareLinkError::NotHttps => "url must use https",
            ShareLinkError::WrongHost => "url is not a share link of the board provider",
            ShareLinkError::WrongPort => "url must not name a port other than 443",
            ShareLinkError::HasUserInfo => "url must not carry user information",
            ShareLinkError::BadBoardId => "url does not carry a valid board id",
            ShareLinkError::MissingPermission => "url has no p (permission) parameter",
            ShareLinkError::RepeatedPermission => "url has more than one p parameter",
            ShareLinkError::BadPermission => "url has an invalid p (permission) parameter",
        }
    }
}

/// `^[A-Za-z0-9_-]{1,256}$`, the shape of board ids and permission ids.
pub fn is_valid_id(s: &str) -> bool {
    (1..=256).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Parses `https://{share_host}/<board_id>[/<slug>]?p=<permission_id>`.
///
/// Other query parameters and a fragment are ignored.
///
/// # Errors
/// [`ShareLinkError`] for anything that is not such a link.
pub fn parse(link: &str, share_host: &str) -> Result<ShareLink, ShareLinkError> {
    let url = Url::parse(link).map_err(|_| ShareLinkError::NotAUrl)?;
    if url.scheme() != "https" {
        return Err(ShareLinkError::NotHttps);
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(ShareLinkError::HasUserInfo);
    }
    // WHATWG parsing lowercases ASCII hosts; compare case-insensitively anyway.
    match url.host_str() {
        Some(host) if host.eq_ignore_ascii_case(share_host) => {}
        _ => return Err(ShareLinkError::WrongHost),
    }
    // `Url` drops the scheme's default port, so `:443` reads as `None` here.
    if url.port().is_some() {
        return Err(ShareLinkError::WrongPort);
    }
    let board_id = url
        .path_segments()
        .and_then(|mut segments| segments.next())
        .filter(|id| is_valid_id(id))
        .ok_or(ShareLinkError::BadBoardId)?;
    let mut permission = None;
    for (key, value) in url.query_pairs() {
        if key == "p" {
            if permission.is_some() {
                return Err(ShareLinkError::RepeatedPermission);
            }
            permission = Some(value);
        }
    }
    let permission = permission.ok_or(ShareLinkError::MissingPermission)?;
    if !is_valid_id(&permission) {
        return Err(ShareLinkError::BadPermission);
    }
    Ok(ShareLink {
        board_id: board_id.to_string(),
        permission_id: permission.into_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ShareLinkError::*;

    const HOST: &str = "app.milanote.com";

    #[test]
    fn valid_links() {
        let cases = [
            (
                "https://app.milanote.com/1W3ZZU1Qvua02H/dragon-tree?p=m441fkw92yV",
                "1W3ZZU1Qvua02H",
                "m441fkw92yV",
            ),
            (
                "https://app.milanote.com/1WzwVV1s9muC5O?p=TjNXxqcH5oo",
                "1WzwVV1s9muC5O",
                "TjNXxqcH5oo",
            ),
            ("https://APP.Milanote.COM/abc?p=x", "abc", "x"),
            ("https://app.milanote.com:443/abc?p=x", "abc", "x"),
            (
                "https://app.milanote.com/abc/slug/more?p=x&utm=1#frag",
                "abc",
                "x",
            ),
            ("https://app.milanote.com/a_b-c?q=1&p=Z_9-", "a_b-c", "Z_9-"),
            ("https://app.milanote.com/abc/?p=x", "abc", "x"),
        ];
        for (link, board, p) in cases {
            let got = parse(link, HOST).unwrap_or_else(|e| panic!("{link}: {e:?}"));
            assert_eq!(
                (got.board_id.as_str(), got.permission_id.as_str()),
                (board, p),
                "{link}"
            );
        }
    }

    #[test]
    fn invalid_links() {
        let long = format!("https://app.milanote.com/{}?p=x", "a".repeat(257));
        let long_p = format!("https://app.milanote.com/abc?p={}", "a".repeat(257));
        let cases: Vec<(&str, ShareLinkError)> = vec![
            ("", NotAUrl),
            ("not a url", NotAUrl),
            ("app.milanote.com/abc?p=x", NotAUrl),
            ("http://app.milanote.com/abc?p=x", NotHttps),
            ("ftp://app.milanote.com/abc?p=x", NotHttps),
            ("https://evil.com/abc?p=x", WrongHost),
            ("https://app.milanote.com.evil.com/abc?p=x", WrongHost),
            ("https://milanote.com/abc?p=x", WrongHost),
            ("https://app.milanote.com:8443/abc?p=x", WrongPort),
            ("https://user@app.milanote.com/abc?p=x", HasUserInfo),
            ("https://user:pw@app.milanote.com/abc?p=x", HasUserInfo),
            ("https://app.milanote.com/?p=x", BadBoardId),
            ("https://app.milanote.com?p=x", BadBoardId),
            ("https://app.milanote.com/a.b?p=x", BadBoardId),
            ("https://app.milanote.com/a%20b?p=x", BadBoardId),
            ("https://app.milanote.com//abc?p=x", BadBoardId),
            (&long, BadBoardId),
            ("https://app.milanote.com/abc", MissingPermission),
            ("https://app.milanote.com/abc?q=x", MissingPermission),
            ("https://app.milanote.com/abc#p=x", MissingPermission),
            ("https://app.milanote.com/abc?p=x&p=y", RepeatedPermission),
            ("https://app.milanote.com/abc?p=", BadPermission),
            ("https://app.milanote.com/abc?p=a+b", BadPermission),
            ("https://app.milanote.com/abc?p=a%2Fb", BadPermission),
            (&long_p, BadPermission),
        ];
        for (link, want) in cases {
            assert_eq!(parse(link, HOST), Err(want), "{link}");
        }
    }

    #[test]
    fn messages_never_echo_the_link() {
        let link = "https://evil.com/abc?p=SECRETPERM";
        let err = parse(link, HOST).expect_err("wrong host");
        assert!(!err.message().contains("SECRETPERM"));
        assert!(!err.message().contains("evil"));
    }

    #[test]
    fn debug_redacts_the_permission() {
        let link = parse("https://app.milanote.com/abc?p=SECRETPERM", HOST).expect("valid");
        assert!(!format!("{link:?}").contains("SECRETPERM"));
    }

    #[test]
    fn id_shape() {
        assert!(is_valid_id("a"));
        assert!(is_valid_id(&"a".repeat(256)));
        assert!(!is_valid_id(&"a".repeat(257)));
        assert!(!is_valid_id(""));
        assert!(!is_valid_id("é"));
    }
}

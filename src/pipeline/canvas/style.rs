//! What a JSON Canvas export may say of an element beside its text: its
//! colour as a canvas colour, and which of its URLs are kept. Called by the
//! canvas writer (`super`) for every node and edge.
//!
//! A URL that carries a permission id (a share link's `p` parameter) would
//! hand whoever opens the file the right to read that board, so such a URL
//! is never written: a member holding one is removed before the element is
//! written (its link becomes its text), and inside longer text the
//! parameter's value is cut out.

use serde_json::Value;

/// A colour as JSON Canvas takes it: `#rrggbb` for a hex colour (`#rgb`
/// widened, alpha dropped), one of the six presets (`"1"` red to `"6"`
/// purple) for a colour named in words; `None` for anything else.
pub fn canvas_color(raw: &str) -> Option<String> {
    let raw = raw.trim();
    if let Some(hex) = raw.strip_prefix('#') {
        if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let six = match hex.len() {
            3 | 4 => hex.chars().take(3).flat_map(|c| [c, c]).collect(),
            6 | 8 => hex[..6].to_owned(),
            _ => return None,
        };
        return Some(format!("#{}", six.to_ascii_lowercase()));
    }
    let preset = match raw.to_ascii_lowercase().as_str() {
        "red" => "1",
        "orange" => "2",
        "yellow" => "3",
        "green" => "4",
        "cyan" | "teal" | "blue" => "5",
        "purple" | "violet" | "pink" => "6",
        _ => return None,
    };
    Some(preset.to_owned())
}

/// Whether `text` holds a URL with a `p` query parameter, the permission
/// id of a share link (absolute or relative, any host: a board link may
/// name the app's host or none).
pub fn carries_permission(text: &str) -> bool {
    text.split_whitespace()
        .any(|token| permission_span(token).is_some())
}

/// The byte range of the first `p` parameter's value in `token`, when its
/// query (after `?`, before `#`) has one.
fn permission_span(token: &str) -> Option<std::ops::Range<usize>> {
    let start = token.find('?')? + 1;
    let end = token[start..].find('#').map_or(token.len(), |i| start + i);
    let mut at = start;
    for pair in token[start..end].split('&') {
        let key = pair.split('=').next().unwrap_or_default();
        if key == "p" || key.eq_ignore_ascii_case("%70") {
            let value = at + key.len() + usize::from(pair.len() > key.len());
            return Some(value..at + pair.len());
        }
        at += pair.len() + 1;
    }
    None
}

/// `text` with the value of every permission parameter cut out of the URLs
/// it holds (`?p=` is left, empty).
fn without_permissions(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(|c: char| !c.is_whitespace()) {
        out.push_str(&rest[..start]);
        let token_len = rest[start..]
            .find(char::is_whitespace)
            .unwrap_or(rest.len() - start);
        let mut token = rest[start..start + token_len].to_owned();
        while let Some(span) = permission_span(&token) {
            if span.is_empty() {
                break;
            }
            token.replace_range(span, "");
        }
        out.push_str(&token);
        rest = &rest[start + token_len..];
    }
    out.push_str(rest);
    out
}

/// Removes permission ids from an element's JSON, at every depth: a member
/// whose whole value is such a URL (a board link's `url`, a link mark's
/// `href`, a link's `url`) is removed, so the writer shows the text without
/// the link; any other string has the parameter's value cut out. Iterative:
/// the element's depth is the document's, bounded by its reader.
pub fn scrub(value: &mut Value) {
    let mut stack = vec![value];
    while let Some(current) = stack.pop() {
        match current {
            Value::Object(map) => {
                map.retain(|_, v| match v {
                    Value::String(s) => s.split_whitespace().count() != 1 || !carries_permission(s),
                    _ => true,
                });
                stack.extend(map.values_mut());
            }
            Value::Array(items) => stack.extend(items.iter_mut()),
            Value::String(s) if carries_permission(s) => *s = without_permissions(s),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn colours_become_hex_or_presets() {
        let cases = [
            ("#FFF6D9", Some("#fff6d9")),
            ("#abc", Some("#aabbcc")),
            ("#11223344", Some("#112233")),
            (" red ", Some("1")),
            ("Purple", Some("6")),
            ("#12345", None),
            ("#ggg", None),
            ("rgb(1,2,3)", None),
            ("", None),
        ];
        for (raw, want) in cases {
            assert_eq!(canvas_color(raw).as_deref(), want, "{raw}");
        }
    }

    #[test]
    fn permission_ids_are_found_and_cut() {
        for yes in [
            "https://app.milanote.com/1Ab/x?p=SECRET",
            "/1Ab?utm=1&p=SECRET#top",
            "see https://app.milanote.com/1Ab?p=S now",
            "https://x.test/?%70=S",
        ] {
            assert!(carries_permission(yes), "{yes}");
        }
        for no in [
            "https://app.milanote.com/1Ab/x",
            "https://x.test/?page=2&q=p",
            "p=1",
            "",
        ] {
            assert!(!carries_permission(no), "{no}");
        }
        assert_eq!(
            without_permissions("see  https://a.test/b?x=1&p=SECRET#f and ?p=S2"),
            "see  https://a.test/b?x=1&p=#f and ?p="
        );
    }

    #[test]
    fn scrub_removes_link_members_and_cuts_text() {
        let mut v = json!({"type": "inlineBoardLink", "attrs": {"url": "https://app.milanote.com/B?p=SECRET", "title": "Trip"},
            "content": [{"text": "go to https://app.milanote.com/B?p=SECRET2 now", "marks": [{"type": "link", "attrs": {"href": "/B?p=SECRET3"}}]}]});
        scrub(&mut v);
        let text = v.to_string();
        assert!(!text.contains("SECRET"), "{text}");
        assert_eq!(v["attrs"], json!({"title": "Trip"}));
        assert_eq!(v["content"][0]["marks"][0]["attrs"], json!({}));
    }
}

//! The sample upstream's bundled images (`src/demo/images/*.png`), so the
//! demo boards' `IMAGE` elements show real pictures without the internet,
//! and the origin placeholder the fixtures use for them.
//!
//! Fixture files name the sample upstream as [`FIXTURE_ORIGIN`], a host that
//! never resolves; the sample replaces it with its own loopback origin in
//! every boards answer ([`with_origin`]), so a browser showing the board
//! loads the picture from the running sample. Read straight from disk (the
//! normalizer's fixture tests) the URLs stay stable.

use super::scenarios::Reply;

/// The origin fixture files use for the sample upstream's own images.
pub const FIXTURE_ORIGIN: &str = "http://sample-upstream.invalid";

/// Picture name and PNG bytes, served at `/images/<name>/<variant>.png`.
const IMAGES: &[(&str, &[u8])] = &[
    ("tram28", include_bytes!("images/tram28.png")),
    ("francesinha", include_bytes!("images/francesinha.png")),
];

/// The sizes Milanote keeps of an uploaded image; the sample has one
/// picture per name and serves it for every size.
const VARIANTS: &[&str] = &["original", "regular", "thumb", "large", "huge"];

/// `fixture` with [`FIXTURE_ORIGIN`] replaced by `origin` (the sample's
/// `http://127.0.0.1:PORT`).
pub fn with_origin(fixture: &str, origin: &str) -> String {
    fixture.replace(FIXTURE_ORIGIN, origin)
}

/// The reply for `/images/<name>/<variant>.png` (path segments already
/// decoded), `None` for any other path.
pub fn route(segments: &[&str]) -> Option<Reply> {
    let ["images", name, file] = segments else {
        return None;
    };
    let variant = file.strip_suffix(".png")?;
    if !VARIANTS.contains(&variant) {
        return None;
    }
    let (_, bytes) = IMAGES.iter().find(|(n, _)| n == name)?;
    Some(Reply::Full {
        status: 200,
        headers: vec![
            ("Content-Type", "image/png".into()),
            ("Cache-Control", "public, max-age=3600".into()),
        ],
        body: bytes.to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_images_are_small_pngs() {
        for (name, bytes) in IMAGES {
            assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "{name}");
            assert!(bytes.len() < 8 * 1024, "{name} is {} bytes", bytes.len());
        }
    }

    #[test]
    fn routes_known_names_and_sizes_only() {
        let png = |segments: &[&str]| match route(segments) {
            Some(Reply::Full { status, body, .. }) => Some((status, body.len())),
            _ => None,
        };
        assert!(matches!(png(&["images", "tram28", "regular.png"]), Some((200, n)) if n > 0));
        assert!(png(&["images", "francesinha", "large.png"]).is_some());
        for other in [
            &["images", "tram28", "regular.jpg"][..],
            &["images", "nope", "regular.png"],
            &["images", "tram28", "tiny.png"],
            &["images", "tram28"],
            &["api", "boards"],
        ] {
            assert!(png(other).is_none(), "{other:?}");
        }
    }

    #[test]
    fn the_fixture_origin_is_replaced() {
        let text = r#"{"regular":"http://sample-upstream.invalid/images/tram28/regular.png"}"#;
        assert_eq!(
            with_origin(text, "http://127.0.0.1:5"),
            r#"{"regular":"http://127.0.0.1:5/images/tram28/regular.png"}"#
        );
    }
}

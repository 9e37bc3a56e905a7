//! The fixture files embedded by `build.rs`: Milanote's `/api/boards` answer
//! for one board each, keyed by board id. Used by the sample upstream.

use serde_json::{Map, Value};

include!(concat!(env!("OUT_DIR"), "/sample_fixtures.rs"));

/// The raw text of the fixture for `board_id`: a board fixture
/// (`src/demo/fixtures/boards/`) first, else a scenario fixture
/// (`src/demo/fixtures/scenarios/`).
pub fn fixture_text(board_id: &str) -> Option<&'static str> {
    BOARD_FIXTURES
        .iter()
        .chain(SCENARIO_FIXTURES.iter())
        .find(|(id, _)| *id == board_id)
        .map(|(_, text)| *text)
}

/// The parsed fixture for `board_id`, when there is one and it is a JSON
/// object, with the image origin placeholder replaced by `origin` (the
/// sample's own, see [`super::images`]).
pub fn fixture(board_id: &str, origin: &str) -> Option<Map<String, Value>> {
    let text = super::images::with_origin(fixture_text(board_id)?, origin);
    match serde_json::from_str(&text) {
        Ok(Value::Object(map)) => Some(map),
        _ => None,
    }
}

/// Ids of the embedded board fixtures (not the scenarios), sorted.
#[cfg(any(test, feature = "internals"))]
pub fn board_ids() -> Vec<&'static str> {
    BOARD_FIXTURES.iter().map(|(id, _)| *id).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_embedded_fixture_is_a_json_object() {
        for (id, _) in BOARD_FIXTURES.iter().chain(SCENARIO_FIXTURES.iter()) {
            assert!(
                fixture(id, "http://127.0.0.1:1").is_some(),
                "fixture {id} is not a JSON object"
            );
        }
    }

    #[test]
    fn client_fixtures_are_embedded() {
        assert!(board_ids().contains(&"t-root"));
        assert!(fixture_text("fault-skeleton").is_some());
        assert!(fixture_text("no-such-board").is_none());
    }
}

//! The flat reader on hand-made documents: reading order, parents, and
//! members the service never writes.

use super::*;

#[test]
fn elements_come_in_reading_order_with_their_parents() {
    let doc = br#"{"version":1,"source":{"provider":"m","boardId":"b"},"fetchedAt":"t","board":{"id":"b","type":"BOARD","title":"Root","children":[
        {"id":"low","type":"CARD","location":{"parentId":"b","section":"CANVAS","position":{"x":0,"y":9}},"richText":{"plainText":"  second   card ","blocks":[]},"children":[]},
        {"id":"col","type":"COLUMN","title":"Col","location":{"parentId":"b","section":"CANVAS","position":{"x":5,"y":1}},"children":[
            {"id":"n2","type":"CARD","location":{"parentId":"col","section":"INBOX","position":{"index":2}},"children":[]},
            {"id":"n1","type":"CARD","location":{"parentId":"col","section":"INBOX","position":{"index":1}},"timestamps":{"createdAt":"x"},"children":[]}]}]}}"#;
    let flat = read(doc).expect("reads");
    let ids: Vec<&str> = flat.elements.iter().map(|e| e.id.as_ref()).collect();
    assert_eq!(ids, ["b", "col", "n1", "n2", "low"]);
    assert_eq!(flat.elements[2].parent, Some(1));
    assert_eq!(flat.elements[2].section.as_deref(), Some("INBOX"));
    let names: Vec<&str> = flat.elements[2]
        .fields
        .iter()
        .map(|f| f.0.as_ref())
        .collect();
    assert_eq!(names, ["position"]);
    assert_eq!(flat.elements[4].label(), "second card");
    assert_eq!(flat.elements[3].label(), "CARD");
    assert_eq!(flat.board_id, "b");
}

#[test]
fn odd_members_read_as_the_first_of_a_name_and_a_location_as_fields() {
    let doc = br#"{"board":{"id":"b","type":7,"id":"other","children":[
        {"id":"a\u0062","type":"CARD","type":"NOTE","location":"somewhere","children":[]},
        {"id":"c","location":{"parentId":"b","section":"INBOX","position":{"index":"3"},"zoom":2},"childrenLoaded":false,"children":[],"children":[{"id":"lost"}]},
        {"id":"d","location":[1,2],"timestamps":{"modifiedAt":"x"}}]}}"#;
    let flat = read(doc).expect("reads");
    let ids: Vec<&str> = flat.elements.iter().map(|e| e.id.as_ref()).collect();
    assert_eq!(ids, ["b", "c", "ab", "d"]);
    assert_eq!(flat.elements[0].kind, "UNKNOWN");
    let escaped = &flat.elements[2];
    assert_eq!(
        (escaped.key, escaped.kind.as_ref()),
        (r#""a\u0062""#, "CARD")
    );
    assert_eq!(
        escaped.field("location").map(RawValue::get),
        Some(r#""somewhere""#)
    );
    let c = &flat.elements[1];
    let names: Vec<&str> = c.fields.iter().map(|f| f.0.as_ref()).collect();
    assert_eq!(names, ["position", "location.zoom", "childrenLoaded"]);
    assert!(c.unloaded);
    assert_eq!(c.section.as_deref(), Some("INBOX"));
    assert_eq!(
        flat.elements[3].field("location").map(RawValue::get),
        Some("[1,2]")
    );
    assert!(flat.elements[3].field("timestamps").is_none());
}

#[test]
fn what_is_not_a_board_is_unreadable_or_skipped() {
    for bad in [&b"[]"[..], b"{}", b"{\"board\":[]}", b"not json"] {
        assert!(read(bad).is_err(), "{}", String::from_utf8_lossy(bad));
    }
    let odd =
        br#"{"board":{"id":"b","children":[1,{"id":2},{"id":"b"},{"id":"c","children":"x"}]}}"#;
    let flat = read(odd).expect("reads");
    let ids: Vec<&str> = flat.elements.iter().map(|e| e.id.as_ref()).collect();
    assert_eq!(ids, ["b", "c"]);
}

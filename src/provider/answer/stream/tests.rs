//! The streamed reader reads what the whole-body reader reads, wherever the
//! body is cut, and reads as the body comes.

use super::*;
use crate::provider::answer::tests::READ_CASES;

/// `body` read by a stream that is handed it cut at `cuts` (ascending),
/// each part split off one buffer as the transport splits them.
fn streamed(body: &[u8], cuts: &[usize]) -> (Bytes, Result<Answer, AnswerError>) {
    let mut rest = BytesMut::from(body);
    let mut stream = AnswerStream::new();
    let mut at = 0;
    for &cut in cuts {
        stream.read_more(rest.split_to(cut - at));
        at = cut;
    }
    stream.finish(rest)
}

/// What the whole-body reader answers.
fn whole(body: &[u8]) -> Result<Answer, AnswerError> {
    Answer::parse_bytes(&Bytes::copy_from_slice(body))
}

fn same_as_whole(body: &[u8], cuts: &[usize]) {
    let (kept, answer) = streamed(body, cuts);
    assert_eq!(&kept[..], body);
    assert_eq!(
        answer,
        whole(body),
        "{} cut at {cuts:?}",
        String::from_utf8_lossy(body)
    );
}

#[test]
fn every_case_reads_alike_wherever_it_is_cut() {
    for body in READ_CASES.iter().map(|b| b.as_bytes()) {
        same_as_whole(body, &[]);
        for cut in 0..=body.len() {
            same_as_whole(body, &[cut]);
        }
        let every_byte: Vec<usize> = (1..body.len()).collect();
        same_as_whole(body, &every_byte);
    }
}

#[test]
fn a_character_cut_between_parts_is_read_whole() {
    let body = r#"{"elements": {"é€a": {"content": {"t": "🙂 é € x"}, "id": "é€a"}}, "k": "€"}"#;
    let body = body.as_bytes();
    for cut in 0..=body.len() {
        same_as_whole(body, &[cut]);
    }
}

#[test]
fn bodies_that_are_not_utf8_or_not_answers_get_the_whole_readers_verdict() {
    let mut cases: Vec<Vec<u8>> = vec![
        b"{\"elements\": {\"a\": {\"content\": \"\xff\"}}}".to_vec(),
        b"{\"elements\": {\"a\": {}}, \"x\": \"\xc3\"}".to_vec(),
        b"{\"elements\": {\"a\": {}}} \xe2\x82".to_vec(),
        b"{\"elements\": {\"a\": {}}}}".to_vec(),
        b"{\"elements\": {\"a\": {}}, \"x\": 12".to_vec(),
        b"{\"elements\": {\"a\": {\"content\": [1, 2}}}".to_vec(),
        b"   ".to_vec(),
        b"[{\"elements\": {}}]".to_vec(),
    ];
    let deep = |depth: usize| {
        let content = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        format!(r#"{{"elements": {{"a": {{"content": {content}}}}}}}"#).into_bytes()
    };
    cases.push(deep(crate::provider::answer::MAX_CONTENT_DEPTH));
    cases.push(deep(crate::provider::answer::MAX_CONTENT_DEPTH + 1));
    for body in &cases {
        for cut in 0..=body.len() {
            same_as_whole(body, &[cut]);
        }
    }
}

#[test]
fn parts_from_separate_buffers_are_joined() {
    let body = READ_CASES[0].as_bytes();
    let mut stream = AnswerStream::new();
    for part in body.chunks(7) {
        stream.read_more(BytesMut::from(part));
    }
    let (kept, answer) = stream.finish(BytesMut::new());
    assert_eq!(&kept[..], body);
    assert_eq!(answer, whole(body));
}

/// An answer of `n` elements, each with content, then the other members.
fn board(n: usize) -> String {
    let elements: Vec<String> = (0..n)
        .map(|i| {
            format!(
                r#""e{i}": {{"id": "e{i}", "elementType": "CARD", "location": {{"parentId": "b", "position": {{"x": {i}, "y": -{i}}}}}, "content": {{"text": "card {i} é", "n": [{i}, 1.5]}}, "meta": {{"createdTime": {i}}}}}"#
            )
        })
        .collect();
    format!(
        r#"{{"elements": {{{}}}, "comments": {{"c": {{"text": "hi", "id": "c"}}}}, "canvasOrder": {{"b": ["e0", "e1"]}}, "fetchedTime": 1796000000000}}"#,
        elements.join(", ")
    )
}

#[test]
fn elements_are_read_as_the_body_comes() {
    let body = board(200);
    let half = body.len() / 2;
    let mut rest = BytesMut::from(body.as_bytes());
    let mut stream = AnswerStream::new();
    stream.read_more(rest.split_to(half));
    let read = stream.answer.elements.as_ref().map_or(0, |e| e.len());
    assert!(
        (90..=110).contains(&read),
        "{read} of 200 elements read from half the body"
    );
    let (_, answer) = stream.finish(rest);
    assert_eq!(answer, whole(body.as_bytes()));
    assert_eq!(answer.unwrap().element_count(), 200);
}

#[test]
fn a_unit_is_read_again_only_once_the_body_has_grown_by_as_much() {
    // One element as large as the rest of the body, and a long top-level
    // member, handed over a byte at a time.
    let big: Vec<String> = (0..3000).map(|i| i.to_string()).collect();
    let body = format!(
        r#"{{"elements": {{"a": {{"content": [{0}]}}, "b": {{}}}}, "x": [{0}], "y": 1}}"#,
        big.join(",")
    );
    let mut stream = AnswerStream::new();
    let mut scanned = 0;
    for part in body.as_bytes().chunks(1) {
        stream.read_more(BytesMut::from(part));
        scanned += stream.scanned;
        stream.scanned = 0;
    }
    assert!(
        scanned <= 4 * body.len(),
        "{scanned} bytes scanned for a body of {}",
        body.len()
    );
    let (_, answer) = stream.finish(BytesMut::new());
    assert_eq!(answer, whole(body.as_bytes()));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(500))]

    /// Generated values in every place the reader reads (as in the
    /// whole-body reader's own test), cut anywhere: the stream answers
    /// what the whole body's reader answers.
    #[test]
    fn generated_answers_cut_anywhere_read_as_whole(
        content in crate::provider::answer::check::tests::json_text(),
        other in crate::provider::answer::check::tests::json_text(),
        cuts in proptest::collection::vec(0.0f64..1.0, 0..6),
        n in 0usize..12,
    ) {
        let body = board(n).replacen(r#""text": "card 0 é""#, &format!(r#""text": {content}"#), 1);
        let body = body.replacen(r#""fetchedTime""#, &format!(r#""other": {other}, "fetchedTime""#), 1);
        let mut cuts: Vec<usize> = cuts.iter().map(|f| (f * body.len() as f64) as usize).collect();
        cuts.sort_unstable();
        same_as_whole(body.as_bytes(), &cuts);
    }
}

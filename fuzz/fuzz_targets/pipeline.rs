//! Differential fuzz target for the serving pipeline: arbitrary bytes -> if
//! they are a JSON object, one `/api/boards` answer (read whole, and read
//! as it arrives, cut in up to seven places, to the same answer) merged into a `Fetched`
//! as the provider client merges it -> `pipeline::load::build` (the document
//! as compact bytes) and the reference (`pipeline::reference`: value tree,
//! sanitize walk) -> the same document bytes, then the same body and ETag
//! for every view, an include and excludes (the answer's own `include`
//! string is tried too when it is a valid list), as JSON and as Markdown (the
//! one-pass Markdown reader against selecting into JSON and reading that
//! with serde_json). Arbitrary bytes handed to either renderer must be an
//! error or a body, never a panic.
//!
//! Run: `RUSTC_BOOTSTRAP=1 cargo fuzz run pipeline` (from the repository root).

#![no_main]

use shared_board_api::internals::document::Coverage;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use shared_board_api::internals::pipeline::{load, reference, LoadedBoard, Representation};
use shared_board_api::internals::provider::answer::{Answer, AnswerStream};
use shared_board_api::internals::provider::Fetched;
use shared_board_api::internals::select::{Selection, View};

const LISTS: [&str; 3] = [
    "version,board.children.content,board.children.richText,board.**.title,board.children.table",
    "board.**.timestamps,board.children.content,board.**.id",
    "**",
];

fuzz_target!(|data: &[u8]| {
    // Whatever the bytes, rendering them as a document never panics.
    let raw = LoadedBoard::from_json(data.to_vec());
    let _ = raw.render("detail", &Selection::view(View::Standard));
    for view in [View::Full, View::Standard, View::Compact] {
        let _ = raw.render_as(Representation::Markdown, "detail", &Selection::view(view));
    }

    // The one-pass reader accepts exactly what a whole-value parse accepts.
    let answer = Answer::parse(data);
    let whole = serde_json::from_slice::<Value>(data);
    assert_eq!(answer.is_ok(), matches!(whole, Ok(Value::Object(_))));
    // The reader of a body as it arrives reads what the one-pass reader
    // reads, wherever the body is cut (cuts taken from the bytes' own sum).
    let mut rest = bytes::BytesMut::from(data);
    let mut stream = AnswerStream::new();
    let mut seed = data.iter().fold(0x9e37_79b9_u32, |h, &b| h.rotate_left(5) ^ u32::from(b));
    for _ in 0..seed % 8 {
        seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        let cut = (seed >> 8) as usize % (rest.len() + 1);
        stream.read_more(rest.split_to(cut));
    }
    let (body, streamed) = stream.finish(rest);
    assert_eq!(&body[..], data);
    assert_eq!(streamed, answer);
    let Ok(answer) = answer else {
        return;
    };
    let root = answer
        .fields
        .get("rootId")
        .and_then(Value::as_str)
        .unwrap_or("r")
        .to_owned();
    let own: Option<String> = answer
        .fields
        .get("include")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let mut fetched = Fetched::new(&root, 0);
    fetched.fetched_time_ms = answer.fields.get("fetchedTime").and_then(Value::as_i64);
    fetched.merge_answer(answer);
    fetched.loaded_boards.insert(root.clone());

    let slow = reference::build(&fetched, &root, "milanote");
    let outline = load::build(fetched.clone(), &root, "milanote", Coverage::Outline);
    let fast = load::build(fetched, &root, "milanote", Coverage::Full);
    let (fast, slow) = match (fast, slow) {
        (Ok(fast), Ok(slow)) => (fast, slow),
        (fast, slow) => {
            assert_eq!(fast.err(), slow.err());
            return;
        }
    };
    assert_eq!(
        fast.document_json(),
        serde_json::to_vec(&slow).expect("serializes").as_slice()
    );
    let mut selections: Vec<Selection> = [View::Full, View::Standard, View::Compact]
        .into_iter()
        .map(Selection::view)
        .collect();
    for list in LISTS.iter().copied().chain(own.as_deref()) {
        if let Ok(s) = Selection::include(list) {
            selections.push(s);
        }
        for view in [View::Full, View::Standard, View::Compact] {
            if let Ok(s) = Selection::exclude(view, list) {
                selections.push(s);
            }
        }
    }
    for selection in &selections {
        let a = fast.render("detail", selection).expect("renders");
        let b = reference::rendered("detail", selection, &slow).expect("renders");
        assert_eq!(a.body, b.body, "{}", selection.canonical());
        assert_eq!(a.etag, b.etag);
        let md = fast
            .render_as(Representation::Markdown, "detail", selection)
            .expect("renders");
        let md_reference = reference::rendered_markdown("detail", selection, fast.document_json())
            .expect("renders");
        assert_eq!(md.body, md_reference.body, "Markdown {}", selection.canonical());
        assert_eq!(md.etag, md_reference.etag);
        if selection.coverage() == Coverage::Outline {
            let outline = outline.as_ref().expect("an outline builds where the document does");
            let c = outline.render("detail", selection).expect("renders");
            assert_eq!(c.body, b.body, "outline {}", selection.canonical());
            assert_eq!(c.etag, b.etag);
        }
    }
});

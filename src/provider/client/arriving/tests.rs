//! A body read as it arrives gives what the whole-body path gives: the
//! same body, the same answer, the same refusal, plain or gzip, however it
//! is cut, on the pool or inline.

use super::*;
use crate::governance::WorkPool;

/// An answer of `n` elements with content.
fn board(n: usize) -> Vec<u8> {
    let elements: Vec<String> = (0..n)
        .map(|i| {
            format!(
                r#""e{i}": {{"id": "e{i}", "elementType": "CARD", "location": {{"parentId": "b", "position": {{"x": {i}, "y": 2}}}}, "content": {{"text": "card {i} é €"}}}}"#
            )
        })
        .collect();
    format!(
        r#"{{"elements": {{{}}}, "canvasOrder": {{"b": ["e0"]}}, "fetchedTime": 17}}"#,
        elements.join(", ")
    )
    .into_bytes()
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(data).expect("compresses");
    encoder.finish().expect("ends")
}

type Outcome = Result<(Bytes, Result<Answer, AnswerError>), String>;

/// What the whole-body path gives for `body`.
fn whole(body: &[u8], gzip: bool, max: usize) -> Outcome {
    decode_body(gzip.then_some("gzip"), body.to_vec(), max)
        .map(|body| {
            let answer = Answer::parse_bytes(&body);
            (body, answer)
        })
        .map_err(|e| format!("{e:?}"))
}

/// `body` read as it arrives in reads of `read` bytes, in parts of at
/// least 300 bytes.
async fn arrived(
    body: &[u8],
    gzip: bool,
    max: usize,
    read: usize,
    offload: Option<Arc<dyn Offload>>,
) -> Outcome {
    let mut arriving = Arriving::new(body.len(), gzip, max, offload);
    arriving.part_bytes = 300;
    for chunk in body.chunks(read) {
        arriving.push(chunk).await;
    }
    arriving.finish().await.map_err(|e| format!("{e:?}"))
}

#[tokio::test]
async fn plain_and_gzip_bodies_read_as_the_whole_body_path_reads_them() {
    let plain = board(60);
    let packed = gzip(&plain);
    let mut two_members = gzip(&plain[..1000]);
    two_members.extend(gzip(&plain[1000..]));
    let mut trailing = packed.clone();
    trailing.extend_from_slice(b"not gzip");
    let mut corrupt = packed.clone();
    corrupt[packed.len() / 2] ^= 0x55;
    let mut bad_sum = packed.clone();
    bad_sum[packed.len() - 6] ^= 1;
    let cut_json = plain[..plain.len() - 3].to_vec();
    let max = 1 << 20;
    let mut cases: Vec<(&str, Vec<u8>, bool, usize)> = vec![
        ("plain", plain.clone(), false, max),
        ("plain, cut short", cut_json.clone(), false, max),
        ("gzip", packed.clone(), true, max),
        ("gzip of a cut answer", gzip(&cut_json), true, max),
        ("two gzip members", two_members, true, max),
        ("gzip and more", trailing, true, max),
        ("corrupt gzip", corrupt, true, max),
        ("gzip with a wrong sum", bad_sum, true, max),
        ("gzip over the limit", packed.clone(), true, plain.len() - 1),
        ("gzip at the limit", packed.clone(), true, plain.len()),
        ("a gzip bomb", gzip(&vec![b' '; 8 << 20]), true, max),
        ("empty gzip", Vec::new(), true, max),
    ];
    for cut in [
        1,
        10,
        18,
        packed.len() / 2,
        packed.len() - 8,
        packed.len() - 1,
    ] {
        cases.push(("gzip cut short", packed[..cut].to_vec(), true, max));
    }
    let pool: Arc<dyn Offload> = Arc::new(WorkPool::new(1, 8).expect("threads"));
    for (what, body, gzip, max) in &cases {
        let want = whole(body, *gzip, *max);
        for read in [1, 7, 1000, body.len().max(1)] {
            for offload in [None, Some(Arc::clone(&pool))] {
                let pooled = offload.is_some();
                let got = arrived(body, *gzip, *max, read, offload).await;
                assert_eq!(got, want, "{what}, reads of {read}, on the pool: {pooled}");
            }
        }
    }
    assert!(whole(&packed, true, max).is_ok_and(|(_, answer)| answer.is_ok()));
}

#[test]
fn a_gzip_body_is_inflated_part_by_part_without_the_whole_body_path() {
    let plain = board(60);
    let packed = gzip(&plain);
    let mut two_members = gzip(&plain[..1000]);
    two_members.extend(gzip(&plain[1000..]));
    for body in [packed, two_members] {
        for read in [1, 300, body.len()] {
            let mut inflate = Inflate::new(64, 1 << 20);
            let mut inflated = Vec::new();
            for part in body.chunks(read) {
                let part = inflate
                    .part(Bytes::copy_from_slice(part))
                    .expect("inflates");
                inflated.extend_from_slice(&part);
            }
            assert!(inflate.end(), "ends where its last member ends");
            assert_eq!(inflated, plain);
        }
    }
}

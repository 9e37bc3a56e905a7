//! Fuzz target for what the SQLite outbox reads back: arbitrary bytes as a
//! delivery row's columns (id, job, value, seal) and as a job state. A row
//! is a delivery only when its seal checks for its job's key and its value
//! parses as one this service writes for that id and job; nothing may
//! panic, and a row sealed by someone without the key never opens. A value
//! sealed with the key opens exactly when it reads back as a delivery.
//!
//! Run: `cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run outbox_row -- -max_total_time=600`

#![no_main]

use libfuzzer_sys::fuzz_target;
use shared_board_api::internals::watch::outbox::sqlite::{open_delivery, seal_delivery, seal_key};
use shared_board_api::internals::watch::outbox::{read_delivery, read_state};
use std::collections::HashMap;
use std::sync::LazyLock;

static KEYS: LazyLock<HashMap<String, ring::hmac::Key>> = LazyLock::new(|| {
    let mut keys = HashMap::new();
    keys.insert("trip".to_owned(), seal_key(b"the job's signing key"));
    keys
});

/// The next length-prefixed part of `data` (one byte of length).
fn part<'a>(data: &mut &'a [u8]) -> &'a [u8] {
    let Some((&n, rest)) = data.split_first() else {
        return &[];
    };
    let n = usize::from(n).min(rest.len());
    let (head, tail) = rest.split_at(n);
    *data = tail;
    head
}

fuzz_target!(|data: &[u8]| {
    let mut rest = data;
    let id = String::from_utf8_lossy(part(&mut rest)).into_owned();
    let job = String::from_utf8_lossy(part(&mut rest)).into_owned();
    let tag = part(&mut rest).to_vec();
    let value = rest;
    let _ = read_state(value);
    // A row written by someone without the key: never a delivery (a
    // 32-byte tag matching by chance is not a case worth a fuzzer's time).
    assert!(open_delivery(&KEYS, &id, &job, value, &tag).is_none() || tag.len() == 32);
    // The same row sealed with the key: a delivery exactly when the value
    // is one this service writes for this id and job.
    if let Some(key) = KEYS.get(&job) {
        let sealed = seal_delivery(key, &id, &job, value);
        let opened = open_delivery(&KEYS, &id, &job, value, &sealed);
        let parsed = read_delivery(value).filter(|d| d.id == id && d.job == job);
        assert_eq!(opened, parsed);
    }
});

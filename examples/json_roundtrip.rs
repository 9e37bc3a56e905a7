//! The serde_json floor for a cold load: parse a raw board file into a
//! `serde_json::Value` (this crate builds serde_json with `preserve_order`)
//! and serialize it back, timed over 7 runs; prints the median.
//!
//!   cargo run --release --example json_roundtrip -- /tmp/big.json [runs]
//!
//! Used by `benches/cold.sh` as the denominator of "cold request / JSON
//! round trip": a cold request must at least read and write the document once.

use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: json_roundtrip <board.json> [runs=7]");
        std::process::exit(2);
    };
    let runs: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(7).max(1);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| {
        eprintln!("cannot read {path}: {e}");
        std::process::exit(2)
    });
    let (mut parse, mut write, mut total) = (Vec::new(), Vec::new(), Vec::new());
    let mut out_len = 0;
    for _ in 0..runs {
        let t0 = Instant::now();
        let value: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            eprintln!("{path} is not JSON: {e}");
            std::process::exit(2)
        });
        let t1 = Instant::now();
        let out = serde_json::to_vec(&value).unwrap_or_else(|e| {
            eprintln!("cannot serialize: {e}");
            std::process::exit(2)
        });
        let t2 = Instant::now();
        out_len = std::hint::black_box(out).len();
        drop(std::hint::black_box(value));
        parse.push((t1 - t0).as_secs_f64() * 1e3);
        write.push((t2 - t1).as_secs_f64() * 1e3);
        total.push((t2 - t0).as_secs_f64() * 1e3);
    }
    println!(
        "json_roundtrip {} bytes in, {} bytes out, {} runs: median from_slice {:.2} ms, to_vec {:.2} ms, roundtrip {:.2} ms",
        bytes.len(),
        out_len,
        runs,
        median(parse),
        median(write),
        median(total)
    );
}

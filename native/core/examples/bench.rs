//! Throughput of the fingerprinter on a file: `cargo run --release --example bench -- FILE [text|raw]`.
use simscan_core::fingerprint::{fingerprint_bytes, FpParams, Verdict};
use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).expect("a file");
    let data = std::fs::read(path).expect("readable");
    let p = FpParams::default();
    for _ in 0..3 {
        let t = Instant::now();
        let v = fingerprint_bytes(&data, &p, None, false);
        let s = t.elapsed().as_secs_f64();
        let n = match v {
            Verdict::Done(f) => f.rolling.len() + f.anchored.len(),
            _ => 0,
        };
        println!(
            "{:.0} MB/s ({} fingerprints)",
            data.len() as f64 / s / 1e6,
            n
        );
    }
}

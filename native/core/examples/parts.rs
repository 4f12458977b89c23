//! Time the parts of the text path on a file: `cargo run --release --example parts -- FILE`.
use simscan_core::fingerprint::FpParams;
use simscan_core::manber::Hasher;
use simscan_core::normalize::Pair;
use simscan_core::tables::tables;
use std::time::Instant;

fn best(n: usize, mut f: impl FnMut()) -> f64 {
    let mut b = f64::MAX;
    for _ in 0..n {
        let t = Instant::now();
        f();
        b = b.min(t.elapsed().as_secs_f64());
    }
    b
}

fn main() {
    let path = std::env::args().nth(1).expect("a file");
    let data = std::fs::read(path).expect("readable");
    let s = std::str::from_utf8(&data).expect("utf-8");
    let mb = data.len() as f64 / 1e6;
    let (mut units, mut light) = (Vec::new(), Vec::new());
    let t = best(5, || {
        units.clear();
        light.clear();
        let mut p = Pair::new(tables());
        for piece in s.as_bytes().chunks(1 << 16) {
            p.str(
                std::str::from_utf8(piece).unwrap_or(""),
                &mut units,
                &mut light,
            );
        }
    });
    println!("normalise both forms: {:.0} MB/s", mb / t);
    let p = FpParams::default();
    let t = best(5, || {
        let mut h = Hasher::<u32>::new(&p.text, false);
        for c in units.chunks(1 << 16) {
            h.feed(c);
        }
        std::hint::black_box(h.finish());
    });
    println!(
        "hash heavy units: {:.0} MB/s of input ({} units)",
        mb / t,
        units.len()
    );
    let t = best(5, || {
        std::hint::black_box(xxhash_rust::xxh3::xxh3_128(&data));
        std::hint::black_box(xxhash_rust::xxh3::xxh3_128(&light));
    });
    println!("two xxh3-128: {:.0} MB/s", mb / t);
}

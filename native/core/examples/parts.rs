//! Time the parts of the text path on a file: `cargo run --release --example parts -- FILE`.
use simscan_core::fingerprint::FpParams;
use simscan_core::normalize::{Pair, PairOut};
use simscan_core::tables::tables;
use simscan_core::winnow::Winnower;
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
    let mut out = PairOut::default();
    let t = best(5, || {
        out = PairOut::default();
        let mut p = Pair::new(tables());
        p.str(s, &mut out);
    });
    println!("normalise both forms: {:.0} MB/s", mb / t);
    let p = FpParams::default();
    let t = best(5, || {
        let mut h = Winnower::new(p.text.window, &p.winnow, &p.text.level_units, 0);
        for (c, s) in out.units.chunks(1 << 16).zip(out.src.chunks(1 << 16)) {
            h.feed(c, s);
        }
        std::hint::black_box(h.finish());
    });
    println!(
        "winnow heavy units: {:.0} MB/s of input ({} units)",
        mb / t,
        out.units.len()
    );
    println!(
        "selection hashes alone: {:.0} MB/s of input",
        mb / select_only(&out.units)
    );
}

#[allow(dead_code)]
fn select_only(units: &[u32]) -> f64 {
    use simscan_core::manber::{select, SELECT_BLOCK, SELECT_SCRATCH};
    let mut s = vec![0u32; SELECT_SCRATCH];
    let mut g = vec![0u32; SELECT_BLOCK];
    best(5, || {
        let mut at = 0;
        while at + 50 <= units.len() {
            let nb = (units.len() - 49 - at).min(SELECT_BLOCK);
            select(&units[at..at + nb + 49], 50, false, &mut s, &mut g[..nb]);
            std::hint::black_box(&g);
            at += nb;
        }
    })
}

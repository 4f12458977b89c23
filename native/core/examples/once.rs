//! One fingerprinting of a file (for instruction counts: `valgrind --tool=callgrind`).
fn main() {
    let path = std::env::args().nth(1).expect("a file");
    let data = std::fs::read(path).expect("readable");
    let p = simscan_core::fingerprint::FpParams::default();
    std::hint::black_box(simscan_core::fingerprint::fingerprint_bytes(
        &data, &p, None, false,
    ));
}

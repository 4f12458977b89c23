//! Whole-file and partial checksums (xxHash XXH3), as `simscan.fingerprint.checksum` defines them.

use xxhash_rust::xxh3::{xxh3_128, Xxh3};

/// Bytes hashed from each end of a file by [`partial`].
pub const PARTIAL_SAMPLE: usize = 4096;

/// XXH3-128 of `data`, as the 16 big-endian bytes Python's `xxhash.xxh3_128().digest()` gives.
pub fn full(data: &[u8]) -> [u8; 16] {
    xxh3_128(data).to_be_bytes()
}

/// Where the tail sample of a file of `size` bytes starts.
pub fn tail_offset(size: u64) -> u64 {
    size.min(PARTIAL_SAMPLE as u64)
        .max(size.saturating_sub(PARTIAL_SAMPLE as u64))
}

/// XXH3-64 of (size as 8 little-endian bytes, head, tail) as a signed 64-bit integer.
///
/// `head`: the first `min(size, PARTIAL_SAMPLE)` bytes; `tail`: the last `PARTIAL_SAMPLE` bytes
/// when the file is longer than two samples, else the bytes after the head.
pub fn partial(size: u64, head: &[u8], tail: &[u8]) -> i64 {
    let mut h = Xxh3::new();
    h.update(&size.to_le_bytes());
    h.update(head);
    h.update(tail);
    h.digest() as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_offset_never_overlaps_the_head() {
        assert_eq!(tail_offset(0), 0);
        assert_eq!(tail_offset(100), 100);
        assert_eq!(tail_offset(5000), 4096);
        assert_eq!(tail_offset(10_000), 10_000 - 4096);
    }
}

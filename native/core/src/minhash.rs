//! MinHash sketches of fingerprint sets (Broder 1997; Leskovec, Rajaraman, Ullman, MMDS ch. 3).
//!
//! A file's sketch holds, for each of n hash functions ("permutations"), the smallest hash of
//! any value of its set.  Two sets agree on one entry with probability equal to their Jaccard
//! resemblance, so the share of equal entries estimates it.  The values are simscan's stored
//! fingerprints (already uniform 64-bit hashes of windows); hash function i is the MurmurHash3
//! 64-bit finaliser of `value ^ seed[i]`, of which the top 32 bits are kept: sketches are
//! 4 bytes a permutation, and two different minima agree by chance with probability ~2^-32.

/// The sketch entry of an empty set (no value hashes to it first: `u32::MAX` is never smaller).
pub const EMPTY: u32 = u32::MAX;

/// Hash function `seed` of a value: fmix64(value ^ seed), top 32 bits.
#[inline(always)]
pub fn permuted(value: u64, seed: u64) -> u32 {
    let mut h = value ^ seed;
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^= h >> 33;
    (h >> 32) as u32
}

/// Sketches of the sets of a CSR: row `r` is `values[offsets[r]..offsets[r + 1]]`.  Writes
/// `seeds.len()` entries a row into `out` (row-major, `rows × seeds.len()`); an empty row gets
/// [`EMPTY`] everywhere.  Panics when the offsets do not describe slices of `values` or `out`
/// has another length.
pub fn sketch_rows(offsets: &[usize], values: &[u64], seeds: &[u64], out: &mut [u32]) {
    let n = seeds.len();
    let rows = offsets.len().saturating_sub(1);
    assert_eq!(out.len(), rows * n, "output is rows x permutations");
    if n == 0 {
        return;
    }
    for (r, mins) in out.chunks_exact_mut(n).enumerate() {
        mins.fill(EMPTY);
        for &v in &values[offsets[r]..offsets[r + 1]] {
            // The inner loop runs over the permutations: independent lanes the compiler vectorises.
            for (m, &s) in mins.iter_mut().zip(seeds) {
                let h = permuted(v, s);
                if h < *m {
                    *m = h;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sketch_is_the_minimum_of_each_permutation() {
        let values = [5u64, 17, 1 << 40, u64::MAX, 3, 9];
        let offsets = [0usize, 3, 3, 6];
        let seeds = [0u64, 1, 0x9e37_79b9_7f4a_7c15];
        let mut out = vec![0u32; 3 * seeds.len()];
        sketch_rows(&offsets, &values, &seeds, &mut out);
        for r in 0..3 {
            for (i, &s) in seeds.iter().enumerate() {
                let want = values[offsets[r]..offsets[r + 1]]
                    .iter()
                    .map(|&v| permuted(v, s))
                    .min()
                    .unwrap_or(EMPTY);
                assert_eq!(out[r * seeds.len() + i], want);
            }
        }
        assert!(out[seeds.len()..2 * seeds.len()]
            .iter()
            .all(|&x| x == EMPTY));
    }

    #[test]
    fn equal_sets_equal_sketches_whatever_the_order() {
        let a = [1u64, 2, 3, 4, 5];
        let b = [5u64, 3, 1, 4, 2];
        let seeds: Vec<u64> = (0..50).map(|i| i * 0x1234_5678_9abc_def1).collect();
        let mut sa = vec![0u32; 50];
        let mut sb = vec![0u32; 50];
        sketch_rows(&[0, 5], &a, &seeds, &mut sa);
        sketch_rows(&[0, 5], &b, &seeds, &mut sb);
        assert_eq!(sa, sb);
    }
}

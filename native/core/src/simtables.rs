//! Sorted tables of 64-bit simhashes for look-ups within Hamming distance k, raw or compressed.
//!
//! Manku, Jain, Das Sarma (WWW 2007; DESIGN.md §3): split the 64 bits into k + 1 blocks; two
//! values within distance k agree on at least one block.  Table t holds every value rotated so
//! that block t leads, sorted; a query looks up the range of entries whose leading block equals
//! its own in each table and checks the distance of each.  A value equal to the query on several
//! blocks is reported by the first of those tables only, so each stored entry is reported once.
//!
//! Every table has a [`Directory`]: the position of the first entry of each value of its top D
//! bits (D = log2(n / 16), at most 16), so a look-up goes straight to its range without a binary
//! search of the table (which, on 10 M values, missed the cache at nearly every step).
//!
//! **Compression** (as they propose for their sorted tables): neighbours in a sorted table share a
//! long prefix.  Entries are kept in blocks of `block` entries; the first of a block is stored
//! whole in an array of heads, each following entry as the position p (0 = most significant) of
//! its first bit that differs from the previous entry, Huffman-coded, then its 63 - p bits after
//! that one (bit p itself is 1: the table ascends).  An entry equal to the previous one is the
//! symbol [`DUPLICATE`] alone.  With n random values p is about log2(n), so an entry costs
//! ~64 - log2(n) bits plus its code (~2-3 bits).  A look-up decodes from the start of the block
//! holding the first entry of its range.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Symbol of an entry equal to the previous one (symbols 0..64 are bit positions).
pub const DUPLICATE: usize = 64;
const SYMBOLS: usize = 65;
/// Longest code (codes are decoded from a 32-bit window).
const MAX_CODE: usize = 32;

/// (shift, width) of k + 1 near-equal blocks covering 64 bits, the most significant first (the
/// first `64 % (k + 1)` blocks one bit wider), as `simscan.similarity.simhash_tables`.
pub fn blocks(k: u32) -> Vec<(u32, u32)> {
    let nb = k + 1;
    let mut shift = 64;
    (0..nb)
        .map(|i| {
            let w = 64 / nb + u32::from(i < 64 % nb);
            shift -= w;
            (shift, w)
        })
        .collect()
}

#[inline]
fn block_of(x: u64, shift: u32, width: u32) -> u64 {
    let m = if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    };
    (x >> shift) & m
}

/// Huffman code lengths (0: symbol unused) of symbol frequencies, at most [`MAX_CODE`] bits: when
/// the optimal code is longer, the frequencies are halved (rounding up) until it fits.
fn code_lengths(freq: &[u64; SYMBOLS]) -> [u8; SYMBOLS] {
    let mut f = *freq;
    loop {
        let used: Vec<usize> = (0..SYMBOLS).filter(|&s| f[s] > 0).collect();
        let mut len = [0u8; SYMBOLS];
        if used.len() == 1 {
            len[used[0]] = 1;
        }
        if used.len() <= 1 {
            return len;
        }
        // Nodes 0..SYMBOLS are the leaves; merged nodes follow.
        let mut parent = vec![usize::MAX; 2 * SYMBOLS];
        let mut heap: BinaryHeap<Reverse<(u64, usize)>> =
            used.iter().map(|&s| Reverse((f[s], s))).collect();
        let mut next = SYMBOLS;
        while heap.len() > 1 {
            let Reverse((fa, a)) = heap.pop().expect("two nodes");
            let Reverse((fb, b)) = heap.pop().expect("two nodes");
            parent[a] = next;
            parent[b] = next;
            heap.push(Reverse((fa + fb, next)));
            next += 1;
        }
        let mut longest = 0;
        for &s in &used {
            let (mut d, mut x) = (0usize, s);
            while parent[x] != usize::MAX {
                x = parent[x];
                d += 1;
            }
            len[s] = d as u8;
            longest = longest.max(d);
        }
        if longest <= MAX_CODE {
            return len;
        }
        for x in f.iter_mut().filter(|x| **x > 0) {
            *x = x.div_ceil(2);
        }
    }
}

/// A canonical prefix code (codes of one length are consecutive, in symbol order).
#[derive(Clone, Debug)]
struct Code {
    len: [u8; SYMBOLS],
    code: [u32; SYMBOLS],
    /// Per length l: a 32-bit window (next bits, left-justified) below `limit[l]` starts with a
    /// code of at most l bits (non-decreasing in l).
    limit: [u64; MAX_CODE + 1],
    first_code: [u32; MAX_CODE + 1],
    first_index: [u32; MAX_CODE + 1],
    /// Symbols by (length, symbol).
    sorted: Vec<u8>,
    /// Per value of the next [`FAST`] bits, `symbol | length << 8` of a code of at most that many
    /// bits starting there (0: a longer code): one look-up for the frequent symbols.
    fast: Vec<u16>,
}

/// Bits decoded through `Code::fast`.
const FAST: usize = 10;

impl Code {
    fn new(len: [u8; SYMBOLS]) -> Code {
        let mut count = [0u32; MAX_CODE + 1];
        for &l in len.iter().filter(|&&l| l > 0) {
            count[l as usize] += 1;
        }
        let mut sorted: Vec<u8> = (0..SYMBOLS as u8)
            .filter(|&s| len[s as usize] > 0)
            .collect();
        sorted.sort_by_key(|&s| (len[s as usize], s));
        let (mut first_code, mut first_index, mut limit) = (
            [0u32; MAX_CODE + 1],
            [0u32; MAX_CODE + 1],
            [0u64; MAX_CODE + 1],
        );
        let (mut c, mut idx) = (0u64, 0u32);
        for l in 1..=MAX_CODE {
            c = (c + if l > 1 { u64::from(count[l - 1]) } else { 0 }) << u32::from(l > 1);
            first_code[l] = c as u32;
            first_index[l] = idx;
            idx += count[l];
            limit[l] = (c + u64::from(count[l])) << (MAX_CODE - l);
        }
        let mut code = [0u32; SYMBOLS];
        let mut fast = vec![0u16; 1 << FAST];
        for (i, &s) in sorted.iter().enumerate() {
            let l = len[s as usize] as usize;
            code[s as usize] = first_code[l] + (i as u32 - first_index[l]);
            if l <= FAST {
                let at = (code[s as usize] as usize) << (FAST - l);
                fast[at..at + (1 << (FAST - l))].fill(u16::from(s) | (l as u16) << 8);
            }
        }
        Code {
            len,
            code,
            limit,
            first_code,
            first_index,
            sorted,
            fast,
        }
    }

    /// The symbol at the start of `window` (64 bits, left-justified) and its length.
    #[inline]
    fn decode(&self, window: u64) -> (usize, u32) {
        let e = self.fast[(window >> (64 - FAST)) as usize];
        if e != 0 {
            return ((e & 0xff) as usize, u32::from(e >> 8));
        }
        let w = window >> (64 - MAX_CODE);
        let mut l = FAST + 1;
        while l < MAX_CODE && w >= self.limit[l] {
            l += 1;
        }
        let i = self.first_index[l] + ((w >> (MAX_CODE - l)) as u32 - self.first_code[l]);
        (self.sorted[i as usize] as usize, l as u32)
    }
}

/// Bits written most significant first into 64-bit words.
struct BitWriter {
    words: Vec<u64>,
    acc: u64,
    used: u32,
}

impl BitWriter {
    fn new() -> Self {
        BitWriter {
            words: Vec::new(),
            acc: 0,
            used: 0,
        }
    }

    fn position(&self) -> u64 {
        self.words.len() as u64 * 64 + u64::from(self.used)
    }

    /// The low `n` (0..=64) bits of `value`.
    fn put(&mut self, value: u64, n: u32) {
        if n == 0 {
            return;
        }
        let v = if n == 64 {
            value
        } else {
            value & ((1u64 << n) - 1)
        };
        let free = 64 - self.used; // 1..=64
        if n < free {
            self.acc |= v << (free - n);
            self.used += n;
        } else {
            let rest = n - free; // 0..=63
            self.acc |= v >> rest;
            self.words.push(self.acc);
            self.acc = if rest == 0 { 0 } else { v << (64 - rest) };
            self.used = rest;
        }
    }

    /// The words, with one zero word after the last so that any read may look 64 bits ahead.
    fn finish(mut self) -> Vec<u64> {
        if self.used > 0 {
            self.words.push(self.acc);
        }
        self.words.push(0);
        self.words
    }
}

/// The 64 bits from bit `pos` on, left-justified (`bits` ends with a padding word).
#[inline]
fn window_at(bits: &[u64], pos: u64) -> u64 {
    let w = (pos >> 6) as usize;
    let o = (pos & 63) as u32;
    let hi = bits[w] << o;
    if o == 0 {
        hi
    } else {
        hi | (bits[w + 1] >> (64 - o))
    }
}

/// A compressed sorted table (see the module's documentation).
#[derive(Clone, Debug)]
pub struct Packed {
    n: usize,
    block: usize,
    heads: Vec<u64>,
    /// Bit offset in `bits` of each block's second entry.
    starts: Vec<u64>,
    code: Code,
    bits: Vec<u64>,
}

impl Packed {
    /// Compresses `sorted` (ascending; duplicates allowed) in blocks of `block` (>= 1) entries.
    pub fn new(sorted: &[u64], block: usize) -> Packed {
        assert!(block >= 1, "a block holds at least one entry");
        assert!(sorted.windows(2).all(|w| w[0] <= w[1]), "a table is sorted");
        let symbol = |i: usize| -> usize {
            let x = sorted[i] ^ sorted[i - 1];
            if x == 0 {
                DUPLICATE
            } else {
                x.leading_zeros() as usize
            }
        };
        let mut freq = [0u64; SYMBOLS];
        for (i, _) in sorted.iter().enumerate().filter(|(i, _)| i % block != 0) {
            freq[symbol(i)] += 1;
        }
        let code = Code::new(code_lengths(&freq));
        let mut out = BitWriter::new();
        let (mut heads, mut starts) = (Vec::new(), Vec::new());
        for (i, &v) in sorted.iter().enumerate() {
            if i % block == 0 {
                heads.push(v);
                starts.push(out.position());
                continue;
            }
            let s = symbol(i);
            out.put(u64::from(code.code[s]), u32::from(code.len[s]));
            if s != DUPLICATE {
                out.put(v, 63 - s as u32);
            }
        }
        Packed {
            n: sorted.len(),
            block,
            heads,
            starts,
            code,
            bits: out.finish(),
        }
    }

    pub fn len(&self) -> usize {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Bytes held: the stream, the heads and block offsets, the code's tables.
    pub fn bytes(&self) -> usize {
        8 * (self.bits.len() + self.heads.len() + self.starts.len())
            + std::mem::size_of::<Code>()
            + self.code.sorted.len()
            + 2 * self.code.fast.len()
    }

    /// Calls `f` with each entry from block `b` on, in order, until it returns false.
    fn walk(&self, b: usize, mut f: impl FnMut(u64) -> bool) {
        for blk in b..self.heads.len() {
            let mut prev = self.heads[blk];
            if !f(prev) {
                return;
            }
            let mut pos = self.starts[blk];
            let end = ((blk + 1) * self.block).min(self.n);
            for _ in blk * self.block + 1..end {
                let w = window_at(&self.bits, pos);
                let (s, l) = self.code.decode(w);
                pos += u64::from(l);
                if s != DUPLICATE {
                    let rest = 63 - s as u32;
                    let low = if rest == 0 {
                        0
                    } else if l + rest <= 64 {
                        (w << l) >> (64 - rest)
                    } else {
                        window_at(&self.bits, pos) >> (64 - rest)
                    };
                    pos += u64::from(rest);
                    let prefix = if s == 0 {
                        0
                    } else {
                        prev & (u64::MAX << (64 - s))
                    };
                    prev = prefix | (1u64 << rest) | low;
                }
                if !f(prev) {
                    return;
                }
            }
        }
    }

    /// Calls `f` with every entry in `lo..=hi`, ascending; no entry before index `from` is in it.
    pub fn range(&self, from: usize, lo: u64, hi: u64, mut f: impl FnMut(u64)) {
        self.walk(from / self.block, |v| {
            if v > hi {
                return false;
            }
            if v >= lo {
                f(v);
            }
            true
        });
    }

    /// Every entry, in order.
    pub fn values(&self) -> Vec<u64> {
        let mut out = Vec::with_capacity(self.n);
        self.walk(0, |v| {
            out.push(v);
            true
        });
        out
    }
}

/// Where each value of the top `bits` bits starts in a sorted table.
#[derive(Clone, Debug)]
struct Directory {
    bits: u32,
    /// `first[p]`: the number of entries whose top bits are below p (2^bits + 1 of them).
    first: Vec<u32>,
}

impl Directory {
    fn new(sorted: &[u64]) -> Directory {
        assert!(
            sorted.len() < u32::MAX as usize,
            "a table holds fewer than 2^32 values"
        );
        // About 16 entries a prefix: 2^16 prefixes (256 KiB) from 1 M values on.
        let bits = (sorted.len() / 16).max(1).ilog2().min(16);
        let mut first = vec![0u32; (1 << bits) + 1];
        let mut d = Directory {
            bits,
            first: vec![],
        };
        for &v in sorted {
            first[d.bucket(v) + 1] += 1;
        }
        for p in 1..first.len() {
            first[p] += first[p - 1];
        }
        d.first = first;
        d
    }

    #[inline]
    fn bucket(&self, v: u64) -> usize {
        if self.bits == 0 {
            0
        } else {
            (v >> (64 - self.bits)) as usize
        }
    }

    /// Entries `start..end` hold every entry in `lo..=hi` (and maybe others).
    #[inline]
    fn span(&self, lo: u64, hi: u64) -> (usize, usize) {
        (
            self.first[self.bucket(lo)] as usize,
            self.first[self.bucket(hi) + 1] as usize,
        )
    }
}

/// The sorted rotated values, as they are or compressed.
#[derive(Clone, Debug)]
enum Data {
    Raw(Vec<u64>),
    Packed(Box<Packed>),
}

/// One table: its directory and its values.
#[derive(Clone, Debug)]
struct Table {
    dir: Directory,
    data: Data,
}

impl Table {
    fn new(sorted: Vec<u64>, block: usize) -> Table {
        let dir = Directory::new(&sorted);
        let data = if block == 0 {
            Data::Raw(sorted)
        } else {
            Data::Packed(Box::new(Packed::new(&sorted, block)))
        };
        Table { dir, data }
    }

    fn range(&self, lo: u64, hi: u64, f: impl FnMut(u64)) {
        let (start, end) = self.dir.span(lo, hi);
        match &self.data {
            Data::Raw(v) => v[start..end]
                .iter()
                .copied()
                .skip_while(|&x| x < lo)
                .take_while(|&x| x <= hi)
                .for_each(f),
            Data::Packed(p) => p.range(start, lo, hi, f),
        }
    }

    fn bytes(&self) -> usize {
        4 * self.dir.first.len()
            + match &self.data {
                Data::Raw(v) => 8 * v.len(),
                Data::Packed(p) => p.bytes(),
            }
    }

    fn values(&self) -> Vec<u64> {
        match &self.data {
            Data::Raw(v) => v.clone(),
            Data::Packed(p) => p.values(),
        }
    }
}

/// The k + 1 tables of a set of simhashes.
#[derive(Clone, Debug)]
pub struct Tables {
    k: u32,
    n: usize,
    blocks: Vec<(u32, u32)>,
    tables: Vec<Table>,
}

/// Left rotation that brings block (shift, width) to the top.
#[inline]
fn rotation(shift: u32, width: u32) -> u32 {
    (64 - shift - width) % 64
}

impl Tables {
    /// Tables of `values` (any order, duplicates kept) for distance `k` (0..=63); `block` entries
    /// per compressed block, or 0 for raw tables.
    pub fn new(values: &[u64], k: u32, block: usize) -> Tables {
        assert!(k < 64, "k is at most 63");
        let blocks = blocks(k);
        let tables = blocks
            .iter()
            .map(|&(s, w)| {
                let r = rotation(s, w);
                let mut t: Vec<u64> = values.iter().map(|v| v.rotate_left(r)).collect();
                t.sort_unstable();
                Table::new(t, block)
            })
            .collect();
        Tables {
            k,
            n: values.len(),
            blocks,
            tables,
        }
    }

    pub fn k(&self) -> u32 {
        self.k
    }

    pub fn len(&self) -> usize {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    pub fn bytes(&self) -> usize {
        self.tables.iter().map(Table::bytes).sum()
    }

    /// Table `t`'s entries (rotated values, ascending).
    pub fn table(&self, t: usize) -> Vec<u64> {
        self.tables[t].values()
    }

    /// Appends every stored value within distance k of `q` (each stored entry once, duplicates as
    /// often as stored), ascending.
    pub fn lookup(&self, q: u64, out: &mut Vec<u64>) {
        let from = out.len();
        for (t, (&(shift, width), table)) in self.blocks.iter().zip(&self.tables).enumerate() {
            let r = rotation(shift, width);
            let rq = q.rotate_left(r);
            let below = if width >= 64 { 0 } else { u64::MAX >> width };
            let lo = rq & !below;
            table.range(lo, lo | below, |e| {
                let v = e.rotate_right(r);
                let x = v ^ q;
                if x.count_ones() <= self.k
                    && self.blocks[..t]
                        .iter()
                        .all(|&(s, w)| block_of(x, s, w) != 0)
                {
                    out.push(v);
                }
            });
        }
        out[from..].sort_unstable();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn splitmix(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn sample(n: usize, seed: u64) -> Vec<u64> {
        let mut s = seed;
        let mut v: Vec<u64> = (0..n).map(|_| splitmix(&mut s)).collect();
        // Duplicates, neighbours and the extremes, where the encoding has its edge cases.
        v.extend_from_slice(&[0, 0, 1, u64::MAX, u64::MAX - 1, 1 << 63, (1 << 63) - 1]);
        v.extend(v.clone().iter().take(20).map(|x| x ^ 1));
        v.extend(v.clone().iter().take(5));
        v
    }

    #[test]
    fn packed_round_trips_at_every_block_size() {
        let mut v = sample(3000, 7);
        v.sort_unstable();
        for block in [1, 2, 3, 64, 1000, 5000] {
            let p = Packed::new(&v, block);
            assert_eq!(p.values(), v, "block {block}");
        }
        assert!(Packed::new(&[], 8).values().is_empty());
        assert_eq!(Packed::new(&[42, 42, 42], 8).values(), vec![42, 42, 42]);
    }

    #[test]
    fn ranges_equal_a_filter() {
        let mut v = sample(2000, 3);
        v.sort_unstable();
        let p = Packed::new(&v, 16);
        let mut s = 11u64;
        for _ in 0..300 {
            let (a, b) = (
                splitmix(&mut s),
                splitmix(&mut s) >> (splitmix(&mut s) % 64),
            );
            let (lo, hi) = (a, a.saturating_add(b));
            let mut got = Vec::new();
            p.range(v.partition_point(|&x| x < lo), lo, hi, |x| got.push(x));
            let want: Vec<u64> = v.iter().copied().filter(|&x| lo <= x && x <= hi).collect();
            assert_eq!(got, want);
        }
    }

    #[test]
    fn lookups_equal_brute_force_and_raw_tables() {
        let v = sample(4000, 5);
        let mut s = 99u64;
        for k in 0..=4 {
            let raw = Tables::new(&v, k, 0);
            let packed = Tables::new(&v, k, 32);
            for i in 0..200 {
                // Queries near stored values (so there is something to find) and random ones.
                let mut q = if i % 2 == 0 {
                    v[i * 7 % v.len()]
                } else {
                    splitmix(&mut s)
                };
                for _ in 0..(i % 5) {
                    q ^= 1 << (splitmix(&mut s) % 64);
                }
                let mut want: Vec<u64> = v
                    .iter()
                    .copied()
                    .filter(|x| (x ^ q).count_ones() <= k)
                    .collect();
                want.sort_unstable();
                let (mut a, mut b) = (Vec::new(), Vec::new());
                raw.lookup(q, &mut a);
                packed.lookup(q, &mut b);
                assert_eq!(a, want, "raw, k {k}");
                assert_eq!(b, want, "packed, k {k}");
            }
        }
    }

    #[test]
    fn skewed_frequencies_keep_codes_short() {
        // Frequencies growing like Fibonacci numbers make the optimal code as deep as there are
        // symbols; the limit must hold and the code must still decode.
        let mut f = [0u64; SYMBOLS];
        let (mut a, mut b) = (1u64, 1u64);
        for x in f.iter_mut() {
            *x = a;
            (a, b) = (b, a.saturating_add(b));
        }
        let len = code_lengths(&f);
        assert!(len.iter().all(|&l| (1..=MAX_CODE as u8).contains(&l)));
        let kraft: f64 = len.iter().map(|&l| 0.5f64.powi(i32::from(l))).sum();
        assert!(kraft <= 1.0 + 1e-12);
        let code = Code::new(len);
        for (s, &l) in len.iter().enumerate() {
            let w = u64::from(code.code[s]) << (64 - u32::from(l));
            assert_eq!(code.decode(w), (s, u32::from(l)));
        }
    }

    #[test]
    fn blocks_cover_the_bits() {
        for k in 0..64 {
            let b = blocks(k);
            assert_eq!(b.len() as u32, k + 1);
            assert_eq!(b.iter().map(|&(_, w)| w).sum::<u32>(), 64);
            assert_eq!(b.last().map(|&(s, _)| s), Some(0));
        }
    }
}

//! Manber fingerprints: a Rabin-Karp hash of every window of units, kept by value.
//!
//! The definitions are those of `simscan/fingerprint/rolling.py`'s docstring (ALGORITHM_VERSION 11),
//! which `tests/reference_fingerprint.py` restates as plain Python; in short, for a window of `W`
//! units starting at `i`:
//!
//! * selection hash `H(i) = Σ u[i+j]·P^(W-1-j) mod 2^32` (P = 0x01000193), mixed `g = H·C mod 2^32`
//!   (C = 0x9E3779B1); binary files with an even window select on the even-offset bytes modulo
//!   2^19 instead: `g = ((E(i)·C) mod 2^19)·2^13` with `E(i) = Σ u[i+2t]·P^(W-2-2t)`;
//! * a *rolling* candidate when `g ≥ 2^32 − 2^32/density`; Manber's no-overlap rule keeps the
//!   first candidate and continues from the end of each kept window;
//! * *nested* anchors (text): a window starting `k` units after a k-unit anchor whose mixed hash is
//!   below `2^32/anchor_density`, at *every* occurrence, kept when its level (leading zero bits of
//!   `g`) reaches the text's level, which grows with its length; *sparse* anchors (binary): a W-unit
//!   anchor whose `g` lies just below the rolling range, the window after it, no-overlap among them;
//! * the window's value: `B = Q^K + Σ w_k·Q^(K-1-k) mod 2^64` over its bytes (text: the low byte of
//!   each unit) as K little-endian 64-bit words (Q = 0x100000001B3), then `fmix64(B)` (binary) or
//!   `fmix64(B + 2^32·g)` (text); rolling values have the top bit clear, anchored ones set.
//!
//! Computation: per block of window starts, `H` from a prefix sum of `u[m]·P^-m` (one add in the
//! sequential chain per unit, the multiplies independent), then one pass of compares; values are
//! computed for the kept windows only.  Streams of any length are fed in pieces; a window that
//! spans two pieces is found as if the stream had come whole.

use std::sync::OnceLock;

pub const P32: u32 = 0x0100_0193;
pub const C32: u32 = 0x9E37_79B1;
pub const P64: u64 = 0x0000_0100_0000_01B3;
pub const TOP: u64 = 1 << 63;
pub const LOW63: u64 = TOP - 1;
pub const BIT62: u64 = 1 << 62;
const MASK19: u32 = (1 << 19) - 1;

const A63: u64 = (0x9E37_79B9_7F4A_7C15 & LOW63) | 1;
const B63: u64 = (0xC2B2_AE3D_27D4_EB4F & LOW63) | 1;
const A63_INV: u64 = inverse(A63);
const B63_INV: u64 = inverse(B63);

/// Window starts examined per block (the power tables' length, with room for the window).
const BLOCK: usize = 1 << 14;
/// Longest window + anchor supported.
pub const MAX_SPAN: usize = 1024;

/// The inverse of an odd number modulo 2^64 (Newton's iteration doubles the correct bits).
const fn inverse(x: u64) -> u64 {
    let mut inv = x;
    let mut i = 0;
    while i < 6 {
        inv = inv.wrapping_mul(2u64.wrapping_sub(x.wrapping_mul(inv)));
        i += 1;
    }
    inv
}

/// MurmurHash3's 64-bit finaliser.
#[inline]
pub fn fmix64(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    x ^= x >> 33;
    x = x.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
    x ^ (x >> 33)
}

/// A fixed bijection of 63-bit integers (odd multiplies around a self-inverse xor-shift).
#[inline]
pub fn perm63(y: u64) -> u64 {
    let mut y = y.wrapping_mul(A63) & LOW63;
    y ^= y >> 32;
    y.wrapping_mul(B63) & LOW63
}

/// The inverse of [`perm63`] (the top bit of `v` is ignored).
#[inline]
pub fn unperm63(v: u64) -> u64 {
    let mut y = (v & LOW63).wrapping_mul(B63_INV) & LOW63;
    y ^= y >> 32;
    y.wrapping_mul(A63_INV) & LOW63
}

/// The mixed selection hash `g` of a nested anchored value.
#[inline]
pub fn anchored_g(v: u64) -> u32 {
    (unperm63(v) >> 31) as u32
}

/// The level (0..=32) of a nested anchored value: the leading zero bits of its `g`.
#[inline]
pub fn anchored_level(v: u64) -> u32 {
    anchored_g(v).leading_zeros()
}

/// Level of a text of `units` units: how many of the ascending `limits` it reaches.
pub fn nested_level(units: u64, limits: &[u64]) -> u32 {
    limits.iter().take_while(|&&l| l <= units).count() as u32
}

/// A text value with its view bit (0 text, 1 code): bit 62 of rolling values, the low bit of the
/// pre-image of anchored ones (so the level is kept).
#[inline]
pub fn tag(v: u64, view: u64) -> u64 {
    if v & TOP == 0 {
        (v & !BIT62) | (view << 62)
    } else {
        TOP | perm63((unperm63(v) & !1) | view)
    }
}

/// The view of a text value (see [`tag`]).
#[inline]
pub fn view_of(v: u64) -> u64 {
    if v & TOP == 0 {
        (v >> 62) & 1
    } else {
        unperm63(v) & 1
    }
}

/// `B` of a window from its bytes (`bytes.len()` a multiple of 8, the bytes past `w` zero).
#[inline]
fn window_hash(bytes: &[u8]) -> u64 {
    let mut acc = 0u64;
    for word in bytes.chunks_exact(8) {
        acc = acc
            .wrapping_mul(P64)
            .wrapping_add(u64::from_le_bytes(word.try_into().expect("8 bytes")));
    }
    P64.wrapping_pow((bytes.len() / 8) as u32).wrapping_add(acc)
}

/// A unit of a stream: a byte (binary files) or a code point (normalised text).
pub trait Unit: Copy + Default + Send + Sync + 'static {
    fn v(self) -> u32;
    fn low(self) -> u8;
}

impl Unit for u8 {
    #[inline(always)]
    fn v(self) -> u32 {
        self as u32
    }
    #[inline(always)]
    fn low(self) -> u8 {
        self
    }
}

impl Unit for u32 {
    #[inline(always)]
    fn v(self) -> u32 {
        self
    }
    #[inline(always)]
    fn low(self) -> u8 {
        self as u8
    }
}

/// Value hash of the window of `u` starting at `i` (text: mixed with its `g`).
#[inline]
pub fn window_value<U: Unit>(u: &[U], i: usize, w: usize, g: Option<u32>) -> u64 {
    let k = w.div_ceil(8) * 8;
    let b = if k <= 64 {
        let mut bytes = [0u8; 64];
        for (b, x) in bytes.iter_mut().zip(&u[i..i + w]) {
            *b = x.low();
        }
        window_hash(&bytes[..k])
    } else {
        let mut bytes = vec![0u8; k];
        for (b, x) in bytes.iter_mut().zip(&u[i..i + w]) {
            *b = x.low();
        }
        window_hash(&bytes)
    };
    match g {
        Some(g) => fmix64(b.wrapping_add((g as u64) << 32)),
        None => fmix64(b),
    }
}

/// The mixed selection hash `H·C` of the window of `u` starting at `i` (32-bit rule).
#[inline]
pub fn selection<U: Unit>(u: &[U], i: usize, w: usize) -> u32 {
    let mut h = 0u32;
    for x in &u[i..i + w] {
        h = h.wrapping_mul(P32).wrapping_add(x.v());
    }
    h.wrapping_mul(C32)
}

struct Powers {
    /// P^-m mod 2^32.
    pinv: Vec<u32>,
    /// P^m·C mod 2^32.
    pwmix: Vec<u32>,
}

fn powers() -> &'static Powers {
    static T: OnceLock<Powers> = OnceLock::new();
    T.get_or_init(|| {
        let n = BLOCK + MAX_SPAN + 2;
        let pinv_1 = inverse(P32 as u64) as u32;
        let (mut pinv, mut pwmix) = (Vec::with_capacity(n), Vec::with_capacity(n));
        let (mut a, mut b) = (1u32, 1u32);
        for _ in 0..n {
            pinv.push(a);
            pwmix.push(b.wrapping_mul(C32));
            a = a.wrapping_mul(pinv_1);
            b = b.wrapping_mul(P32);
        }
        Powers { pinv, pwmix }
    })
}

/// Parameters of the fingerprints of one stream (see `FingerprintParams` in Python).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Params {
    pub window: usize,
    pub density: u32,
    pub anchor_density: u32,
    /// 0: the sparse anchored rule; k > 0: nested anchors of k units (text only).
    pub anchor_length: usize,
    pub anchor_level: u32,
    /// Ascending unit counts; not empty: the level rises with the units fed.
    pub level_units: Vec<u64>,
}

impl Params {
    pub fn validate(&self) -> Result<(), String> {
        if self.window < 2 || self.window + self.anchor_length.max(self.window) > MAX_SPAN {
            return Err(format!("window must be 2..{} units", MAX_SPAN / 2));
        }
        if self.density < 1 || self.anchor_density < 1 {
            return Err("densities must be at least 1".into());
        }
        if self.anchor_level > 32 || self.level_units.len() > 32 {
            return Err("anchor_level in 0..32, at most 32 level limits".into());
        }
        if self.level_units.windows(2).any(|p| p[0] > p[1]) {
            return Err("level_units must be ascending".into());
        }
        Ok(())
    }
}

/// Streams units through the hash and keeps the selected windows' values.
pub struct Hasher<U: Unit> {
    w: usize,
    /// Units between an anchor's start and its window's start.
    lead: usize,
    nested: bool,
    /// Binary (bytes, values without `g`); with an even window, the two-lane selection rule.
    binary: bool,
    lanes: bool,
    roll_thr: u64,
    anchor_thr: u64,
    nest_thr: u64,
    level: u32,
    level_units: Vec<u64>,
    adaptive: bool,
    /// Units not yet done with; `buf[0]` is unit number `base` of the stream.
    buf: Vec<U>,
    base: usize,
    next_start: usize,
    next_roll: usize,
    next_anchor: usize,
    /// Sparse rule: kept anchored windows whose units have not all arrived.
    pending: Vec<usize>,
    /// Kept values with the unit offset of their window.
    rolling: Vec<(u64, u64)>,
    anchored: Vec<(u64, u64)>,
    /// Nested rule: the `g` of each anchored value (its level), to raise the level later.
    anchored_g: Vec<u32>,
    dedup_at: [usize; 2],
    s: Vec<u32>,
    g: Vec<u32>,
    found: Vec<usize>,
    pub units: u64,
}

impl<U: Unit> Hasher<U> {
    /// A hasher of text units (`binary` false) or bytes.
    pub fn new(p: &Params, binary: bool) -> Self {
        let nested = p.anchor_length > 0 && !binary;
        let top = 1u64 << 32;
        let roll_thr = top - top / p.density as u64;
        Hasher {
            w: p.window,
            lead: if nested { p.anchor_length } else { p.window },
            nested,
            binary,
            lanes: binary && p.window % 2 == 0,
            roll_thr,
            anchor_thr: roll_thr.saturating_sub(top / p.anchor_density as u64),
            nest_thr: top / p.anchor_density as u64,
            level: p.anchor_level,
            level_units: p.level_units.clone(),
            adaptive: nested && !p.level_units.is_empty(),
            buf: Vec::new(),
            base: 0,
            next_start: 0,
            next_roll: 0,
            next_anchor: 0,
            pending: Vec::new(),
            rolling: Vec::new(),
            anchored: Vec::new(),
            anchored_g: Vec::new(),
            dedup_at: [1 << 16, 1 << 16],
            // Grown to the first block's size on demand: a small file must not pay for a 64 KiB
            // block's scratch (zeroed: ~20 us a file).
            s: Vec::new(),
            g: Vec::new(),
            found: Vec::new(),
            units: 0,
        }
    }

    #[inline]
    fn level_thr(&self) -> u64 {
        (1u64 << 32) >> self.level
    }

    /// Feeds the next units of the stream.
    pub fn feed(&mut self, data: &[U]) {
        if data.is_empty() {
            return;
        }
        self.units += data.len() as u64;
        if self.adaptive {
            let lv = self.level.max(nested_level(self.units, &self.level_units));
            self.raise_level(lv);
        }
        self.buf.extend_from_slice(data);
        self.process();
        // Keep what later windows and anchors still need.
        let keep_from = self
            .next_start
            .saturating_sub(self.lead)
            .min(self.pending.first().copied().unwrap_or(usize::MAX))
            .max(self.base);
        let drop = keep_from - self.base;
        if drop > 0 {
            self.buf.drain(..drop);
            self.base = keep_from;
        }
    }

    fn raise_level(&mut self, level: u32) {
        if level <= self.level {
            return;
        }
        self.level = level;
        let thr = self.level_thr();
        let mut k = 0;
        for j in 0..self.anchored.len() {
            if (self.anchored_g[j] as u64) < thr {
                self.anchored[k] = self.anchored[j];
                self.anchored_g[k] = self.anchored_g[j];
                k += 1;
            }
        }
        self.anchored.truncate(k);
        self.anchored_g.truncate(k);
    }

    /// Examines every window start whose window has arrived.
    fn process(&mut self) {
        let w = self.w;
        let end = self.base + self.buf.len(); // units buffered, global
        if end < w {
            return;
        }
        let last = end - w; // last start whose window fits
        while self.next_start <= last {
            let first = self.next_start;
            let nb = (last + 1 - first).min(BLOCK);
            self.select_block(first - self.base, nb);
            self.scan_block(first, nb);
            self.next_start = first + nb;
        }
        self.flush_pending(end);
    }

    /// `self.g[..nb]`: the selection hash of the windows starting at `buf[at..at + nb]`.
    fn select_block(&mut self, at: usize, nb: usize) {
        let n = nb + self.w - 1;
        if self.g.len() < nb {
            // Grown to the first block's size on demand: a small file must not pay for a 64 KiB
            // block's scratch (zeroed: ~20 us a file).
            self.g.resize(nb, 0);
            self.s.resize(n + 2, 0);
        }
        select(
            &self.buf[at..at + nb + self.w - 1],
            self.w,
            self.lanes,
            &mut self.s,
            &mut self.g[..nb],
        );
    }

    fn scan_block(&mut self, first: usize, nb: usize) {
        let w = self.w;
        if self.nested {
            let roll_thr = self.roll_thr;
            let level_thr = self.level_thr();
            // Shifted by the rolling range's width (mod 2^32), the rolling range and the level range
            // become one interval [0, width): one compare per window finds both kinds.
            let roll_width = (1u64 << 32) - roll_thr;
            let (shift, width) = if roll_width + level_thr < 1u64 << 32 {
                (roll_width as u32, (roll_width + level_thr) as u32)
            } else {
                (0, u32::MAX)
            };
            let mut found = std::mem::take(&mut self.found);
            hits(
                &self.g[..nb],
                |g| g.wrapping_add(shift) < width || width == u32::MAX,
                &mut found,
            );
            for &i in &found {
                let gi = self.g[i] as u64;
                if gi >= roll_thr || gi < level_thr {
                    let start = first + i;
                    if gi >= roll_thr && start >= self.next_roll {
                        self.keep_rolling(start, gi as u32);
                        self.next_roll = start + w;
                    }
                    if gi < level_thr && start >= self.lead {
                        let a = start - self.lead - self.base;
                        let hk = selection(&self.buf, a, self.lead) as u64;
                        if hk < self.nest_thr {
                            let x = window_value(&self.buf, start - self.base, w, Some(gi as u32));
                            let y = ((gi << 31) | (x >> 33)) & LOW63;
                            self.anchored.push((TOP | perm63(y), start as u64));
                            self.anchored_g.push(gi as u32);
                        }
                    }
                }
            }
            self.found = found;
        } else {
            let (roll_thr, anchor_thr) = (self.roll_thr, self.anchor_thr);
            let mut found = std::mem::take(&mut self.found);
            hits(&self.g[..nb], |g| g as u64 >= anchor_thr, &mut found);
            for &i in &found {
                let gi = self.g[i] as u64;
                let start = first + i;
                if gi >= roll_thr {
                    if start >= self.next_roll {
                        self.keep_rolling(start, gi as u32);
                        self.next_roll = start + w;
                    }
                } else {
                    let win = start + self.lead;
                    if win >= self.next_anchor {
                        self.pending.push(win);
                        self.next_anchor = win + w;
                    }
                }
            }
            self.found = found;
        }
        self.maybe_dedup();
    }

    #[inline]
    fn keep_rolling(&mut self, start: usize, g: u32) {
        let g = if self.binary { None } else { Some(g) };
        let v = window_value(&self.buf, start - self.base, self.w, g);
        self.rolling.push((v & LOW63, start as u64));
    }

    /// Values of the pending anchored windows that have arrived (up to `end`).
    fn flush_pending(&mut self, end: usize) {
        let w = self.w;
        let mut k = 0;
        while k < self.pending.len() && self.pending[k] + w <= end {
            let start = self.pending[k];
            let g = if self.binary {
                None
            } else {
                Some(selection(&self.buf, start - self.base, w))
            };
            let v = window_value(&self.buf, start - self.base, w, g);
            self.anchored.push((v | TOP, start as u64));
            k += 1;
        }
        self.pending.drain(..k);
    }

    /// Keeps the stored values distinct once they pile up (a repetitive input then costs memory
    /// by its distinct windows, not by its length).
    fn maybe_dedup(&mut self) {
        if self.rolling.len() > self.dedup_at[0] {
            first_of_each(&mut self.rolling);
            self.dedup_at[0] = (2 * self.rolling.len()).max(1 << 16);
        }
        if !self.nested && self.anchored.len() > self.dedup_at[1] {
            first_of_each(&mut self.anchored);
            self.dedup_at[1] = (2 * self.anchored.len()).max(1 << 16);
        }
    }

    /// (rolling, anchored): sorted, distinct values.  Pending anchored windows that the stream
    /// ended before are dropped.
    pub fn finish(self) -> (Vec<u64>, Vec<u64>) {
        let (r, a) = self.finish_with_positions();
        (
            r.into_iter().map(|x| x.0).collect(),
            a.into_iter().map(|x| x.0).collect(),
        )
    }

    /// [`Hasher::finish`], each value with the unit offset of its first window.
    pub fn finish_with_positions(mut self) -> (Placed, Placed) {
        first_of_each(&mut self.rolling);
        first_of_each(&mut self.anchored);
        (self.rolling, self.anchored)
    }
}

/// Values, each with the unit offset of its window.
pub type Placed = Vec<(u64, u64)>;

/// Sorted by value, one entry per value: the one with the lowest position.
fn first_of_each(v: &mut Vec<(u64, u64)>) {
    v.sort_unstable();
    v.dedup_by_key(|x| x.0);
}

/// `g[i]`: the selection hash of the window of `u` starting at `i`, for every window start whose
/// window fits (`g.len()` of them).  Three steps: the products `u[m]·P^-m` (independent), their
/// prefix sum (one add per unit), and per window one subtraction and one multiply (independent).
/// `lanes`: the two-lane binary rule (even-offset bytes, modulo 2^19).  `s`: scratch, at least
/// `u.len() + 2` long.
pub fn select<U: Unit>(u: &[U], w: usize, lanes: bool, s: &mut [u32], g: &mut [u32]) {
    let t = powers();
    let n = u.len();
    let nb = g.len();
    debug_assert_eq!(n, nb + w - 1);
    let lanes_n = if lanes { 2 } else { 1 };
    prefix_sums(&mut s[..n + lanes_n], u, &t.pinv[..n], lanes_n);
    if lanes {
        // Only the low 19 bits of each window's sum count.
        let mix = &t.pwmix[w - 2..w - 2 + nb];
        for (((o, &hi), &lo), &m) in g.iter_mut().zip(&s[w..w + nb]).zip(&s[..nb]).zip(mix) {
            *o = (hi.wrapping_sub(lo).wrapping_mul(m) & MASK19) << 13;
        }
    } else {
        let mix = &t.pwmix[w - 1..w - 1 + nb];
        for (((o, &hi), &lo), &m) in g.iter_mut().zip(&s[w..w + nb]).zip(&s[..nb]).zip(mix) {
            *o = hi.wrapping_sub(lo).wrapping_mul(m);
        }
    }
}

/// Window starts examined per block by [`select`] (its scratch arrays' sizes).
pub const SELECT_BLOCK: usize = BLOCK;
/// Scratch length for [`select`] over [`SELECT_BLOCK`] windows.
pub const SELECT_SCRATCH: usize = BLOCK + MAX_SPAN + 2;

/// `s[lanes + j]` = the sum of `u[m]·pinv[m]` over m <= j of j's lane (`lanes` interleaved sums:
/// 1, or 2 for even and odd units), `s[..lanes]` = 0, all modulo 2^32.  The running sums stay in
/// registers; the multiplies do not depend on them.  (Four quarters summed side by side, to break
/// the chain of additions, measured 20 % slower.)
#[inline]
fn prefix_sums<U: Unit>(s: &mut [u32], u: &[U], pinv: &[u32], lanes: usize) {
    s[..lanes].fill(0);
    if lanes == 1 {
        let mut acc = 0u32;
        for ((o, x), &p) in s[1..].iter_mut().zip(u).zip(pinv) {
            acc = acc.wrapping_add(x.v().wrapping_mul(p));
            *o = acc;
        }
    } else {
        let (mut a, mut b) = (0u32, 0u32);
        let mut outs = s[2..].chunks_exact_mut(2);
        let mut ins = u.chunks_exact(2);
        let mut ps = pinv.chunks_exact(2);
        for ((o, x), p) in (&mut outs).zip(&mut ins).zip(&mut ps) {
            a = a.wrapping_add(x[0].v().wrapping_mul(p[0]));
            b = b.wrapping_add(x[1].v().wrapping_mul(p[1]));
            o[0] = a;
            o[1] = b;
        }
        if let ([o], [x], [p]) = (outs.into_remainder(), ins.remainder(), ps.remainder()) {
            *o = a.wrapping_add(x.v().wrapping_mul(*p));
        }
    }
}

/// The indices of the values `pred` holds for, in order, into `out`: groups of 16 are tested
/// without a branch (vectorised), and the groups with a hit are read one by one.
#[inline]
fn hits(g: &[u32], pred: impl Fn(u32) -> bool, out: &mut Vec<usize>) {
    const GROUP: usize = 16;
    out.clear();
    for (c, chunk) in g.chunks(GROUP).enumerate() {
        if chunk.iter().fold(false, |a, &x| a | pred(x)) {
            for (k, &x) in chunk.iter().enumerate() {
                if pred(x) {
                    out.push(c * GROUP + k);
                }
            }
        }
    }
}

/// Simhash (Charikar) of distinct 64-bit features, weight 1: bit i is set where more features
/// have it set than clear.  No feature: 0.
pub fn simhash(features: &[u64]) -> u64 {
    let mut counts = [0u32; 64];
    for &f in features {
        let mut x = f;
        while x != 0 {
            counts[x.trailing_zeros() as usize] += 1;
            x &= x - 1;
        }
    }
    let n = features.len() as u64;
    let mut out = 0u64;
    for (i, &c) in counts.iter().enumerate() {
        if 2 * c as u64 > n {
            out |= 1 << i;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perm_round_trips() {
        for y in [0u64, 1, 12345, LOW63, 0x1234_5678_9ABC_DEF0 & LOW63] {
            assert_eq!(unperm63(perm63(y)), y);
        }
        assert_eq!(A63.wrapping_mul(A63_INV), 1);
    }

    #[test]
    fn values_do_not_depend_on_feed_sizes() {
        let p = Params {
            window: 50,
            density: 8,
            anchor_density: 2,
            anchor_length: 8,
            anchor_level: 0,
            level_units: vec![512, 1024],
        };
        let mut rng = 7u64;
        let units: Vec<u32> = (0..20_000)
            .map(|_| {
                rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1);
                97 + ((rng >> 60) as u32 % 5)
            })
            .collect();
        let whole = {
            let mut h = Hasher::<u32>::new(&p, false);
            h.feed(&units);
            h.finish()
        };
        assert!(!whole.0.is_empty() && !whole.1.is_empty());
        for step in [1usize, 7, 50, 57, 1000, 16_384] {
            let mut h = Hasher::<u32>::new(&p, false);
            for c in units.chunks(step) {
                h.feed(c);
            }
            assert_eq!(h.finish(), whole, "step {step}");
        }
        let bp = Params {
            density: 16,
            anchor_density: 64,
            anchor_length: 0,
            level_units: vec![],
            ..p
        };
        let bytes: Vec<u8> = units.iter().map(|&u| (u * 37) as u8).collect();
        let whole = {
            let mut h = Hasher::<u8>::new(&bp, true);
            h.feed(&bytes);
            h.finish()
        };
        assert!(!whole.0.is_empty() && !whole.1.is_empty());
        for step in [1usize, 3, 99, 4096] {
            let mut h = Hasher::<u8>::new(&bp, true);
            for c in bytes.chunks(step) {
                h.feed(c);
            }
            assert_eq!(h.finish(), whole, "binary step {step}");
        }
    }

    #[test]
    fn simhash_majority() {
        assert_eq!(simhash(&[]), 0);
        assert_eq!(simhash(&[0b11, 0b01, 0b10]), 0b11);
        assert_eq!(simhash(&[0b1, 0b10]), 0);
    }
}

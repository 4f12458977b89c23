//! Text fingerprints (ALGORITHM_VERSION 12): robust winnowing on the selection hash.
//!
//! Schleimer, Wilkerson and Aiken, "Winnowing: local algorithms for document fingerprinting"
//! (SIGMOD 2003; DESIGN.md section 5).  Every 50-unit window `i` has the selection hash
//! `g(i) = H(i)·C mod 2^32` of [`crate::manber`] and its value `x(i)` (unchanged since version 11).
//! Its *dominance span* `D(i)` is the length of the longest stretch of windows around `i` in which
//! `g(i)` is the rightmost minimum: `next_le(i) - prev_lt(i) - 1` (the next window with `g <= g(i)`,
//! the previous one with `g < g(i)`), capped at [`D_CAP`]; the file's rightmost minimum gets `D_CAP`.
//! Robust winnowing with window `w` keeps exactly the windows with `D >= w`, so:
//!
//! * **the guarantee**: a passage of `w + 49` units that two files share holds `w` whole windows in
//!   both; the rightmost minimum of their `g` is kept by both, with the same value;
//! * **nesting**: what a coarser `w` keeps, every finer `w` keeps too.  A file keeps its windows with
//!   `D >= w(t)` for its level `t` (length), and stores each value's `D`, so that a pair is compared
//!   at `w = max(w(a), w(b))`: a value counts where its `D` reaches it.
//!
//! Measured against today's rolling and nested anchored fingerprints on the evaluation corpus and an
//! embedded-passage corpus built from it (`benchmarks/passages.py`, `benchmarks/proto_winnow.py`):
//! about as many fingerprints (1.02x on 1-16 KB prose), the same scores, and passages found with a
//! guarantee instead of by luck at their borders.
//!
//! Streaming: `D` is found with one monotonic stack (a window's `next_le` is the window that pops
//! it), and is known at most `D_CAP` windows later; units are kept that long.

use crate::manber::{select, tag, window_value, LOW63, SELECT_BLOCK};

/// Dominance spans are kept up to this (above the largest winnowing window).
pub const D_CAP: u32 = 128;

/// A kept text fingerprint: its value (view bit set), dominance span, and where its window is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kept {
    pub value: u64,
    pub d: u8,
    /// Unit offset of the window's start (in its view's units).
    pub unit: u32,
    /// First character of the window in the decoded text, and its length in characters.
    pub char: u32,
    pub chars: u16,
}

/// Streams units (and each one's source character) and keeps the winnowed windows.
///
/// Per block of windows: their `g` (as the Manber hash computes it), then the *candidates*, the
/// windows whose `g` is below `2^32·C/w` (C = 8: one window in 12 at the largest window; one vectorised
/// compare a window).  A window smaller than a candidate is a candidate too, so a candidate's span is
/// found among the candidates near it alone.  A window that is no candidate can only have `D >= w`
/// inside a stretch of at least `w` windows without any candidate (about `e^-8` of the windows): there
/// its span is counted out window by window.  A window is decided once `D_CAP` windows follow it (or
/// the text ends), so units are kept that long.
pub struct Winnower {
    w: usize,
    view: u64,
    /// Winnowing window per level, and the unit counts at which levels are reached.
    schedule: Vec<usize>,
    level_units: Vec<u64>,
    /// The window used from now on (the current level's; it only grows).
    keep: usize,
    buf: Vec<u32>,
    src: Vec<u32>,
    /// `buf[0]` is unit number `base`; `gs[0]` is the `g` of window `gbase`.
    base: usize,
    gs: Vec<u32>,
    gbase: usize,
    /// Windows below this are decided.
    done: usize,
    kept: Vec<Kept>,
    s: Vec<u32>,
    g: Vec<u32>,
    cands: Vec<usize>,
    /// Scratch of the monotonic stacks: positions, and each one's neighbour on either side.
    stack: Vec<usize>,
    near_l: Vec<usize>,
    near_r: Vec<usize>,
    pub units: u64,
}

/// No such neighbour (see [`Winnower::nearest`]).
const NONE: usize = usize::MAX;

/// Candidates are the windows with `g < 2^32·CANDIDATES/w`.
const CANDIDATES: u64 = 8;

impl Winnower {
    /// `schedule[t]`: the window of a text at level `t` (`level_units`: where levels start), or the
    /// first entry when `level_units` is empty (a fixed window).
    pub fn new(w: usize, schedule: &[usize], level_units: &[u64], view: u64) -> Self {
        Winnower {
            w,
            view,
            keep: schedule[0],
            schedule: schedule.to_vec(),
            level_units: level_units.to_vec(),
            buf: Vec::new(),
            src: Vec::new(),
            base: 0,
            gs: Vec::new(),
            gbase: 0,
            done: 0,
            kept: Vec::new(),
            // Grown on demand (`feed`): a small file must not pay for zeroing a whole block's
            // scratch (~0.5 MB, ~20 us a file).
            s: Vec::new(),
            g: Vec::new(),
            cands: Vec::new(),
            stack: Vec::new(),
            near_l: Vec::new(),
            near_r: Vec::new(),
            units: 0,
        }
    }

    /// The window of a text of `units` units.
    pub fn window_for(&self, units: u64) -> usize {
        let t = self.level_units.iter().take_while(|&&l| l <= units).count();
        self.schedule[t.min(self.schedule.len() - 1)]
    }

    /// The next units and their source characters.
    pub fn feed(&mut self, units: &[u32], src: &[u32]) {
        debug_assert_eq!(units.len(), src.len());
        if units.is_empty() {
            return;
        }
        self.units += units.len() as u64;
        self.keep = self.keep.max(self.window_for(self.units));
        self.buf.extend_from_slice(units);
        self.src.extend_from_slice(src);
        let end = self.base + self.buf.len();
        loop {
            let first = self.gbase + self.gs.len(); // the next window to hash
            if end < first + self.w {
                break;
            }
            let nb = (end - self.w + 1 - first).min(SELECT_BLOCK);
            let at = first - self.base;
            if self.g.len() < nb {
                self.g.resize(nb, 0);
                self.s.resize(nb + self.w + 1, 0);
            }
            select(
                &self.buf[at..at + nb + self.w - 1],
                self.w,
                false,
                &mut self.s,
                &mut self.g[..nb],
            );
            self.gs.extend_from_slice(&self.g[..nb]);
        }
        // Decide the windows with D_CAP windows known after them.
        let known = self.gbase + self.gs.len();
        if known > self.done + D_CAP as usize {
            self.decide(known - D_CAP as usize, None);
        }
    }

    /// Decides windows `done..limit`; `total`: the number of windows when the text is over.
    fn decide(&mut self, limit: usize, total: Option<usize>) {
        let (w, cap) = (self.keep, D_CAP as usize);
        let known = self.gbase + self.gs.len();
        // Candidates near done..limit: D_CAP windows either side (all kept in `gs`).
        let lo = self.done.saturating_sub(cap).max(self.gbase);
        let hi = (limit + cap).min(known);
        let t = ((1u64 << 32) * CANDIDATES / w as u64).min(u32::MAX as u64) as u32;
        let mut cands = std::mem::take(&mut self.cands);
        cands.clear();
        let g = &self.gs[lo - self.gbase..hi - self.gbase];
        if t == u32::MAX {
            cands.extend(lo..hi); // small windows: every window is a candidate
        } else {
            // Branch-free compaction: every index is written, the count advances on candidates (a
            // candidate in 8 windows at the largest window: a branch per window mispredicts often).
            cands.resize(g.len(), 0);
            let mut n = 0;
            for (k, &x) in g.iter().enumerate() {
                cands[n] = lo + k;
                n += (x < t) as usize;
            }
            cands.truncate(n);
        }
        // Spans of the candidates, from their nearest smaller neighbours among the candidates (a window
        // smaller than a candidate is one too): one pass of a monotonic stack each way.
        self.nearest(&cands);
        for (k, &i) in cands.iter().enumerate() {
            if i < self.done || i >= limit {
                continue;
            }
            let d = self.span(k, &cands, 0..known, total);
            if d as usize >= w {
                self.keep_window(i, d);
            }
        }
        // Stretches of at least w windows without a candidate (or a whole text without one): the
        // spans of their windows, from every window within D_CAP of the stretch (stacks again: a
        // repetitive text, whose equal windows are all above the threshold, costs one pass).
        let mut prev = lo; // the first window after the previous candidate
        let mut all: Vec<usize> = Vec::new();
        for &c in cands.iter().chain(std::iter::once(&hi)) {
            let run = prev..c;
            let whole = total.is_some() && run.start == 0 && run.end == known;
            let (a, b) = (run.start.max(self.done), run.end.min(limit));
            if (run.len() >= w || whole) && a < b {
                let (from, to) = (a.saturating_sub(cap).max(self.gbase), (b + cap).min(known));
                all.clear();
                all.extend(from..to);
                self.nearest(&all);
                for (k, &i) in all.iter().enumerate() {
                    if i < a || i >= b {
                        continue;
                    }
                    let d = self.span(k, &all, from..to, total);
                    if d as usize >= w {
                        self.keep_window(i, d);
                    }
                }
            }
            prev = c + 1;
        }
        self.cands = cands;
        self.done = limit;
        // Keep D_CAP windows behind the next undecided one (spans look that far back), and their
        // units from the next undecided window on.
        // (Dropped once the dead part is as long as the live one: each value moves a bounded number of
        // times, not once per fed chunk.)
        let keep_g = self.done.saturating_sub(cap).max(self.gbase);
        if keep_g - self.gbase >= self.gs.len() / 2 {
            self.gs.drain(..keep_g - self.gbase);
            self.gbase = keep_g;
        }
        let keep_u = self.done.max(self.base);
        let drop = keep_u - self.base;
        if drop > 0 && drop >= self.buf.len() / 2 {
            self.buf.drain(..drop);
            self.src.drain(..drop);
            self.base = keep_u;
        }
    }

    /// For windows `pos` (increasing): in `near_l[k]` the index in `pos` of the nearest earlier one with
    /// a smaller `g`, in `near_r[k]` of the nearest later one with a `g` not larger (`NONE`: none).
    fn nearest(&mut self, pos: &[usize]) {
        let g = |p: usize| self.gs[p - self.gbase];
        let (stack, near_l, near_r) = (&mut self.stack, &mut self.near_l, &mut self.near_r);
        near_l.clear();
        near_l.resize(pos.len(), NONE);
        near_r.clear();
        near_r.resize(pos.len(), NONE);
        stack.clear();
        for (k, &p) in pos.iter().enumerate() {
            let gk = g(p);
            while stack.last().is_some_and(|&t| g(pos[t]) >= gk) {
                stack.pop();
            }
            near_l[k] = stack.last().copied().unwrap_or(NONE);
            stack.push(k);
        }
        stack.clear();
        for (k, &p) in pos.iter().enumerate().rev() {
            let gk = g(p);
            while stack.last().is_some_and(|&t| g(pos[t]) > gk) {
                stack.pop();
            }
            near_r[k] = stack.last().copied().unwrap_or(NONE);
            stack.push(k);
        }
    }

    /// D of window `pos[k]` from its neighbours found by [`Winnower::nearest`] over `pos`, the
    /// windows of `bounds` being all those that may be smaller (none found: it dominates to the
    /// bound's end).
    #[inline]
    fn span(
        &self,
        k: usize,
        pos: &[usize],
        bounds: std::ops::Range<usize>,
        total: Option<usize>,
    ) -> u32 {
        let (i, cap) = (pos[k], D_CAP as usize);
        let (l, r) = (self.near_l[k], self.near_r[k]);
        let left = if l == NONE {
            i - bounds.start
        } else {
            i - pos[l] - 1
        };
        let right = if r == NONE {
            bounds.end - 1 - i
        } else {
            pos[r] - i - 1
        };
        Self::capped(left.min(cap), right.min(cap), i, total)
    }

    /// D from the windows left and right of window `i` that leave it the rightmost minimum.
    #[inline]
    fn capped(left: usize, right: usize, i: usize, total: Option<usize>) -> u32 {
        let span = left + right + 1;
        // The whole text's rightmost minimum is kept at every window.
        let whole = total.is_some_and(|n| left == i && i + right + 1 == n);
        if whole || span >= D_CAP as usize {
            D_CAP
        } else {
            span as u32
        }
    }

    fn keep_window(&mut self, i: usize, d: u32) {
        let at = i - self.base;
        let g = self.gs[i - self.gbase];
        let x = window_value(&self.buf, at, self.w, Some(g)) & LOW63;
        let c0 = self.src[at];
        let c1 = self.src[at + self.w - 1];
        self.kept.push(Kept {
            value: tag(x, self.view),
            d: d as u8,
            unit: i.min(u32::MAX as usize) as u32,
            char: c0,
            chars: (c1.saturating_sub(c0) + 1).min(u16::MAX as u32) as u16,
        });
    }

    /// The kept fingerprints, sorted by value, one per value: the occurrence with the largest span
    /// (the first of those), and only those of the text's final window.
    pub fn finish(mut self) -> Vec<Kept> {
        let total = self.gbase + self.gs.len();
        if total > self.done {
            self.decide(total, Some(total));
        }
        let keep = self.window_for(self.units).min(D_CAP as usize) as u8;
        let mut kept = std::mem::take(&mut self.kept);
        kept.retain(|k| k.d >= keep);
        // By value; of equal values (a repeated window) the one of largest span, then the first.
        // Sorted by value alone first (cheap), ties set in order after: they are rare.
        kept.sort_unstable_by_key(|k| k.value);
        let mut i = 0;
        while i < kept.len() {
            let mut j = i + 1;
            while j < kept.len() && kept[j].value == kept[i].value {
                j += 1;
            }
            if j - i > 1 {
                kept[i..j].sort_unstable_by_key(|k| (std::cmp::Reverse(k.d), k.unit));
            }
            i = j;
        }
        kept.dedup_by_key(|k| k.value);
        kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// D by its definition, one window at a time.
    fn dominance_slow(g: &[u32]) -> Vec<u32> {
        let n = g.len();
        (0..n)
            .map(|i| {
                let mut lo = i;
                while lo > 0 && g[lo - 1] >= g[i] {
                    lo -= 1;
                }
                let mut hi = i;
                while hi + 1 < n && g[hi + 1] > g[i] {
                    hi += 1;
                }
                let d = hi - lo + 1;
                if d >= n {
                    D_CAP
                } else {
                    (d as u32).min(D_CAP)
                }
            })
            .collect()
    }

    #[test]
    fn streaming_spans_equal_the_definition() {
        let mut rng = 5u64;
        for round in 0..40 {
            let n = [10usize, 60, 100, 300, 2000][round % 5];
            let alphabet = [3u32, 26, 1000][round % 3];
            let units: Vec<u32> = (0..n)
                .map(|_| {
                    rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1);
                    97 + (rng >> 40) as u32 % alphabet
                })
                .collect();
            let src: Vec<u32> = (0..n as u32).map(|i| 2 * i).collect();
            let nw = n.saturating_sub(49);
            let mut g = vec![0u32; nw];
            if nw > 0 {
                let mut s = vec![0u32; crate::manber::SELECT_SCRATCH];
                select(&units, 50, false, &mut s, &mut g);
            }
            let d = dominance_slow(&g);
            for w in [1usize, 4, 26, 100] {
                let mut want: Vec<(u64, u8, u32)> = (0..nw)
                    .filter(|&i| d[i] as usize >= w)
                    .map(|i| {
                        (
                            tag(window_value(&units, i, 50, Some(g[i])) & LOW63, 0),
                            d[i] as u8,
                            i as u32,
                        )
                    })
                    .collect();
                want.sort_by_key(|k| (k.0, std::cmp::Reverse(k.1), k.2));
                want.dedup_by_key(|k| k.0);
                for step in [1usize, 7, 50, 64, 5000] {
                    let mut h = Winnower::new(50, &[w], &[], 0);
                    for (c, s) in units.chunks(step).zip(src.chunks(step)) {
                        h.feed(c, s);
                    }
                    let got: Vec<(u64, u8, u32)> =
                        h.finish().iter().map(|k| (k.value, k.d, k.unit)).collect();
                    assert_eq!(got, want, "n {n} w {w} step {step}");
                }
            }
        }
    }
}

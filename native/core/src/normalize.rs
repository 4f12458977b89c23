//! Normalisation of decoded text to *units*, streaming.
//!
//! Every code point goes through a [`CharMap`] (the heavy map gives the fingerprint units, the light
//! map the form whose hash decides "same text, other encoding"); then runs of spaces become one
//! space, and none is kept at either end of the whole text.  Feeding a text in pieces gives the same
//! units as feeding it whole.  [`Pair`] makes both forms in one pass, with a byte fast path for
//! ASCII (most text is ASCII or nearly so).

use crate::tables::{CharMap, Mapped, Tables};

const SPACE: u32 = b' ' as u32;

/// Collapses space runs across pieces: a space is held back until text follows it.
#[derive(Default, Clone, Copy)]
struct Collapse {
    emitted: bool,
    pending: bool,
    pending_src: usize,
}

impl Collapse {
    #[inline(always)]
    fn unit(&mut self, u: u32, src: usize, emit: &mut impl FnMut(u32, usize)) {
        if u == SPACE {
            if self.emitted && !self.pending {
                self.pending = true;
                self.pending_src = src;
            }
        } else {
            if self.pending {
                emit(SPACE, self.pending_src);
                self.pending = false;
            }
            emit(u, src);
            self.emitted = true;
        }
    }

    #[inline(always)]
    fn mapped(&mut self, m: Mapped<'_>, src: usize, emit: &mut impl FnMut(u32, usize)) {
        match m {
            Mapped::Drop => {}
            Mapped::Space => self.unit(SPACE, src, emit),
            Mapped::One(c) => self.unit(c, src, emit),
            Mapped::Many(s) => {
                for &c in s {
                    self.unit(c, src, emit);
                }
            }
        }
    }
}

/// A streaming normaliser of one form.
pub struct Normalizer<'a> {
    map: &'a CharMap,
    state: Collapse,
    consumed: usize,
}

impl<'a> Normalizer<'a> {
    pub fn new(map: &'a CharMap) -> Self {
        Normalizer {
            map,
            state: Collapse::default(),
            consumed: 0,
        }
    }

    /// Maps the next code points, calling `emit(unit, source index)` for each output unit; the
    /// source index is the code point's index in everything fed so far (a space: the first
    /// character of the run it stands for).
    #[inline]
    fn run(&mut self, cps: &[u32], mut emit: impl FnMut(u32, usize)) {
        let base = self.consumed;
        for (k, &cp) in cps.iter().enumerate() {
            let m = if cp < 128 {
                match self.map.ascii[cp as usize] {
                    0 => Mapped::Drop,
                    b' ' => Mapped::Space,
                    c => Mapped::One(c as u32),
                }
            } else {
                self.map.get(cp)
            };
            self.state.mapped(m, base + k, &mut emit);
        }
        self.consumed += cps.len();
    }

    /// The units of the next code points, appended to `out`.
    pub fn feed(&mut self, cps: &[u32], out: &mut Vec<u32>) {
        out.reserve(cps.len());
        self.run(cps, |u, _| out.push(u));
    }

    /// The units and, per unit, the index of the code point it came from.
    pub fn feed_offsets(&mut self, cps: &[u32], out: &mut Vec<u32>, src: &mut Vec<usize>) {
        self.run(cps, |u, s| {
            out.push(u);
            src.push(s);
        });
    }
}

/// The heavy units and the light form (as UTF-8) of one text, made in one pass.
pub struct Pair {
    heavy: &'static CharMap,
    light: &'static CharMap,
    h: Collapse,
    l: Collapse,
}

/// One ASCII byte through both maps: (heavy, light), 0 for dropped.
fn ascii_pairs(t: &Tables) -> [(u8, u8); 128] {
    let mut out = [(0, 0); 128];
    for (b, o) in out.iter_mut().enumerate() {
        *o = (t.heavy.ascii[b], t.light.ascii[b]);
    }
    out
}

impl Pair {
    pub fn new(t: &'static Tables) -> Self {
        Pair {
            heavy: &t.heavy,
            light: &t.light,
            h: Collapse::default(),
            l: Collapse::default(),
        }
    }

    /// One ASCII unit of each form (`h`, `l`: its mapped bytes).
    #[inline(always)]
    fn ascii(&mut self, h: u8, l: u8, units: &mut Vec<u32>, light: &mut Vec<u8>) {
        if h == b' ' {
            self.h.pending |= self.h.emitted;
        } else if h != 0 {
            if self.h.pending {
                units.push(SPACE);
                self.h.pending = false;
            }
            units.push(h as u32);
            self.h.emitted = true;
        }
        if l == b' ' {
            self.l.pending |= self.l.emitted;
        } else if l != 0 {
            if self.l.pending {
                light.push(b' ');
                self.l.pending = false;
            }
            light.push(l);
            self.l.emitted = true;
        }
    }

    #[inline]
    fn general(&mut self, cp: u32, units: &mut Vec<u32>, light: &mut Vec<u8>) {
        self.h
            .mapped(self.heavy.get(cp), 0, &mut |u, _| units.push(u));
        self.l
            .mapped(self.light.get(cp), 0, &mut |u, _| push_utf8(u, light));
    }

    /// The next code points: heavy units onto `units`, the light form onto `light`.
    pub fn code_points(&mut self, cps: &[u32], units: &mut Vec<u32>, light: &mut Vec<u8>) {
        let pairs = ascii_table();
        units.reserve(cps.len());
        light.reserve(cps.len());
        for &cp in cps {
            if cp < 128 {
                let (h, l) = pairs[cp as usize];
                self.ascii(h, l, units, light);
            } else {
                self.general(cp, units, light);
            }
        }
    }

    /// A run of ASCII bytes, each form in its own tight loop (state in registers, no branch on
    /// the data: outputs are written into slack and counted only when they are real).
    fn ascii_run(&mut self, run: &[u8], units: &mut Vec<u32>, light: &mut Vec<u8>) {
        let pairs = ascii_table();
        ascii_form(
            run,
            |c| pairs[(c & 0x7F) as usize].0 as u32,
            &mut self.h,
            units,
        );
        ascii_form(run, |c| pairs[(c & 0x7F) as usize].1, &mut self.l, light);
    }

    /// The next piece of text (valid UTF-8): as [`Pair::code_points`], read from its bytes.
    pub fn str(&mut self, s: &str, units: &mut Vec<u32>, light: &mut Vec<u8>) {
        let b = s.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let run = b[i..]
                .iter()
                .position(|&c| c >= 0x80)
                .unwrap_or(b.len() - i);
            if run > 0 {
                self.ascii_run(&b[i..i + run], units, light);
                i += run;
                continue;
            }
            // One character of valid UTF-8 (the lead byte gives its length).
            let c = b[i];
            let n = if c < 0xE0 {
                2
            } else if c < 0xF0 {
                3
            } else {
                4
            };
            let ch = s[i..i + n].chars().next().map_or(0xFFFD, |c| c as u32);
            self.general(ch, units, light);
            i += n;
        }
    }
}

/// One form of a run of ASCII bytes: `map` gives each byte's unit (0 dropped, 32 a space, else
/// a character above 32), appended to `out` with space runs collapsed across calls (`state`).
#[inline(always)]
fn ascii_form<T: Copy + From<u8> + Default + Into<u32>>(
    run: &[u8],
    map: impl Fn(u8) -> T,
    state: &mut Collapse,
    out: &mut Vec<T>,
) {
    let mut i = 0;
    if !state.emitted {
        // Nothing emitted yet: leading spaces and dropped units are skipped.
        while i < run.len() && map(run[i]).into() <= 32 {
            i += 1;
        }
        if i == run.len() {
            return;
        }
        state.emitted = true;
    }
    let rest = &run[i..];
    let base = out.len();
    out.resize(base + rest.len() + 2, T::default());
    let o = &mut out[..];
    let mut at = base;
    let mut pend = state.pending as usize;
    let space = T::from(b' ');
    for &c in rest {
        let m = map(c);
        let v: u32 = m.into();
        let chr = (v > 32) as usize;
        let sp = (v == 32) as usize;
        let slot = &mut o[at..at + 2];
        slot[0] = space;
        let at1 = pend & chr;
        slot[at1] = m;
        at += at1 + chr;
        pend = (pend | sp) & (chr ^ 1);
    }
    out.truncate(at);
    state.pending = pend != 0;
}

fn ascii_table() -> &'static [(u8, u8); 128] {
    use std::sync::OnceLock;
    static T: OnceLock<[(u8, u8); 128]> = OnceLock::new();
    T.get_or_init(|| ascii_pairs(crate::tables::tables()))
}

/// Appends the UTF-8 encoding of `cp` (a lone surrogate as Python's "surrogatepass" encodes it).
#[inline]
pub fn push_utf8(cp: u32, out: &mut Vec<u8>) {
    if cp < 0x80 {
        out.push(cp as u8);
    } else if cp < 0x800 {
        out.extend_from_slice(&[0xC0 | (cp >> 6) as u8, 0x80 | (cp & 0x3F) as u8]);
    } else if cp < 0x1_0000 {
        out.extend_from_slice(&[
            0xE0 | (cp >> 12) as u8,
            0x80 | ((cp >> 6) & 0x3F) as u8,
            0x80 | (cp & 0x3F) as u8,
        ]);
    } else {
        out.extend_from_slice(&[
            0xF0 | (cp >> 18) as u8,
            0x80 | ((cp >> 12) & 0x3F) as u8,
            0x80 | ((cp >> 6) & 0x3F) as u8,
            0x80 | (cp & 0x3F) as u8,
        ]);
    }
}

/// The units of a whole text.
pub fn normalize(map: &CharMap, cps: &[u32]) -> Vec<u32> {
    let mut out = Vec::new();
    Normalizer::new(map).feed(cps, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::tables;

    fn cps(s: &str) -> Vec<u32> {
        s.chars().map(|c| c as u32).collect()
    }

    fn text(u: &[u32]) -> String {
        u.iter().map(|&c| char::from_u32(c).unwrap()).collect()
    }

    #[test]
    fn collapses_and_strips_spaces() {
        let t = tables();
        assert_eq!(
            text(&normalize(&t.heavy, &cps("  Hello,\r\n  WORLD!  "))),
            "hello world"
        );
        assert_eq!(
            text(&normalize(&t.light, &cps("  Hello,\r\n  WORLD!  "))),
            "Hello, WORLD!"
        );
        assert_eq!(text(&normalize(&t.heavy, &cps("Ça\u{0301} ﬁn"))), "ca fin");
    }

    #[test]
    fn pieces_give_the_units_of_the_whole() {
        let t = tables();
        let s = cps(" a,  b -- ﬁ \u{200b} c.  ");
        let whole = normalize(&t.heavy, &s);
        for cut in 0..=s.len() {
            let mut n = Normalizer::new(&t.heavy);
            let mut out = Vec::new();
            n.feed(&s[..cut], &mut out);
            n.feed(&s[cut..], &mut out);
            assert_eq!(out, whole, "cut at {cut}");
        }
    }

    #[test]
    fn the_pair_equals_each_form_alone() {
        let t = tables();
        let s = " Ça va, l'ÉTÉ?\r\n\tﬁn — 東京 ①  \u{200b}x ";
        let c = cps(s);
        let heavy = normalize(&t.heavy, &c);
        let light: Vec<u8> = text(&normalize(&t.light, &c)).into_bytes();
        for cut in 0..=c.len() {
            let (mut u1, mut l1, mut u2, mut l2) = (vec![], vec![], vec![], vec![]);
            let mut p = Pair::new(t);
            p.code_points(&c[..cut], &mut u1, &mut l1);
            p.code_points(&c[cut..], &mut u1, &mut l1);
            assert_eq!((&u1, &l1), (&heavy, &light), "cut at {cut}");
            let split: String = s.chars().take(cut).collect();
            let rest: String = s.chars().skip(cut).collect();
            let mut p = Pair::new(t);
            p.str(&split, &mut u2, &mut l2);
            p.str(&rest, &mut u2, &mut l2);
            assert_eq!((&u2, &l2), (&heavy, &light), "str cut at {cut}");
        }
    }

    #[test]
    fn offsets_point_at_the_source() {
        let t = tables();
        let s = cps("ab,  cd");
        let (mut u, mut src) = (Vec::new(), Vec::new());
        Normalizer::new(&t.heavy).feed_offsets(&s, &mut u, &mut src);
        assert_eq!(text(&u), "ab cd");
        assert_eq!(src, vec![0, 1, 2, 5, 6]);
    }
}
